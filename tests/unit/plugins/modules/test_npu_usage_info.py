"""npu_usage_info against a fake npu-smi that prints the real samples of fixtures/ (see
fixtures/README-npu-smi-usages.md)."""

from __future__ import annotations

import os
import shlex

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.npu_smi import parse_npu_smi_chip_values
from ansible_collections.ascendops.cluster.plugins.module_utils.npu_usage import combine, summary, usage_line
from ansible_collections.ascendops.cluster.plugins.modules import npu_usage_info
from ansible_collections.ascendops.cluster.tests.unit.plugins.modules.ascend_module_harness import (
    FIXTURES,
    fixture_text,
    write_script,
)

LIST_2 = "\tTotal Count                    : 2\n\n\tNPU ID                         : 0\n\tChip Count : 1\n\n" \
         "\tNPU ID                         : 1\n\tChip Count : 1\n"


def fake_npu_smi(tmp_path, outputs, rc=0):
    """A npu-smi printing outputs[(type, id)] for `info -t type -i id`, outputs['list'] for `info -l`;
    anything else: exit 1. Every call is logged."""
    lines = ["#!/bin/sh", f"echo \"$*\" >> {shlex.quote(str(tmp_path / 'calls'))}", 'case "$*" in']
    for key, text in outputs.items():
        path = tmp_path / f"out-{key if isinstance(key, str) else '-'.join(map(str, key))}"
        path.write_text(text)
        pattern = "info -l" if key == "list" else f"info -t {key[0]} -i {key[1]}"
        lines.append(f"  '{pattern}') cat {shlex.quote(str(path))}; exit {rc};;")
    lines += ["  *) echo 'Error: unsupported'; exit 1;;", "esac", ""]
    return write_script(tmp_path / "npu-smi", "\n".join(lines))


def f(name):
    return fixture_text(name)


def renumber(text, npu_id):
    return text.replace("NPU ID                         : 0", f"NPU ID                         : {npu_id}", 1) \
        .replace("NPU ID                         : 1", f"NPU ID                         : {npu_id}", 1)


def test_910b_node(run_module, tmp_path):
    outputs = {"list": LIST_2}
    for npu in (0, 1):
        outputs[("usages", npu)] = renumber(f("npu_smi_usages_910b.txt"), npu)
        outputs[("common", npu)] = renumber(f("npu_smi_common_910b.txt"), npu)
    smi = fake_npu_smi(tmp_path, outputs)
    res = run_module(npu_usage_info.main, {"npu_smi": smi, "node": "node1"}, check_mode=True)
    assert not res.get("failed"), res.get("msg")
    assert res["changed"] is False and res["available"] is True and res["error"] is None
    npu = res["npus"][0]
    assert (npu["npu_id"], npu["ai_core_pct"], npu["hbm_total_mb"], npu["hbm_used_mb"], npu["temperature_c"],
            npu["power_w"], npu["memory_kind"]) == (0, 0, 65536, 2621, 46, 93.4, "hbm")
    assert [n["npu_id"] for n in res["npus"]] == [0, 1]
    assert res["summary"]["count"] == 2 and res["summary"]["memory_total_mb"] == 131072
    assert res["line"] == "node1: NPU 2/2 read, 0 busy, AI Core 0% (max 0%), HBM 5.1/128.0 GiB, 186.8 W, max 46 C"
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls == ["info -l", "info -t usages -i 0", "info -t common -i 0", "info -t usages -i 1",
                     "info -t common -i 1"]


def test_310p_has_no_hbm_and_takes_the_card_power():
    usages = parse_npu_smi_chip_values(f("npu_smi_usages_310p.txt"), "usages")
    common = parse_npu_smi_chip_values(f("npu_smi_common_310p.txt"), "common")
    npu = combine(1, usages, common)
    assert npu["hbm_used_mb"] is None and npu["hbm_total_mb"] is None
    assert (npu["memory_kind"], npu["memory_total_mb"], npu["memory_used_mb"]) == ("ddr", 87973, 2639)
    assert (npu["chip_count"], npu["temperature_c"], npu["power_w"], npu["ctrlcpu_pct"]) == (2, 60, 45.2, 2.5)
    assert [c["chip_id"] for c in npu["chips"]] == [0, 1]


def test_chip_power_wins_over_the_mcu_and_common_without_chip_lines():
    common = parse_npu_smi_chip_values(f("npu_smi_common_910b_mcu_power.txt"), "common")
    assert combine(0, None, common)["power_w"] == 69.0
    bare = combine(0, None, parse_npu_smi_chip_values(f("npu_smi_common_no_chip_lines.txt"), "common"))
    assert (bare["power_w"], bare["temperature_c"], bare["hbm_total_mb"], bare["chip_count"]) == (298.6, 65, None, 1)


def test_910_32g_usage():
    npu = combine(0, parse_npu_smi_chip_values(f("npu_smi_usages_910_32g.txt"), "usages"), None)
    assert (npu["hbm_total_mb"], npu["hbm_used_mb"], npu["temperature_c"], npu["power_w"]) == (32768, 0, None, None)


def test_bare_node_is_reported_not_failed(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    res = run_module(npu_usage_info.main, {"npu_smi": str(tmp_path / "absent" / "npu-smi"), "node": "n1"})
    assert not res.get("failed")
    assert res["available"] is False and "not found" in res["error"] and res["npus"] == []
    assert res["line"].startswith("n1: NPU usage unavailable: npu-smi not found")


def test_driver_not_loaded_is_reported(run_module, tmp_path):
    smi = write_script(tmp_path / "npu-smi", "#!/bin/sh\necho 'dcmi module initialize failed. ret is -8005'\nexit 1\n")
    res = run_module(npu_usage_info.main, {"npu_smi": smi})
    assert res["available"] is False and not res.get("failed")
    assert res["error"].startswith("npu-smi info -l: dcmi module initialize failed. ret is -8005 (")


def test_unknown_layout_names_the_line_and_fail_on_error_fails(run_module, tmp_path):
    outputs = {"list": LIST_2,
               ("usages", 0): renumber(f("npu_smi_usages_910b.txt"), 0),
               ("common", 0): renumber(f("npu_smi_common_910b.txt"), 0),
               ("usages", 1): "+-----+\n| NPU | Aicore |\n", ("common", 1): renumber(f("npu_smi_common_910b.txt"), 1)}
    smi = fake_npu_smi(tmp_path, outputs)
    res = run_module(npu_usage_info.main, {"npu_smi": smi, "node": "n1"})
    assert not res.get("failed") and res["available"] is True
    assert res["npus"][1] == {"npu_id": 1, "error": "npu-smi info -t usages: a line is not 'Key : Value': '+-----+'"}
    assert res["summary"]["read"] == 1
    assert res["line"].endswith("NPU 1: npu-smi info -t usages: a line is not 'Key : Value': '+-----+'")
    res = run_module(npu_usage_info.main, {"npu_smi": smi, "fail_on_error": True})
    assert res["failed"] and res["msg"] == ("cannot read the NPU usage: npu-smi info -t usages: a line is not "
                                            "'Key : Value': '+-----+'")


def test_npu_ids_and_wrong_npu_answer(run_module, tmp_path):
    outputs = {("usages", 3): renumber(f("npu_smi_usages_910b.txt"), 0),
               ("common", 3): renumber(f("npu_smi_common_910b.txt"), 3)}
    smi = fake_npu_smi(tmp_path, outputs)
    res = run_module(npu_usage_info.main, {"npu_smi": smi, "npu_ids": [3]})
    assert res["available"] is False
    assert res["error"] == "npu-smi info -t usages -i 3 answered for NPU 0"
    assert "info -l" not in (tmp_path / "calls").read_text()


def test_usage_line_shows_ddr_for_310p():
    result = {"available": True, "npus": [combine(1, parse_npu_smi_chip_values(f("npu_smi_usages_310p.txt"), "usages"),
                                                  parse_npu_smi_chip_values(f("npu_smi_common_310p.txt"), "common"))]}

    result["summary"] = summary(result["npus"])
    assert usage_line("", result) == "NPU 1/1 read, 0 busy, AI Core 0% (max 0%), DDR 2.6/85.9 GiB, 45.2 W, max 60 C"


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(FIXTURES) if n.startswith("npu_smi_usages_")
                                        or n.startswith("npu_smi_common_")))
def test_every_sample_gives_a_record(name):
    what = "usages" if "usages" in name else "common"
    parsed = parse_npu_smi_chip_values(f(name), what)
    npu = combine(parsed["npu_id"], parsed if what == "usages" else None, parsed if what == "common" else None)
    assert npu["ai_core_pct"] is not None and npu["chips"]
