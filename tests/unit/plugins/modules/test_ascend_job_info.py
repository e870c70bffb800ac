"""ascend_job_info against fake systemctl, docker, journalctl and npu-smi (a node's job state)."""

import json
import os
import subprocess
import sys

import pytest
from ansible_collections.ascendops.cluster.plugins.modules import ascend_job_info
from ansible_collections.ascendops.cluster.tests.unit.plugins.modules.ascend_module_harness import write_script

NPU_SMI = """+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
+===========================+===============+====================================================+
| 0     910B3               | OK            | 93.1        42                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3339 / 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
@ROWS@+===========================+===============+====================================================+
"""


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A fake node: bin/ with the tools, the unit's properties, the job's files."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    props = tmp_path / "props"
    props.write_text("LoadState=loaded\nActiveState=active\nSubState=running\nResult=success\nExecMainStatus=0\n"
                     "ExecMainStartTimestampMonotonic=5000000\nActiveEnterTimestampMonotonic=5000000\nNRestarts=0\n"
                     "UnitFileState=enabled\n")
    write_script(bin_dir / "systemctl", f"#!/bin/sh\necho \"$@\" >> {tmp_path}/systemctl.calls\ncat {props}\n")
    write_script(bin_dir / "docker", f"#!/bin/sh\n[ -f {tmp_path}/container ] || exit 1\ncat {tmp_path}/container\n")
    write_script(bin_dir / "journalctl", "#!/bin/sh\nprintf 'step 1\\n[rank0]: Traceback (most recent call last):\\n"
                 "[rank0]:   File \"x\", line 1\\n[rank0]: FloatingPointError: loss is nan\\nEI0006 boom\\nlast\\n'\n")
    rows = tmp_path / "rows"
    rows.write_text("")
    table = NPU_SMI.replace("@ROWS@", "$rows")
    write_script(bin_dir / "npu-smi", f"#!/bin/sh\nrows=$(cat {rows})\ncat <<EOF\n{table}EOF\n")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    (tmp_path / "container").write_text("running\n")

    class Node:
        path = tmp_path

        def args(self, **over):
            a = {"service": "ascendops-train", "job": "run1", "node": "node1", "container": "ascendops-train",
                 "status_file": str(tmp_path / "run1.json"), "intent_file": str(tmp_path / "run1.intent.json"),
                 "fingerprint": "fp1", "fingerprint_file": str(tmp_path / "fp"), "npu_smi": str(bin_dir / "npu-smi")}
            a.update(over)
            return a

        def unit(self, **kv):
            text = props.read_text()
            for k, v in kv.items():
                lines = [x for x in text.splitlines() if not x.startswith(k + "=")]
                text = "\n".join(lines + [f"{k}={v}"]) + "\n"
            props.write_text(text)

        def status(self, **kv):
            s = {"schema": 1, "job": "run1", "node": "node1", "node_rank": 0, "state": "running", "step": 5,
                 "steps": 40, "loss": 2.0, "tokens_per_s_per_device": 100.0, "last_checkpoint": None,
                 "started_at": 1000.0, "exit_code": None, "reason": None}
            s.update(kv)
            (tmp_path / "run1.json").write_text(json.dumps(s))

        def rows(self, text):
            rows.write_text(text)

    n = Node()
    (tmp_path / "fp").write_text("fp1\n")
    return n


def test_a_running_job(node, run_module):
    node.status()
    r = run_module(ascend_job_info.main, node.args(since=999.0), check_mode=True)
    job = r["job"]
    assert r["changed"] is False and job["state"] == "running" and not job["changed"]
    assert job["status"]["step"] == 5 and job["trained_since"] and job["container"] == "running"
    assert job["line"].startswith("node1: running (running); node_rank 0, step 5/40")
    assert job["excerpt"] == [] and "processes" not in job


def test_a_completed_job_whose_container_is_gone(node, run_module):
    node.unit(ActiveState="inactive", SubState="dead")
    node.status(state="completed", step=40, completed_at=2000.0)
    os.remove(node.path / "container")
    job = run_module(ascend_job_info.main, node.args())["job"]
    assert job["state"] == "completed" and job["container"] is None and job["reason"] == "completed at step 40/40"


def test_a_failed_job_gets_its_log_excerpt_and_error_codes(node, run_module):
    node.unit(ActiveState="failed", SubState="failed", Result="exit-code", ExecMainStatus="4")
    node.status(state="failed", exit_code=4, reason="loss is nan at step 6")
    job = run_module(ascend_job_info.main, node.args(log_lines=2))["job"]
    assert job["state"] == "failed" and job["exit_code"] == 4
    assert job["excerpt"][0] == "[rank0]: Traceback (most recent call last):" and job["excerpt"][-1] == "last"
    assert [e["code"] for e in job["errors"]] == ["EI0006"]


def test_a_stop_record_and_a_changed_job(node, run_module):
    node.unit(ActiveState="inactive", SubState="dead", ExecMainStatus="143", UnitFileState="disabled")
    (node.path / "run1.intent.json").write_text(json.dumps({"job": "run1", "intent": "stopped", "at": "t"}))
    job = run_module(ascend_job_info.main, node.args(fingerprint="fp2"))["job"]
    assert job["state"] == "stopped" and job["changed"] and job["stopped_by_user"]


def test_an_unreadable_status_file_is_warned_about_not_fatal(node, run_module):
    (node.path / "run1.json").write_text("{half")
    r = run_module(ascend_job_info.main, node.args())
    assert r["job"]["status"] is None and any("cannot be read as JSON" in w for w in r["warnings"])


def test_a_process_is_the_jobs_by_its_cgroup_never_by_an_environment_naming_the_job(node, run_module):
    """Both processes run in this test's cgroup, not the job unit's or a job container's: the one whose
    environment names the job (anyone can set ASCENDOPS_JOB) is another's, named but never the job's."""
    env = dict(os.environ, ASCENDOPS_SERVICE="ascendops-train", ASCENDOPS_JOB="run1")
    other_env = dict(os.environ, ASCENDOPS_SERVICE="other", ASCENDOPS_JOB="run9")
    sleep = [sys.executable, "-c", "import time; time.sleep(30)"]
    pretender = subprocess.Popen(sleep, env=env)
    other = subprocess.Popen(sleep, env=other_env)
    try:
        row = "| {npu}       0                 | {pid:<14}| python3                  | {mem:<24}|\n"
        node.rows(row.format(npu=0, pid=pretender.pid, mem=3200) + row.format(npu=1, pid=other.pid, mem=100))
        job = run_module(ascend_job_info.main, node.args(processes=True, devices=["0", "1"]))["job"]
        assert job["processes"]["ours"] == []
        assert [(p["pid"], p["blocking"], p["job"]) for p in job["processes"]["others"]] == [
            (pretender.pid, True, "run1"), (other.pid, True, "run9")]
        job = run_module(ascend_job_info.main, node.args(processes=True, devices=["1"]))["job"]
        assert [p["blocking"] for p in job["processes"]["others"]] == [False, True]
    finally:
        for p in (pretender, other):
            p.kill()
            p.wait()


def test_free_npus(node, run_module):
    job = run_module(ascend_job_info.main, node.args(processes=True))["job"]
    assert job["processes"] == {"ours": [], "others": []}
