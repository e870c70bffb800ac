#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: shared_storage_check
short_description: Check the shared file system for the job's data and checkpoints on one node
version_added: "0.1.0"
description:
  - Checks that O(path) is a mount point (not a directory on the root file system) of one of
    O(fstypes), read from C(/proc/self/mountinfo).
  - Unless in check mode, then the marker C(.ascendops-shared-storage.json) is written with
    O(marker_token) (O(marker_write), on one node) or read back with that token (on the others,
    waiting up to O(marker_wait_s)), so every node sees the same file system; root can create a
    directory in O(path) and give it to O(uid)/O(gid) (the launch stage does that; NFS root squashing
    prevents it); O(size_mib) MiB are written (fsync) and read back as O(uid)/O(gid), the job's user,
    and the throughput in MB/s compared with O(min_write_mbps) and O(min_read_mbps).
  - Fails naming O(node), the path and every problem with its measured number. Test files are removed;
    the marker stays (it is replaced on the next run). Never reports a change.
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
attributes:
  check_mode:
    support: full
    details: Only the mount is checked; nothing is written.
  diff_mode:
    support: none
options:
  path:
    description: The shared file system's mount point.
    type: path
    required: true
  fstypes:
    description: File system types accepted (as C(/proc/self/mountinfo) names them, e.g. C(nfs4)); empty accepts any.
    type: list
    elements: str
    default: []
  node:
    description: This node's name, in messages and in the marker.
    type: str
    required: true
  marker_token:
    description: The run's unique token; empty leaves the marker out.
    type: str
    default: ""
  marker_write:
    description: Write the marker (one node), else read it back.
    type: bool
    default: false
  marker_node:
    description: The node that writes the marker (named in the message of a missing marker).
    type: str
    default: ""
  marker_wait_s:
    description: How long a reader waits for the marker (attribute caches of network file systems).
    type: int
    default: 10
  uid:
    description: The job user's uid; unset, the writes are done as root.
    type: int
  gid:
    description: The job user's gid (with O(uid)).
    type: int
  size_mib:
    description: MiB written and read back for the throughput; 0 leaves the throughput out.
    type: int
    default: 64
  min_write_mbps:
    description: Least write throughput in MB/s (10^6 bytes per second).
    type: float
    default: 0
  min_read_mbps:
    description: Least read throughput in MB/s.
    type: float
    default: 0
"""

EXAMPLES = r"""
- name: Check the shared file system (first node writes the marker)
  ascendops.cluster.shared_storage_check:
    path: /mnt/ascendops
    fstypes: [nfs, nfs4]
    node: "{{ inventory_hostname }}"
    marker_token: "{{ token }}"
    marker_write: "{{ inventory_hostname == ansible_play_hosts | first }}"
    uid: 1001
    gid: 1001
    min_write_mbps: 200
    min_read_mbps: 200
"""

RETURN = r"""
path:
  description: The path checked (links resolved).
  returned: always
  type: str
mount:
  description: The mount at O(path) (mount_point, fstype, source, options); null when there is none.
  returned: always
  type: dict
write_mbps:
  description: Measured write throughput in MB/s (null when not measured).
  returned: always
  type: float
read_mbps:
  description: Measured read throughput in MB/s (null when not measured).
  returned: always
  type: float
marker:
  description: Whether the marker was written here, and the node that wrote the one read.
  returned: always
  type: dict
checked:
  description: The checks that ran (mount, marker, root_chown, throughput).
  returned: always
  type: list
  elements: str
problems:
  description: Every problem found (the module fails when there is one).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.shared_storage import SharedStorageCheck  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            fstypes=dict(type="list", elements="str", default=[]),
            node=dict(type="str", required=True),
            marker_token=dict(type="str", default="", no_log=False),
            marker_write=dict(type="bool", default=False),
            marker_node=dict(type="str", default=""),
            marker_wait_s=dict(type="int", default=10),
            uid=dict(type="int"),
            gid=dict(type="int"),
            size_mib=dict(type="int", default=64),
            min_write_mbps=dict(type="float", default=0),
            min_read_mbps=dict(type="float", default=0),
        ),
        required_together=[("uid", "gid")],
        supports_check_mode=True,
    )
    SharedStorageCheck(module).run()


if __name__ == "__main__":
    main()
