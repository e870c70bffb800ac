"""Prometheus text exposition: the renderer, the strict validator, and the ascendops metric families."""

from __future__ import annotations

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_metrics import (
    npu_families,
    render_metrics,
    training_families,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.prometheus_textfile import (
    Family,
    format_value,
    render,
    validate,
)

STATUS = {"schema": 1, "job": "llama3-8b", "node": "node1", "node_rank": 0, "state": "running", "step": 120,
          "steps": 1000, "loss": 2.4375, "tokens_per_s_per_device": 2875.5, "mfu": 0.412,
          "last_checkpoint": "global_step100", "last_checkpoint_step": 100, "updated_at": 1764633600.25}
NPUS = [
    {"npu_id": 0, "ai_core_pct": 87.0, "aicpu_pct": 0.0, "ctrlcpu_pct": 3.0, "hbm_used_mb": 7209,
     "hbm_total_mb": 65536, "temperature_c": 63, "power_w": 298.4, "error": None},
    {"npu_id": 1, "error": "npu-smi info -t usages: a line is not 'Key : Value': '+---+'"},
    {"npu_id": 2, "ai_core_pct": 0.0, "aicpu_pct": None, "ctrlcpu_pct": 2.5, "hbm_used_mb": None,
     "hbm_total_mb": None, "temperature_c": 60, "power_w": 45.2, "error": None},
]

EXPECTED = """\
# HELP ascend_train_step Last optimizer step the trainer reported.
# TYPE ascend_train_step gauge
ascend_train_step{node="node1",job="llama3-8b"} 120
# HELP ascend_train_steps Steps the job trains in all (train.steps).
# TYPE ascend_train_steps gauge
ascend_train_steps{node="node1",job="llama3-8b"} 1000
# HELP ascend_train_loss Training loss at the last reported step.
# TYPE ascend_train_loss gauge
ascend_train_loss{node="node1",job="llama3-8b"} 2.4375
# HELP ascend_train_tokens_per_second_per_device Training throughput in tokens per second per NPU device.
# TYPE ascend_train_tokens_per_second_per_device gauge
ascend_train_tokens_per_second_per_device{node="node1",job="llama3-8b"} 2875.5
# HELP ascend_train_mfu_ratio Model FLOPs utilisation (0 to 1) at the last reported step.
# TYPE ascend_train_mfu_ratio gauge
ascend_train_mfu_ratio{node="node1",job="llama3-8b"} 0.412
# HELP ascend_train_last_checkpoint_step Step of the last checkpoint the trainer saved.
# TYPE ascend_train_last_checkpoint_step gauge
ascend_train_last_checkpoint_step{node="node1",job="llama3-8b"} 100
# HELP ascend_train_last_checkpoint_timestamp_seconds Unix time the last checkpoint was written (its \
directory's modification time); age: time() - this.
# TYPE ascend_train_last_checkpoint_timestamp_seconds gauge
ascend_train_last_checkpoint_timestamp_seconds{node="node1",job="llama3-8b"} 1764633000
# HELP ascend_train_status_updated_timestamp_seconds Unix time the trainer last wrote its status file.
# TYPE ascend_train_status_updated_timestamp_seconds gauge
ascend_train_status_updated_timestamp_seconds{node="node1",job="llama3-8b"} 1764633600.25
# HELP ascend_train_state The trainer's state: 1 for the current one, 0 for the others.
# TYPE ascend_train_state gauge
ascend_train_state{node="node1",job="llama3-8b",state="starting"} 0
ascend_train_state{node="node1",job="llama3-8b",state="running"} 1
ascend_train_state{node="node1",job="llama3-8b",state="completed"} 0
ascend_train_state{node="node1",job="llama3-8b",state="stopped"} 0
ascend_train_state{node="node1",job="llama3-8b",state="failed"} 0
# HELP ascend_npu_up 1 when npu-smi answered for this NPU, 0 when it did not.
# TYPE ascend_npu_up gauge
ascend_npu_up{node="node1",npu="0",job="llama3-8b"} 1
ascend_npu_up{node="node1",npu="1",job="llama3-8b"} 0
ascend_npu_up{node="node1",npu="2",job="llama3-8b"} 1
# HELP ascend_npu_ai_core_usage_percent AI Core usage in percent (npu-smi info -t usages).
# TYPE ascend_npu_ai_core_usage_percent gauge
ascend_npu_ai_core_usage_percent{node="node1",npu="0",job="llama3-8b"} 87
ascend_npu_ai_core_usage_percent{node="node1",npu="2",job="llama3-8b"} 0
# HELP ascend_npu_ai_cpu_usage_percent AI CPU usage in percent.
# TYPE ascend_npu_ai_cpu_usage_percent gauge
ascend_npu_ai_cpu_usage_percent{node="node1",npu="0",job="llama3-8b"} 0
# HELP ascend_npu_ctrl_cpu_usage_percent Control CPU usage in percent.
# TYPE ascend_npu_ctrl_cpu_usage_percent gauge
ascend_npu_ctrl_cpu_usage_percent{node="node1",npu="0",job="llama3-8b"} 3
ascend_npu_ctrl_cpu_usage_percent{node="node1",npu="2",job="llama3-8b"} 2.5
# HELP ascend_npu_hbm_used_bytes HBM in use (capacity x HBM Usage Rate; npu-smi prints a rate, good to 1 percent).
# TYPE ascend_npu_hbm_used_bytes gauge
ascend_npu_hbm_used_bytes{node="node1",npu="0",job="llama3-8b"} 7559184384
# HELP ascend_npu_hbm_total_bytes HBM capacity.
# TYPE ascend_npu_hbm_total_bytes gauge
ascend_npu_hbm_total_bytes{node="node1",npu="0",job="llama3-8b"} 68719476736
# HELP ascend_npu_temperature_celsius Temperature of the NPU's hottest chip.
# TYPE ascend_npu_temperature_celsius gauge
ascend_npu_temperature_celsius{node="node1",npu="0",job="llama3-8b"} 63
ascend_npu_temperature_celsius{node="node1",npu="2",job="llama3-8b"} 60
# HELP ascend_npu_power_watts Power draw of the NPU (or of its card where only that is printed).
# TYPE ascend_npu_power_watts gauge
ascend_npu_power_watts{node="node1",npu="0",job="llama3-8b"} 298.4
ascend_npu_power_watts{node="node1",npu="2",job="llama3-8b"} 45.2
"""


def test_full_file_renders_exactly_and_validates():
    text = render_metrics("node1", "llama3-8b", STATUS, NPUS, checkpoint_mtime=1764633000)
    assert text == EXPECTED
    names = validate(text)
    assert names[0] == "ascend_train_step" and names[-1] == "ascend_npu_power_watts"
    assert all(n.startswith("ascend_") for n in names)


def test_no_status_no_npus_is_an_empty_file():
    assert render_metrics("node1", "", None, []) == ""
    assert validate("") == []


def test_job_comes_from_the_status_file_and_unknown_state_is_kept():
    text = render(training_families(dict(STATUS, state="paused"), "n", ""))
    assert 'ascend_train_step{node="n",job="llama3-8b"} 120' in text
    assert 'ascend_train_state{node="n",job="llama3-8b",state="paused"} 1' in text
    assert 'state="running"} 0' in text
    validate(text)


def test_npu_metrics_without_job_have_no_job_label():
    text = render(npu_families(NPUS[:1], "n"))
    assert 'ascend_npu_up{node="n",npu="0"} 1\n' in text
    validate(text)


def test_label_and_help_escaping():
    fam = Family("ascend_x", "gauge", "a\\b\nc").add({"node": 'a"b\\c\nd'}, 1)
    text = render([fam])
    assert text == '# HELP ascend_x a\\\\b\\nc\n# TYPE ascend_x gauge\nascend_x{node="a\\"b\\\\c\\nd"} 1\n'
    validate(text)


@pytest.mark.parametrize("value, shown", [(1, "1"), (2.5, "2.5"), (3.0, "3"), (float("nan"), "NaN"),
                                          (float("inf"), "+Inf"), (float("-inf"), "-Inf"), (True, "1"),
                                          (1e-07, "1e-07")])
def test_values(value, shown):
    assert format_value(value) == shown
    validate(f"# HELP m h\n# TYPE m gauge\nm {shown}\n")


def test_invalid_names_are_refused():
    with pytest.raises(ValueError, match="invalid metric name"):
        Family("ascend-x", "gauge", "h")
    with pytest.raises(ValueError, match="invalid label name"):
        Family("ascend_x", "gauge", "h").add({"bad-label": "v"}, 1)
    with pytest.raises(ValueError, match="invalid metric type"):
        Family("ascend_x", "gauges", "h")


GOOD = "# HELP m h\n# TYPE m gauge\nm{a=\"1\"} 1\n"


@pytest.mark.parametrize("text, message", [
    ("# HELP m h\n# TYPE m gauge\nm 1", "does not end with a newline"),
    ("m 1\n", "before its family's # HELP and # TYPE"),
    ("# HELP m h\n# TYPE m gauge\nm{a=\"1\"} 1\nm{a=\"1\"} 2\n", "the same series twice"),
    ("# HELP m h\n# TYPE m gauge\nm{a=1} 1\n", "invalid labels"),
    ("# HELP m h\n# TYPE m gauge\nm{a=\"1\",a=\"2\"} 1\n", "a label twice"),
    ("# HELP m h\n# TYPE m gauge\nm one\n", "invalid value"),
    ("# HELP m h\n# TYPE m gauges\nm 1\n", "invalid # TYPE"),
    ("# HELP m h\n# TYPE m gauge\n# TYPE m gauge\nm 1\n", "a second # TYPE"),
    (GOOD + "# HELP n h\n# TYPE n gauge\nn 1\nm{a=\"2\"} 1\n", "are not together"),
    (GOOD + "\n", "an empty line"),
    ("# HELP m h\n# TYPE m gauge\nm{a=\"1\"}  1\n", "not a sample line"),
    ("# HELP m-x h\n", "invalid metric name"),
])
def test_validator_refuses(text, message):
    with pytest.raises(ValueError, match=message):
        validate(text)
