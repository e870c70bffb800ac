#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ascend_package
short_description: Install one Huawei Ascend C(.run) package idempotently
version_added: "0.1.0"
description:
  - Installs or upgrades one vendor C(.run) package already present on the target (the NPU
    driver, the NPU firmware, the CANN toolkit, the CANN kernels or the Ascend Docker Runtime).
  - "Steps: read the installed version of that kind, decide the action (V(none), V(install),
    V(upgrade), V(downgrade) or V(reinstall)); when there is something to do, verify the file's
    SHA-256 against O(checksum) and run the archive's own C(--check) (both before the installer),
    run the installer non-interactively and read the installed version back. With nothing to do the
    package file is not read at all (a re-run does not hash gigabytes of vendor packages)."
  - "Installer flags: driver and firmware C(--full) on a fresh install, C(--upgrade) otherwise;
    docker runtime C(--install) on a fresh install, C(--upgrade) otherwise. CANN toolkit and kernels
    versions live side by side: C(--install) when that version is not installed yet (beside the
    others; the installer points C(latest) at it), nothing when it is (C(--upgrade) with O(force)).
    Every kind gets only the flags its installer accepts (one table, C(INSTALLER_FLAGS) in
    C(module_utils/run_package.py)): C(--quiet --nox11) for the HDK and CANN packages, C(--quiet)
    alone for the docker runtime (its own header rejects C(--nox11)); a flag the kind does not accept,
    in O(extra_args) too, fails the task before anything runs. The docker runtime's C(--install-scene)
    is passed only to versions that have it (6.0.RC3 on; before, C(docker) is their only scene). The
    installer's stdin is C(/dev/null) so it can never wait on a question: an unanswered C([y/n]) prompt
    fails the task, one the output shows answered (C([y/N]y)) does not."
  - "EULA: the docker runtime from 26.1.0 asks C(Do you accept the EULA to install Ascend-docker-runtime?[Y/N])
    on install and upgrade, and asks again on end of input (forever). Such a package is refused before anything
    runs unless O(accept_eula) is true; then C(Y) is given on stdin and C([INFO] user accepted EULA) in the output
    reads as answered (C(user declined EULA) fails the task although the installer exits 0)."
  - O(install_username), O(install_usergroup) and O(install_for_all) are only passed on a fresh
    install of the driver or a CANN package. The vendor installers refuse them with
    C(--upgrade), which keeps the recorded user; the firmware and docker runtime installers take
    none of them, so the user options are refused there (O(install_for_all) is ignored).
  - "Verdict: the exit code decides, as in the vendor's own automation. Driver: rc 1 or an C([ERROR])
    line fails, any other rc succeeds; firmware: rc 0 and 2 succeed; other packages: rc 0 without
    C([ERROR]) line. A missing success line (C(--quiet) prints little) is not a failure."
  - "Installed version: from the kind's own install record; the docker runtime's is
    C(<install_path>/Ascend-Docker-Runtime/ascend_docker_runtime_install.info) (C(version=v6.0.0)),
    so an unchanged runtime is never installed again (its installer would accept a second
    C(--install) silently)."
  - "Reboot: after a driver or firmware run the module reads the node's own view, as
    M(ascendops.cluster.npu_info) does (installed versus running driver from C(npu-smi), firmware from
    C(upgrade-tool)), and adds any reboot request in the installer output. A fresh driver install
    that starts the devices at once (C(The new version takes effect immediately.)) needs none; new
    firmware runs only after a reboot."
  - Order on a fresh host is driver then firmware; when upgrading, firmware then driver.
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
attributes:
  check_mode:
    support: full
    details: >-
      The checksum and the archive C(--check) still run when there is something to do (both are
      read-only); the installer does not.
  diff_mode:
    support: full
options:
  path:
    description: Path of the C(.run) package on the target.
    type: path
    required: true
  checksum:
    description:
      - Expected SHA-256 of the package (64 hex digits, optionally prefixed C(sha256:)).
      - Strongly recommended; the file is verified before anything runs, also in check mode.
    type: str
  kind:
    description:
      - What the package is. Default is taken from the vendor file name.
    type: str
    choices: [driver, firmware, toolkit, kernels, docker_runtime]
  version:
    description:
      - Version the package installs. Default is taken from the vendor file name.
    type: str
  install_path:
    description: Install path (C(--install-path)); only passed when not the vendor default.
    type: path
    default: /usr/local/Ascend
  install_info:
    description: The Ascend install record, used to find a driver or firmware installed under another path.
    type: path
    default: /etc/ascend_install.info
  install_for_all:
    description: Pass C(--install-for-all) (fresh installs only; never to the firmware installer).
    type: bool
    default: false
  install_username:
    description:
      - Run-time user (C(--install-username)); fresh installs only, not for O(kind=firmware). The user must exist.
      - Requires O(install_usergroup). Without both the installer uses C(HwHiAiUser).
    type: str
  install_usergroup:
    description: Run-time group (C(--install-usergroup)); fresh installs only. Requires O(install_username).
    type: str
  install_scene:
    description: Container engine for the docker runtime (C(--install-scene)); only with O(kind=docker_runtime).
    type: str
    choices: [docker, containerd, isula]
  allow_downgrade:
    description: Install a version older than the installed one (with C(--upgrade)) instead of failing.
    type: bool
    default: false
  force:
    description: Reinstall (C(--upgrade)) even when the same version is installed.
    type: bool
    default: false
  extra_args:
    description: More installer arguments, appended before C(--quiet); each must be one the kind's installer accepts.
    type: list
    elements: str
    default: []
  accept_eula:
    description:
      - Accept the end user license agreement an installer asks for (the docker runtime from 26.1.0), by answering
        C(Y) on its stdin. False refuses such a package before anything runs, naming this option.
    type: bool
    default: false
notes:
  - The installer log is C(/var/log/ascend_seclog/ascend_install.log) unless the installer names another.
  - The firmware installer exits 2 on a successful upgrade; 0 and 2 are success.
seealso:
  - module: ascendops.cluster.npu_info
"""

EXAMPLES = r"""
- name: Install or upgrade the NPU driver
  ascendops.cluster.ascend_package:
    path: /opt/packages/Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run
    checksum: "{{ manifest['Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run'] }}"
    install_for_all: true
  register: driver

- name: Firmware after the driver on a fresh host
  ascendops.cluster.ascend_package:
    path: /opt/packages/Ascend-hdk-910b-npu-firmware_7.5.0.2.220.run
    checksum: 3f1c0b...e9
  register: firmware

- name: Reboot when the driver or firmware changed
  ansible.builtin.reboot:
  when: driver.reboot_required or firmware.reboot_required

- name: CANN toolkit for a dedicated user
  ascendops.cluster.ascend_package:
    path: /opt/packages/Ascend-cann-toolkit_8.0.0_linux-aarch64.run
    install_username: trainer
    install_usergroup: trainer

- name: Ascend Docker Runtime for containerd
  ascendops.cluster.ascend_package:
    path: /opt/packages/Ascend-docker-runtime_6.0.0_linux-aarch64.run
    install_scene: containerd
"""

RETURN = r"""
changed:
  description: Whether the installer ran (or would run, in check mode).
  returned: always
  type: bool
eula:
  description: Whether the installer asks to accept an EULA (answered with O(accept_eula)).
  returned: when the installer is due to run
  type: bool
kind:
  description: Package kind.
  returned: always
  type: str
  sample: driver
version:
  description: Version the package installs.
  returned: always
  type: str
  sample: 24.1.rc1
action:
  description: V(none), V(install) (fresh), V(upgrade), V(downgrade) or V(reinstall) (O(force)).
  returned: always
  type: str
  sample: upgrade
version_before:
  description: Installed version before the task (null when not installed).
  returned: always
  type: str
  sample: 23.0.0
version_after:
  description: Installed version read back after the installer ran (in check mode, the version it would be).
  returned: always
  type: str
  sample: 24.1.rc1
reboot_required:
  description:
    - The driver or firmware just installed does not run yet (the node's installed versus running
      view), or the installer output asks for a reboot.
    - In check mode, true when a driver or firmware would be installed.
  returned: always
  type: bool
reboot_reasons:
  description: Why a reboot is required, one sentence each (empty when none is).
  returned: always
  type: list
  elements: str
checksum:
  description: SHA-256 of the package file (computed when O(checksum) is given and there is something to do, else null).
  returned: always
  type: str
cmd:
  description: The installer command run (or that would run in check mode); empty when nothing to do.
  returned: always
  type: list
  elements: str
  sample: [/opt/packages/Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run, --upgrade, --quiet, --nox11]
rc:
  description:
    - Installer exit code (null when it did not run). The firmware installer's 2 is a success.
    - The result always carries C(failed), so Ansible does not judge the task by a non-zero RV(rc).
  returned: always
  type: int
stdout:
  description: Installer standard output.
  returned: always
  type: str
stderr:
  description: Installer standard error.
  returned: always
  type: str
stdout_lines:
  description: Installer standard output, line by line.
  returned: always
  type: list
  elements: str
log_path:
  description: Installer log named by the output, else the vendor default; null when the installer did not run.
  returned: always
  type: str
  sample: /var/log/ascend_seclog/ascend_install.log
diff:
  description: "C(<kind> version: X) before and after, with C(--diff)."
  returned: when diff mode is on
  type: dict
  sample: {before: "driver version: 23.0.0\n", after: "driver version: 24.1.rc1\n"}
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_install import (  # noqa: E402
    DEFAULT_INSTALL_INFO,
    DEFAULT_INSTALL_PATH,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.package_install import AscendPackageInstall  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.run_package import PACKAGE_KINDS  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            checksum=dict(type="str"),
            kind=dict(type="str", choices=list(PACKAGE_KINDS)),
            version=dict(type="str"),
            install_path=dict(type="path", default=DEFAULT_INSTALL_PATH),
            install_info=dict(type="path", default=DEFAULT_INSTALL_INFO),
            install_for_all=dict(type="bool", default=False),
            install_username=dict(type="str"),
            install_usergroup=dict(type="str"),
            install_scene=dict(type="str", choices=["docker", "containerd", "isula"]),
            allow_downgrade=dict(type="bool", default=False),
            force=dict(type="bool", default=False),
            extra_args=dict(type="list", elements="str", default=[]),
            accept_eula=dict(type="bool", default=False),
        ),
        required_together=[["install_username", "install_usergroup"]],
        supports_check_mode=True,
    )
    AscendPackageInstall(module).run()


if __name__ == "__main__":
    main()
