#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sysctl_settings
short_description: Set many kernel parameters at once, in a sysctl.d file and in the running kernel
version_added: "0.1.0"
description:
  - Reads O(sysctl_file) and the running values of every key in O(settings) (C(/proc/sys)) in one
    call, then writes only what differs. Replaces one C(ansible.posix.sysctl) task per key.
  - "The file: each key gets one C(key=value) line with the value asked for; a line of the key with
    another value is rewritten in place, later lines of the same key are dropped (the last would win
    at boot), a missing key is appended. Comments and the site's other keys stay as they are. A file
    that already says it is left untouched."
  - "The running kernel: a key whose value differs is written to C(/proc/sys) (what C(sysctl -w)
    does), so the setting holds now and after a reboot."
  - Values compare field by field (C(net.ipv4.tcp_rmem) reads back tab separated); booleans and
    yes/no, true/false, on/off become 1 / 0.
  - A key the running kernel does not have fails the task before anything is written (a warning in
    check mode).
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  settings:
    description:
      - "Kernel parameters and their values, e.g. C({net.core.somaxconn: 65535}). Keys in sysctl(8)'s
        dotted form (a slash stands for a dot inside a name) or its slashed form."
    type: dict
    required: true
  sysctl_file:
    description: The drop-in file the values persist in (read at boot by systemd-sysctl). A new file gets mode 0644.
    type: path
    required: true
seealso:
  - name: sysctl.d(5)
    description: The drop-in files systemd-sysctl applies at boot.
    link: https://www.freedesktop.org/software/systemd/man/latest/sysctl.d.html
  - module: ansible.posix.sysctl
    description: One key per task.
"""

EXAMPLES = r"""
- name: Socket buffers for RDMA traffic, now and at boot
  ascendops.cluster.sysctl_settings:
    settings:
      net.core.rmem_max: 268435456
      net.ipv4.tcp_rmem: "4096 87380 268435456"
    sysctl_file: /etc/sysctl.d/91-ascendops-roce.conf
"""

RETURN = r"""
changed:
  description: Whether the file or a running value changed (or would, in check mode).
  returned: always
  type: bool
path:
  description: The sysctl.d file.
  returned: always
  type: str
  sample: /etc/sysctl.d/90-ascendops.conf
changed_keys:
  description: Keys whose line in the file or running value differed from the one asked for.
  returned: always
  type: list
  elements: str
  sample: [net.core.somaxconn]
file_changed:
  description: Whether the file was (or would be) rewritten.
  returned: always
  type: bool
live:
  description: The running value of each key before the task (null for a key the kernel does not have).
  returned: always
  type: dict
  sample: {"net.core.somaxconn": "4096"}
settings:
  description: The values asked for, as written (booleans as 1 / 0).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.sysctl_settings import SysctlSettingsTask  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            settings=dict(type="dict", required=True),
            sysctl_file=dict(type="path", required=True),
        ),
        supports_check_mode=True,
    )
    SysctlSettingsTask(module).run()


if __name__ == "__main__":
    main()
