#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: path_info
short_description: Read many paths in one call (exists, type, owner, mode)
version_added: "0.1.0"
description:
  - Stats every path of O(paths) in one module call, where a loop of C(ansible.builtin.stat) costs a
    task round trip per path. Read-only.
  - A path that cannot be read (missing, or a dangling link with O(follow)) is returned with
    C(exists) false.
  - Read-only on the paths it reads; with O(checksum_cache) it keeps that one cache file up to date.
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  paths:
    description: The paths to read.
    type: list
    elements: path
    required: true
  follow:
    description: Describe a symbolic link by its target (as the file module acts on it); false describes the link.
    type: bool
    default: true
  checksum:
    description: Also the checksum of each regular file's content, with this algorithm (none by default).
    type: str
    choices: [sha1, sha256, sha512]
  checksum_cache:
    description:
      - A file on the node that keeps each file's sha256 with the file's identity (device, inode,
        size, modification and change time), so a file unchanged since it was hashed is not read
        again (staged vendor packages are gigabytes). Any write to the file, or a copy or rename
        onto its path, changes the identity and it is hashed again.
      - Written only outside check mode, and only where its directory exists; needs O(checksum=sha256).
    type: path
  content_max_size:
    description:
      - Also the content (base64, as C(ansible.builtin.slurp) gives it) of each regular file of at most
        this many bytes (small records and lists read with the rest in the same call); 0 reads none.
    type: int
    default: 0
"""

EXAMPLES = r"""
- name: Which NPU device nodes and driver paths this node has
  ascendops.cluster.path_info:
    paths: [/dev/davinci0, /dev/davinci_manager, /usr/local/Ascend/driver]
  register: paths
"""

RETURN = r"""
stats:
  description: One entry per path, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The path as given.
      type: str
    exists:
      description: Whether it exists.
      type: bool
    isdir:
      description: A directory (only when it exists; likewise the keys below).
      type: bool
    isreg:
      description: A regular file.
      type: bool
    ischr:
      description: A character device.
      type: bool
    islnk:
      description: A symbolic link (only with O(follow) false).
      type: bool
    uid:
      description: Owner's id.
      type: int
    gid:
      description: Group's id.
      type: int
    mode:
      description: Permission bits, octal, e.g. C(0755).
      type: str
    size:
      description: Size in bytes.
      type: int
    checksum:
      description: The content's checksum (regular files, with O(checksum); null when unreadable).
      type: str
    content:
      description: The content, base64 (regular files within O(content_max_size); null when unreadable).
      type: str
  sample: [{"path": "/dev/davinci0", "exists": true, "ischr": true, "isdir": false, "isreg": false,
            "islnk": false, "uid": 1000, "gid": 1000, "mode": "0660", "size": 0}]
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.path_info import PathInfo  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            paths=dict(type="list", elements="path", required=True),
            follow=dict(type="bool", default=True),
            checksum=dict(type="str", choices=["sha1", "sha256", "sha512"]),
            checksum_cache=dict(type="path"),
            content_max_size=dict(type="int", default=0),
        ),
        supports_check_mode=True,
    )
    PathInfo(module).run()


if __name__ == "__main__":
    main()
