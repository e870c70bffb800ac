#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: os_packages_info
short_description: Which OS packages are installed, from the package database
version_added: "0.1.0"
description:
  - Reads the package database (C(dpkg-query) on Debian/Ubuntu, C(rpm) on openEuler and other RPM
    systems) for each name and reports which are installed and which are missing, so a role calls
    the package manager only when something is missing (a no-op C(apt) or C(dnf) run opens its cache
    or loads repository metadata, seconds on every re-run).
  - A name the database does not know (a virtual package, a typo) is reported missing; the package
    manager then decides.
  - Read-only.
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
  names:
    description: Package names (on RPM systems also name-version, as C(rpm -q) takes them).
    type: list
    elements: str
    required: true
  services:
    description:
      - systemd units (the services the packages bring) whose state to report in the same read, from
        C(systemctl show); a role starts or enables one only where it is not both running and enabled.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Which build tools are missing
  ascendops.cluster.os_packages_info:
    names: [gcc, make, dkms]
  register: pkgs

- name: Install only when something is missing
  ansible.builtin.package:
    name: [gcc, make, dkms]
  when: pkgs.missing | length > 0
"""

RETURN = r"""
manager:
  description: The database read (C(dpkg) or C(rpm)).
  returned: always
  type: str
  sample: dpkg
installed:
  description: The names installed, in the order given.
  returned: always
  type: list
  elements: str
  sample: [gcc, make]
missing:
  description: The names not installed, in the order given.
  returned: always
  type: list
  elements: str
  sample: [dkms]
services:
  description:
    - Each unit of I(services), its C(ActiveState) and C(UnitFileState) (empty for a unit systemd does not know).
  returned: when services is given
  type: dict
  sample: {docker: {active: active, enabled: enabled}}
started:
  description:
    - When each unit of I(services) last became active, in seconds since the epoch (from systemd's
      C(ActiveEnterTimestampMonotonic)); null for a unit that is not active. A daemon started before its
      configuration file last changed runs on the old file (a run that ended before its handlers).
  returned: when services is given
  type: dict
  sample: {munge: 1765010165.2, slurmd: null}
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.os_packages import OsPackagesInfoTask  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(names=dict(type="list", elements="str", required=True),
                           services=dict(type="list", elements="str", default=[])),
        supports_check_mode=True,
    )
    OsPackagesInfoTask(module).run()


if __name__ == "__main__":
    main()
