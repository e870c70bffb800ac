# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: file_sha256
version_added: "0.1.0"
short_description: SHA-256 of files on the controller, kept across runs while a file is unchanged
description:
  - For each path, whether the file exists and its SHA-256, read on the controller.
  - A hash is kept in a cache file keyed by the path and the file's identity (device, inode, size,
    modification and change time in nanoseconds), so a re-run does not read gigabytes of unchanged
    vendor packages again; any write, copy or rename onto the path changes the identity and the file
    is hashed again.
options:
  _terms:
    description: Paths on the controller (lists are flattened).
    required: true
extends_documentation_fragment:
  - ascendops.cluster.sha256_cache
"""

EXAMPLES = r"""
- name: Check a package against its manifest line
  ansible.builtin.assert:
    that: item.sha256 == 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'
  loop: "{{ query('ascendops.cluster.file_sha256', '/srv/ascend/Ascend-cann-toolkit_8.0.0_linux-aarch64.run') }}"
"""

RETURN = r"""
_list:
  description: One dict per path, in order.
  type: list
  elements: dict
  contains:
    path:
      description: The absolute path.
      type: str
    exists:
      description: Whether the file exists.
      type: bool
    sha256:
      description: Its SHA-256 (hex), null when it does not exist.
      type: str
    cached:
      description: Whether the hash came from the cache.
      type: bool
"""

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.sha256_cache import lookup_setup  # noqa: E402


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        try:
            cache, paths = lookup_setup("file_sha256", terms, kwargs)
        except ValueError as exc:
            raise AnsibleLookupError(str(exc)) from exc
        out = []
        try:
            for path in paths:
                out.append(cache.digest(str(path)))
        except OSError as exc:
            raise AnsibleLookupError(f"file_sha256: cannot read {exc.filename}: {exc.strerror}") from exc
        finally:
            cache.save()
        return out
