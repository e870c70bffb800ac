#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cann_info
short_description: Read the installed CANN toolkits and kernels, and check CANN packages against them and the driver
version_added: "0.1.0"
description:
  - Reads every installed CANN toolkit (C(<install_path>/ascend-toolkit/<ver>) and, from CANN 8.5,
    C(<install_path>/cann-<ver>)) from its C(ascend_toolkit_install.info) record (C(version=),
    C(version_dir=)), the active one by resolving the C(latest) link, and the operator kernels of
    each from C(opp_kernel/version.info) (its C(version_dir); C(Version=) is a build number).
  - With O(toolkit_package) / O(kernels_package) (staged C(.run) files), also reads each package's
    version data (C(version.info) in the archive, through makeself's C(--tar), nothing extracted to
    disk) and checks that kernels and toolkit are one version and that the installed NPU driver is
    in the C(required_package_driver_version) range the packages state.
  - Runs only read-only commands; never changes anything.
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
  install_path:
    description: Ascend install path.
    type: path
    default: /usr/local/Ascend
  arch:
    description: Architecture of the records to read (C(<arch>-linux)). Default is the node's.
    type: str
  toolkit_package:
    description: A staged toolkit C(.run) package to check.
    type: path
  kernels_package:
    description: A staged kernels (or, from CANN 8.5, ops) C(.run) package to check.
    type: path
  toolkit_version:
    description: The toolkit version about to be installed (used where a package carries no version data).
    type: str
  kernels_version:
    description: The kernels version about to be installed (default O(toolkit_version)).
    type: str
  driver_version:
    description: Installed NPU driver version. Default is read from C(<install_path>/driver/version.info).
    type: str
seealso:
  - module: ascendops.cluster.ascend_package
  - module: ascendops.cluster.npu_info
"""

EXAMPLES = r"""
- name: Read installed CANN
  ascendops.cluster.cann_info:
  register: cann

- name: Check the staged packages fit the driver
  ascendops.cluster.cann_info:
    toolkit_package: /var/cache/ascendops/packages/Ascend-cann-toolkit_8.0.0_linux-aarch64.run
    kernels_package: /var/cache/ascendops/packages/Ascend-cann-kernels-910b_8.0.0_linux-aarch64.run
    toolkit_version: 8.0.0
  register: cann_check
  failed_when: not cann_check.compatibility.ok
"""

RETURN = r"""
active:
  description: The toolkit behind the C(latest) link (C(installed) false when none).
  returned: always
  type: dict
  sample: {installed: true, version: 8.0.0, version_dir: 8.0.0, path: /usr/local/Ascend/ascend-toolkit/8.0.0,
           link: /usr/local/Ascend/ascend-toolkit/latest, set_env: /usr/local/Ascend/ascend-toolkit/set_env.sh,
           kernels: {installed: true, version: 8.0.0, build: 8.0.0.0.201}}
toolkits:
  description: Every installed toolkit, oldest first (C(version), C(version_dir), C(path), C(file), C(kernels)).
  returned: always
  type: list
  elements: dict
versions:
  description: The installed toolkit versions, oldest first.
  returned: always
  type: list
  elements: str
  sample: [8.0.RC3, 8.0.0]
driver_version:
  description: The installed NPU driver version (null when none).
  returned: always
  type: str
packages:
  description: Version data of O(toolkit_package) and O(kernels_package) (C(version), C(build), C(required), C(data)).
  returned: when a package or O(toolkit_version) is given
  type: dict
present:
  description:
    - With O(toolkit_version), whether that toolkit version is installed (active or not) and whether its
      toolkit directory holds kernels of that version (O(kernels_version) when given) - the rule
      M(ascendops.cluster.ascend_package) decides by, so a role can leave out a package run that would
      do nothing.
  returned: with O(toolkit_version)
  type: dict
  sample: {toolkit: true, kernels: true}
compatibility:
  description: C(ok), C(problems) (sentences naming both versions) and C(warnings).
  returned: when a package or O(toolkit_version) is given
  type: dict
  sample:
    ok: false
    problems: ["CANN 8.2.RC1 needs NPU driver >=25.0.rc1 but the installed driver is 24.1.rc1"]
    warnings: []
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.cann_info import CannInfo  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            install_path=dict(type="path", default="/usr/local/Ascend"),
            arch=dict(type="str"),
            toolkit_package=dict(type="path"),
            kernels_package=dict(type="path"),
            toolkit_version=dict(type="str"),
            kernels_version=dict(type="str"),
            driver_version=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    CannInfo(module).run()


if __name__ == "__main__":
    main()
