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
  - "Steps: verify the file's SHA-256 against O(checksum) (before anything else), run the
    archive's own C(--check), read the installed version of that kind, decide the action
    (V(none), V(install), V(upgrade), V(downgrade) or V(reinstall)), run the installer
    non-interactively and read the installed version back."
  - "Installer flags: driver and firmware C(--full) on a fresh install, C(--upgrade) otherwise;
    docker runtime C(--install) on a fresh install, C(--upgrade) otherwise. CANN toolkit and kernels
    versions live side by side: C(--install) when that version is not installed yet (beside the
    others; the installer points C(latest) at it), nothing when it is (C(--upgrade) with O(force)).
    C(--quiet --nox11) always; the installer's stdin is C(/dev/null) so it can never wait on a
    question (a C([y/n]) prompt fails the task)."
  - O(install_username), O(install_usergroup) and O(install_for_all) are only passed on a fresh
    install. The vendor installers refuse them with C(--upgrade), which keeps the recorded user.
  - Installing the driver or firmware needs a reboot before it runs; RV(reboot_required) says so.
    Order on a fresh host is driver then firmware; when upgrading, firmware then driver.
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
attributes:
  check_mode:
    support: full
    details: The checksum and the archive C(--check) still run (both are read-only); the installer does not.
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
    description: Pass C(--install-for-all) (fresh installs only).
    type: bool
    default: false
  install_username:
    description:
      - Run-time user (C(--install-username)); fresh installs only. The user must exist.
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
    description: More installer arguments, appended before C(--quiet --nox11).
    type: list
    elements: str
    default: []
notes:
  - The installer log is C(/var/log/ascend_seclog/ascend_install.log) unless the installer names another.
  - The firmware installer exits 2 on a successful upgrade; 0 and 2 with the success line are success.
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
    - The installer said a reboot is needed for the change to take effect (driver, firmware).
    - In check mode, true when a driver or firmware would be installed.
  returned: always
  type: bool
checksum:
  description: SHA-256 of the package file (computed when O(checksum) is given, else null).
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

import grp  # noqa: E402
import os  # noqa: E402
import pwd  # noqa: E402
import re  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_formats import (  # noqa: E402
    DEFAULT_INSTALL_LOG,
    PACKAGE_KINDS,
    PROMPT_REGEX,
    check_output_ok,
    classify_installer_output,
    get_key,
    parse_package_filename,
    read_key_value_file,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_install import (  # noqa: E402
    DEFAULT_INSTALL_INFO,
    DEFAULT_INSTALL_PATH,
    RUN_ENV,
    machine_arch,
    read_installed,
    stdin_from_devnull,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_version import (  # noqa: E402
    compare,
    versions_equal,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.cann_info import package_state  # noqa: E402

FRESH_FLAGS = {
    "driver": "--full",
    "firmware": "--full",
    "toolkit": "--install",
    "kernels": "--install",
    "docker_runtime": "--install",
}
UPGRADE_FLAG = "--upgrade"
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?$")
_HEX_RE = re.compile(r"^[0-9a-f]{64}$")


def _interpreter_prefix(module, path):
    """How to execute the package: through the interpreter of its #! line (makeself archives are
    shell scripts), so that neither a missing execute bit nor a noexec mount matters; directly
    when it has no #! line but is executable."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(256)
    except OSError as exc:
        module.fail_json(msg=f"Cannot read package {path}: {exc}")
    if first.startswith(b"#!"):
        parts = first[2:].decode("utf-8", "replace").strip().split()
        if parts:
            return parts
    if os.access(path, os.X_OK):
        return []
    module.fail_json(msg=f"Package {path} is not executable and has no #! line; is it a vendor .run file?")


def _run(module, cmd, **kwargs):
    with stdin_from_devnull():
        return module.run_command(cmd, environ_update=RUN_ENV, **kwargs)


def decide(kind, before, target, allow_downgrade, force):
    """(action, error message or None) for installing ``target`` over ``before``."""
    if before is None:
        return "install", None
    try:
        order = compare(target, before)
    except ValueError:
        if versions_equal(target, before):
            order = 0
        elif force:
            return "reinstall", None
        else:
            return "none", (f"Cannot compare the installed {kind} version {before!r} with the package version "
                            f"{target!r}; set force=true to install the package anyway.")
    if order == 0:
        return ("reinstall" if force else "none"), None
    if order > 0:
        return "upgrade", None
    if allow_downgrade:
        return "downgrade", None
    return "none", (f"Refusing to downgrade {kind} from {before} to {target}; set allow_downgrade=true to do it.")


def _diff_text(kind, version):
    return f"{kind} version: {version}\n" if version else ""


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
        ),
        required_together=[["install_username", "install_usergroup"]],
        supports_check_mode=True,
    )
    p = module.params
    path = p["path"]
    name = os.path.basename(path)
    install_path = os.path.normpath(p["install_path"])

    result = dict(changed=False, kind=p["kind"], version=p["version"], action="none",
                  version_before=None, version_after=None, reboot_required=False, checksum=None,
                  cmd=[], rc=None, stdout="", stderr="", stdout_lines=[], log_path=None)

    # 1. the file. In check mode an earlier task may only have reported that it would stage the
    # package: then say what would be done, and leave the checksum and archive checks to the real run.
    staged = os.path.isfile(path)
    if not staged and not module.check_mode:
        module.fail_json(msg=f"Package file {path} does not exist on the target (or is not a file).", **result)
    if not staged:
        module.warn(f"{path} is not staged yet (check mode): its checksum and archive are verified on the real run.")

    # 2. what it is
    try:
        parsed = parse_package_filename(name)
    except ValueError:
        parsed = None
    kind = p["kind"] or (parsed.kind if parsed else None)
    version = p["version"] or (parsed.version if parsed else None)
    if parsed and p["kind"] and parsed.kind != p["kind"]:
        module.fail_json(msg=f"Package {name} is a {parsed.kind} package by its name, not {p['kind']}; "
                             "check the kind option.", **result)
    if not kind or not version:
        module.fail_json(msg=f"Cannot tell the kind and version of {name} from its name; set the kind and version "
                             "options.", **result)
    result.update(kind=kind, version=version)
    arch = parsed.arch if parsed else None

    # 3. option checks
    for opt in ("install_username", "install_usergroup"):
        if p[opt] is not None and not _NAME_RE.match(p[opt]):
            module.fail_json(msg=f"{opt} {p[opt]!r} is not a valid user or group name.", **result)
    if p["install_scene"] and kind != "docker_runtime":
        module.fail_json(msg=f"install_scene applies only to kind=docker_runtime (this is {kind}).", **result)
    expected = None
    if p["checksum"]:
        expected = p["checksum"].strip().lower()
        if expected.startswith("sha256:"):
            expected = expected[len("sha256:"):]
        if not _HEX_RE.match(expected):
            module.fail_json(msg=f"checksum must be a SHA-256 hex digest (64 hex digits), got {p['checksum']!r}.",
                             **result)

    # 4. integrity, before anything runs
    if expected and staged:
        actual = module.digest_from_file(path, "sha256")
        result["checksum"] = actual
        if actual != expected:
            module.fail_json(
                msg=f"Checksum mismatch for {name}: expected sha256 {expected}, got {actual}. The file is corrupt "
                    "or not the package the manifest names: re-fetch the package, or fix its checksum in the "
                    "manifest.",
                expected_checksum=expected, **result)
    prefix = _interpreter_prefix(module, path) if staged else []
    check_cmd = prefix + [path, "--check"]
    rc, out, err = _run(module, check_cmd) if staged else (0, "", "")
    if staged and not check_output_ok(rc, out, err):
        check_text = " ".join((out + "\n" + err).split())
        module.fail_json(
            msg=f"Archive check of {name} failed (rc={rc}): {check_text or 'no output'}. Re-fetch the package.",
            check_cmd=check_cmd, check_rc=rc, check_stdout=out, check_stderr=err, **result)

    # 5. installed version and action
    install_info = read_key_value_file(p["install_info"]) or {}
    state = read_installed(kind, install_path, install_info, arch or machine_arch())
    before = state["version"] if state["installed"] else None
    if state["installed"] and not before:
        module.fail_json(msg="{} is installed ({}) but its version cannot be read.".format(kind, state["file"]),
                         **result)
    result["version_before"] = before
    result["version_after"] = before
    if kind in ("toolkit", "kernels"):
        # CANN versions live side by side: a version not installed yet installs beside the others
        # (--install), one already there is left alone (reinstalled with force)
        before, present = package_state(kind, install_path, version, arch or machine_arch())
        result["version_before"] = result["version_after"] = before
        action, refusal = ("reinstall" if p["force"] else "none") if present else "install", None
    else:
        action, refusal = decide(kind, before, version, p["allow_downgrade"], p["force"])
    if refusal:
        module.fail_json(msg=refusal, **result)
    result["action"] = action

    if p["install_username"] and action == "install":
        try:
            pwd.getpwnam(p["install_username"])
        except KeyError:
            module.fail_json(msg=f"install_username {p['install_username']} does not exist on the target: "
                                 "create it first.", **result)
        try:
            grp.getgrnam(p["install_usergroup"])
        except KeyError:
            module.fail_json(msg=f"install_usergroup {p['install_usergroup']} does not exist on the target: "
                                 "create it first.", **result)
    if action not in ("none", "install") and kind == "driver" and p["install_username"]:
        recorded = get_key(install_info, "UserName")
        if recorded and recorded != p["install_username"]:
            module.warn("The driver upgrade keeps the recorded run-time user {}; install_username={} applies "
                        "to fresh installs only.".format(recorded, p["install_username"]))

    # "failed" is always set on success: Ansible otherwise fails a result whose rc is not 0
    # (firmware upgrades exit 2; rc is null when nothing ran)
    if module._diff:
        result["diff"] = dict(before=_diff_text(kind, before),
                              after=_diff_text(kind, before if action == "none" else version))
    if action == "none":
        module.exit_json(failed=False, **result)

    # 6. the command
    cmd = prefix + [path]
    if action == "install":
        cmd.append(FRESH_FLAGS[kind])
    else:
        cmd.append(UPGRADE_FLAG)
    if install_path != DEFAULT_INSTALL_PATH:
        cmd.append(f"--install-path={install_path}")
    if action == "install":
        if p["install_username"]:
            cmd.append("--install-username={}".format(p["install_username"]))
            cmd.append("--install-usergroup={}".format(p["install_usergroup"]))
        if p["install_for_all"]:
            cmd.append("--install-for-all")
    if p["install_scene"]:
        cmd.append("--install-scene={}".format(p["install_scene"]))
    cmd.extend(p["extra_args"] or [])
    cmd.extend(["--quiet", "--nox11"])
    result.update(cmd=cmd, changed=True)

    if module.check_mode:
        result["version_after"] = version
        result["reboot_required"] = kind in ("driver", "firmware")
        module.exit_json(failed=False, **result)

    # 7. install
    rc, out, err = _run(module, cmd, prompt_regex=PROMPT_REGEX)
    verdict = classify_installer_output(kind, rc, out, err)
    result.update(rc=rc, stdout=out, stderr=err, stdout_lines=out.splitlines(),
                  log_path=verdict["log_path"] or DEFAULT_INSTALL_LOG)
    if not verdict["success"]:
        if rc == 257 or verdict["prompt"]:
            why = (f"the installer stopped at an interactive question ({verdict['prompt'] or 'a prompt'}); check its "
                   "prerequisites (DKMS, kernel headers of the running kernel)")
            if verdict["error"]:
                why += f"; {verdict['error']}"
        elif verdict["error"]:
            why = verdict["error"]
        elif rc in (0, 2):
            why = "no success message in its output"
        else:
            lines = [ln.strip() for ln in (out + "\n" + err).splitlines() if ln.strip()]
            why = lines[-1] if lines else "no output"
        module.fail_json(
            msg=f"{kind} installer {name} failed (rc={rc}): {why}. Details in {result['log_path']} on the target.",
            error=verdict["error"], error_lines=verdict["error_lines"], **result)

    after = read_installed(kind, install_path, read_key_value_file(p["install_info"]) or {},
                           arch or machine_arch())
    result["version_after"] = after["version"] if after["installed"] else None
    result["reboot_required"] = verdict["reboot_required"]
    if not versions_equal(result["version_after"], version):
        module.warn(f"{kind} installer reported success but the installed version reads "
                    f"{result['version_after']}, not {version}.")
    if module._diff:
        result["diff"]["after"] = _diff_text(kind, result["version_after"])
    module.exit_json(failed=False, **result)


if __name__ == "__main__":
    main()
