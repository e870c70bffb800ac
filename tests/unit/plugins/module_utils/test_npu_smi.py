"""npu-smi parsers (plugins/module_utils/npu_smi.py), on the documented layouts."""

from __future__ import annotations

import os
import re

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.npu_smi import (
    NpuSmiFormatError,
    parse_npu_smi_error,
    parse_npu_smi_info,
    parse_npu_smi_info_version,
    parse_npu_smi_list,
)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


# ------------------------------------------------------------------ npu-smi info


def test_npu_smi_info_910b_sample():
    parsed = parse_npu_smi_info(fixture("npu_smi_info_910b.txt"))
    assert parsed["npu_smi_version"] == "23.0.rc2"
    assert parsed["driver_version"] == "23.0.rc2"
    assert parsed["chips"] == [{
        "npu_id": 0, "name": "910B1", "health": "OK", "power_w": 88.4, "temp_c": 46,
        "hugepages_used": 0, "hugepages_total": 0,
        "chip_id": 0, "bus_id": "0000:C1:00.0", "aicore_pct": 0,
        "memory_used_mb": 0, "memory_total_mb": 0, "hbm_used_mb": 4175, "hbm_total_mb": 65536, "phy_id": 0,
    }]
    assert parsed["npus"] == [dict(parsed["chips"][0], chip_count=1, phy_ids=[0])]


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
    npus = parsed["chips"]
    assert parsed["npu_smi_version"] == "24.1.rc3"
    assert [(n["npu_id"], n["chip_id"], n["phy_id"]) for n in npus] == [(0, 0, 0), (0, 1, 1), (1, 0, 2), (1, 1, 3)]
    assert npus[1]["power_w"] is None  # "-"
    assert npus[0]["power_w"] == 175.2
    assert npus[2]["health"] == "Critical"
    assert npus[3]["bus_id"] == "0000:9B:00.0"
    assert npus[3]["hbm_used_mb"] == 3150 and npus[3]["hbm_total_mb"] == 65536
    # two NPUs of two chips each: the NPU count is the distinct NPU ids
    assert [(n["npu_id"], n["chip_count"], n["phy_ids"], n["health"]) for n in parsed["npus"]] == [
        (0, 2, [0, 1], "OK"), (1, 2, [2, 3], "Critical")]


def test_npu_smi_info_310p_header_device_and_no_hbm():
    parsed = parse_npu_smi_info(fixture("npu_smi_info_310p.txt"))
    assert [(n["npu_id"], n["chip_count"]) for n in parsed["npus"]] == [(8, 2), (9, 2)]
    npus = parsed["chips"]
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


def a3_table(npus=8):
    """An Atlas 800T A3 listing: 8 NPUs x 2 chips, Phy-ID 0-15, second chip's power '-'."""
    lines = [
        "+" + "-" * 96 + "+",
        "| npu-smi 24.1.rc3                 Version: 24.1.rc3" + " " * 45 + "|",
        "+---------------------------+---------------+----------------------------------------------------+",
        "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|",
        "| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |",
        "+===========================+===============+====================================================+",
    ]
    for n in range(npus):
        for c in range(2):
            power = "-" if c else "175.2"
            lines.append(f"| {n:<6}{'Ascend910':<20}| {'OK':<14}| {power:<12}{36:<18}{'0    / 0':<21}|")
            lines.append(f"| {c:<6}{2 * n + c:<20}| {'0000:9D:00.0':<14}| {0:<12}{'0    / 0':<18}{'3393 / 65536':<21}|")
            lines.append("+" + "-" * 96 + "+" if c == 0 else
                         "+===========================+===============+====================================================+")
    return "\n".join(lines) + "\n"


def test_npu_smi_info_a3_full_node_counts_npus_not_chips():
    parsed = parse_npu_smi_info(a3_table())
    assert len(parsed["npus"]) == 8
    assert len(parsed["chips"]) == 16
    assert [c["phy_id"] for c in parsed["chips"]] == list(range(16))
    assert all(n["chip_count"] == 2 for n in parsed["npus"])
    assert parsed["npus"][7]["phy_ids"] == [14, 15]


def test_npu_smi_info_26x_wider_table_redacted_bus_and_processes():
    parsed = parse_npu_smi_info(fixture("npu_smi_info_26x_a3.txt"))
    assert parsed["npu_smi_version"] == "26.0.rc1"
    assert [(c["npu_id"], c["chip_id"], c["phy_id"]) for c in parsed["chips"]] == [
        (0, 0, 0), (0, 1, 1), (1, 0, 2), (1, 1, 3)]
    assert all(c["bus_id"] == "xxxx:xx:xx.x" for c in parsed["chips"])
    assert parsed["chips"][0]["aicore_pct"] == 3 and parsed["chips"][0]["hbm_used_mb"] == 5120
    # the worst chip health is the NPU's
    assert [n["health"] for n in parsed["npus"]] == ["OK", "Warning"]
    # the five-column process table (a running process on NPU 0) is not read as NPUs
    assert len(parsed["npus"]) == 2


def test_npu_smi_info_310p_redacted_bus_id():
    text = fixture("npu_smi_info_310p.txt").replace("0000:01:00.0", "****").replace("0000:02:00.0", "****")
    parsed = parse_npu_smi_info(text)
    assert [(c["npu_id"], c["chip_id"], c["bus_id"]) for c in parsed["chips"]] == [
        (8, 0, "****"), (8, 1, "****"), (9, 0, "****"), (9, 1, "****")]


@pytest.mark.parametrize("bad", [
    "| 4       0                 | 231405        | python3.10               | 56036                   |",
    "| garbage                   | OK            | 88.4        46                0    / 0             |",
    "| 0     910B1   extra       | OK            | 88.4        46                0    / 0             |",
    "| 0     910B1               | OK            |",
    "| 0 1 2                     | 0000:C1:00.0  | 0           0    / 0          4175 / 65536         |",
])
def test_npu_smi_info_row_that_fits_no_layout_is_an_error(bad):
    lines = fixture("npu_smi_info_910b.txt").splitlines()
    text = "\n".join(lines[:9] + [bad] + lines[9:]) + "\n"
    with pytest.raises(NpuSmiFormatError) as err:
        parse_npu_smi_info(text)
    assert bad.strip() in str(err.value)


def test_npu_smi_info_chip_row_first_is_an_error():
    lines = fixture("npu_smi_info_910b.txt").splitlines()
    text = "\n".join(lines[:6] + [lines[7]] + lines[6:]) + "\n"
    with pytest.raises(NpuSmiFormatError, match="chip row before any NPU row"):
        parse_npu_smi_info(text)


def test_npu_named_with_digits_only_is_an_npu_row():
    """Atlas 300I (310): the model name is all digits, so "| 0  310 | OK |" has two integers in its
    first cell, as a "Chip Device" row does; the Health cell tells them apart."""
    text = fixture("npu_smi_info_310p.txt").replace("310P3", "310  ")
    parsed = parse_npu_smi_info(text)
    assert [(n["npu_id"], n["name"], n["chip_count"]) for n in parsed["npus"]] == [(8, "310", 2), (9, "310", 2)]
    assert [(c["npu_id"], c["chip_id"], c["device_id"]) for c in parsed["chips"]] == [
        (8, 0, 0), (8, 1, 1), (9, 0, 2), (9, 1, 3)]
    # a redacted Bus-Id is still a chip row
    redacted = text.replace("0000:01:00.0", "XXXX").replace("0000:02:00.0", "****")
    assert len(parse_npu_smi_info(redacted)["chips"]) == 4


SPOD_INFO = "SDID : 16777216\nSuper Pod Size : 384\nSuper Pod ID : 0\nServer Index : 4\n"


def test_spod_info_as_the_hccl_guide_prints_it():
    from ansible_collections.ascendops.cluster.plugins.module_utils.npu_smi import parse_npu_smi_spod_info
    assert parse_npu_smi_spod_info(SPOD_INFO) == {"super_device_id": "16777216", "super_pod_size": "384",
                                                  "super_pod_id": "0", "server_index": "4"}
    # wider spacing, as npu-smi pads its keys
    assert parse_npu_smi_spod_info("SDID                 : 3\nSuper Pod ID         : 1\n")["super_device_id"] == "3"
    with pytest.raises(ValueError, match="no SDID line.*'Error: not supported'"):
        parse_npu_smi_spod_info("Error: not supported\n")
