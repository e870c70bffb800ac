# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The work of the ascend_package module, one step per method: identify the package, check the
options against the kind's installer flags (run_package.INSTALLER_FLAGS), verify the file, read
what is installed and decide, run the installer, read the result back.
"""

from __future__ import annotations

import grp
import os
import pwd
import re

from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_formats import (
    RecordError,
    get_key,
    read_key_value_file,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_install import (
    DEFAULT_INSTALL_PATH,
    machine_arch,
    read_installed,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_node import (
    driver_reboot_reason,
    firmware_reboot_reason,
    query_firmware,
    query_npu_smi,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_version import (
    compare,
    versions_equal,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.cann_info import package_state
from ansible_collections.ascendops.cluster.plugins.module_utils.run_package import (
    DEFAULT_INSTALL_LOG,
    EULA_ANSWER,
    PROMPT_REGEX,
    InstallerFlagError,
    accepts,
    asks_eula,
    check_output_ok,
    classify_installer_output,
    installer_args,
    parse_package_filename,
    refused_flags,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.vendor_command import vendor_runner

NPU_SMI_PATHS = ["/usr/local/bin", "/usr/local/sbin"]
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?$")
_HEX_RE = re.compile(r"^[0-9a-f]{64}$")


def decide(kind, before, target, allow_downgrade, force):
    """(action, error message or None) for installing ``target`` over ``before``."""
    if before is None:
        return "install", None
    try:
        order = compare(target, before)
    except ValueError as exc:
        if versions_equal(target, before):
            order = 0
        elif force:
            return "reinstall", None
        else:
            return "none", (f"Cannot compare the installed {kind} version {before!r} with the package version "
                            f"{target!r} ({exc}); set force=true to install the package anyway.")
    if order == 0:
        return ("reinstall" if force else "none"), None
    if order > 0:
        return "upgrade", None
    if allow_downgrade:
        return "downgrade", None
    return "none", (f"Refusing to downgrade {kind} from {before} to {target}; set allow_downgrade=true to do it.")


def _diff_text(kind, version):
    return f"{kind} version: {version}\n" if version else ""


class AscendPackageInstall:
    """One ``ascend_package`` task. ``run()`` does the steps in order; each step fails the module
    with a message naming the package and the fix, before anything changes."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.run_cmd = vendor_runner(module)
        self.path = self.p["path"]
        self.name = os.path.basename(self.path)
        self.install_path = os.path.normpath(self.p["install_path"])
        self.result = dict(changed=False, kind=self.p["kind"], version=self.p["version"], action="none",
                           version_before=None, version_after=None, reboot_required=False, reboot_reasons=[],
                           checksum=None, cmd=[], rc=None, stdout="", stderr="", stdout_lines=[], log_path=None)
        self.staged = False
        self.expected = None
        self.kind = self.version = self.arch = None
        self.prefix = []
        self.action = "none"
        self.install_info = {}

    def fail(self, msg, **extra):
        self.module.fail_json(msg=msg, **dict(self.result, **extra))

    def done(self):
        # "failed" is always set on success: Ansible otherwise fails a result whose rc is not 0
        # (firmware upgrades exit 2; rc is null when nothing ran)
        self.module.exit_json(failed=False, **self.result)

    def run(self):
        try:
            self._run()
        except RecordError as exc:
            self.fail(f"cannot read an installed package's version record: {exc}")

    def _run(self):
        self.find_file()
        self.identify()
        self.check_options()
        self.plan()
        if self.action == "none":
            # Nothing runs: the package is not read (a vendor package is gigabytes; its checksum
            # and archive check guard the installer, which a no-op re-run never starts).
            self.done()
        self.verify_file()
        self.build_command()
        if self.module.check_mode:
            self.report_check_mode()
            self.done()
        self.install()
        self.done()

    # 1. the file. In check mode an earlier task may only have reported that it would stage the
    # package: then say what would be done, and leave the checksum and archive checks to the real run.
    def find_file(self):
        self.staged = os.path.isfile(self.path)
        if not self.staged and not self.module.check_mode:
            self.fail(f"Package file {self.path} does not exist on the target (or is not a file).")
        if not self.staged:
            self.module.warn(f"{self.path} is not staged yet (check mode): its checksum and archive are verified "
                             "on the real run.")

    # 2. what it is
    def identify(self):
        p = self.p
        try:
            parsed = parse_package_filename(self.name)
        except ValueError:
            parsed = None
        self.kind = p["kind"] or (parsed.kind if parsed else None)
        self.version = p["version"] or (parsed.version if parsed else None)
        if parsed and p["kind"] and parsed.kind != p["kind"]:
            self.fail(f"Package {self.name} is a {parsed.kind} package by its name, not {p['kind']}; "
                      "check the kind option.")
        if not self.kind or not self.version:
            self.fail(f"Cannot tell the kind and version of {self.name} from its name; set the kind and version "
                      "options.")
        self.result.update(kind=self.kind, version=self.version)
        self.arch = parsed.arch if parsed else None

    # 3. the options, against the flags this kind's installer accepts
    def check_options(self):
        p, kind = self.p, self.kind
        for opt in ("install_username", "install_usergroup"):
            if p[opt] is not None and not _NAME_RE.match(p[opt]):
                self.fail(f"{opt} {p[opt]!r} is not a valid user or group name.")
        if p["install_username"] and not accepts(kind, "--install-username"):
            self.fail(f"install_username and install_usergroup do not apply to the {kind} package: its installer "
                      "takes no user flags (the driver's run-time user applies).")
        if p["install_scene"] and not accepts(kind, "--install-scene"):
            self.fail(f"install_scene applies only to kind=docker_runtime (this is {kind}).")
        bad = refused_flags(kind, p["extra_args"] or [])
        if bad:
            self.fail(f"extra_args {', '.join(bad)} are not accepted by the {kind} installer; pass only the "
                      "flags its installer documents.")
        expected = None
        if p["checksum"]:
            expected = p["checksum"].strip().lower()
            if expected.startswith("sha256:"):
                expected = expected[len("sha256:"):]
            if not _HEX_RE.match(expected):
                self.fail(f"checksum must be a SHA-256 hex digest (64 hex digits), got {p['checksum']!r}.")
        self.expected = expected

    # 4. integrity, before the installer runs (only when it will: see run())
    def verify_file(self):
        if not self.staged:
            return
        if self.expected:
            actual = self.module.digest_from_file(self.path, "sha256")
            self.result["checksum"] = actual
            if actual != self.expected and self.module.check_mode:
                # The staging task before this one would replace the file on a real run (a new package
                # of the same name on the controller): judge the package the manifest names, not this one.
                self.module.warn(f"{self.path} is not the package the manifest names yet (check mode): the "
                                 "staging step replaces it; its checksum and archive are verified on the real run.")
                self.staged = False
                return
            if actual != self.expected:
                self.fail(f"Checksum mismatch for {self.name}: expected sha256 {self.expected}, got {actual}. The "
                          "file is corrupt or not the package the manifest names: re-fetch the package, or fix its "
                          "checksum in the manifest.", expected_checksum=self.expected)
        self.prefix = self.interpreter_prefix()
        check_cmd = self.prefix + [self.path, "--check"]
        rc, out, err = self.run_cmd(check_cmd)
        if not check_output_ok(rc, out, err):
            check_text = " ".join((out + "\n" + err).split())
            self.fail(f"Archive check of {self.name} failed (rc={rc}): {check_text or 'no output'}. Re-fetch the "
                      "package.", check_cmd=check_cmd, check_rc=rc, check_stdout=out, check_stderr=err)

    def interpreter_prefix(self):
        """How to execute the package: through the interpreter of its #! line (makeself archives are
        shell scripts), so that neither a missing execute bit nor a noexec mount matters; directly
        when it has no #! line but is executable."""
        try:
            with open(self.path, "rb") as handle:
                first = handle.readline(256)
        except OSError as exc:
            self.fail(f"Cannot read package {self.path}: {exc}")
        if first.startswith(b"#!"):
            parts = first[2:].decode("utf-8", "replace").strip().split()
            if parts:
                return parts
        if os.access(self.path, os.X_OK):
            return []
        self.fail(f"Package {self.path} is not executable and has no #! line; is it a vendor .run file?")

    # 5. installed version (from the kind's own install record) and action
    def plan(self):
        p, kind, version = self.p, self.kind, self.version
        arch = self.arch or machine_arch()
        self.install_info = read_key_value_file(p["install_info"]) or {}
        state = read_installed(kind, self.install_path, self.install_info, arch)
        before = state["version"] if state["installed"] else None
        if state["installed"] and not before:
            self.fail("{} is installed ({}) but its version cannot be read.".format(kind, state["file"]))
        self.result["version_before"] = self.result["version_after"] = before
        if kind in ("toolkit", "kernels"):
            # CANN versions live side by side: a version not installed yet installs beside the others
            # (--install), one already there is left alone (reinstalled with force)
            before, present = package_state(kind, self.install_path, version, arch)
            self.result["version_before"] = self.result["version_after"] = before
            action, refusal = ("reinstall" if p["force"] else "none") if present else "install", None
        else:
            action, refusal = decide(kind, before, version, p["allow_downgrade"], p["force"])
        if refusal:
            self.fail(refusal)
        self.action = self.result["action"] = action
        if action != "none":
            self.check_eula()
        if p["install_username"] and action == "install":
            self.check_accounts()
        if action not in ("none", "install") and kind == "driver" and p["install_username"]:
            recorded = get_key(self.install_info, "UserName")
            if recorded and recorded != p["install_username"]:
                self.module.warn("The driver upgrade keeps the recorded run-time user {}; install_username={} "
                                 "applies to fresh installs only.".format(recorded, p["install_username"]))
        if self.module._diff:
            self.result["diff"] = dict(before=_diff_text(kind, before),
                                       after=_diff_text(kind, before if action == "none" else version))

    def check_eula(self):
        """An installer that asks to accept an EULA (the docker runtime from 26.1.0) runs only with accept_eula:
        refused before anything runs otherwise (with stdin at end of input it would ask again forever)."""
        asks = asks_eula(self.kind, self.version)
        self.result["eula"] = bool(asks) or asks is None
        if self.result["eula"] and not self.p["accept_eula"]:
            why = "asks" if asks else "may ask (its version cannot be ordered)"
            self.fail(f"{self.name} {why} to accept Huawei's end user license agreement before it installs, and "
                      "accept_eula is false: read the EULA that comes with the package and set accept_eula: true "
                      "(the roles: ascend_accept_eula: true) to answer it; nothing was changed.")

    def check_accounts(self):
        p = self.p
        try:
            pwd.getpwnam(p["install_username"])
        except KeyError:
            self.fail(f"install_username {p['install_username']} does not exist on the target: create it first.")
        try:
            grp.getgrnam(p["install_usergroup"])
        except KeyError:
            self.fail(f"install_usergroup {p['install_usergroup']} does not exist on the target: create it first.")

    # 6. the command, from the kind's accepted flags only
    def build_command(self):
        p = self.p
        try:
            args = installer_args(
                self.kind, self.action,
                install_path=self.install_path if self.install_path != DEFAULT_INSTALL_PATH else None,
                username=p["install_username"], usergroup=p["install_usergroup"], for_all=p["install_for_all"],
                scene=p["install_scene"], extra_args=p["extra_args"], version=self.version)
        except InstallerFlagError as exc:
            self.fail(f"{self.name}: {exc}.")
        self.result.update(cmd=self.prefix + [self.path] + args, changed=True)

    def report_check_mode(self):
        kind = self.kind
        self.result["version_after"] = self.version
        self.result["reboot_required"] = kind in ("driver", "firmware")
        if self.result["reboot_required"]:
            self.result["reboot_reasons"] = [f"check mode: the {kind} would be installed and may need a reboot to run"]

    # 7. install, judge, read back
    def install(self):
        kind, name, result = self.kind, self.name, self.result
        if result.get("eula") and self.p["accept_eula"]:
            # The answer on stdin (as the vendor's docs pipe it: echo Y | ./Ascend-docker-runtime_...run --install).
            rc, out, err = self.run_cmd(result["cmd"], data=EULA_ANSWER, binary_data=True)
        else:
            rc, out, err = self.run_cmd(result["cmd"], prompt_regex=PROMPT_REGEX)
        verdict = classify_installer_output(kind, rc, out, err)
        result.update(rc=rc, stdout=out, stderr=err, stdout_lines=out.splitlines(),
                      log_path=verdict["log_path"] or DEFAULT_INSTALL_LOG)
        if not verdict["success"]:
            self.fail(f"{kind} installer {name} failed (rc={rc}): {self.failure_reason(verdict, out, err)}. Details "
                      f"in {result['log_path']} on the target.",
                      error=verdict["error"], error_lines=verdict["error_lines"])
        if verdict["error_lines"]:
            self.module.warn(f"{kind} installer {name} succeeded (rc={rc}) but printed: "
                             f"{'; '.join(verdict['error_lines'])}")
        after = read_installed(kind, self.install_path, read_key_value_file(self.p["install_info"]) or {},
                               self.arch or machine_arch())
        result["version_after"] = after["version"] if after["installed"] else None
        result["reboot_required"], result["reboot_reasons"] = self.reboot_need(after, verdict)
        if not versions_equal(result["version_after"], self.version):
            self.module.warn(f"{kind} installer reported success but the installed version reads "
                             f"{result['version_after']}, not {self.version}.")
        if self.module._diff:
            result["diff"]["after"] = _diff_text(kind, result["version_after"])

    @staticmethod
    def failure_reason(verdict, out, err):
        if verdict["reason"] == "eula_declined":
            return "the installer reports the EULA declined and installed nothing"
        if verdict["reason"] == "prompt":
            why = (f"the installer stopped at an interactive question ({verdict['prompt'] or 'a prompt'}) that "
                   "nothing answered; check its prerequisites (DKMS, kernel headers of the running kernel)")
            if verdict["error"]:
                why += f"; {verdict['error']}"
            return why
        if verdict["error"]:
            return verdict["error"]
        lines = [ln.strip() for ln in (out + "\n" + err).splitlines() if ln.strip()]
        return lines[-1] if lines else "no output"

    def reboot_need(self, after, verdict):
        """(reboot_required, reasons) after a successful driver or firmware run: the node's own view
        (installed version versus what runs, as npu_info sees it) plus a reboot hint in the output."""
        kind = self.kind
        if kind not in ("driver", "firmware"):
            return False, []
        reasons = []
        if kind == "driver":
            smi_path = self.module.get_bin_path("npu-smi", opt_dirs=NPU_SMI_PATHS)
            smi = query_npu_smi(self.run_cmd, smi_path)
            if smi_path is None:
                smi["error"] = "npu-smi not found"
            reason = driver_reboot_reason(after["version"], smi)
            if reason is None and not smi["available"]:
                reason = f"npu-smi does not answer after the driver install ({smi['error']}); reboot to load the driver"
        else:
            info = read_key_value_file(self.p["install_info"]) or {}
            drv = read_installed("driver", self.install_path, info)
            tool = os.path.join(drv["install_path"], "driver", "tools", "upgrade-tool")
            components, error = query_firmware(self.run_cmd, tool if os.path.isfile(tool) else None)
            reason = firmware_reboot_reason(after["version"], components)
            if reason is None and not components:
                reason = ("the running firmware cannot be read ({}); a new firmware runs only after a "
                          "reboot".format(error or "no upgrade-tool"))
        if reason:
            reasons.append(reason)
        if verdict["reboot_hint"]:
            reasons.append(f"the {kind} installer asks for a reboot")
        return bool(reasons), reasons
