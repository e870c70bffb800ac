"""ascend_metrics_textfile: writes the textfile atomically, changed only on new content, check mode and diff."""

from __future__ import annotations

import json
import os

from ansible_collections.ascendops.cluster.plugins.module_utils.prometheus_textfile import validate
from ansible_collections.ascendops.cluster.plugins.modules import ascend_metrics_textfile
from ansible_collections.ascendops.cluster.tests.unit.plugins.modules.ascend_module_harness import (
    fixture_text,
    write_script,
)

STATUS = {"schema": 1, "job": "llama3-8b", "node": "node1", "node_rank": 0, "state": "running", "step": 120,
          "steps": 1000, "loss": 2.4375, "tokens_per_s_per_device": 2875.5, "mfu": 0.412,
          "last_checkpoint": "global_step100", "last_checkpoint_step": 100, "updated_at": 1764633600}


def setup(tmp_path, status=None):
    status = STATUS if status is None else status
    textfile = tmp_path / "textfile_collector"
    textfile.mkdir()
    status_file = tmp_path / "status.json"
    status_file.write_text(json.dumps(status))
    ckpt = tmp_path / "checkpoints" / "global_step100"
    ckpt.mkdir(parents=True)
    os.utime(ckpt, (1764633000, 1764633000))
    smi = fixture_text("npu_smi_usages_910b.txt")
    common = fixture_text("npu_smi_common_910b.txt").replace(": 1\n", ": 0\n", 1)
    (tmp_path / "usages").write_text(smi)
    (tmp_path / "common").write_text(common)
    script = write_script(tmp_path / "npu-smi", f"""#!/bin/sh
case "$*" in
  "info -l") printf '\\tTotal Count : 1\\n\\n\\tNPU ID : 0\\n\\tChip Count : 1\\n';;
  "info -t usages -i 0") cat {tmp_path}/usages;;
  "info -t common -i 0") cat {tmp_path}/common;;
  *) echo Error; exit 1;;
esac
""")
    args = {"directory": str(textfile), "node": "node1", "status_file": str(status_file),
            "checkpoint_dir": str(tmp_path / "checkpoints"), "npu_smi": script}
    return textfile, args


def test_writes_then_unchanged(run_module, tmp_path):
    textfile, args = setup(tmp_path)
    res = run_module(ascend_metrics_textfile.main, args)
    assert not res.get("failed"), res.get("msg")
    assert res["changed"] is True and res["path"] == str(textfile / "ascendops.prom")
    text = (textfile / "ascendops.prom").read_text()
    validate(text)
    assert 'ascend_train_step{node="node1",job="llama3-8b"} 120\n' in text
    assert 'ascend_train_last_checkpoint_timestamp_seconds{node="node1",job="llama3-8b"} 1764633000\n' in text
    assert 'ascend_npu_hbm_total_bytes{node="node1",npu="0",job="llama3-8b"} 68719476736\n' in text
    assert 'ascend_npu_power_watts{node="node1",npu="0",job="llama3-8b"} 93.4\n' in text
    assert res["metrics"] == text.count("# TYPE ") == 17 and res["status_file_read"] and res["npu_error"] is None
    assert oct(os.stat(textfile / "ascendops.prom").st_mode & 0o7777) == "0o644"
    assert os.listdir(textfile) == ["ascendops.prom"]  # no temporary file left
    again = run_module(ascend_metrics_textfile.main, args)
    assert again["changed"] is False


def test_check_mode_and_diff_write_nothing(run_module, tmp_path):
    textfile, args = setup(tmp_path)
    res = run_module(ascend_metrics_textfile.main, args, check_mode=True, diff=True)
    assert res["changed"] is True and not (textfile / "ascendops.prom").exists()
    assert res["diff"]["before"] == "" and "ascend_train_loss" in res["diff"]["after"]
    run_module(ascend_metrics_textfile.main, args)
    (tmp_path / "status.json").write_text(json.dumps(dict(STATUS, step=121)))
    res = run_module(ascend_metrics_textfile.main, args, check_mode=True, diff=True)
    assert res["changed"] is True
    assert "} 120\n" in res["diff"]["before"] and "} 121\n" in res["diff"]["after"]
    assert 'ascend_train_step{node="node1",job="llama3-8b"} 120\n' in (textfile / "ascendops.prom").read_text()


def test_mode_change_is_a_change(run_module, tmp_path):
    textfile, args = setup(tmp_path)
    run_module(ascend_metrics_textfile.main, args)
    os.chmod(textfile / "ascendops.prom", 0o600)
    assert run_module(ascend_metrics_textfile.main, args)["changed"] is True
    assert oct(os.stat(textfile / "ascendops.prom").st_mode & 0o7777) == "0o644"


def test_no_status_file_and_no_npu_smi(run_module, tmp_path):
    textfile, args = setup(tmp_path)
    args.update(status_file=str(tmp_path / "absent.json"), npu_smi=str(tmp_path / "absent" / "npu-smi"))
    res = run_module(ascend_metrics_textfile.main, args)
    assert not res.get("failed") and res["status_file_read"] is False and "not found" in res["npu_error"]
    assert (textfile / "ascendops.prom").read_text() == ""


def test_npu_off_and_job_option(run_module, tmp_path):
    textfile, args = setup(tmp_path)
    res = run_module(ascend_metrics_textfile.main, dict(args, npu=False, job="other"))
    text = (textfile / "ascendops.prom").read_text()
    assert "ascend_npu_" not in text and 'job="other"' in text and res["npu_error"] is None


def test_missing_directory_bad_name_bad_mode_fail(run_module, tmp_path):
    _textfile, args = setup(tmp_path)
    res = run_module(ascend_metrics_textfile.main, dict(args, directory=str(tmp_path / "nope")))
    assert res["failed"] and str(tmp_path / "nope") in res["msg"] and "node_exporter" in res["msg"]
    res = run_module(ascend_metrics_textfile.main, dict(args, name="ascendops.txt"))
    assert res["failed"] and res["msg"].startswith("name: 'ascendops.txt' is not a file name ending in .prom")
    res = run_module(ascend_metrics_textfile.main, dict(args, mode="rw-r--r--"))
    assert res["failed"] and res["msg"].startswith("mode: 'rw-r--r--' is not an octal mode")


def test_unreadable_status_file_is_a_warning(run_module, tmp_path):
    _textfile, args = setup(tmp_path)
    (tmp_path / "status.json").write_text("{not json")
    res = run_module(ascend_metrics_textfile.main, args)
    assert not res.get("failed") and res["status_file_read"] is False
    assert any("cannot read the status file" in w for w in res["warnings"])
