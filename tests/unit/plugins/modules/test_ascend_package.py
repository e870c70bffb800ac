"""ascend_package against fake vendor .run packages that follow docs/sim-contract.md."""

from __future__ import annotations

import grp
import hashlib
import os
import pwd
import time

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils import package_install
from ansible_collections.ascendops.cluster.plugins.modules import ascend_package
from ansible_collections.ascendops.cluster.tests.unit.plugins.modules.ascend_module_harness import (
    fixture_text,
    write_script,
)

DRIVER = "Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run"
DRIVER_OLD = "Ascend-hdk-910b-npu-driver_23.0.0_linux-aarch64.run"
FIRMWARE = "Ascend-hdk-910b-npu-firmware_7.5.0.2.220.run"
TOOLKIT = "Ascend-cann-toolkit_8.0.0_linux-aarch64.run"
KERNELS = "Ascend-cann-kernels-910b_8.0.0_linux.run"
RUNTIME = "Ascend-docker-runtime_6.0.0_linux-aarch64.run"
DEFAULT_LOG = "/var/log/ascend_seclog/ascend_install.log"
USER = pwd.getpwuid(os.getuid()).pw_name
GROUP = grp.getgrgid(os.getgid()).gr_name


@pytest.fixture
def root(tmp_path):
    path = tmp_path / "Ascend"
    path.mkdir()
    return str(path)


@pytest.fixture
def run(run_module, root, tmp_path):
    """run(pkg, **options) with install_path/install_info pointing into tmp_path."""

    def _run(pkg, check_mode=False, diff=False, **options):
        args = {"path": pkg.path, "install_path": root, "install_info": str(tmp_path / "ascend_install.info")}
        args.update(options)
        return run_module(ascend_package.main, args, check_mode=check_mode, diff=diff)

    return _run


@pytest.fixture
def open_stdin():
    """Make fd 0 a pipe that stays open and silent while the module runs (as an SSH session's
    stdin can be): an installer that inherited it would wait on it."""
    read_end, write_end = os.pipe()
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read_end)
        os.close(write_end)


RECORDS = {"driver": ("driver", "version.info", "Version={}\n"),
           "firmware": ("firmware", "version.info", "Version={}\n"),
           "docker_runtime": ("Ascend-Docker-Runtime", "ascend_docker_runtime_install.info", "version=v{}\n")}


def installed(root, kind, version):
    rel, name, line = RECORDS[kind]
    os.makedirs(os.path.join(root, rel), exist_ok=True)
    with open(os.path.join(root, rel, name), "w") as handle:
        handle.write(line.format(version))


def read_version(root, kind):
    rel, name, _line = RECORDS[kind]
    with open(os.path.join(root, rel, name)) as handle:
        return handle.read()


def sha256(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


# ------------------------------------------------------------------ driver: fresh, idempotent, upgrade


def test_fresh_driver_install_uses_full_and_user_flags(run, make_package, root, open_stdin):
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, install_username=USER, install_usergroup=GROUP, install_for_all=True)
    assert not res.get("failed"), res["msg"] if res.get("failed") else ""
    assert res["changed"] is True
    assert res["action"] == "install"
    assert res["kind"] == "driver" and res["version"] == "24.1.rc1"
    assert res["version_before"] is None
    assert res["version_after"] == "24.1.rc1"
    assert res["reboot_required"] is True
    assert res["rc"] == 0
    assert "Driver package installed successfully! Reboot needed for installation/upgrade to take effect!" \
        in res["stdout_lines"]
    calls = pkg.calls()
    assert [argv for _stdin, argv in calls] == [
        ["--check"],
        ["--full", f"--install-path={root}", f"--install-username={USER}",
         f"--install-usergroup={GROUP}", "--install-for-all", "--quiet", "--nox11"],
    ]
    assert res["cmd"] == ["/bin/bash", pkg.path] + calls[1][1]  # through the #! interpreter
    # stdin of the installer is at EOF, never a terminal or pipe that could answer or block
    assert [state for state, _argv in calls] == ["eof", "eof"]
    assert read_version(root, "driver") == "Version=24.1.rc1\n"


def test_second_run_is_idempotent(run, make_package):
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    first = run(pkg, install_for_all=True)
    assert first["changed"] is True
    second = run(pkg, install_for_all=True)
    assert not second.get("failed")
    assert second["changed"] is False
    assert second["action"] == "none"
    assert second["version_before"] == second["version_after"] == "24.1.rc1"
    assert second["cmd"] == [] and second["rc"] is None
    # explicit: Ansible fails a result with a non-zero rc (None included) unless "failed" is set
    assert second["failed"] is False
    assert second["reboot_required"] is False
    # with nothing to install the package is not read: no archive check, no checksum
    assert pkg.argvs()[2:] == []
    assert second["checksum"] is None


def test_upgrade_uses_upgrade_and_never_user_flags(run, make_package, root):
    installed(root, "driver", "23.0.0")
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, install_username=USER, install_usergroup=GROUP, install_for_all=True)
    assert not res.get("failed"), res.get("msg")
    assert res["action"] == "upgrade"
    assert res["version_before"] == "23.0.0"
    assert res["version_after"] == "24.1.rc1"
    install_argv = pkg.argvs()[-1]
    assert install_argv == ["--upgrade", f"--install-path={root}", "--quiet", "--nox11"]
    assert not any(a.startswith("--install-user") or a == "--install-for-all" for a in install_argv)
    assert res["reboot_required"] is True


def test_rc_upgrade_to_release(run, make_package, root):
    installed(root, "driver", "24.1.RC1")
    pkg = make_package("Ascend-hdk-910b-npu-driver_24.1.0_linux-aarch64.run", "driver", "24.1.0")
    res = run(pkg)
    assert res["action"] == "upgrade"
    assert res["version_after"] == "24.1.0"


def test_same_version_different_case_is_installed(run, make_package, root):
    installed(root, "driver", "24.1.RC1")
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg)
    assert res["action"] == "none" and res["changed"] is False


def test_nothing_to_do_reads_no_package_even_a_corrupt_one(run, make_package, root):
    installed(root, "driver", "24.1.rc1")
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, checksum="0" * 64)  # not this file's sha256: never read, the installer never runs
    assert not res.get("failed") and res["action"] == "none" and res["checksum"] is None
    assert pkg.argvs() == []
    # the same corrupt package where it would be installed: refused before the installer runs
    installed(root, "driver", "23.0.0")
    bad = run(pkg, checksum="0" * 64)
    assert bad["failed"] and "Checksum mismatch" in bad["msg"] and pkg.argvs() == []


def test_downgrade_refused(run, make_package, root):
    installed(root, "driver", "24.1.rc1")
    pkg = make_package(DRIVER_OLD, "driver", "23.0.0")
    res = run(pkg)
    assert res["failed"]
    assert "downgrade" in res["msg"] and "24.1.rc1" in res["msg"] and "23.0.0" in res["msg"]
    assert "allow_downgrade" in res["msg"]
    assert pkg.argvs() == []  # refused before the package is read
    assert read_version(root, "driver") == "Version=24.1.rc1\n"


def test_downgrade_allowed(run, make_package, root):
    installed(root, "driver", "24.1.rc1")
    pkg = make_package(DRIVER_OLD, "driver", "23.0.0")
    res = run(pkg, allow_downgrade=True)
    assert not res.get("failed"), res.get("msg")
    assert res["action"] == "downgrade"
    assert pkg.argvs()[-1][0] == "--upgrade"
    assert res["version_after"] == "23.0.0"


def test_force_reinstalls_same_version(run, make_package, root):
    installed(root, "driver", "24.1.rc1")
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, force=True, install_for_all=True)
    assert not res.get("failed"), res.get("msg")
    assert res["changed"] is True and res["action"] == "reinstall"
    assert pkg.argvs()[-1] == ["--upgrade", f"--install-path={root}", "--quiet", "--nox11"]


def test_driver_found_through_install_info(run, make_package, root, tmp_path):
    other = tmp_path / "opt-Ascend"
    installed(str(other), "driver", "23.0.0")
    (tmp_path / "ascend_install.info").write_text(f"Driver_Install_Path_Param={other}\n")
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, check_mode=True)
    assert res["version_before"] == "23.0.0"
    assert res["action"] == "upgrade"


# ------------------------------------------------------------------ check mode, diff


def test_check_mode_runs_only_the_archive_check(run, make_package, root):
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, check_mode=True, checksum=sha256(pkg.path), install_for_all=True)
    assert not res.get("failed"), res.get("msg")
    assert res["changed"] is True
    assert res["action"] == "install"
    assert res["cmd"][2:] == ["--full", f"--install-path={root}", "--install-for-all", "--quiet", "--nox11"]
    assert res["rc"] is None
    assert res["version_before"] is None and res["version_after"] == "24.1.rc1"
    assert pkg.argvs() == [["--check"]]
    assert not os.path.exists(os.path.join(root, "driver"))


def test_check_mode_idempotent(run, make_package, root):
    installed(root, "driver", "24.1.rc1")
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, check_mode=True)
    assert res["changed"] is False and res["action"] == "none"


def test_check_mode_reports_a_package_not_staged_yet(run, root, tmp_path):
    # In check mode the staging copy before this task changed nothing: the file is absent.
    missing = tmp_path / DRIVER

    class Missing:
        path = str(missing)

    res = run(Missing, check_mode=True, checksum="0" * 64)
    assert not res.get("failed"), res.get("msg")
    assert res["changed"] is True and res["action"] == "install"
    assert res["version_after"] == "24.1.rc1"
    assert any("not staged yet" in w for w in res.get("warnings", [])), res.get("warnings")
    assert not missing.exists() and not os.path.exists(os.path.join(root, "driver"))


def test_check_mode_with_a_stale_staged_package_reports_not_fails(run, make_package, root):
    # A new package of the same name on the controller: the staging copy (a change in check mode) would
    # replace the staged file, so --check --diff reports the install instead of failing on the old file.
    installed(root, "driver", "23.0.0")
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, check_mode=True, checksum="1" * 64)
    assert not res.get("failed"), res.get("msg")
    assert res["changed"] is True and res["action"] == "upgrade"
    assert any("not the package the manifest names yet" in w for w in res.get("warnings", []))
    assert pkg.argvs() == []  # the stale file is not even archive-checked
    # a real run still refuses it
    res = run(pkg, checksum="1" * 64)
    assert res["failed"] and "Checksum mismatch" in res["msg"]


def test_missing_package_fails_on_a_real_run(run, tmp_path):
    class Missing:
        path = str(tmp_path / DRIVER)

    res = run(Missing)
    assert res["failed"] and "does not exist" in res["msg"]


def test_default_install_path_not_passed(run_module, make_package, tmp_path, root, monkeypatch):
    # the vendor default, moved into tmp_path so that the host's /usr/local/Ascend does not matter
    monkeypatch.setattr(package_install, "DEFAULT_INSTALL_PATH", root)
    monkeypatch.setattr(ascend_package, "DEFAULT_INSTALL_PATH", root)
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run_module(ascend_package.main, {"path": pkg.path, "install_info": str(tmp_path / "none")},
                     check_mode=True)
    assert res["action"] == "install"
    assert not any(a.startswith("--install-path") for a in res["cmd"])
    assert res["cmd"][-2:] == ["--quiet", "--nox11"]


def test_diff(run, make_package, root):
    installed(root, "driver", "23.0.0")
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, diff=True)
    assert res["diff"] == {"before": "driver version: 23.0.0\n", "after": "driver version: 24.1.rc1\n"}
    fresh = make_package(FIRMWARE, "firmware", "7.5.0.2.220")
    res = run(fresh, diff=True, check_mode=True)
    assert res["diff"] == {"before": "", "after": "firmware version: 7.5.0.2.220\n"}
    assert "diff" not in run(fresh, check_mode=True)


# ------------------------------------------------------------------ checksum and archive check


def test_checksum_mismatch_fails_before_anything_runs(run, make_package, root):
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    wrong = "0" * 64
    res = run(pkg, checksum=wrong)
    assert res["failed"]
    actual = sha256(pkg.path)
    assert DRIVER in res["msg"]
    assert wrong in res["msg"] and actual in res["msg"]
    assert "re-fetch" in res["msg"] and "manifest" in res["msg"]
    assert root not in res["msg"]  # host-agnostic: names the file, not where it sits
    assert pkg.calls() == []
    assert res["checksum"] == actual


def test_checksum_match_with_prefix_and_upper_case(run, make_package):
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, checksum="sha256:" + sha256(pkg.path).upper())
    assert not res.get("failed"), res.get("msg")
    assert res["checksum"] == sha256(pkg.path)


def test_checksum_must_be_sha256(run, make_package):
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, checksum="abc123")
    assert res["failed"] and "64 hex" in res["msg"]
    assert pkg.calls() == []


def test_archive_check_failure(run, make_package, root):
    pkg = make_package(DRIVER, "driver", "24.1.rc1", check_rc=2)
    res = run(pkg, check_mode=True)
    assert res["failed"]
    assert "Error in SHA256 checksums" in res["msg"] and "rc=2" in res["msg"]
    res = run(pkg)
    assert res["failed"]
    assert pkg.argvs() == [["--check"], ["--check"]]


# ------------------------------------------------------------------ firmware


def test_firmware_fresh_full_rc0(run, make_package, root):
    installed(root, "driver", "24.1.rc1")
    pkg = make_package(FIRMWARE, "firmware", "7.5.0.2.220")
    res = run(pkg)
    assert not res.get("failed"), res.get("msg")
    assert res["rc"] == 0 and res["action"] == "install"
    assert pkg.argvs()[-1][0] == "--full"
    assert res["reboot_required"] is True


def test_firmware_upgrade_rc2_is_success(run, make_package, root):
    installed(root, "firmware", "7.1.0.11.220")
    pkg = make_package(FIRMWARE, "firmware", "7.5.0.2.220")
    res = run(pkg)
    assert not res.get("failed"), res.get("msg")
    assert res["rc"] == 2
    assert res["failed"] is False  # else Ansible would judge the task by rc 2
    assert res["changed"] is True and res["action"] == "upgrade"
    assert res["version_before"] == "7.1.0.11.220" and res["version_after"] == "7.5.0.2.220"
    assert res["reboot_required"] is True
    assert pkg.argvs()[-1][0] == "--upgrade"


def test_firmware_gets_no_user_flags_and_no_install_for_all(run, make_package, root):
    installed(root, "driver", "24.1.rc1")
    pkg = make_package(FIRMWARE, "firmware", "7.5.0.2.220")
    res = run(pkg, install_for_all=True)
    assert not res.get("failed"), res.get("msg")
    assert pkg.argvs()[-1] == ["--full", f"--install-path={root}", "--quiet", "--nox11"]


@pytest.mark.parametrize("options", [
    {"install_username": USER, "install_usergroup": GROUP},
    {"extra_args": ["--install-for-all"]},
    {"extra_args": [f"--install-username={USER}"]},
])
def test_firmware_refuses_user_flags(run, make_package, root, options):
    installed(root, "driver", "24.1.rc1")
    pkg = make_package(FIRMWARE, "firmware", "7.5.0.2.220")
    res = run(pkg, **options)
    assert res["failed"]
    assert "firmware" in res["msg"]
    assert "not accepted by the firmware installer" in res["msg"] or "no user flags" in res["msg"]
    assert pkg.argvs() == []  # refused before anything ran


def test_firmware_reboot_from_the_running_version(run, make_package, root, tmp_path):
    """upgrade-tool still reports the old firmware on device 1: reboot, named by device."""
    installed(root, "driver", "24.1.rc1")
    out = tmp_path / "ut.out"
    out.write_text(fixture_text("upgrade_tool_version_braces.txt"))
    os.makedirs(os.path.join(root, "driver", "tools"))
    write_script(os.path.join(root, "driver", "tools", "upgrade-tool"), f"#!/bin/sh\ncat {out}\n")
    pkg = make_package(FIRMWARE, "firmware", "7.5.0.2.220")
    res = run(pkg)
    assert not res.get("failed"), res.get("msg")
    assert res["reboot_required"] is True
    assert "device(s) 1 (running 7.1.0.11.220)" in res["reboot_reasons"][0]
    assert "the firmware installer asks for a reboot" in res["reboot_reasons"]


def test_internal_build_installed_is_refused_by_name(run, make_package, root):
    installed(root, "driver", "8.3.T5.0.B028")
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg)
    assert res["failed"]
    assert "'8.3.T5.0.B028'" in res["msg"] and "build-internal" in res["msg"] and "force" in res["msg"]
    assert "Traceback" not in res["msg"]


# ------------------------------------------------------------------ installer failures


def test_dkms_error_quoted_with_log(run, make_package):
    pkg = make_package(DRIVER, "driver", "24.1.rc1", mode="dkms")
    res = run(pkg)
    assert res["failed"]
    assert "[ERROR]Dkms install failed, details in : var/log/ascend_seclog/ascend_install.log." in res["msg"]
    assert DEFAULT_LOG + " on the target" in res["msg"]
    assert "rc=1" in res["msg"]
    assert res["rc"] == 1 and res["log_path"] == DEFAULT_LOG
    assert res["changed"] is True  # the installer ran: the host may be partly changed


def test_missing_tools_error_quoted(run, make_package):
    pkg = make_package(DRIVER, "driver", "24.1.rc1", mode="missing_tools")
    res = run(pkg)
    assert res["failed"]
    assert "[ERROR]The list of missing tools: lspci,ifconfig," in res["msg"]
    assert DEFAULT_LOG in res["msg"]


def test_prompt_never_waits(run, make_package, open_stdin):
    pkg = make_package(DRIVER, "driver", "24.1.rc1", mode="prompt")
    start = time.monotonic()
    res = run(pkg)
    assert time.monotonic() - start < 10
    assert res["failed"]
    assert "interactive question" in res["msg"]
    assert "[y/n]" in res["msg"]
    assert [state for state, _argv in pkg.calls()] == ["eof", "eof"]


def test_rc0_without_success_line_succeeds(run, make_package):
    """A --quiet run may print nothing: the exit code decides."""
    pkg = make_package(DRIVER, "driver", "24.1.rc1", mode="nosuccess")
    res = run(pkg)
    assert not res.get("failed"), res.get("msg")
    assert res["stdout"] == "" and res["version_after"] == "24.1.rc1"


@pytest.mark.parametrize("mode,failed", [("rc3", False), ("rc1", True), ("error_rc0", True)])
def test_driver_verdict_is_the_exit_code_and_error_lines(run, make_package, mode, failed):
    pkg = make_package(DRIVER, "driver", "24.1.rc1", mode=mode)
    res = run(pkg)
    assert bool(res.get("failed")) is failed, res.get("msg")
    if mode == "error_rc0":
        assert "[ERROR]Driver install failed" in res["msg"]
    if mode == "rc1":
        assert "rc=1" in res["msg"]


def fake_npu_smi(tmp_path, monkeypatch, running_version):
    """An npu-smi on PATH that shows 8 healthy NPUs under the running driver ``running_version``."""
    table = fixture_text("npu_smi_info_910b_8npu.txt").replace("| Alarm         |", "| OK            |").replace(
        "| Warning       |", "| OK            |").replace("Version: 24.1.rc1", f"Version: {running_version:<8}")
    bindir = tmp_path / "smi-bin"
    bindir.mkdir(exist_ok=True)
    (tmp_path / "smi.out").write_text(table)
    write_script(bindir / "npu-smi", f"#!/bin/sh\ncat {tmp_path / 'smi.out'}\n")
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")


def test_fresh_driver_that_takes_effect_immediately_needs_no_reboot(run, make_package, tmp_path, monkeypatch):
    fake_npu_smi(tmp_path, monkeypatch, "24.1.rc1")
    pkg = make_package(DRIVER, "driver", "24.1.rc1", mode="immediate")
    res = run(pkg)
    assert not res.get("failed"), res.get("msg")
    assert res["reboot_required"] is False and res["reboot_reasons"] == []


def test_driver_not_running_after_install_needs_reboot(run, make_package, tmp_path, monkeypatch):
    """Whatever the wording, the node's own view decides: npu-smi still runs the old driver."""
    fake_npu_smi(tmp_path, monkeypatch, "23.0.0")
    pkg = make_package(DRIVER, "driver", "24.1.rc1", mode="immediate")
    res = run(pkg)
    assert res["reboot_required"] is True
    assert "differs from the running driver 23.0.0" in res["reboot_reasons"][0]


def test_driver_reboot_hint_counts_even_when_npu_smi_agrees(run, make_package, tmp_path, monkeypatch):
    fake_npu_smi(tmp_path, monkeypatch, "24.1.rc1")
    pkg = make_package(DRIVER, "driver", "24.1.rc1")  # prints "Reboot needed ..."
    res = run(pkg)
    assert res["reboot_required"] is True
    assert res["reboot_reasons"] == ["the driver installer asks for a reboot"]


def test_full_on_installed_host_is_not_attempted(run, make_package, root):
    """An installed driver is upgraded: the installer's own '--full' refusal is never hit."""
    installed(root, "driver", "23.0.0")
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg)
    assert not res.get("failed"), res.get("msg")
    assert "--full" not in pkg.argvs()[-1]


# ------------------------------------------------------------------ toolkit, kernels, docker runtime


def test_toolkit_fresh_then_a_new_version_beside_through_latest_link(run, make_package, root):
    old = make_package("Ascend-cann-toolkit_8.0.RC3_linux-aarch64.run", "toolkit", "8.0.RC3")
    res = run(old, install_username=USER, install_usergroup=GROUP)
    assert not res.get("failed"), res.get("msg")
    assert old.argvs()[-1] == ["--install", f"--install-path={root}", f"--install-username={USER}",
                               f"--install-usergroup={GROUP}", "--quiet", "--nox11"]
    assert res["version_after"] == "8.0.RC3" and res["reboot_required"] is False
    new = make_package(TOOLKIT, "toolkit", "8.0.0")
    res = run(new, install_username=USER, install_usergroup=GROUP)
    assert not res.get("failed"), res.get("msg")
    # CANN versions live side by side: a new version is a fresh --install beside the old one
    assert res["action"] == "install" and res["version_before"] == "8.0.RC3"
    assert new.argvs()[-1] == ["--install", f"--install-path={root}", f"--install-username={USER}",
                               f"--install-usergroup={GROUP}", "--quiet", "--nox11"]
    assert res["version_after"] == "8.0.0"
    assert os.readlink(os.path.join(root, "ascend-toolkit", "latest")) == "8.0.0"
    assert run(new)["action"] == "none"
    # an installed version that latest no longer points at is still "installed": nothing to do
    assert run(old)["action"] == "none"


def test_kernels_name_without_arch(run, make_package, root):
    assert not run(make_package(TOOLKIT, "toolkit", "8.0.0")).get("failed")
    pkg = make_package(KERNELS, "kernels", "8.0.0")
    res = run(pkg)
    assert not res.get("failed"), res.get("msg")
    assert pkg.argvs()[-1][0] == "--install"
    assert res["version_after"] == "8.0.0"
    assert os.path.isfile(os.path.join(root, "ascend-toolkit", "8.0.0", "opp_kernel", "version.info"))
    assert run(pkg)["action"] == "none"


def test_docker_runtime_scene(run, make_package, root):
    # the runtime's own header rejects --nox11 (exit 1): it gets --quiet alone
    pkg = make_package(RUNTIME, "docker_runtime", "6.0.0")
    res = run(pkg, install_scene="containerd")
    assert not res.get("failed"), res.get("msg")
    assert pkg.argvs()[-1] == ["--install", f"--install-path={root}", "--install-scene=containerd", "--quiet"]
    assert res["reboot_required"] is False
    installed(root, "docker_runtime", "5.0.0")
    res = run(pkg, install_scene="containerd")
    assert res["action"] == "upgrade"
    assert pkg.argvs()[-1] == ["--upgrade", f"--install-path={root}", "--install-scene=containerd", "--quiet"]


@pytest.mark.parametrize("options", [
    {"extra_args": ["--nox11"]},
    {"install_username": USER, "install_usergroup": GROUP},
    {"extra_args": ["--install-for-all"]},
])
def test_docker_runtime_gets_only_its_flags(run, make_package, options):
    pkg = make_package(RUNTIME, "docker_runtime", "6.0.0")
    res = run(pkg, **options)
    assert res["failed"] and "docker_runtime" in res["msg"]
    assert pkg.argvs() == []  # refused before anything ran


def test_docker_runtime_install_for_all_is_not_passed(run, make_package, root):
    pkg = make_package(RUNTIME, "docker_runtime", "6.0.0")
    res = run(pkg, install_for_all=True)
    assert not res.get("failed"), res.get("msg")
    assert "--install-for-all" not in pkg.argvs()[-1]


def test_docker_runtime_version_from_its_install_record(run, make_package, root):
    """The vendor's record is Ascend-Docker-Runtime/ascend_docker_runtime_install.info, version=v6.0.0."""
    rt = os.path.join(root, "Ascend-Docker-Runtime")
    os.makedirs(rt, exist_ok=True)
    with open(os.path.join(rt, "ascend_docker_runtime_install.info"), "w") as handle:
        handle.write("version=v6.0.0\narch=x86_64\nos=linux\npath=" + rt + "\n"
                     "build=Ascend-docker-runtime_6.0.0-x86_64\na500=n\n")
    pkg = make_package(RUNTIME, "docker_runtime", "6.0.0")
    res = run(pkg)
    assert not res.get("failed"), res.get("msg")
    assert res["action"] == "none" and not res["changed"]
    assert res["version_before"] == "v6.0.0"
    assert [a for a in pkg.argvs() if a != ["--check"]] == []
    assert run(make_package(RUNTIME.replace("6.0.0", "7.0.0"), "docker_runtime", "7.0.0"))["action"] == "upgrade"


def test_install_scene_only_for_docker_runtime(run, make_package):
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, install_scene="docker")
    assert res["failed"] and "docker_runtime" in res["msg"]
    assert pkg.calls() == []


def test_extra_args_before_quiet(run, make_package, root):
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, extra_args=["--install-for-all"])
    assert not res.get("failed"), res.get("msg")
    assert pkg.argvs()[-1] == ["--full", f"--install-path={root}", "--install-for-all", "--quiet", "--nox11"]


def test_extra_args_the_installer_does_not_accept(run, make_package):
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, extra_args=["--feature=all"])
    assert res["failed"] and "--feature=all" in res["msg"] and "driver installer" in res["msg"]
    assert pkg.argvs() == []


# ------------------------------------------------------------------ option validation and file handling


def test_user_flags_both_or_none(run, make_package):
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, install_username=USER)
    assert res["failed"] and "install_usergroup" in res["msg"]
    assert pkg.calls() == []


def test_user_name_validated(run, make_package):
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, install_username="bad user;rm", install_usergroup=GROUP)
    assert res["failed"] and "not a valid user" in res["msg"]
    assert pkg.calls() == []


def test_missing_user_fails_before_installing(run, make_package):
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, install_username="no_such_user_ascendops", install_usergroup=GROUP)
    assert res["failed"] and "does not exist" in res["msg"]
    assert pkg.argvs() == []  # refused before the package is read or run


def test_kind_must_match_file_name(run, make_package):
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, kind="firmware")
    assert res["failed"] and "is a driver package" in res["msg"]


def test_unknown_name_needs_kind_and_version(run, make_package, root):
    pkg = make_package("driver.run", "driver", "24.1.rc1")
    res = run(pkg)
    assert res["failed"] and "kind and version" in res["msg"]
    res = run(pkg, kind="driver", version="24.1.rc1")
    assert not res.get("failed"), res.get("msg")
    assert res["version_after"] == "24.1.rc1"


def test_missing_file(run_module, tmp_path):
    res = run_module(ascend_package.main, {"path": str(tmp_path / DRIVER)})
    assert res["failed"] and "does not exist" in res["msg"]


def test_not_executable_package_runs_through_its_interpreter(run, make_package):
    pkg = make_package(DRIVER, "driver", "24.1.rc1", executable=False)
    res = run(pkg)
    assert not res.get("failed"), res.get("msg")
    assert res["cmd"][0] == "/bin/bash" and res["cmd"][1] == pkg.path
    assert not os.access(pkg.path, os.X_OK)  # the module changed nothing
    assert len(pkg.calls()) == 2


def test_not_a_script(run, tmp_path):
    path = write_script(tmp_path / DRIVER, "\x7fELF not a shell archive", executable=False)

    class Pkg:
        pass

    pkg = Pkg()
    pkg.path = path
    res = run(pkg)
    assert res["failed"] and "not executable" in res["msg"]


def test_version_warning_when_record_disagrees(run, make_package, root):
    pkg = make_package(DRIVER, "driver", "24.1.rc1")
    res = run(pkg, version="24.1.rc2")  # the name says rc1, the caller insists on rc2
    assert not res.get("failed"), res.get("msg")
    assert res["version"] == "24.1.rc2" and res["version_after"] == "24.1.rc1"
    assert any("24.1.rc2" in w for w in res["warnings"])


RUNTIME_EULA = "Ascend-docker-runtime_26.1.0_linux-aarch64.run"


def test_an_installer_that_asks_for_the_eula_is_refused_before_it_runs(run, make_package, root):
    """26.1.0 asks on --install and --upgrade and asks again on end of input: never started unanswered."""
    pkg = make_package(RUNTIME_EULA, "docker_runtime", "26.1.0", mode="eula")
    res = run(pkg)
    assert res["failed"] and "accept_eula" in res["msg"] and RUNTIME_EULA in res["msg"]
    assert "nothing was changed" in res["msg"]
    assert pkg.argvs() == []  # not even the archive check
    installed(root, "docker_runtime", "7.3.0")
    res = run(pkg)
    assert res["failed"] and res["action"] == "upgrade" and pkg.argvs() == []


def test_accepted_eula_is_answered_on_stdin_and_read_as_answered(run, make_package, root):
    pkg = make_package(RUNTIME_EULA, "docker_runtime", "26.1.0", mode="eula")
    res = run(pkg, accept_eula=True, install_scene="docker")
    assert not res.get("failed"), res.get("msg")
    assert res["changed"] and res["eula"] is True and res["version_after"] == "v26.1.0"
    assert "[INFO] user accepted EULA" in res["stdout_lines"]
    assert pkg.calls()[-1] == ("data", ["--install", f"--install-path={root}", "--install-scene=docker", "--quiet"])


def test_a_runtime_before_26_1_is_not_asked_and_gets_no_answer(run, make_package, root):
    pkg = make_package(RUNTIME.replace("6.0.0", "26.0.1"), "docker_runtime", "26.0.1")
    res = run(pkg, accept_eula=True)
    assert not res.get("failed"), res.get("msg")
    assert res["eula"] is False and pkg.calls()[-1][0] == "eof"


def test_scene_is_not_passed_to_a_runtime_that_has_no_such_option(run, make_package, root):
    """5.x's run_main.sh answers --install-scene with "Unsupported parameters" (rc 1): docker is its only scene."""
    pkg = make_package("Ascend-docker-runtime_5.0.RC3_linux-aarch64.run", "docker_runtime", "5.0.RC3")
    res = run(pkg, install_scene="containerd")
    assert res["failed"] and "has no --install-scene" in res["msg"]
    assert [a for a in pkg.argvs() if a != ["--check"]] == []
    res = run(pkg, install_scene="docker")
    assert not res.get("failed"), res.get("msg")
    assert pkg.argvs()[-1] == ["--install", f"--install-path={root}", "--quiet"]


def test_second_run_of_an_unchanged_runtime_installs_nothing(run, make_package, root):
    """The runtime installer would accept a second --install silently: only the record check keeps it at none."""
    pkg = make_package(RUNTIME, "docker_runtime", "6.0.0")
    assert run(pkg)["action"] == "install"
    res = run(pkg)
    assert res["action"] == "none" and not res["changed"]
    assert [a for a in pkg.argvs() if a != ["--check"]] == [["--install", f"--install-path={root}", "--quiet"]]
