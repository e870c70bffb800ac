"""NPU usage sampled into the run's metrics (npu_usage.py) and drawn by `ascendops-train plot`.

The npu-smi samples are real outputs (sources in the collection's
tests/unit/plugins/fixtures/README-npu-smi-usages.md): a 910B from
https://arthurchiao.art/blog/gpu-advanced-notes-2-zh/ (3.3.2) and a 310P from gpustack's
tests/detectors/npu_smi/test_npu_smi.py.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from ascendops_trainer.npu_usage import NpuUsageError, NpuUsageSampler, combine, node_has_npus, parse_chips

USAGES_910B = """\
        NPU ID                         : 0
        Chip Count                     : 1

        DDR Capacity(MB)               : 0
        DDR Usage Rate(%)              : 0
        HBM Capacity(MB)               : 65536
        HBM Usage Rate(%)              : 4
        Aicore Usage Rate(%)           : 0
        Aicpu Usage Rate(%)            : 0
        Ctrlcpu Usage Rate(%)          : 0
        Chip ID                        : 0
"""
COMMON_910B = """\
        NPU ID                         : 0
        Chip Count                     : 1

        Chip ID                        : 0
        Memory Usage Rate(%)           : 0
        HBM Usage Rate(%)              : 4
        Aicore Usage Rate(%)           : 0
        Aicore Count                   : 24
        Temperature(C)                 : 46
        NPU Real-time Power(W)         : 93.4

        Chip Name                      : mcu
        Temperature(C)                 : 38
"""
COMMON_310P = """\
NPU ID                         : 1
Chip Count                     : 2

Chip ID                        : 0
Memory Usage Rate(%)           : 3
Aicore Usage Rate(%)           : 0
Temperature(C)                 : 60

Chip ID                        : 1
Memory Usage Rate(%)           : 3
Aicore Usage Rate(%)           : 0
Temperature(C)                 : 59

Chip Name                      : mcu
Temperature(C)                 : 48
NPU Real-time Power(W)         : 45.2
"""


def test_parse_usages_and_common():
    chips, mcu = parse_chips(USAGES_910B, "usages")
    assert chips == [{"hbm_mb": 65536, "hbm_pct": 4, "aicore": 0}] and mcu == {}
    chips, mcu = parse_chips(COMMON_910B, "common")
    assert chips == [{"hbm_pct": 4, "aicore": 0, "temp": 46, "power": 93.4}] and mcu == {"temp": 38}
    chips, mcu = parse_chips(COMMON_310P, "common")
    assert chips == [{"aicore": 0, "temp": 60}, {"aicore": 0, "temp": 59}] and mcu == {"temp": 48, "power": 45.2}


def test_parse_names_the_line():
    with pytest.raises(NpuUsageError, match=r"-t usages: a line is not 'Key : Value': '\| 0 \| 910B \|'"):
        parse_chips("NPU ID : 0\n| 0 | 910B |\n", "usages")


def test_combine_node_figures():
    busy = [{"hbm_mb": 65536, "hbm_pct": 50, "aicore": 90, "temp": 60, "power": 300.0}]
    idle = [{"hbm_mb": 65536, "hbm_pct": 4, "aicore": 0, "temp": 46, "power": 93.4}]
    assert combine([(busy, {}), (idle, {})]) == {
        "npu_ai_core_pct": 45.0, "npu_hbm_used_mb": 35389, "npu_hbm_total_mb": 131072, "npu_power_w": 393.4,
        "npu_temp_c": 60}
    p310 = combine([parse_chips(COMMON_310P, "common")])
    assert p310["npu_hbm_total_mb"] is None and p310["npu_power_w"] == 45.2 and p310["npu_temp_c"] == 60


def fake_npu_smi(tmp_path, body):
    path = tmp_path / "npu-smi"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def wait_for(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def test_sampler_reads_the_node_in_the_background(tmp_path):
    (tmp_path / "usages").write_text(USAGES_910B)
    (tmp_path / "common").write_text(COMMON_910B)
    smi = fake_npu_smi(tmp_path, f"""case "$*" in
  "info -l") printf '\\tTotal Count : 1\\n\\n\\tNPU ID : 0\\n';;
  "info -t usages -i 0") cat {tmp_path}/usages;;
  "info -t common -i 0") cat {tmp_path}/common;;
  *) echo Error; exit 1;;
esac
""")
    sampler = NpuUsageSampler(0.05, npu_smi=smi).start()
    try:
        assert wait_for(lambda: sampler.latest())
        assert sampler.latest() == {"npu_ai_core_pct": 0.0, "npu_hbm_used_mb": 2621, "npu_hbm_total_mb": 65536,
                                    "npu_power_w": 93.4, "npu_temp_c": 46}
        (tmp_path / "usages").write_text(USAGES_910B.replace("Aicore Usage Rate(%)           : 0",
                                                             "Aicore Usage Rate(%)           : 88"))
        assert wait_for(lambda: sampler.latest().get("npu_ai_core_pct") == 88.0)
    finally:
        sampler.close()
    assert sampler.error is None


def test_sampler_stops_on_a_failing_npu_smi_and_training_goes_on(tmp_path):
    smi = fake_npu_smi(tmp_path, "echo 'dcmi module initialize failed. ret is -8005'\nexit 1\n")
    sampler = NpuUsageSampler(0.05, npu_smi=smi).start()
    assert wait_for(lambda: sampler.error is not None)
    sampler.close()
    assert sampler.error == "npu-smi info -l failed (rc=1): dcmi module initialize failed. ret is -8005"
    assert sampler.latest() == {}


def test_sampler_off_or_without_npu_smi_starts_nothing(tmp_path):
    assert NpuUsageSampler(0, npu_smi=fake_npu_smi(tmp_path, "exit 0\n")).start()._thread is None
    missing = NpuUsageSampler(10, npu_smi=str(tmp_path / "absent"))
    assert missing.start()._thread is None and missing.latest() == {}
    missing.close()


def test_node_has_npus_by_device_nodes_or_the_runtime_whatever_the_training_device(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "null").write_text("")
    (dev / "davinci_manager").write_text("")  # control devices alone are no NPU
    assert not node_has_npus({}, str(dev))  # a CPU or CUDA machine: nothing to read
    assert not node_has_npus({"ASCEND_VISIBLE_DEVICES": " "}, str(dev))
    assert node_has_npus({"ASCEND_VISIBLE_DEVICES": "0-7"}, str(dev))  # the Ascend Docker Runtime's view
    (dev / "davinci3").write_text("")  # a --device /dev/davinci3 container, a bare-metal node
    assert node_has_npus({}, str(dev))
    assert not node_has_npus({}, str(tmp_path / "absent"))


def test_for_node_samples_on_the_main_rank_where_npus_are_visible(tmp_path):
    smi = fake_npu_smi(tmp_path, "exit 0\n")
    dev = tmp_path / "dev"
    dev.mkdir()
    assert NpuUsageSampler.for_node(10, True, {}, str(dev), smi).interval_s == 0  # no NPU: off, nothing said
    assert NpuUsageSampler.for_node(10, True, {}, str(dev), smi).start()._thread is None
    (dev / "davinci0").write_text("")
    on = NpuUsageSampler.for_node(10, True, {}, str(dev), smi)
    assert on.interval_s == 10 and on.npu_smi == smi
    assert NpuUsageSampler.for_node(10, False, {}, str(dev), smi).interval_s == 0  # other ranks: off
    runtime = NpuUsageSampler.for_node(10, True, {"ASCEND_VISIBLE_DEVICES": "0"}, str(tmp_path / "x"), smi)
    assert runtime.interval_s == 10
    absent = NpuUsageSampler.for_node(10, True, {}, str(dev), str(tmp_path / "absent"))  # NPUs but no npu-smi
    assert absent.npu_smi is None and absent.start()._thread is None and absent.error is None


def test_plot_draws_npu_usage_under_loss_and_throughput(tmp_path):
    from ascendops_trainer.metrics import plot

    run = tmp_path / "run"
    run.mkdir()
    with open(run / "metrics.jsonl", "w") as f:
        for step in range(1, 21):
            rec = {"step": step, "loss": 5.0 - step * 0.1, "tokens_per_s_per_device": 1000.0 + step}
            if step > 2:
                rec.update(npu_ai_core_pct=80.0 + step % 5, npu_hbm_used_mb=30000 + step)
            f.write(json.dumps(rec) + "\n")
    written = [os.path.basename(p) for p in plot(str(run), str(tmp_path / "out"))]
    assert written == ["loss.png", "tokens_per_s.png", "npu_ai_core.png", "npu_hbm.png", "overview.png"]
    data = (tmp_path / "out" / "overview.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    height = matplotlib.image.imread(str(tmp_path / "out" / "overview.png")).shape[0]
    assert height == 4 * 240  # four panels of 2.4 in at 100 dpi: loss, tokens/s, AI Core, HBM


def test_interval_config():
    from ascendops_trainer.config import ConfigError, build_config

    assert build_config({}).metrics.npu_usage_interval_s == 10.0
    assert build_config({"metrics.npu_usage_interval_s": "0"}).metrics.npu_usage_interval_s == 0
    with pytest.raises(ConfigError, match="metrics.npu_usage_interval_s must be >= 0"):
        build_config({"metrics.npu_usage_interval_s": "-1"})
