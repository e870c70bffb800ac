"""Simulated vendor packages: makeself behaviour, file names, installer rules and files written."""

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess

import pytest
from simhelpers import ARCH, CURRENT, OTHER_ARCH, PREVIOUS, SIM_PACKAGES, build_all, build_set, make_node

CHECK_OK = "Verifying archive integrity...  100%   SHA256 checksums are OK. All good."
DRIVER_OK = "Driver package installed successfully! Reboot needed for installation/upgrade to take effect!"
DRIVER_NOW = "Driver package installed successfully! The new version takes effect immediately."
FIRMWARE_CHIPS = "The firmware of [2] chips are successfully upgraded."
STAMPED = re.compile(r"^\[(Driver|Firmware)\] \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] \[(INFO|WARNING|ERROR)\]")
FIRMWARE_OK = ("Firmware package installed successfully! Reboot now or after driver installation "
               "for the installation/upgrade to take effect.")
DKMS_FAILED = "[ERROR]Dkms install failed, details in : var/log/ascend_seclog/ascend_install.log."
DKMS_PROMPT = "Do you want to try build driver after input kernel absolute path? [y/n]"
VERSION_INFO_KEYS = ["Version", "ascendhal_version", "Innerversion", "compatible_version", "compatible_version_fw"]


def terminal(text: str) -> str:
    """What a terminal shows: a backspace moves the cursor left, later characters overwrite."""
    screen: list[str] = []
    cursor = 0
    for ch in text:
        if ch == "\b":
            cursor = max(0, cursor - 1)
        elif cursor < len(screen):
            screen[cursor] = ch
            cursor += 1
        else:
            screen.append(ch)
            cursor += 1
    return "".join(screen)


def errors(r) -> list[str]:
    return [line for line in r.stdout.splitlines() if line.startswith("[ERROR]")]


# ----------------------------------------------------------------------------- archives

def test_file_names_and_sha256sums(packages):
    names = sorted(p.name for p in packages.current.iterdir() if not p.name.startswith("."))
    assert names == sorted([
        f"Ascend-hdk-910b-npu-driver_{CURRENT['driver']}_linux-{ARCH}.run",
        f"Ascend-hdk-910b-npu-firmware_{CURRENT['firmware']}.run",
        f"Ascend-cann-toolkit_{CURRENT['cann']}_linux-{ARCH}.run",
        f"Ascend-cann-kernels-910b_{CURRENT['cann']}_linux-{ARCH}.run",
        f"Ascend-docker-runtime_{CURRENT['runtime']}_linux-{ARCH}.run",
        "SHA256SUMS",
    ])
    # Up to 8.0.RCx the kernels package has no arch in its name.
    assert packages.pkg("kernels", "previous").name == f"Ascend-cann-kernels-910b_{PREVIOUS['cann']}_linux.run"
    sums = (packages.current / "SHA256SUMS").read_text().splitlines()
    assert len(sums) == 5
    for line in sums:
        digest, name = re.match(r"^([0-9a-f]{64})  (\S+)$", line).groups()
        assert hashlib.sha256((packages.current / name).read_bytes()).hexdigest() == digest
    assert [p.name for p in packages.other_arch.iterdir() if p.suffix == ".run"] == [
        f"Ascend-hdk-910b-npu-driver_{CURRENT['driver']}_linux-{OTHER_ARCH}.run"]


def test_makeself_check_info_list(node, packages):
    pkg = packages.pkg("driver")
    head = pkg.read_bytes()[:400].decode(errors="replace")
    assert "SIMULATION" in head.splitlines()[1]
    # makeself splits the line: progress and "SHA256 checksums are OK." go to stderr.
    r = node.run(pkg, "--check")
    assert r.returncode == 0
    assert r.stdout == "Verifying archive integrity... All good.\n"
    assert "SHA256 checksums are OK." in r.stderr
    both = subprocess.run([str(pkg), "--check"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=node.env, check=True).stdout
    assert terminal(both.rstrip("\n")) == CHECK_OK
    r = node.run(pkg, "--info")
    assert r.returncode == 0 and "Makeself version 2.4.5" in r.stdout
    r = node.run(pkg, "--list")
    assert r.returncode == 0 and "./install.sh" in r.stdout and "./driver/version.info" in r.stdout
    assert node.events() == []  # none of these ran the installer


def test_corrupt_package_fails_check_and_sum(node, packages, tmp_path):
    bad = tmp_path / packages.pkg("firmware").name
    shutil.copy2(packages.pkg("firmware"), bad)
    r = subprocess.run([str(SIM_PACKAGES / "corrupt.sh"), str(bad)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    sums = dict(reversed(line.split("  ")) for line in (packages.current / "SHA256SUMS").read_text().splitlines())
    assert hashlib.sha256(bad.read_bytes()).hexdigest() != sums[bad.name]
    r = node.run(bad, "--check")
    assert r.returncode != 0
    assert "Error in SHA256 checksums" in r.stderr and "All good" not in r.stdout
    r = node.run(bad, "--full", "--quiet")
    assert r.returncode != 0
    assert node.events() == []


def test_extract_noexec(node, packages, tmp_path):
    dest = tmp_path / "x"
    r = node.run(packages.pkg("driver"), "--noexec", f"--extract={dest}", "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    info = json.loads((dest / "package.info").read_text())
    assert (info["kind"], info["version"], info["arch"]) == ("driver", CURRENT["driver"], ARCH)
    lines = (dest / "driver" / "version.info").read_text().splitlines()
    assert [line.split("=", 1)[0] for line in lines] == VERSION_INFO_KEYS
    assert node.events() == []


def test_vendor_flags_reach_the_script_and_quiet_quiets_makeself(node, packages):
    r = node.install(packages.pkg("toolkit"), "--install", "--install-path=/opt/ascend", "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Verifying archive integrity" not in r.stdout + r.stderr
    assert "Unrecognized flag" not in r.stderr
    assert r.stdout.strip() == "[INFO] Ascend-cann-toolkit install success"
    assert node.p("/opt/ascend/ascend-toolkit/latest").is_symlink()
    r = node.install(packages.pkg("toolkit"), "--version")
    assert r.returncode == 1
    assert errors(r) == ["[ERROR]Unsupported parameter: --version"]
    assert "Usage:" in r.stdout
    r = node.install(packages.pkg("toolkit"), "--quiet")
    assert r.returncode == 1 and errors(r)[0].startswith("[ERROR]No operation specified")
    r = node.install(packages.pkg("driver"), "--install", "--quiet")  # not a driver action
    assert r.returncode == 1 and errors(r) == ["[ERROR]Unsupported parameter: --install"]


# ----------------------------------------------------------------------------- driver

def test_fresh_driver_install_records(node, packages):
    r = node.install(packages.pkg("driver"), "--full", "--install-for-all", "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [DRIVER_NOW]
    lines = node.p("/usr/local/Ascend/driver/version.info").read_text().splitlines()
    assert lines == [
        f"Version={CURRENT['driver']}",
        "ascendhal_version=7.35.19",
        "Innerversion=V100R001C15SPC006B220",
        "compatible_version=[V100R001C30],[V100R001C13],[V100R001C15],[V100R001C17]",
        "compatible_version_fw=[7.0.0,7.5.99]",
    ]
    assert node.p("/etc/ascend_install.info").read_text() == (
        "UserName=HwHiAiUser\nUserGroup=HwHiAiUser\nDriver_Install_Type=full\n"
        "Driver_Install_Path_Param=/usr/local/Ascend\nDriver_Install_For_All=yes\n"
    )
    for real in ("/usr/local/bin/npu-smi", "/usr/local/Ascend/driver/tools/hccn_tool",
                 "/usr/local/Ascend/driver/tools/upgrade-tool", "/usr/local/Ascend/driver/script/uninstall.sh"):
        assert os.access(node.p(real), os.X_OK), real
        assert "SIMULATION" in node.p(real).read_text().splitlines()[1]
    assert node.p("/usr/local/dcmi").is_dir()
    assert node.events() == [f"load driver={CURRENT['driver']}", f"install driver {CURRENT['driver']} mode=full rc=0"]
    log = node.p("/var/log/ascend_seclog/ascend_install.log").read_text()
    assert "[Driver]" in log and DRIVER_NOW in log
    state = json.loads(node.sim("state").stdout)
    assert state["running"]["driver"] == CURRENT["driver"] and state["pending_reboot"] == []
    # A second --full is refused; --upgrade is the way.
    r = node.install(packages.pkg("driver"), "--full", "--quiet")
    assert r.returncode == 1 and "--upgrade" in errors(r)[0]
    assert node.events()[-1] == f"install driver {CURRENT['driver']} mode=full rc=1"


def test_install_info_is_updated_not_clobbered(node, packages):
    node.p("/etc/ascend_install.info").write_text("# site note\nCustom_Key=1\nUserName=HwHiAiUser\n")
    assert node.install(packages.pkg("driver"), "--full", "--quiet").returncode == 0
    assert node.install(packages.pkg("firmware"), "--full", "--quiet").returncode == 0
    text = node.p("/etc/ascend_install.info").read_text()
    assert text.startswith("# site note\nCustom_Key=1\nUserName=HwHiAiUser\n")
    assert node.install_info() == {
        "Custom_Key": "1", "UserName": "HwHiAiUser", "UserGroup": "HwHiAiUser", "Driver_Install_Type": "full",
        "Driver_Install_Path_Param": "/usr/local/Ascend", "Driver_Install_For_All": "no",
        "Firmware_Install_Type": "full", "Firmware_Install_Path_Param": "/usr/local/Ascend",
    }


@pytest.mark.parametrize(("flags", "says"), [
    (("--upgrade", "--install-username=HwHiAiUser", "--install-usergroup=HwHiAiUser"), "cannot be used together"),
    (("--upgrade", "--install-for-all"), "cannot be used together"),
    (("--full", "--upgrade"), "Only one of --full, --upgrade"),
    (("--full", "--install-username=HwHiAiUser"), "must be used together"),
    (("--full", "--install-path=relative/dir"), "absolute path"),
])
def test_bad_flag_combinations_are_refused(booted_node, packages, flags, says):
    before = booted_node.p("/usr/local/Ascend/driver/version.info").read_text()
    r = booted_node.install(packages.pkg("driver", "previous"), *flags, "--quiet")
    assert r.returncode == 1
    assert len(errors(r)) == 1 and says in errors(r)[0], r.stdout
    assert booted_node.p("/usr/local/Ascend/driver/version.info").read_text() == before


def test_missing_install_user(tmp_path, packages):
    n = make_node(tmp_path, with_user=False)
    r = n.install(packages.pkg("driver"), "--full", "--quiet")
    assert r.returncode == 1 and "HwHiAiUser" in errors(r)[0]
    r = n.install(packages.pkg("driver"), "--full", "--install-username=nosuchuser",
                  "--install-usergroup=nosuchgroup", "--quiet")
    assert r.returncode == 1 and "nosuchuser" in errors(r)[0]
    n.set_users({"HwHiAiUser": (1000, 1000)}, {"other": 1000})
    r = n.install(packages.pkg("driver"), "--full", "--quiet")
    assert r.returncode == 1 and "group HwHiAiUser" in errors(r)[0]
    assert not n.p("/usr/local/Ascend/driver").exists()


def test_arch_mismatch(node, packages):
    (pkg,) = [p for p in packages.other_arch.iterdir() if p.suffix == ".run"]
    r = node.install(pkg, "--full", "--quiet")
    assert r.returncode == 1
    assert OTHER_ARCH in errors(r)[0] and ARCH in errors(r)[0]


def test_missing_tools_lists_only_the_missing(node, packages, bare_bin):
    r = node.install(packages.pkg("driver"), "--full", "--quiet", env={"PATH": str(bare_bin)})
    assert r.returncode == 1
    assert errors(r) == ["[ERROR]The list of missing tools: lspci,ifconfig,"]
    only_lspci = node.root.parent / "only-lspci"
    only_lspci.mkdir()
    shutil.copy2(node.stub_bin / "lspci", only_lspci / "lspci")
    shutil.copy2(node.stub_bin / "dkms", only_lspci / "dkms")
    r = node.install(packages.pkg("driver"), "--full", "--quiet", env={"PATH": f"{only_lspci}:{bare_bin}"})
    assert errors(r) == ["[ERROR]The list of missing tools: ifconfig,"]


def test_dkms_missing_quiet_fails_without_prompt(node, packages):
    (node.stub_bin / "dkms").unlink()
    r = node.install(packages.pkg("driver"), "--full", "--quiet")
    assert r.returncode == 1
    assert DKMS_PROMPT not in r.stdout
    assert r.stdout.strip() == DKMS_FAILED
    log = node.p("/var/log/ascend_seclog/ascend_install.log").read_text()
    assert "dkms is not installed" in log


def test_kernel_headers_missing_prompts_without_quiet(node, packages):
    shutil.rmtree(node.p(f"/lib/modules/{os.uname().release}"))
    for answer in ("", "n\n"):
        r = node.install(packages.pkg("driver"), "--full", input=answer)
        assert r.returncode == 1
        assert DKMS_PROMPT in r.stdout and DKMS_FAILED in r.stdout
    assert "kernel headers not found" in node.p("/var/log/ascend_seclog/ascend_install.log").read_text()
    ksrc = node.p("/usr/src/linux-custom")
    ksrc.mkdir(parents=True)
    r = node.install(packages.pkg("driver"), "--full", input="y\n/usr/src/linux-custom\n")
    assert r.returncode == 0, r.stdout
    assert r.stdout.splitlines()[-1].endswith("[INFO]" + DRIVER_NOW)


def test_non_quiet_output_uses_the_vendor_format(node, packages):
    r = node.install(packages.pkg("driver"), "--full")
    assert r.returncode == 0, r.stdout
    # after makeself's own lines ("Verifying archive integrity...", "Uncompressing ..."), the installer's
    lines = r.stdout.splitlines()
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("[")):]
    assert all(STAMPED.match(line) for line in lines), r.stdout
    text = "\n".join(lines)
    assert "[INFO]driver install type: DKMS" in text
    assert "[INFO]LogFile: /var/log/ascend_seclog/ascend_install.log" in text and "[INFO]OperationLogFile: " in text
    assert [int(m) for m in re.findall(r"\[INFO\]upgradePercentage:(\d+)%", text)] == [10, 30, 60, 100]
    assert lines[-1].endswith("[INFO]" + DRIVER_NOW)
    r = node.install(packages.pkg("firmware"), "--full")
    assert r.returncode == 0, r.stdout
    lines = r.stdout.splitlines()
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("[")):]
    assert all(STAMPED.match(line) and line.startswith("[Firmware]") for line in lines), r.stdout
    assert lines[-2].endswith("[INFO]" + FIRMWARE_CHIPS) and lines[-1].endswith("[INFO]" + FIRMWARE_OK)


def test_driver_upgrade_needs_a_reboot(booted_node, packages):
    """The older path: an upgrade over a running driver asks for a reboot and keeps the old one running."""
    r = booted_node.install(packages.pkg("driver", "previous"), "--upgrade", "--quiet", "--nox11")
    assert r.returncode == 0, r.stdout
    assert r.stdout.splitlines() == [DRIVER_OK]
    state = json.loads(booted_node.sim("state").stdout)
    assert state["running"]["driver"] == CURRENT["driver"] and state["pending_reboot"] == ["driver"]


def test_upgrade_requires_installed_and_keeps_user(node, packages):
    r = node.install(packages.pkg("driver"), "--upgrade", "--quiet")
    assert r.returncode == 1 and "--full" in errors(r)[0]
    node.set_users({"HwHiAiUser": (1000, 1000), "ai": (2000, 2000)}, {"HwHiAiUser": 1000, "ai": 2000})
    r = node.install(packages.pkg("driver", "previous"), "--full", "--install-username=ai",
                     "--install-usergroup=ai", "--quiet")
    assert r.returncode == 0, r.stdout
    r = node.install(packages.pkg("driver"), "--upgrade", "--quiet")
    assert r.returncode == 0, r.stdout
    info = node.install_info()
    assert (info["UserName"], info["UserGroup"], info["Driver_Install_Type"]) == ("ai", "ai", "upgrade")
    assert node.p("/usr/local/Ascend/driver/version.info").read_text().startswith(f"Version={CURRENT['driver']}\n")


# ----------------------------------------------------------------------------- firmware

def test_firmware_needs_driver_and_exit_codes(node, packages):
    r = node.install(packages.pkg("firmware"), "--full", "--quiet")
    assert r.returncode == 1 and "driver" in errors(r)[0].lower()
    assert not node.p("/usr/local/Ascend/firmware").exists()
    assert node.install(packages.pkg("driver"), "--full", "--quiet").returncode == 0
    r = node.install(packages.pkg("firmware"), "--upgrade", "--quiet")
    assert r.returncode == 1 and "--full" in errors(r)[0]
    r = node.install(packages.pkg("firmware", "previous"), "--full", "--quiet")
    assert (r.returncode, r.stdout.splitlines()) == (0, [FIRMWARE_CHIPS, FIRMWARE_OK])
    assert node.p("/usr/local/Ascend/firmware/version.info").read_text() == f"Version={PREVIOUS['firmware']}\n"
    r = node.install(packages.pkg("firmware"), "--full", "--quiet")
    assert r.returncode == 1 and "--upgrade" in errors(r)[0]
    r = node.install(packages.pkg("firmware"), "--upgrade", "--quiet")
    assert (r.returncode, r.stdout.splitlines()) == (2, [FIRMWARE_CHIPS, FIRMWARE_OK])
    assert node.install_info()["Firmware_Install_Type"] == "upgrade"
    assert node.events()[-1] == f"install firmware {CURRENT['firmware']} mode=upgrade rc=2"
    # like the real one, the firmware installer takes no user flags and no --install-for-all
    for flag in ("--install-for-all", "--install-username=HwHiAiUser", "--install-usergroup=HwHiAiUser"):
        r = node.install(packages.pkg("firmware"), "--upgrade", flag, "--quiet")
        assert r.returncode == 1 and errors(r) == [f"[ERROR]Unsupported parameter: {flag}"], r.stdout
        assert "--install-username" not in r.stdout.split("Usage:", 1)[1]
    r = node.run(node.p("/usr/local/Ascend/firmware/script/uninstall.sh"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert not node.p("/usr/local/Ascend/firmware").exists()
    assert not any(k.startswith("Firmware_") for k in node.install_info())


# ----------------------------------------------------------------------------- CANN

def test_toolkit_and_kernels(node, packages):
    r = node.install(packages.pkg("kernels", "previous"), "--install", "--quiet")
    assert r.returncode == 1 and "toolkit" in errors(r)[0]
    r = node.install(packages.pkg("toolkit", "previous"), "--install", "--quiet")
    assert r.returncode == 0, r.stdout
    tk = node.p("/usr/local/Ascend/ascend-toolkit")
    assert os.readlink(tk / "latest") == PREVIOUS["cann"]
    info = dict(line.split("=", 1) for line in
                (tk / "latest" / f"{ARCH}-linux" / "ascend_toolkit_install.info").read_text().splitlines())
    assert info["package_name"] == "Ascend-cann-toolkit" and info["version"] == PREVIOUS["cann"]
    assert info["arch"] == ARCH and info["path"].startswith("/usr/local/Ascend/ascend-toolkit/")
    assert node.install(packages.pkg("kernels", "previous"), "--install", "--quiet").returncode == 0
    # kernels must match the toolkit version
    r = node.install(packages.pkg("kernels"), "--upgrade", "--quiet")
    assert r.returncode == 1 and PREVIOUS["cann"] in errors(r)[0]
    # the same version again is refused; another version installs beside it and takes latest
    r = node.install(packages.pkg("toolkit", "previous"), "--install", "--quiet")
    assert r.returncode == 1 and "--upgrade" in errors(r)[0]
    r = node.install(packages.pkg("toolkit"), "--install", "--quiet")
    assert r.returncode == 0, r.stdout
    assert os.readlink(tk / "latest") == CURRENT["cann"]
    assert (tk / PREVIOUS["cann"] / "opp_kernel" / "version.info").exists()
    # --upgrade replaces the version latest points at
    assert node.install(packages.pkg("toolkit"), "--upgrade", "--quiet").returncode == 0
    assert os.readlink(tk / "latest") == CURRENT["cann"]
    # the new toolkit has no kernels yet
    r = node.install(packages.pkg("kernels"), "--upgrade", "--quiet")
    assert r.returncode == 1 and "--install" in errors(r)[0]
    assert node.install(packages.pkg("kernels"), "--install", "--quiet").returncode == 0
    record = dict(line.split("=", 1) for line in
                  (tk / "latest" / "opp_kernel" / "version.info").read_text().splitlines())
    # Version= is a build number, version_dir the package version, required_package_* the ranges
    assert record["version_dir"] == CURRENT["cann"] and record["Version"] != CURRENT["cann"]
    assert record["required_package_driver_version"] == '">=23.0"'
    assert node.install(packages.pkg("kernels"), "--install", "--quiet").returncode == 1
    env = subprocess.run(
        ["bash", "-c", f"source {tk}/set_env.sh && env"], capture_output=True, text=True, check=True,
        env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "", "PYTHONPATH": ""},
    ).stdout
    values = dict(line.split("=", 1) for line in env.splitlines() if "=" in line)
    assert values["ASCEND_TOOLKIT_HOME"] == "/usr/local/Ascend/ascend-toolkit/latest"
    assert "/usr/local/Ascend/ascend-toolkit/latest/lib64" in values["LD_LIBRARY_PATH"].split(":")
    assert values["ASCEND_OPP_PATH"] == "/usr/local/Ascend/ascend-toolkit/latest/opp"
    assert values["PATH"].startswith("/usr/local/Ascend/ascend-toolkit/latest/bin:")


# ----------------------------------------------------------------------------- docker runtime

def test_docker_runtime_merges_daemon_json(node, packages):
    daemon = node.p("/etc/docker/daemon.json")
    daemon.parent.mkdir(parents=True)
    daemon.write_text(json.dumps({"log-driver": "json-file", "runtimes": {"other": {"path": "/x"}}}))
    pkg = packages.pkg("runtime")
    r = node.install(pkg, "--upgrade", "--quiet")
    assert r.returncode == 1 and "--install" in errors(r)[0]
    r = node.install(pkg, "--install", "--install-scene=docker", "--quiet")
    assert r.returncode == 0, r.stdout
    data = json.loads(daemon.read_text())
    assert data == {
        "log-driver": "json-file",
        "runtimes": {"other": {"path": "/x"},
                     "ascend": {"path": "/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime",
                                "runtimeArgs": []}},
        "default-runtime": "ascend",
    }
    assert stat.S_IMODE(daemon.stat().st_mode) == 0o600  # as the vendor's installer leaves it
    base = node.p("/etc/ascend-docker-runtime.d/base.list").read_text().split()
    assert base == ["/usr/local/Ascend/driver/lib64", "/usr/local/Ascend/driver/include", "/usr/local/dcmi",
                    "/usr/local/bin/npu-smi", "/var/queue_schedule"]
    assert os.access(node.p("/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime"), os.X_OK)
    record = node.p("/usr/local/Ascend/Ascend-Docker-Runtime/ascend_docker_runtime_install.info").read_text()
    assert f"version=v{CURRENT['runtime']}" in record.splitlines()
    assert not node.p("/usr/local/Ascend/Ascend-Docker-Runtime/version.info").exists()
    # a second --install is accepted silently, as the vendor's is
    assert node.install(pkg, "--install", "--quiet").returncode == 0
    assert node.install(pkg, "--upgrade", "--quiet").returncode == 0
    assert node.install(pkg, "--install", "--install-scene=podman", "--quiet").returncode == 1
    r = node.install(pkg, "--uninstall", "--quiet")
    assert r.returncode == 0, r.stdout
    assert json.loads(daemon.read_text()) == {"log-driver": "json-file", "runtimes": {"other": {"path": "/x"}}}
    assert not node.p("/usr/local/Ascend/Ascend-Docker-Runtime").exists()
    assert node.events()[-1] == f"install docker-runtime {CURRENT['runtime']} mode=uninstall rc=0"


@pytest.mark.parametrize("args", [
    ["--install", "--quiet", "--nox11"],
    ["--install", "--keep"],
    ["--install", "--install-for-all"],
    ["--install", "--install-username=HwHiAiUser", "--install-usergroup=HwHiAiUser"],
    ["--install", "--full"],
])
def test_docker_runtime_rejects_flags_it_does_not_document(node, packages, args):
    r = node.install(packages.pkg("runtime"), *args)
    assert r.returncode == 1
    assert not node.p("/usr/local/Ascend/Ascend-Docker-Runtime").exists()


@pytest.mark.parametrize("kind", ["driver", "toolkit"])
def test_hdk_and_cann_packages_reject_unknown_flags(node, packages, kind):
    r = node.install(packages.pkg(kind), "--full" if kind == "driver" else "--install", "--feature=all")
    assert r.returncode == 1 and "Unsupported parameter: --feature=all" in r.stdout


def test_docker_runtime_refuses_broken_daemon_json(node, packages):
    daemon = node.p("/etc/docker/daemon.json")
    daemon.parent.mkdir(parents=True)
    daemon.write_text("{not json")
    r = node.install(packages.pkg("runtime"), "--install", "--quiet")
    assert r.returncode == 1 and "daemon.json" in errors(r)[0]
    assert daemon.read_text() == "{not json"


# ----------------------------------------------------------------------------- build-all

def test_build_all_skips_up_to_date_sets(packages):
    # The session's packages were built by build-all.sh into packages.current.parent.
    before = {p: p.stat().st_mtime_ns for p in packages.current.parent.glob("*/*.run")}
    # current and previous (5 each), cann-next and cann-newdriver (toolkit and kernels), runtime-eula (the runtime)
    assert len(before) == 15
    eula = sorted(p.name for p in packages.current.parent.glob("runtime-eula/*.run"))
    assert len(eula) == 1 and eula[0].startswith("Ascend-docker-runtime_26.1.0_linux-"), eula
    r = build_all(packages.current.parent)
    assert r.stdout.splitlines() == [f"packages/{name} is up to date" for name in
                                     ("current", "previous", "cann-next", "cann-newdriver", "runtime-eula")]
    assert {p: p.stat().st_mtime_ns for p in before} == before
    (packages.previous / ".stamp").write_text("stale\n")
    r = build_all(packages.current.parent)
    assert r.stdout.splitlines()[0] == "packages/current is up to date"
    assert len([line for line in r.stdout.splitlines() if line.startswith("built ")]) == 5
    assert all(p.stat().st_mtime_ns == before[p] for p in packages.current.glob("*.run"))
    assert all(p.stat().st_mtime_ns != before[p] for p in packages.previous.glob("*.run"))
    assert (packages.previous / ".stamp").read_text() != "stale\n"


@pytest.fixture(scope="module")
def runtimes(tmp_path_factory):
    """Runtime packages of the versions whose installer options differ (5.x, 6.0.RC3 on, 26.1.0 on)."""
    out = {}
    for version in ("5.0.RC3", "26.1.0"):
        d = tmp_path_factory.mktemp(f"rt-{version}")
        build_set(d, {**CURRENT, "runtime": version}, only="docker-runtime")
        (out[version],) = [p for p in d.iterdir() if p.name.startswith("Ascend-docker-runtime_")]
    return out


def test_a_5x_runtime_has_no_install_scene(node, runtimes):
    r = node.install(runtimes["5.0.RC3"], "--install", "--install-scene=docker", "--quiet")
    assert r.returncode == 1 and "[ERROR] failed, Unsupported parameters: --install-scene=docker" in r.stdout
    r = node.install(runtimes["5.0.RC3"], "--install", "--quiet")
    assert r.returncode == 0, r.stdout


def test_the_26_1_runtime_asks_for_the_eula_and_reads_the_answer(node, runtimes):
    pkg = runtimes["26.1.0"]
    record = node.p("/usr/local/Ascend/Ascend-Docker-Runtime/ascend_docker_runtime_install.info")
    r = node.install(pkg, "--install", "--quiet", input="N\n")
    assert r.returncode == 0 and "[INFO] install cancelled, user declined EULA" in r.stdout
    assert not record.exists()
    r = node.install(pkg, "--install", "--quiet", input="")  # end of input: asked again and again
    assert r.returncode == 1 and r.stdout.count("Do you accept the EULA to install Ascend-docker-runtime?[Y/N]") > 2
    assert not record.exists()
    r = node.install(pkg, "--install", "--install-scene=docker", "--quiet", input="Y\n")
    assert r.returncode == 0, r.stdout
    assert "Do you accept the EULA to install Ascend-docker-runtime?[Y/N]\n[INFO] user accepted EULA" in r.stdout
    assert "version=v26.1.0" in record.read_text().splitlines()
    r = node.install(pkg, "--install", "--ce=isula", input="Y\n")
    assert r.returncode == 1 and "[ERROR] failed, unsupported parameters: --ce=isula" in r.stdout
