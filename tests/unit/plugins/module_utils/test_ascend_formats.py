"""Vendor format parsers (plugins/module_utils/ascend_formats.py), on the samples of ascend-facts.md."""

from __future__ import annotations

import os
import re

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_formats import (
    DEFAULT_INSTALL_LOG,
    check_output_ok,
    classify_installer_output,
    get_key,
    info_version,
    parse_key_value,
    parse_npu_smi_error,
    parse_npu_smi_info,
    parse_npu_smi_info_version,
    parse_npu_smi_list,
    parse_package_filename,
    parse_upgrade_tool_versions,
    read_key_value_file,
    render_key_value,
)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


# ------------------------------------------------------------------ key=value records


def test_driver_version_info():
    info = parse_key_value(fixture("driver_version.info"))
    assert list(info) == ["Version", "ascendhal_version", "Innerversion", "compatible_version",
                          "compatible_version_fw"]
    assert info["Version"] == "24.1.rc1"
    assert info["ascendhal_version"] == "7.35.19"
    assert info["Innerversion"] == "V100R001C15SPC006B220"
    assert info["compatible_version"] == "[V100R001C30],[V100R001C13],[V100R001C15],[V100R001C17]"
    assert info["compatible_version_fw"] == "[7.0.0,7.2.99]"
    assert info_version(info) == "24.1.rc1"


def test_firmware_version_info():
    info = parse_key_value(fixture("firmware_version.info"))
    assert dict(info) == {"Version": "7.1.0.11.220"}
    assert info_version(info) == "7.1.0.11.220"


def test_ascend_install_info_keeps_order():
    info = parse_key_value(fixture("ascend_install.info"))
    assert list(info.items()) == [
        ("UserName", "HwHiAiUser"),
        ("UserGroup", "HwHiAiUser"),
        ("Driver_Install_Type", "full"),
        ("Driver_Install_Path_Param", "/usr/local/Ascend"),
        ("Driver_Install_For_All", "yes"),
        ("Firmware_Install_Type", "full"),
        ("Firmware_Install_Path_Param", "/usr/local/Ascend"),
    ]
    assert render_key_value(info) == fixture("ascend_install.info")


def test_toolkit_install_info():
    info = parse_key_value(fixture("ascend_toolkit_install.info"))
    assert info["package_name"] == "Ascend-cann-toolkit"
    assert info_version(info) == "8.0.0"
    assert get_key(info, "ARCH") == "aarch64"
    assert info["path"] == "/usr/local/Ascend/ascend-toolkit/8.0.0/aarch64-linux"


def test_key_value_tolerates_blanks_comments_and_junk():
    text = "\n# a comment\n  ; another\nVersion = 8.0.RC3 \n\nnot a pair\n=novalue\npath=\"/opt/x\"\nk=a=b\n"
    info = parse_key_value(text)
    assert list(info.items()) == [("Version", "8.0.RC3"), ("path", "/opt/x"), ("k", "a=b")]
    assert parse_key_value("") == {}
    assert parse_key_value(None) == {}
    assert info_version({"Version": "  "}) is None


def test_read_key_value_file(tmp_path):
    path = tmp_path / "version.info"
    path.write_text("Version=24.1.rc1\n")
    assert read_key_value_file(str(path)) == {"Version": "24.1.rc1"}
    assert read_key_value_file(str(tmp_path / "missing")) is None


# ------------------------------------------------------------------ npu-smi info


def test_npu_smi_info_910b_sample():
    parsed = parse_npu_smi_info(fixture("npu_smi_info_910b.txt"))
    assert parsed["npu_smi_version"] == "23.0.rc2"
    assert parsed["driver_version"] == "23.0.rc2"
    assert parsed["npus"] == [{
        "npu_id": 0, "name": "910B1", "health": "OK", "power_w": 88.4, "temp_c": 46,
        "hugepages_used": 0, "hugepages_total": 0,
        "chip_id": 0, "bus_id": "0000:C1:00.0", "aicore_pct": 0,
        "memory_used_mb": 0, "memory_total_mb": 0, "hbm_used_mb": 4175, "hbm_total_mb": 65536,
    }]


def test_npu_smi_info_eight_npus_stops_at_process_table():
    parsed = parse_npu_smi_info(fixture("npu_smi_info_910b_8npu.txt"))
    npus = parsed["npus"]
    assert parsed["driver_version"] == "24.1.rc1"
    assert [n["npu_id"] for n in npus] == list(range(8))
    assert [n["health"] for n in npus] == ["OK", "OK", "OK", "Alarm", "OK", "OK", "Warning", "OK"]
    assert npus[4]["aicore_pct"] == 97
    assert npus[4]["hbm_used_mb"] == 60211
    assert npus[7]["bus_id"] == "0000:42:00.0"
    # the process row "| 4  0 | 231405 | python3.10 | 56036 |" is not an NPU
    assert all(n["name"] == "910B1" for n in npus)


def test_npu_smi_info_ignores_everything_after_the_process_table():
    text = fixture("npu_smi_info_910b_8npu.txt")
    first_pair = text.splitlines()[6:9]
    assert first_pair[0].startswith("| 0     910B1")
    # whatever follows the process table (here: an NPU row pair) is not an NPU of this listing
    assert len(parse_npu_smi_info(text + "\n".join(first_pair) + "\n")["npus"]) == 8


def test_npu_smi_info_a3_header_phy_id():
    parsed = parse_npu_smi_info(fixture("npu_smi_info_a3.txt"))
    npus = parsed["npus"]
    assert parsed["npu_smi_version"] == "24.1.rc3"
    assert [(n["npu_id"], n["chip_id"], n["phy_id"]) for n in npus] == [(0, 0, 0), (0, 1, 1), (1, 0, 2), (1, 1, 3)]
    assert npus[1]["power_w"] is None  # "-"
    assert npus[0]["power_w"] == 175.2
    assert npus[2]["health"] == "Critical"
    assert npus[3]["bus_id"] == "0000:9B:00.0"
    assert npus[3]["hbm_used_mb"] == 3150 and npus[3]["hbm_total_mb"] == 65536


def test_npu_smi_info_310p_header_device_and_no_hbm():
    parsed = parse_npu_smi_info(fixture("npu_smi_info_310p.txt"))
    npus = parsed["npus"]
    assert parsed["driver_version"] == "23.0.0"
    assert [(n["npu_id"], n["chip_id"], n["device_id"]) for n in npus] == [(8, 0, 0), (8, 1, 1), (9, 0, 2), (9, 1, 3)]
    assert all(n["power_w"] is None for n in npus)  # "NA"
    assert npus[1]["memory_used_mb"] == 1427 and npus[1]["memory_total_mb"] == 43693
    assert "hbm_used_mb" not in npus[0]
    assert npus[3]["temp_c"] == 50 and npus[3]["name"] == "310P3"


def _respace(text):
    """Same table, other column widths and cell order inside the third column group."""
    out = []
    for line in text.splitlines():
        if line.startswith("|"):
            cells = line.strip("|").split("|")
            line = "|" + "|".join(" " + re.sub(r"\s{2,}", "  ", c.strip()) + " " for c in cells) + "|"
        out.append(line)
    return "\n".join(out)


def test_npu_smi_info_parsed_by_headers_not_positions():
    text = fixture("npu_smi_info_910b_8npu.txt")
    assert parse_npu_smi_info(_respace(text)) == parse_npu_smi_info(text)
    # swap two header columns and the matching values: keys must follow the headers
    original = fixture("npu_smi_info_910b.txt")
    swapped = original.replace(
        "Power(W)    Temp(C)     ", "Temp(C)     Power(W)    ").replace(
        "| 88.4        46          ", "| 46          88.4        ")
    assert swapped.count("Temp(C)     Power(W)") == 1 and swapped.count("| 46          88.4") == 1
    npu = parse_npu_smi_info(swapped)["npus"][0]
    assert npu["power_w"] == 88.4 and npu["temp_c"] == 46


def test_npu_smi_info_unknown_column_kept_under_snake_key():
    text = fixture("npu_smi_info_910b.txt").replace("HBM-Usage(MB)   ", "Fan-Speed(RPM)  ").replace(
        "4175 / 65536", "3000        ")
    assert "Fan-Speed(RPM)" in text and "4175" not in text
    npu = parse_npu_smi_info(text)["npus"][0]
    assert npu["fan_speed_rpm"] == 3000
    assert "hbm_used_mb" not in npu


def test_npu_smi_info_rejects_non_table_output():
    with pytest.raises(ValueError):
        parse_npu_smi_info("dcmi module initialize failed. ret is -8005\n")
    with pytest.raises(ValueError):
        parse_npu_smi_info("")


def test_npu_smi_header_version_line():
    assert parse_npu_smi_info_version("| npu-smi 23.0.rc2   Version: 23.0.rc2 |") == ("23.0.rc2", "23.0.rc2")
    assert parse_npu_smi_info_version("| npu-smi 24.1.rc1   Version: 23.0.0 |") == ("24.1.rc1", "23.0.0")
    assert parse_npu_smi_info_version("nothing") == (None, None)


def test_npu_smi_info_list():
    parsed = parse_npu_smi_list(fixture("npu_smi_info_list.txt"))
    assert parsed["total_count"] == 8
    assert len(parsed["npus"]) == 8
    assert [n["npu_id"] for n in parsed["npus"]] == list(range(8))
    assert all(n["chip_count"] == 1 for n in parsed["npus"])
    assert parsed["npus"][0]["product_name"] == "IT21PDDA01"
    assert parsed["npus"][1]["serial_number"] == 102333178814
    assert parse_npu_smi_list("Total Count : 8\n") == {"total_count": 8, "npus": []}


@pytest.mark.parametrize("text,code", [
    ("dcmi module initialize failed. ret is -8005", -8005),
    ("DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\ndcmi module initialize failed. ret is -8005\n", -8005),
    ("Failed to query the information because the device is used. ret is -8020", -8020),
])
def test_npu_smi_errors(text, code):
    err = parse_npu_smi_error(text)
    assert err["code"] == code
    assert f"ret is {code}" in err["line"]
    assert err["meaning"]


def test_npu_smi_no_error_on_table():
    assert parse_npu_smi_error(fixture("npu_smi_info_910b.txt")) is None
    assert parse_npu_smi_error("") is None


# ------------------------------------------------------------------ upgrade-tool


def test_upgrade_tool_component_lines():
    assert parse_upgrade_tool_versions(fixture("upgrade_tool_version.txt")) == [
        {"device_id": 0, "component_type": 0, "version": "7.5.0.2.220"}]
    text = "{\n" + "".join(
        f"Get component version(7.5.0.2.220) succeed for deviceId({d}), componentType({c}).\n"
        f'{{"device_id":{d}, "component":nve, "version":7.5.0.2.220}}\n'
        for d in range(2) for c in (0, 3)) + "}\n"
    parsed = parse_upgrade_tool_versions(text)
    assert [(p["device_id"], p["component_type"]) for p in parsed] == [(0, 0), (0, 3), (1, 0), (1, 3)]
    assert parse_upgrade_tool_versions("Get component version failed") == []


# ------------------------------------------------------------------ package names


@pytest.mark.parametrize("name,expected", [
    ("Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run", ("driver", "24.1.rc1", "aarch64")),
    ("/opt/pkg/Ascend-hdk-910b-npu-driver_23.0.0_linux-x86_64.run", ("driver", "23.0.0", "x86_64")),
    ("Ascend-hdk-910b-npu-firmware_7.5.0.2.220.run", ("firmware", "7.5.0.2.220", None)),
    ("Ascend-hdk-910b-npu-firmware_7.1.0.11.220.run", ("firmware", "7.1.0.11.220", None)),
    ("Ascend-cann-toolkit_8.0.0_linux-aarch64.run", ("toolkit", "8.0.0", "aarch64")),
    ("Ascend-cann-toolkit_8.0.RC3_linux-x86_64.run", ("toolkit", "8.0.RC3", "x86_64")),
    ("Ascend-cann-kernels-910b_8.0.0_linux.run", ("kernels", "8.0.0", None)),
    ("Ascend-cann-kernels-910b_8.0.RC3_linux-aarch64.run", ("kernels", "8.0.RC3", "aarch64")),
    ("Ascend-docker-runtime_6.0.0_linux-aarch64.run", ("docker_runtime", "6.0.0", "aarch64")),
    ("Ascend-docker-runtime_5.0.0_linux-x86_64.run", ("docker_runtime", "5.0.0", "x86_64")),
    ("Ascend-hdk-910b-npu-driver_24.1.rc1.b030_linux-aarch64.run", ("driver", "24.1.rc1.b030", "aarch64")),
])
def test_package_file_names(name, expected):
    parsed = parse_package_filename(name)
    assert tuple(parsed) == expected
    assert parsed.kind == expected[0]


@pytest.mark.parametrize("name", [
    "Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.tar.gz",
    "Ascend-hdk-910b-npu-driver_24.1.rc1.run",
    "Ascend-cann-toolkit_8.0.0_linux-sparc.run",
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


def test_driver_success_needs_reboot():
    out = "Verifying archive integrity...  100%   SHA256 checksums are OK. All good.\n" + DRIVER_OK + "\n"
    v = classify_installer_output("driver", 0, out)
    assert v["success"] and v["reboot_required"]
    assert v["success_line"] == DRIVER_OK
    assert v["error"] is None and v["error_lines"] == []


@pytest.mark.parametrize("rc,success", [(0, True), (2, True), (1, False), (3, False)])
def test_firmware_rc(rc, success):
    v = classify_installer_output("firmware", rc, FIRMWARE_OK + "\n")
    assert v["success"] is success
    assert v["reboot_required"] is success


def test_reboot_only_from_a_request_to_reboot():
    out = "[INFO] no reboot is involved here\n[INFO] Ascend-cann-toolkit install success"
    v = classify_installer_output("toolkit", 0, out)
    assert v["success"] and not v["reboot_required"]
    v = classify_installer_output("driver", 0, "Driver package upgraded successfully! Reboot required to take effect")
    assert v["success"] and v["reboot_required"]


def test_driver_rc2_is_not_success():
    assert not classify_installer_output("driver", 2, DRIVER_OK)["success"]


def test_success_line_required():
    assert not classify_installer_output("driver", 0, "done\n")["success"]
    assert not classify_installer_output("toolkit", 0, "")["success"]
    # a firmware success line does not make a driver install a success
    assert not classify_installer_output("driver", 0, FIRMWARE_OK)["success"]


@pytest.mark.parametrize("kind,line", [
    ("toolkit", "[Toolkit] [20241130-10:00:01] [INFO] Ascend-cann-toolkit install success"),
    ("toolkit", "[Toolkit] [20241130-10:00:01] [INFO] Ascend-cann-toolkit upgrade success"),
    ("kernels", "[Kernels] [20241130-10:00:01] [INFO] Ascend-cann-kernels-910b install success"),
    ("docker_runtime", "[INFO] Ascend Docker Runtime install success"),
    ("docker_runtime", "Ascend Docker Runtime installed successfully"),
])
def test_other_kinds_success_without_reboot(kind, line):
    v = classify_installer_output(kind, 0, line + "\n")
    assert v["success"] and not v["reboot_required"]
    assert v["success_line"] == line


def test_missing_tools_error_line():
    v = classify_installer_output("driver", 1, "Verifying archive integrity... All good.\n" + MISSING_TOOLS + "\n")
    assert not v["success"]
    assert v["error"] == MISSING_TOOLS
    assert v["log_path"] is None
    assert not v["reboot_required"]


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
    assert v["prompt"] == prompt
    assert v["error"] == DKMS


def test_prompt_detected():
    out = "Do you want to try build driver after input kernel absolute path? [y/n]"
    v = classify_installer_output("driver", 1, out)
    assert not v["success"]
    assert v["prompt"] == out


def test_archive_check_output():
    ok = "Verifying archive integrity...  100%   SHA256 checksums are OK. All good.\n"
    assert check_output_ok(0, ok)
    assert not check_output_ok(1, ok)
    assert not check_output_ok(2, "Verifying archive integrity...Error in SHA256 checksums: a is different from b\n")
    assert not check_output_ok(0, "", "Error in MD5 checksums")
    assert not check_output_ok(0, "[ERROR]archive damaged")
