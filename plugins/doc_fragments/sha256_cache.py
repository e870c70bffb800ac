# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The option every lookup that keeps SHA-256 sums in the shared cache takes (file_sha256, tree_sha256)."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  cache_file:
    description:
      - The cache file; empty keeps nothing across runs.
      - Default C($XDG_CACHE_HOME/ascendops/sha256.json) (C(~/.cache/ascendops/sha256.json)).
    type: str
"""
