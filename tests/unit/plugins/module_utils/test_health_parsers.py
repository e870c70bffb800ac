"""Health before training (issue 43 item 8): the parsers of `npu-smi info -t health` / `-t ecc` and
`hccn_tool -optical -g` / `-link_stat -g`, on the vendor's texts (fixtures/README-health-checks.md
names the sources), and the judgements drawn from them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.hccn_tool import (
    HccnParseError,
    link_flaps,
    optical_problems,
    parse_link_stat,
    parse_optical,
    parse_stat,
    pfc_highest,
    stat_problems,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.npu_smi import (
    NpuSmiFormatError,
    ecc_problems,
    parse_npu_smi_ecc,
    parse_npu_smi_health,
)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")


def text(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return f.read()


OPTICAL = text("hccn_optical.txt")
LINK_STAT = text("hccn_link_stat.txt")
HEALTH = text("npu_smi_health.txt")
ECC = text("npu_smi_ecc.txt")
# hccn_tool -stat -g as the tool's own source prints it (tests/fixtures/hccn_tool/outputs.json names the sources)
STAT = json.loads((Path(__file__).resolve().parents[3] / "fixtures" / "hccn_tool" / "outputs.json").read_text())[
    "stat_get"]["text"]


# ---- npu-smi info -t health

def test_health_as_the_guide_prints_it():
    assert parse_npu_smi_health(HEALTH) == {"health": "OK", "error_code": None, "error_info": None}


def test_health_warning_with_its_error_code_and_the_short_key():
    alarm = HEALTH.replace(": OK", ": Alarm").replace("Error Code                     : NA",
                                                      "Error Code                     : 80E01801")
    assert parse_npu_smi_health(alarm) == {"health": "Alarm", "error_code": "80E01801", "error_info": None}
    assert parse_npu_smi_health("\tHealth                         : Critical\n")["health"] == "Critical"


def test_health_unreadable_is_refused_with_the_raw_text():
    with pytest.raises(NpuSmiFormatError, match=r"no 'Health Status : <word>' line \(first line "
                                                r"'dcmi module initialize failed. ret is -8005'\)"):
        parse_npu_smi_health("dcmi module initialize failed. ret is -8005\n")


# ---- npu-smi info -t ecc

def test_ecc_as_the_guide_prints_it():
    (chip,) = parse_npu_smi_ecc(ECC)
    assert chip["chip_id"] == 0 and chip["hbm_double_bit_errors"] == 0 and chip["hbm_single_bit_isolated_pages"] == 0
    assert ecc_problems([chip]) == []


def test_ecc_double_bit_errors_and_isolated_pages_are_problems():
    bad = (ECC.replace("HBM Double Bit Error Count               : 0", "HBM Double Bit Error Count               : 2")
           .replace("HBM Single Bit Isolated Pages Count      : 0", "HBM Single Bit Isolated Pages Count      : 3"))
    chips = parse_npu_smi_ecc(bad)
    assert ecc_problems(chips) == ["chip 0: 2 HBM double-bit (uncorrectable) ECC errors",
                                   "chip 0: 3 HBM pages isolated (single-bit 3, double-bit 0; more than 0)"]
    assert ecc_problems(chips, max_isolated_pages=5) == ["chip 0: 2 HBM double-bit (uncorrectable) ECC errors"]
    single = parse_npu_smi_ecc(ECC.replace("HBM Single Bit Error Count               : 0",
                                           "HBM Single Bit Error Count               : 9"))
    assert ecc_problems(single) == [] and ecc_problems(single, max_single_bit=5) == [
        "chip 0: 9 HBM single-bit ECC errors (more than 5)"]


def test_ecc_two_chips_and_unreadable_counts():
    chip_line = "Chip ID                                  : "
    two = ECC + ECC.replace(chip_line + "0", chip_line + "1")
    assert [c["chip_id"] for c in parse_npu_smi_ecc(two)] == [0, 1]
    with pytest.raises(NpuSmiFormatError, match="could not read the line 'HBM Double Bit Error Count : NA'"):
        parse_npu_smi_ecc(ECC.replace("HBM Double Bit Error Count               : 0",
                                      "HBM Double Bit Error Count               : NA"))
    with pytest.raises(NpuSmiFormatError, match="no HBM error count line"):
        parse_npu_smi_ecc("This device does not support querying ecc.\n")


# ---- hccn_tool -optical -g

def test_optical_as_the_guide_prints_it():
    o = parse_optical(OPTICAL)
    assert o == {"present": True, "tx_power_mw": [4.4035], "rx_power_mw": [1.0189], "tx_power_low_mw": 0.2818,
                 "rx_power_low_mw": 0.1445, "tx_los": "0x0", "rx_los": "0x0"}
    assert optical_problems(o) == []


def test_optical_module_missing_and_weak_light_are_problems():
    assert optical_problems(parse_optical(OPTICAL.replace("present              : present",
                                                          "present              : not present"))) == [
        "no optical module (hccn_tool -optical -g: present is not present)"]
    dark = parse_optical(OPTICAL.replace("Rx Power             : 1.0189 mW", "Rx Power             : 0.0000 mW"))
    assert optical_problems(dark) == ["the optical module receives 0 mW, under its low threshold 0.1445 mW "
                                      "(RX power; hccn_tool -optical -g)"]


def test_optical_per_lane_powers():
    lanes = OPTICAL.replace("Tx Power             : 4.4035 mW\n", "".join(
        f"Tx Power{i}            : 1.{i}000 mW\n" for i in range(4))).replace(
        "Rx Power             : 1.0189 mW\n", "".join(f"Rx Power{i}            : 0.{i + 1}000 mW\n" for i in range(4)))
    o = parse_optical(lanes)
    assert o["tx_power_mw"] == [1.0, 1.1, 1.2, 1.3] and o["rx_power_mw"] == [0.1, 0.2, 0.3, 0.4]
    assert optical_problems(o) == ["the optical module receives 0.1 mW, under its low threshold 0.1445 mW "
                                   "(RX power; hccn_tool -optical -g)"]


def test_optical_unreadable_is_refused_with_the_raw_line():
    with pytest.raises(HccnParseError, match=r"-optical -g: could not read the line 'Rx Power : n/a' "
                                             r"\(expected a power in mW\)"):
        parse_optical(OPTICAL.replace("1.0189 mW", "n/a"))
    with pytest.raises(HccnParseError, match=r"expected a 'present : present' line.*output: 'not supported'"):
        parse_optical("not supported")


# ---- hccn_tool -link_stat -g

def test_link_stat_as_the_guide_prints_it():
    s = parse_link_stat(LINK_STAT)
    # current time Wed Jun 7 10:08:28, the down at Tue Jun 6 16:32:10: 17 h 36 min 18 s before
    assert s == {"up_count": 2, "down_count": None, "downs_ago_s": [63378]}
    assert link_flaps(s, 3600) == 0 and link_flaps(s, 86400) == 1


def test_link_stat_flaps_in_the_window_and_a_down_count():
    recent = LINK_STAT.replace("Tue Jun  6 16:32:10 2023    LINK DOWN", "Wed Jun  7 10:00:00 2023    LINK DOWN")
    recent += "[device 0]    Wed Jun  7 09:59:00 2023    LINK DOWN\n[device 0]link down count     : 2\n"
    s = parse_link_stat(recent)
    assert s["down_count"] == 2 and link_flaps(s, 3600) == 2


def test_link_stat_unreadable_is_refused_with_the_raw_line():
    with pytest.raises(HccnParseError, match="could not read the line"):
        parse_link_stat("[device 0]link change records :\n")
    with pytest.raises(HccnParseError, match=r"could not read the line '\[device 0\]current time        : "
                                             r"yesterday' \(expected a time"):
        parse_link_stat(LINK_STAT.replace("Wed Jun  7 10:08:28 2023", "yesterday"))


# ---- hccn_tool -stat -g

def test_stat_as_the_tool_prints_it():
    stat = parse_stat(STAT)
    assert len(stat) == 48 and list(stat)[:3] == ["mac_tx_mac_pause_num", "mac_rx_mac_pause_num", "mac_tx_pfc_pkt_num"]
    assert stat["nic_rx_all_oct_num"] == 482237805 and stat["roce_rx_err_pkt_num"] == 0
    assert stat_problems(stat, 1000) == [] and stat_problems(stat, 0) == []
    assert pfc_highest(stat) == ("mac_tx_mac_pause_num", 0)  # all zero: the first of the highest


def test_stat_spacing_blank_lines_and_indentation_do_not_matter():
    assert parse_stat("\npacket statistics :\n\n  roce_rx_err_pkt_num : 12\nroce_tx_err_pkt_num:3  \n\t\n") == {
        "roce_rx_err_pkt_num": 12, "roce_tx_err_pkt_num": 3}


@pytest.mark.parametrize("bad, line", [
    ("packet statistics:\nroce_rx_err_pkt_num:-1\n", "roce_rx_err_pkt_num:-1"),
    ("packet statistics:\nroce_rx_err_pkt_num:\n", "roce_rx_err_pkt_num:"),
    ("packet statistics:\nroce_rx_err_pkt_num 5\n", "roce_rx_err_pkt_num 5"),
    ("dsmi get stat fail logic_id[0] port[0] ret[-8005]\n", "dsmi get stat fail logic_id[0] port[0] ret[-8005]"),
    ("packet statistics:\n", "packet statistics:"),
])
def test_stat_unreadable_line_is_refused_naming_it(bad, line):
    with pytest.raises(HccnParseError, match=r"hccn_tool -stat -g: could not read the line "
                                             + __import__("re").escape(repr(line))):
        parse_stat(bad)


def test_stat_error_counters_above_the_threshold_are_named_with_their_value():
    stat = parse_stat(STAT.replace("roce_rx_err_pkt_num:0", "roce_rx_err_pkt_num:1001")
                      .replace("mac_rx_fcs_err_pkt_num:0", "mac_rx_fcs_err_pkt_num:1000")
                      .replace("mac_tx_bad_pkt_num:0", "mac_tx_bad_pkt_num:5"))
    (only,) = stat_problems(stat, 1000)  # 1000 is not above 1000
    assert only.startswith("roce_rx_err_pkt_num is 1001 (bad packets received by RoCE; more than 1000, ")
    assert [p.split(" is ", maxsplit=1)[0] for p in stat_problems(stat, 0)] == [
        "roce_rx_err_pkt_num", "mac_tx_bad_pkt_num", "mac_rx_fcs_err_pkt_num"]
    # PFC and pause counters, however high, are never problems
    busy = parse_stat(STAT.replace("mac_rx_pfc_pri4_pkt_num:0", "mac_rx_pfc_pri4_pkt_num:99999999"))
    assert stat_problems(busy, 0) == [] and pfc_highest(busy) == ("mac_rx_pfc_pri4_pkt_num", 99999999)


def test_stat_without_any_error_counter_is_a_problem_and_pfc_totals_stand_in():
    stat = parse_stat("packet statistics:\nmac_tx_pfc_pkt_num:4\nmac_rx_pfc_pkt_num:9\n")
    assert stat_problems(stat, 1000) == ["hccn_tool -stat -g printed none of the error counters roce_rx_err_pkt_num, "
                                         "roce_tx_err_pkt_num, mac_rx_bad_pkt_num, mac_tx_bad_pkt_num, "
                                         "mac_rx_fcs_err_pkt_num"]
    assert pfc_highest(stat) == ("mac_rx_pfc_pkt_num", 9)
    assert pfc_highest(parse_stat("nic_tx_all_pkg_num:1\n")) is None
