"""``npu-smi info -t usages`` / ``-t common`` parser on the real layouts in fixtures/ (see
fixtures/README-npu-smi-usages.md for each sample's source)."""

from __future__ import annotations

import os

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.npu_smi import (
    NpuSmiFormatError,
    parse_npu_smi_chip_values,
)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def strip_values(chip):
    return {k: v for k, v in chip.items() if k != "values"}


def test_usages_910b_indented_chip_id_closes_the_block():
    parsed = parse_npu_smi_chip_values(fixture("npu_smi_usages_910b.txt"), "usages")
    assert parsed["npu_id"] == 0 and parsed["chip_count"] == 1 and parsed["mcu"] is None
    assert [strip_values(c) for c in parsed["chips"]] == [{
        "chip_id": 0, "ddr_capacity_mb": 0, "ddr_usage_pct": 0, "hugepages_total": 0,
        "hugepages_usage_pct": 0, "hbm_capacity_mb": 65536, "hbm_usage_pct": 4, "aicore_pct": 0,
        "aivector_pct": 0, "aicpu_pct": 0, "ctrlcpu_pct": 0, "ddr_bandwidth_pct": 0, "hbm_bandwidth_pct": 0,
    }]
    assert parsed["chips"][0]["values"]["HBM Capacity(MB)"] == "65536"


def test_usages_910_32g_hbm_and_ddr():
    chip = parse_npu_smi_chip_values(fixture("npu_smi_usages_910_32g.txt"), "usages")["chips"][0]
    assert (chip["hbm_capacity_mb"], chip["ddr_capacity_mb"], chip["ddr_usage_pct"], chip["ctrlcpu_pct"]) == \
        (32768, 15171, 3, 9)
    assert "aivector_pct" not in chip  # this model prints no Aivector line


def test_usages_310p_two_chips_no_hbm():
    parsed = parse_npu_smi_chip_values(fixture("npu_smi_usages_310p.txt"), "usages")
    assert parsed["npu_id"] == 1 and parsed["chip_count"] == 2
    assert [c["chip_id"] for c in parsed["chips"]] == [0, 1]
    assert [c["ddr_capacity_mb"] for c in parsed["chips"]] == [44280, 43693]
    assert [c["ctrlcpu_pct"] for c in parsed["chips"]] == [2, 3]
    assert all("hbm_capacity_mb" not in c for c in parsed["chips"])
    assert parsed["chips"][1]["aivector_pct"] == 0  # Vectorcore Usage Rate(%)
    assert parsed["chips"][1]["values"]["DVPP VPC Usage Rate(%)"] == "0"


def test_common_910b_chip_id_opens_the_block_mcu_apart():
    parsed = parse_npu_smi_chip_values(fixture("npu_smi_common_910b.txt"), "common")
    assert parsed["npu_id"] == 1
    chip = parsed["chips"][0]
    assert strip_values(chip) == {
        "chip_id": 0, "ddr_usage_pct": 0, "hbm_usage_pct": 4, "aicore_pct": 0, "aicore_freq_mhz": 1800,
        "aicore_cur_freq_mhz": 800, "aicore_count": 24, "temperature_c": 46, "power_w": 93.4,
    }
    assert parsed["mcu"]["temperature_c"] == 38 and "power_w" not in parsed["mcu"]


def test_common_910b_mcu_power_does_not_overwrite_the_chip():
    parsed = parse_npu_smi_chip_values(fixture("npu_smi_common_910b_mcu_power.txt"), "common")
    assert parsed["chips"][0]["power_w"] == 69.0 and parsed["chips"][0]["temperature_c"] == 46
    assert parsed["mcu"]["power_w"] == 45.2 and parsed["mcu"]["temperature_c"] == 48


def test_common_310p_two_chips_power_only_in_mcu():
    parsed = parse_npu_smi_chip_values(fixture("npu_smi_common_310p.txt"), "common")
    assert [(c["chip_id"], c["temperature_c"]) for c in parsed["chips"]] == [(0, 60), (1, 59)]
    assert all("power_w" not in c for c in parsed["chips"])
    assert parsed["mcu"]["power_w"] == 45.2


def test_common_without_chip_lines_is_chip_zero():
    parsed = parse_npu_smi_chip_values(fixture("npu_smi_common_no_chip_lines.txt"), "common")
    assert parsed["chip_count"] is None
    assert [(c["chip_id"], c["aicore_count"], c["power_w"]) for c in parsed["chips"]] == [(0, 32, 298.6)]


def test_two_chip_usages_without_blank_lines():
    text = ("NPU ID : 7\nChip Count : 2\nHBM Capacity(MB) : 65536\nHBM Usage Rate(%) : 21\n"
            "Aicore Usage Rate(%) : 88\nChip ID : 0\nHBM Capacity(MB) : 65536\nHBM Usage Rate(%) : 22\n"
            "Aicore Usage Rate(%) : 89\nChip ID : 1\n")
    parsed = parse_npu_smi_chip_values(text, "usages")
    assert [(c["chip_id"], c["aicore_pct"], c["hbm_usage_pct"]) for c in parsed["chips"]] == [(0, 88, 21), (1, 89, 22)]


def test_na_value_is_none():
    parsed = parse_npu_smi_chip_values("NPU ID : 0\nChip ID : 0\nNPU Real-time Power(W) : NA\n", "common")
    assert parsed["chips"][0]["power_w"] is None


@pytest.mark.parametrize("text, what, line", [
    ("NPU ID : 0\nHBM Capacity(MB) 65536\nChip ID : 0\n", "usages", "HBM Capacity(MB) 65536"),
    ("+------+\n| NPU | Name |\n", "usages", "+------+"),
    ("NPU ID : zero\n", "common", "NPU ID : zero"),
    ("NPU ID : 0\nChip ID : 0x1\nTemperature(C) : 40\n", "common", "Chip ID : 0x1"),
    ("NPU ID : 0\nAicore Usage Rate(%) : 5\nChip ID : 0\nAicore Usage Rate(%) : 6\n", "usages",
     "Aicore Usage Rate(%) : 6"),
    ("Aicore Usage Rate(%) : 5\nChip ID : 0\n", "usages", "Aicore Usage Rate(%) : 5"),
])
def test_failure_names_the_line(text, what, line):
    with pytest.raises(NpuSmiFormatError) as err:
        parse_npu_smi_chip_values(text, what)
    assert repr(line) in str(err.value) and f"-t {what}" in str(err.value)


def test_empty_output_is_an_error():
    with pytest.raises(NpuSmiFormatError, match="empty output"):
        parse_npu_smi_chip_values("\n  \n", "usages")
