""".run package names and installer verdicts (plugins/module_utils/run_package.py)."""

from __future__ import annotations

import re

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.run_package import (
    DEFAULT_INSTALL_LOG,
    INSTALLER_FLAGS,
    PACKAGE_KINDS,
    PACKAGE_NAME_TABLE,
    PROMPT_REGEX,
    InstallerFlagError,
    accepts,
    check_output_ok,
    classify_installer_output,
    installer_args,
    package_filename,
    parse_package_filename,
    refused_flags,
)

# ------------------------------------------------------------------ package names


@pytest.mark.parametrize("name,expected", [
    ("Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run", ("driver", "24.1.rc1", "aarch64", "910b")),
    ("/opt/pkg/Ascend-hdk-910b-npu-driver_23.0.0_linux-x86_64.run", ("driver", "23.0.0", "x86_64", "910b")),
    ("Ascend-hdk-910b-npu-firmware_7.5.0.2.220.run", ("firmware", "7.5.0.2.220", None, "910b")),
    ("Ascend-hdk-910b-npu-firmware_7.1.0.11.220.run", ("firmware", "7.1.0.11.220", None, "910b")),
    ("Ascend-cann-toolkit_8.0.0_linux-aarch64.run", ("toolkit", "8.0.0", "aarch64", None)),
    ("Ascend-cann-toolkit_8.0.RC3_linux-x86_64.run", ("toolkit", "8.0.RC3", "x86_64", None)),
    ("Ascend-cann-kernels-910b_8.0.0_linux.run", ("kernels", "8.0.0", None, "910b")),
    ("Ascend-cann-kernels-910b_8.0.RC3_linux-aarch64.run", ("kernels", "8.0.RC3", "aarch64", "910b")),
    ("Ascend-docker-runtime_6.0.0_linux-aarch64.run", ("docker_runtime", "6.0.0", "aarch64", None)),
    ("Ascend-docker-runtime_5.0.0_linux-x86_64.run", ("docker_runtime", "5.0.0", "x86_64", None)),
    ("Ascend-hdk-910b-npu-driver_24.1.rc1.b030_linux-aarch64.run", ("driver", "24.1.rc1.b030", "aarch64", "910b")),
    # Atlas A3 (Atlas 900 A3 SuperPoD / 800T A3)
    ("Atlas-A3-hdk-npu-driver_24.1.rc3_linux-aarch64.run", ("driver", "24.1.rc3", "aarch64", "a3")),
    ("Atlas-A3-hdk-npu-firmware_7.5.0.3.220.run", ("firmware", "7.5.0.3.220", None, "a3")),
    ("Atlas-A3-hdk-npu-driver_25.0.rc1.1_linux-x86_64.run", ("driver", "25.0.rc1.1", "x86_64", "a3")),
    # 310P, in both spellings, and x86-64
    ("Ascend-hdk-310p-npu-driver_23.0.0_linux-aarch64.run", ("driver", "23.0.0", "aarch64", "310p")),
    ("Ascend-hdk-310P-npu-driver_23.0.0_linux-x86-64.run", ("driver", "23.0.0", "x86_64", "310p")),
    ("Ascend-hdk-310p-npu-firmware_7.1.0.4.220.run", ("firmware", "7.1.0.4.220", None, "310p")),
    # build-internal and alpha versions are versions in a name too
    ("Ascend-cann-toolkit_8.3.T5.0.B028_linux-aarch64.run", ("toolkit", "8.3.T5.0.B028", "aarch64", None)),
    ("Ascend-cann-toolkit_8.0.0.alpha002_linux-aarch64.run", ("toolkit", "8.0.0.alpha002", "aarch64", None)),
    # older releases: HDK names without "npu-", the Atlas 800 training servers' own names
    ("Ascend-hdk-910b-firmware_7.5.0.1.129.run", ("firmware", "7.5.0.1.129", None, "910b")),
    ("Ascend-hdk-910-driver_23.0.rc1_linux-aarch64.run", ("driver", "23.0.rc1", "aarch64", "910")),
    ("A800-9010-npu-driver_21.0.2_linux-x86_64.run", ("driver", "21.0.2", "x86_64", "a800-9010")),
    ("A800-9000-npu-driver_21.0.4_linux-aarch64.run", ("driver", "21.0.4", "aarch64", "a800-9000")),
    ("A800-9000-npu-firmware_1.79.22.5.220.run", ("firmware", "1.79.22.5.220", None, "a800-9000")),
])
def test_package_file_names(name, expected):
    parsed = parse_package_filename(name)
    assert tuple(parsed) == expected
    assert parsed.kind == expected[0]


@pytest.mark.parametrize("name", [
    "Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.tar.gz",
    "Ascend-hdk-910b-npu-driver_24.1.rc1.run",
    "Ascend-cann-toolkit_8.0.0_linux-sparc.run",
    "Atlas-A3-hdk-npu-driver_24.1.rc3.run",
    "Atlas-A2-hdk-npu-driver_24.1.rc3_linux-aarch64.run",
    "random.run",
    "",
])
def test_unknown_package_names(name):
    with pytest.raises(ValueError, match="not a known Ascend package"):
        parse_package_filename(name)


# ------------------------------------------------------------------ installer output

DRIVER_OK = "Driver package installed successfully! Reboot needed for installation/upgrade to take effect!"
FIRMWARE_OK = ("Firmware package installed successfully! Reboot now or after driver installation "
               "for the installation/upgrade to take effect.")
MISSING_TOOLS = "[ERROR]The list of missing tools: lspci,ifconfig,"
DKMS = "[ERROR]Dkms install failed, details in : var/log/ascend_seclog/ascend_install.log."


IMMEDIATE = "Driver package installed successfully! The new version takes effect immediately."
FIRMWARE_CHIPS = "The firmware of [8] chips are successfully upgraded."


def test_driver_success_asks_for_reboot():
    out = "Verifying archive integrity...  100%   SHA256 checksums are OK. All good.\n" + DRIVER_OK + "\n"
    v = classify_installer_output("driver", 0, out)
    assert v["success"] and v["reboot_hint"] and not v["immediate"]
    assert v["success_line"] == DRIVER_OK
    assert v["error"] is None and v["error_lines"] == [] and v["reason"] is None


def test_driver_takes_effect_immediately_is_no_reboot_hint():
    v = classify_installer_output("driver", 0, IMMEDIATE + "\n")
    assert v["success"] and v["immediate"] and not v["reboot_hint"]
    assert v["success_line"] == IMMEDIATE


def test_non_quiet_driver_output():
    out = "\n".join([
        "[Driver] [2025-07-17 10:35:21] [INFO]Start time: 2025-07-17 10:35:21",
        "[Driver] [2025-07-17 10:35:21] [INFO]LogFile: /var/log/ascend_seclog/ascend_install.log",
        "[Driver] [2025-07-17 10:35:21] [INFO]OperationLogFile: /var/log/ascend_seclog/operation.log",
        "[Driver] [2025-07-17 10:35:22] [WARNING]Do not power off or reboot now, the installation/upgrade is running",
        "[Driver] [2025-07-17 10:35:22] [INFO]driver install type: DKMS",
        "[Driver] [2025-07-17 10:35:30] [INFO]upgradePercentage:10%",
        "[Driver] [2025-07-17 10:36:30] [INFO]upgradePercentage:100%",
        "[Driver] [2025-07-17 10:36:31] [INFO]" + IMMEDIATE,
    ]) + "\n"
    v = classify_installer_output("driver", 0, out)
    assert v["success"] and v["immediate"]
    # "Do not ... restart the system" is not a request to reboot
    assert not v["reboot_hint"]
    assert v["log_path"] == DEFAULT_INSTALL_LOG


def test_very_old_driver_wording():
    v = classify_installer_output("driver", 0, "Driver package install success!\n")
    assert v["success"] and v["success_line"] == "Driver package install success!"


@pytest.mark.parametrize("rc,success", [(0, True), (2, True), (1, False), (3, False), (127, False)])
def test_firmware_rc_decides(rc, success):
    out = FIRMWARE_CHIPS + "\n" + FIRMWARE_OK + "\n"
    v = classify_installer_output("firmware", rc, out)
    assert v["success"] is success
    assert v["reboot_hint"] is success
    if success:
        assert v["success_line"] == FIRMWARE_CHIPS


@pytest.mark.parametrize("rc,success", [(0, True), (2, True), (3, True), (1, False), (126, False), (-9, False)])
def test_driver_anything_but_1_succeeds(rc, success):
    v = classify_installer_output("driver", rc, "")
    assert v["success"] is success
    assert v["reason"] == (None if success else "rc")


def test_quiet_run_without_success_line_succeeds():
    for kind in ("driver", "firmware", "toolkit", "kernels", "docker_runtime"):
        v = classify_installer_output(kind, 0, "")
        assert v["success"], kind
        assert v["success_line"] is None and not v["reboot_hint"]


def test_driver_error_line_fails_whatever_the_rc():
    v = classify_installer_output("driver", 0, "[Driver] [2025-07-17 10:35:21] [ERROR]Driver install failed\n")
    assert not v["success"] and v["reason"] == "error"
    assert v["error"] == "[Driver] [2025-07-17 10:35:21] [ERROR]Driver install failed"


def test_firmware_error_line_with_success_rc_is_the_rc_verdict():
    v = classify_installer_output("firmware", 2, "[Firmware] [2025-07-17 10:35:21] [ERROR]chip 3 busy, retried\n")
    assert v["success"]
    assert v["error_lines"]


def test_reboot_only_from_a_request_to_reboot():
    out = "[INFO] no reboot is involved here\n[INFO] Ascend-cann-toolkit install success"
    v = classify_installer_output("toolkit", 0, out)
    assert v["success"] and not v["reboot_hint"]
    v = classify_installer_output("driver", 0, "Driver package upgraded successfully! Reboot required to take effect")
    assert v["success"] and v["reboot_hint"]


def test_a_firmware_line_is_not_a_driver_success_line():
    v = classify_installer_output("driver", 0, FIRMWARE_OK)
    assert v["success"]  # the exit code decides
    assert v["success_line"] is None


@pytest.mark.parametrize("kind,line", [
    ("toolkit", "[Toolkit] [20241130-10:00:01] [INFO] Ascend-cann-toolkit install success"),
    ("toolkit", "[Toolkit] [20241130-10:00:01] [INFO] Ascend-cann-toolkit upgrade success"),
    ("kernels", "[Kernels] [20241130-10:00:01] [INFO] Ascend-cann-kernels-910b install success"),
    ("docker_runtime", "[INFO] Ascend Docker Runtime install success"),
    ("docker_runtime", "Ascend Docker Runtime installed successfully"),
])
def test_other_kinds_success_without_reboot(kind, line):
    v = classify_installer_output(kind, 0, line + "\n")
    assert v["success"] and not v["reboot_hint"]
    assert v["success_line"] == line
    assert not classify_installer_output(kind, 1, line + "\n")["success"]


def test_missing_tools_error_line():
    v = classify_installer_output("driver", 1, "Verifying archive integrity... All good.\n" + MISSING_TOOLS + "\n")
    assert not v["success"]
    assert v["error"] == MISSING_TOOLS
    assert v["log_path"] is None
    assert not v["reboot_hint"] and v["reason"] == "rc"


def test_dkms_error_names_the_log():
    v = classify_installer_output("driver", 1, "", DKMS + "\n")
    assert not v["success"]
    assert v["error"] == DKMS
    assert v["log_path"] == DEFAULT_INSTALL_LOG == "/var/log/ascend_seclog/ascend_install.log"


def test_first_error_line_and_absolute_log_path():
    out = "[INFO] start\n[ERROR]first problem\n[ERROR]second, see /var/log/ascend_seclog/other.log\n"
    v = classify_installer_output("toolkit", 1, out)
    assert v["error"] == "[ERROR]first problem"
    assert v["error_lines"] == ["[ERROR]first problem", "[ERROR]second, see /var/log/ascend_seclog/other.log"]
    assert v["log_path"] == "/var/log/ascend_seclog/other.log"


def test_error_line_with_vendor_prefix_quoted_whole():
    line = ("[Driver] [2024-11-29 10:00:00] [ERROR]Dkms install failed, details in : "
            "var/log/ascend_seclog/ascend_install.log.")
    v = classify_installer_output("driver", 1, "[Driver] [2024-11-29 10:00:00] [INFO]start\n" + line + "\n")
    assert v["error"] == line
    assert v["log_path"] == DEFAULT_INSTALL_LOG


def test_prompt_and_error_on_one_line():
    prompt = "Do you want to try build driver after input kernel absolute path? [y/n]"
    v = classify_installer_output("driver", 1, prompt + DKMS + "\n")
    assert v["prompt"] == prompt and v["reason"] == "prompt"
    assert v["error"] == DKMS


def test_prompt_detected():
    out = "Do you want to try build driver after input kernel absolute path? [y/n]"
    v = classify_installer_output("driver", 257, out)
    assert not v["success"] and v["reason"] == "prompt"
    assert v["prompt"] == out


def test_archive_check_output():
    ok = "Verifying archive integrity...  100%   SHA256 checksums are OK. All good.\n"
    assert check_output_ok(0, ok)
    assert not check_output_ok(1, ok)
    assert not check_output_ok(2, "Verifying archive integrity...Error in SHA256 checksums: a is different from b\n")
    assert not check_output_ok(0, "", "Error in MD5 checksums")
    assert not check_output_ok(0, "[ERROR]archive damaged")


# ------------------------------------------------------------------ one name table, both directions

@pytest.mark.parametrize("version", ["7.0.0", "8.0.RC3", "8.0.0", "8.2.RC1", "8.3.T5.0.B028", "8.0.0.alpha002",
                                     "8.5.0", "9.0.0"])
@pytest.mark.parametrize("chip", ["910b", "a3", "A3", "310p"])
@pytest.mark.parametrize("arch", ["aarch64", "x86_64"])
def test_every_generated_cann_name_parses_back(version, chip, arch):
    from ansible_collections.ascendops.cluster.plugins.filter.packages import cann_package_files
    files = cann_package_files(version, chip, arch)
    toolkit = parse_package_filename(files["toolkit"])
    kernels = parse_package_filename(files["kernels"])
    assert tuple(toolkit) == ("toolkit", version, arch, None)
    assert kernels.kind == "kernels" and kernels.version == version
    assert kernels.model == chip.lower()
    assert kernels.arch in (arch, None)


@pytest.mark.parametrize("name,expected", [
    # CANN 8.5+: the operator package, with the published capital A3
    ("Ascend-cann-A3-ops_8.5.0_linux-aarch64.run", ("kernels", "8.5.0", "aarch64", "a3")),
    ("Ascend-cann-910b-ops_8.5.0_linux-x86_64.run", ("kernels", "8.5.0", "x86_64", "910b")),
    # A3 before 8.5
    ("Atlas-A3-cann-kernels_8.2.RC1_linux-aarch64.run", ("kernels", "8.2.RC1", "aarch64", "a3")),
])
def test_published_cann_names(name, expected):
    assert tuple(parse_package_filename(name)) == expected


def test_package_filename_fills_the_same_table():
    assert package_filename("kernels", "ops", "8.5.0", "aarch64", "A3") == "Ascend-cann-A3-ops_8.5.0_linux-aarch64.run"
    for kind, layout, _template in PACKAGE_NAME_TABLE:
        name = package_filename(kind, layout, "8.0.0", "aarch64", "910b")
        assert parse_package_filename(name).kind == kind
    with pytest.raises(ValueError, match="no published file name"):
        package_filename("kernels", "nope", "8.0.0")


# ------------------------------------------------------------------ installer flags per kind

def test_docker_runtime_gets_no_nox11():
    assert installer_args("docker_runtime", "install") == ["--install", "--quiet"]
    assert installer_args("docker_runtime", "upgrade", "/opt/Ascend", scene="docker") == [
        "--upgrade", "--install-path=/opt/Ascend", "--install-scene=docker", "--quiet"]
    with pytest.raises(InstallerFlagError, match="docker_runtime installer does not accept --nox11"):
        installer_args("docker_runtime", "install", extra_args=["--nox11"])
    with pytest.raises(InstallerFlagError, match="--install-username"):
        installer_args("docker_runtime", "install", username="u", usergroup="g")
    # --install-for-all is dropped for kinds that take no such flag
    assert "--install-for-all" not in installer_args("docker_runtime", "install", for_all=True)
    assert "--install-for-all" not in installer_args("firmware", "install", for_all=True)


def test_hdk_and_cann_flags():
    assert installer_args("driver", "install", username="u", usergroup="g", for_all=True) == [
        "--full", "--install-username=u", "--install-usergroup=g", "--install-for-all", "--quiet", "--nox11"]
    # user flags only on a fresh install
    assert installer_args("driver", "upgrade", username="u", usergroup="g", for_all=True) == [
        "--upgrade", "--quiet", "--nox11"]
    assert installer_args("toolkit", "install") == ["--install", "--quiet", "--nox11"]
    assert refused_flags("firmware", ["--install-for-all", "--full", "--install-username=x"]) == [
        "--install-for-all", "--install-username=x"]
    with pytest.raises(InstallerFlagError):
        installer_args("firmware", "install", username="u", usergroup="g")


def test_every_kind_has_one_flag_row():
    assert set(INSTALLER_FLAGS) == set(PACKAGE_KINDS)
    for kind, flags in INSTALLER_FLAGS.items():
        assert all(accepts(kind, f) for f in (flags.fresh, flags.upgrade) + tuple(flags.always))


# ------------------------------------------------------------------ questions: answered or not

EULA_ANSWERED = ("Do you accept the EULA to install this package? [y/N]y\n"
                 "[INFO] user accepted EULA\n[INFO] Ascend Docker Runtime install success\n")


def test_answered_eula_is_a_success():
    v = classify_installer_output("docker_runtime", 0, EULA_ANSWERED)
    assert v["success"] and v["prompt"] is None
    assert v["answered_prompts"] == ["Do you accept the EULA to install this package? [y/N]y"]


@pytest.mark.parametrize("out", [
    "Do you accept the EULA to install this package? [y/N]\n",
    "Do you accept the EULA to install this package? [y/N]",
    "Do you accept the EULA to install this package? [y/N]\nEOF when reading a line\n",
    "Do you accept the EULA to install this package? [y/N]y\nend of input\n",
])
def test_unanswered_question_is_a_failure_naming_it(out):
    v = classify_installer_output("docker_runtime", 0, out)
    assert not v["success"] and v["reason"] == "prompt"
    assert v["prompt"] == "Do you accept the EULA to install this package? [y/N]"


def test_run_command_prompt_regex_leaves_answered_questions_alone():
    prompt = re.compile(PROMPT_REGEX, re.MULTILINE)
    assert not prompt.search(EULA_ANSWERED)
    assert prompt.search("Do you want to try build driver after input kernel absolute path? [y/n]")
    assert prompt.search("Continue? [y/N]\n[ERROR]...")


# ------------------------------------------------------------------ docker runtime versions (their usage texts)

USAGE_DIR = __import__("pathlib").Path(__file__).resolve().parents[1] / "fixtures" / "docker-runtime-usage"
USAGE_VERSIONS = ("5.0.RC3", "6.0.RC3", "7.3.0", "26.0.1", "26.1.0")


def _usage_options(version):
    """The options a usage text lists (its option column, `--name` or `--name=<value>`)."""
    text = (USAGE_DIR / f"{version}.txt").read_text()
    return {m.split("=")[0] for m in re.findall(r"(?m)^\s{2}(--[a-z0-9-]+(?:=<\w+>)?)", text)}


@pytest.mark.parametrize("version", USAGE_VERSIONS)
def test_runtime_options_are_what_that_versions_usage_lists(version):
    from ansible_collections.ascendops.cluster.plugins.module_utils.run_package import (
        RUNTIME_HEADER_OPTIONS,
        runtime_options,
    )

    # The header's options (5.x-26.0 list them as "meaningless", 26.1 no longer) are the package's, not the script's.
    # (--nox11 too: listed "meaningless" up to 6.0, but the vendor's header refuses it; never passed.)
    listed = _usage_options(version) - {"--help", "--nox11"} - set(RUNTIME_HEADER_OPTIONS)
    assert "--install" in listed, "the fixture lists no option"
    assert set(runtime_options(version)) - set(RUNTIME_HEADER_OPTIONS) == listed


@pytest.mark.parametrize("version, scene, expected", [
    ("5.0.RC3", "docker", []),
    ("6.0.RC3", "docker", ["--install-scene=docker"]),
    ("6.0.RC3", "containerd", ["--install-scene=containerd"]),
    ("7.3.0", "isula", ["--install-scene=isula"]),
    ("26.1.0", "containerd", ["--install-scene=containerd"]),
])
def test_the_scene_goes_only_to_versions_that_take_it(version, scene, expected):
    args = installer_args("docker_runtime", "install", scene=scene, version=version)
    assert args == ["--install"] + expected + ["--quiet"]
    listed = _usage_options(version)
    assert all(a.split("=")[0] in listed | {"--quiet"} for a in args)


@pytest.mark.parametrize("version, scene, extra, words", [
    ("5.0.RC3", "containerd", (), "has no --install-scene"),
    ("6.0.RC3", "isula", (), "takes --install-scene=docker|containerd, not isula"),
    ("26.1.0", None, ("--ce=isula",), "does not accept --ce=isula"),
])
def test_options_a_version_does_not_take_are_refused(version, scene, extra, words):
    with pytest.raises(InstallerFlagError, match=re.escape(words)):
        installer_args("docker_runtime", "install", scene=scene, extra_args=extra, version=version)


@pytest.mark.parametrize("version, asks", [("5.0.RC3", False), ("7.3.0", False), ("26.0.1", False),
                                           ("26.1.0", True), ("26.1.RC1", False), ("27.0.0", True)])
def test_the_eula_is_asked_from_26_1_0(version, asks):
    from ansible_collections.ascendops.cluster.plugins.module_utils.run_package import asks_eula

    assert asks_eula("docker_runtime", version) is asks
    assert asks_eula("driver", version) is False


EULA_Q = "Do you accept the EULA to install Ascend-docker-runtime?[Y/N]"


def test_the_eula_answered_on_stdin_reads_as_answered():
    out = "\n".join([EULA_Q, "[INFO] user accepted EULA", "[INFO] installing ascend-docker-runtime",
                     "[INFO] ascend-docker-runtime install success"])
    v = classify_installer_output("docker_runtime", 0, out)
    assert v["success"] and v["prompt"] is None and v["answered_prompts"] == [EULA_Q]


def test_a_declined_eula_fails_although_the_installer_exits_0():
    v = classify_installer_output("docker_runtime", 0, EULA_Q + "\n[INFO] install cancelled, user declined EULA\n")
    assert not v["success"] and v["reason"] == "eula_declined"


def test_an_unanswered_eula_question_is_a_prompt():
    v = classify_installer_output("docker_runtime", 1, "\n".join([EULA_Q] * 3))
    assert not v["success"] and v["reason"] == "prompt" and v["prompt"] == EULA_Q
