"""Slurm as the launch stage uses it (module_utils/slurm.py, issue 42): the outputs of Slurm 22.05 read by
structure (tests/fixtures/slurm), the batch script's settings validated, the node's task script answering
scancel with the trainer's final checkpoint (run here against a stand-in engine), and the decision."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils import slurm
from ansible_collections.ascendops.cluster.plugins.module_utils.job_container import ContainerSpec

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "slurm"
FP = "0123456789abcdef0123456789abcdef01234567"


def fixture(name):
    return (FIX / name).read_text()


# --- outputs -------------------------------------------------------------------------------------------

def test_squeue_reads_the_reason_with_spaces_and_the_marker():
    jobs = slurm.parse_squeue(fixture("squeue.txt"))
    assert [j["job_id"] for j in jobs] == ["5", "6"]
    assert jobs[0]["state"] == "PENDING" and jobs[0]["code"] == "PD" and jobs[0]["reason"] == "Resources"
    assert jobs[1]["reason"].startswith("Nodes required for job are DOWN, DRAINED")
    assert all(j["fingerprint"] == FP for j in jobs)


def test_squeue_only_the_marker_makes_a_job_ours():
    jobs = slurm.parse_squeue(fixture("squeue-running.txt"))
    assert jobs[0]["code"] == "R" and jobs[0]["nodes"] == "sx[1-2]" and jobs[0]["fingerprint"] == FP
    # another user's job of the same name, a '|' in its comment: read, not ours
    assert jobs[1]["user"] == "alice" and jobs[1]["comment"] == "my own comment | with a pipe"
    assert jobs[1]["fingerprint"] is None


def test_squeue_unreadable_line_is_named():
    with pytest.raises(slurm.SlurmError, match="could not read the squeue line 'JOBID PARTITION"):
        slurm.parse_squeue("JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n")


def test_scontrol_oneliner_cancelled_and_pending():
    done = slurm.job_summary(slurm.parse_oneliner(fixture("scontrol-show-job-cancelled.txt")))
    assert done["state"] == "CANCELLED" and done["code"] == "CA" and done["restarts"] == 1
    assert done["nodes"] == "sx[1-2]" and done["exit_code"] == 0 and done["run_time"] == "00:01:31"
    assert done["batch_host"] == "sx1"
    pending = slurm.job_summary(slurm.parse_oneliner(fixture("scontrol-show-job-pending.txt")))
    assert pending["state"] == "PENDING" and pending["nodes"] == ""
    assert pending["comment"].strip() == f"ascendops:llama3:{FP}"
    assert pending["reason"].startswith("Nodes_required_for_job_are_DOWN")


def test_scontrol_unknown_job_is_none_and_garbage_is_named():
    assert slurm.parse_oneliner(fixture("scontrol-show-job-unknown.txt")) is None
    with pytest.raises(slurm.SlurmError, match="could not read the scontrol line"):
        slurm.parse_oneliner("No jobs in the system")


def test_sinfo_states_partitions_and_gres():
    nodes = slurm.parse_sinfo(fixture("sinfo.txt"))
    assert nodes["sx1"] == {"partitions": ["npu"], "default_partition": "npu", "gres": {"npu": 2},
                            "state": "planned", "flags": ""}
    assert nodes["sx2"]["state"] == "drained"
    more = slurm.parse_sinfo("n1|debug|gpu:2,npu:910b:8(S:0-1)|idle*\nn1|npu*|gpu:2,npu:910b:8(S:0-1)|idle*\n"
                             "n2|npu*|(null)|mixed\n")
    assert more["n1"]["partitions"] == ["debug", "npu"] and more["n1"]["default_partition"] == "npu"
    assert more["n1"]["gres"] == {"gpu": 2, "npu": 8} and more["n1"]["flags"] == "*"
    assert more["n2"]["gres"] == {}
    with pytest.raises(slurm.SlurmError, match="could not read the sinfo line 'n3 idle'"):
        slurm.parse_sinfo("n3 idle\n")


def test_cluster_problems_name_each_node_and_the_fix():
    sinfo = slurm.parse_sinfo(fixture("sinfo.txt") + "sx3|debug|npu:1|idle*\n")
    problems = slurm.cluster_problems(sinfo, ["sx1", "sx2", "sx3", "sx4"], 2)
    by = {}
    for p in problems:
        by.setdefault(p["node"], []).append(p["problem"])
    assert "sx1" not in by  # planned: kept for a pending job, it takes ours
    assert any("state drained" in p and "state=resume" in p for p in by["sx2"])
    assert any("no partition is set" in p for p in by["sx3"])
    assert any("counts 1 'npu' GRES, the job needs 2" in p for p in by["sx3"])
    assert any("not responding" in p or "idle*" in p for p in by["sx3"])
    assert any("does not know this node" in p for p in by["sx4"])
    assert slurm.cluster_problems(sinfo, ["sx3"], 1, partition="npu")[0]["problem"].startswith(
        "not in the partition npu")


def test_config_kill_wait():
    conf = slurm.parse_config(fixture("scontrol-show-config.txt"))
    assert slurm.seconds(conf["KillWait"]) == 120 and conf["Epilog"] == "(null)"
    assert conf["SLURM_VERSION"] == "22.05.8"


# --- the batch script -------------------------------------------------------------------------------

def batch(**over):
    settings = {"job_name": "llama3", "nodes": ["node1", "node2"], "npus_per_node": 8,
                "task_script": "/etc/ascendops/slurm-task.sh", "fingerprint": FP,
                "output": "/var/log/ascendops/slurm-%j.out"}
    settings.update(over)
    return slurm.batch_script(**settings)


def test_batch_script_whole_nodes_requeue_marker():
    text = batch(partition="npu", account="ai", qos="high", time_limit="2-00:00:00", signal_s=700,
                 options=["--reservation=maint_1", "--constraint=a2&ib"])
    lines = text.splitlines()
    assert lines[0] == "#!/bin/sh"
    for want in ("--nodes=2", "--nodelist=node1,node2", "--ntasks-per-node=1", "--exclusive", "--gres=npu:8",
                 "--requeue", "--open-mode=append", f"--comment=ascendops:llama3:{FP}", "--partition=npu",
                 "--account=ai", "--qos=high", "--time=2-00:00:00", "--signal=USR1@700", "--reservation=maint_1",
                 "--constraint=a2&ib"):
        assert f"#SBATCH {want}" in lines
    assert lines[-1] == ("exec srun --kill-on-bad-exit=1 --ntasks-per-node=1 --label "
                         "/bin/sh /etc/ascendops/slurm-task.sh")
    assert "--time" not in batch() and "--signal" not in batch()


@pytest.mark.parametrize("over, words", [
    ({"options": ["--gres=npu:1"]}, "'--gres' is not an option"),
    ({"options": ["--uid=0"]}, "'--uid' is not an option"),
    ({"options": ["--wrap=rm -rf /"]}, "'--wrap' is not an option"),
    ({"options": ["--export=ALL"]}, "'--export' is not an option"),
    ({"options": ["--reservation"]}, "write --reservation=<value>"),
    ({"options": ["--reservation=a b"]}, "write --reservation=<value>"),
    ({"options": ["--mail-user=x@y\n#SBATCH --uid=0"]}, "control character"),
    ({"partition": "npu;x"}, "launch_slurm_partition"),
    ({"account": "a b"}, "launch_slurm_account"),
    ({"qos": "$(id)"}, "launch_slurm_qos"),
    ({"time_limit": "1 day"}, "launch_slurm_time_limit"),
    ({"job_name": "llama 3"}, "job name"),
    ({"nodes": ["node1", "node1"]}, "named twice"),
    ({"nodes": ["node_1"]}, "NodeName"),
    ({"output": "relative/out"}, "absolute path"),
    ({"npus_per_node": 0}, "at least 1"),
])
def test_batch_script_refusals(over, words):
    with pytest.raises(slurm.SlurmError, match=words.replace("$", r"\$").replace("(", r"\(").replace(")", r"\)")):
        batch(**over)


@pytest.mark.parametrize("value", ["30", "30:00", "12:00:00", "2-12", "2-12:30", "2-12:30:00", "UNLIMITED"])
def test_time_limits_slurm_takes(value):
    assert slurm.check_time_limit(value) == value


# --- the node's task script, run against a stand-in engine ---------------------------------------------

FAKE_ENGINE = r"""#!/bin/sh
# A stand-in for the container engine (test only): 'run --detach' starts the 'trainer' (a sleep that
# answers SIGTERM by 'saving' and exiting 143), 'logs --follow' waits for it, 'inspect' reports it,
# 'stop' sends it SIGTERM and waits; every call is logged.
d=$(dirname "$0")
echo "$*" >> "$d/calls"
case "$1" in
  run)
    shift; label=""
    while [ $# -gt 0 ]; do
      case "$1" in --detach) shift;; --label) label="$2"; shift 2;; --*) shift 2;; *) break;; esac
    done
    echo "$label" > "$d/label"
    ( trap 'echo saved > "$d/checkpoint"; echo 143 > "$d/exit"; exit 143' TERM
      echo running > "$d/state"; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; echo 0 > "$d/exit" ) &
    echo $! > "$d/pid"; echo started;;
  logs) while kill -0 "$(cat "$d/pid")" 2>/dev/null; do sleep 0.1; done;;
  inspect) if kill -0 "$(cat "$d/pid")" 2>/dev/null; then echo "true 0"; else echo "false $(cat "$d/exit")"; fi;;
  stop) kill -TERM "$(cat "$d/pid")"; while kill -0 "$(cat "$d/pid")" 2>/dev/null; do sleep 0.1; done;;
  rm) echo removed >> "$d/removed";;
esac
exit 0
"""


@pytest.fixture
def task(tmp_path):
    engine = tmp_path / "engine"
    engine.write_text(FAKE_ENGINE)
    engine.chmod(0o755)
    spec = ContainerSpec("docker", "ascendops-train", "trainer:1", ["ascendops-train", "launch"],
                         env_file="/etc/ascendops/ascendops.env", engine_path=str(engine))
    script = tmp_path / "task.sh"
    script.write_text(slurm.task_script(spec.to_dict(), 30, header=["test"]))
    return tmp_path, script


def _wait_for(path, timeout=10):
    end = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < end, f"{path.name} never appeared"
        time.sleep(0.05)


def test_task_script_answers_scancel_with_the_final_checkpoint(task):
    d, script = task
    proc = subprocess.Popen(["/bin/sh", str(script)], env=dict(os.environ, SLURM_JOB_ID="42"))
    _wait_for(d / "state")
    proc.send_signal(signal.SIGTERM)  # what scancel sends every task
    assert proc.wait(timeout=20) == 0  # 143 from the trainer after saving: a clean end of the task
    assert (d / "checkpoint").read_text().strip() == "saved"
    calls = (d / "calls").read_text().splitlines()
    assert calls[0] == "rm -f ascendops-train"  # a container of an earlier allocation goes first
    assert calls[1].startswith("run --detach --label ascendops.slurm.job=42 --name ascendops-train")
    assert "stop --time 30 ascendops-train" in calls
    assert calls[-1] == "rm -f ascendops-train"
    assert (d / "label").read_text().strip() == "ascendops.slurm.job=42"


def test_task_script_time_limit_warning_stops_cleanly(task):
    d, script = task
    proc = subprocess.Popen(["/bin/sh", str(script)], env=dict(os.environ, SLURM_JOB_ID="7"))
    _wait_for(d / "state")
    proc.send_signal(signal.SIGUSR1)  # --signal=USR1@N before the time limit
    assert proc.wait(timeout=20) == 0
    assert (d / "checkpoint").exists()


def test_task_script_exits_with_the_trainers_code(task):
    d, script = task
    # no signal: the trainer ends by itself (exit 0 after 30 s is too long here: end it as a crash would)
    proc = subprocess.Popen(["/bin/sh", str(script)], env=dict(os.environ, SLURM_JOB_ID="8"))
    _wait_for(d / "pid")
    time.sleep(0.3)
    (d / "exit").write_text("1\n")
    os.kill(int((d / "pid").read_text()), signal.SIGKILL)
    assert proc.wait(timeout=20) == 1  # a crash is the task's failure (srun --kill-on-bad-exit ends the step)
    assert not (d / "checkpoint").exists()


def test_epilog_removes_only_the_jobs_containers():
    text = slurm.epilog_script("/usr/bin/docker")
    assert 'label=ascendops.slurm.job=$SLURM_JOB_ID' in text
    assert text.rstrip().endswith("exit 0")


# --- the decision ----------------------------------------------------------------------------------

def q(job_id="12", state="RUNNING", fp=FP, reason="None", nodes="node[1-2]"):
    return {"job_id": job_id, "name": "llama3", "state": state, "code": slurm.STATE_CODES.get(state, state),
            "reason": reason, "nodes": nodes, "user": "root", "comment": "", "fingerprint": fp}


def node(state="running", stopped=False, exit_code=None, reason=""):
    return {"status": {"state": state, "step": 40, "exit_code": exit_code, "reason": reason},
            "stopped_by_user": stopped}


NODES = {"node1": node(), "node2": node()}


def test_plan_running_or_queued_unchanged_is_left_alone():
    for state in ("RUNNING", "PENDING", "REQUEUED", "CONFIGURING"):
        p = slurm.plan([q(state=state)], "llama3", FP, record={"job_id": "12", "fingerprint": FP}, nodes=NODES)
        assert p["action"] == "none" and "left alone" in p["reason"] and not p["fail"]


def test_plan_changed_job_is_cancelled_then_submitted():
    p = slurm.plan([q(fp="ffff0000")], "llama3", FP, nodes=NODES)
    assert p["action"] == "resubmit" and p["cancel"] == ["12"] and "resumes" in p["reason"]


def test_plan_other_users_job_of_the_same_name_is_not_ours():
    p = slurm.plan([dict(q(job_id="9"), fingerprint=None)], "llama3", FP, nodes={"node1": node("new")})
    assert p["action"] == "submit" and p["reason"] == "not submitted yet"


def test_plan_two_of_ours_fail_naming_both():
    p = slurm.plan([q(job_id="12"), q(job_id="13", state="PENDING")], "llama3", FP, nodes=NODES)
    assert p["action"] == "none" and p["fail"] and "12, 13" in p["reason"]


def test_plan_stopped_stays_stopped_unless_asked():
    nodes = {"node1": node("stopped", stopped=True), "node2": node("stopped", stopped=True)}
    record = {"job_id": "12", "fingerprint": FP}
    assert slurm.plan([], "llama3", FP, record=record, nodes=nodes)["action"] == "none"
    p = slurm.plan([], "llama3", FP, record=record, nodes=nodes, start_stopped=True)
    assert p["action"] == "submit" and p["clear_intent"]


def test_plan_completed_left_alone_failed_reported():
    record = {"job_id": "12", "fingerprint": FP}
    done = {"node1": node("completed"), "node2": node("completed")}
    assert slurm.plan([], "llama3", FP, record=record, nodes=done)["action"] == "none"
    bad = {"node1": node("failed", exit_code=4, reason="non-finite loss"), "node2": node("stopped")}
    p = slurm.plan([], "llama3", FP, record=record, nodes=bad)
    assert p["action"] == "none" and p["fail"] and "node1: non-finite loss" in p["reason"]
    assert slurm.plan([], "llama3", FP, record=record, nodes=bad, restart_failed=True)["action"] == "submit"
    last = {"state": "FAILED", "code": "F", "exit_code": 1}
    p = slurm.plan([], "llama3", FP, record=record, last=last, nodes=bad)
    assert p["fail"] and "Slurm job 12 FAILED (F) failed" in p["reason"]
    # Slurm says FAILED but no trainer failed (a task that could not start): submitted again
    p = slurm.plan([], "llama3", FP, record=record, last=last, nodes={"node1": node("new"), "node2": node("new")})
    assert p["action"] == "submit" and "no trainer failure" in p["reason"]


def test_plan_ended_outside_is_submitted_again():
    record = {"job_id": "12", "fingerprint": FP}
    last = {"state": "CANCELLED", "code": "CA", "exit_code": 0}
    p = slurm.plan([q(state="CANCELLED")], "llama3", FP, record=record, last=last,
                   nodes={"node1": node("stopped"), "node2": node("stopped")})
    assert p["action"] == "submit" and "CANCELLED (CA)" in p["reason"] and "ended outside" in p["reason"]


def test_plan_changed_since_the_last_submission():
    p = slurm.plan([], "llama3", FP, record={"job_id": "12", "fingerprint": "ffff0000"},
                   nodes={"node1": node("completed"), "node2": node("completed")})
    assert p["action"] == "submit" and "changed since Slurm job 12" in p["reason"]
