# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: tree_sha256
version_added: "0.1.0"
short_description: Every file and directory under a controller directory, files with their SHA-256
description:
  - Walks each directory given on the controller (hidden entries too, following links to directories as
    C(ansible.builtin.find) with O(ansible.builtin.find#module:follow=true) does) and returns one entry per file,
    directory, link or other entry below it, with its path relative to that directory.
  - Each regular file's SHA-256 is kept in the same cache as lookup C(ascendops.cluster.file_sha256) (keyed by
    the file's identity), so a re-run does not read unchanged files again (the launch stage's training data).
  - A directory that does not exist gives no entries and a warning (as C(ansible.builtin.find) does).
options:
  _terms:
    description: Directories on the controller (lists are flattened); the entries of all of them, in order.
    required: true
extends_documentation_fragment:
  - ascendops.cluster.sha256_cache
"""

EXAMPLES = r"""
- name: The training data on the controller
  ansible.builtin.set_fact:
    data_tree: "{{ query('ascendops.cluster.tree_sha256', '/srv/data/tokens') }}"
"""

RETURN = r"""
_list:
  description: One dict per entry below each directory, parents before their children.
  type: list
  elements: dict
  contains:
    path:
      description: The entry's path relative to the directory it was found under.
      type: str
    kind:
      description: C(file) (regular file), C(directory), C(link) or C(other), as the entry itself is (not followed).
      type: str
    sha256:
      description: A regular file's SHA-256 (hex); absent for other kinds.
      type: str
"""

import os  # noqa: E402
import stat as st  # noqa: E402

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402
from ansible.utils.display import Display  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.sha256_cache import (  # noqa: E402
    lookup_setup,
)

display = Display()


def _kind(mode):
    if st.S_ISREG(mode):
        return "file"
    if st.S_ISDIR(mode):
        return "directory"
    if st.S_ISLNK(mode):
        return "link"
    return "other"


def tree(top, cache):
    """The entries below ``top``: [{path (relative), kind[, sha256]}], parents before children."""
    out = []
    for root, dirs, files in os.walk(top, followlinks=True, topdown=True):
        dirs.sort()
        for name in sorted(files + dirs):
            full = os.path.normpath(os.path.join(root, name))
            try:
                kind = _kind(os.lstat(full).st_mode)
            except OSError:
                continue
            entry = {"path": os.path.relpath(full, top), "kind": kind}
            if kind == "file":
                entry["sha256"] = cache.digest(full)["sha256"]
            out.append(entry)
    return out


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        try:
            cache, tops = lookup_setup("tree_sha256", terms, kwargs)
        except ValueError as exc:
            raise AnsibleLookupError(str(exc)) from exc
        out = []
        try:
            for top in tops:
                top = str(top)
                if not os.path.isdir(top):
                    display.warning(f"tree_sha256: {top} is not a directory: no entries")
                    continue
                out.extend(tree(top, cache))
        except OSError as exc:
            raise AnsibleLookupError(f"tree_sha256: cannot read {exc.filename}: {exc.strerror}") from exc
        finally:
            cache.save()
        return out
