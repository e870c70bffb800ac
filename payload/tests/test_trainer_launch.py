"""The launch interface: status file, exit codes, `ascendops-train launch` (torchrun under a grace period)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest
from _trainer_helpers import (
    STEPS,
    TESTS,
    launch_cmd,
    read_metrics,
    read_status,
    subprocess_env,
    torchrun_cmd,
    train_args,
)

from ascendops_trainer import launch as ln
from ascendops_trainer.status import DO_NOT_RETRY, RunStatus
from ascendops_trainer.status import read_status as read_status_rec

INTERFACE_KEYS = {"schema", "job", "node", "node_rank", "state", "step", "steps", "loss", "tokens_per_s_per_device",
                  "mfu", "last_checkpoint", "last_checkpoint_step", "exit_code", "reason", "started_at",
                  "updated_at", "completed_at", "pid"}

# ---------------------------------------------------------------- units


def test_status_file_is_atomic_0644_and_has_the_interface_fields(tmp_path, monkeypatch):
    path = tmp_path / "job.json"
    monkeypatch.setattr(os, "umask", os.umask)  # restored after the test
    old = os.umask(0o077)  # a restrictive umask must not make the file unreadable for the status playbook
    try:
        st = RunStatus.from_env({"ASCENDOPS_STATUS_FILE": str(path), "ASCENDOPS_JOB": "l3", "RANK": "8",
                                 "WORLD_SIZE": "16", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "8", "GROUP_RANK": "1"})
        st.starting(100)
    finally:
        os.umask(old)
    rec = json.loads(path.read_text())
    assert set(rec) == INTERFACE_KEYS
    assert (rec["schema"], rec["job"], rec["node_rank"], rec["state"], rec["steps"], rec["pid"]) == \
        (1, "l3", 1, "starting", 100, os.getpid())
    assert rec["node"]  # the hostname when ASCENDOPS_NODE_NAME is unset
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    st.running(5, float("nan"), 1234.5, 0.4)
    st.saved(5, "step_00000005")
    rec = read_status_rec(str(path))
    assert (rec["state"], rec["step"], rec["loss"], rec["tokens_per_s_per_device"]) == ("running", 5, None, 1234.5)
    assert rec["last_checkpoint"] == "step_00000005" and rec["updated_at"] >= rec["started_at"]
    st.failed(4, "non-finite loss\nsecond line")
    rec = read_status_rec(str(path))
    assert (rec["state"], rec["exit_code"], rec["reason"], rec["completed_at"]) == ("failed", 4, "non-finite loss",
                                                                                   None)
    assert [p.name for p in tmp_path.iterdir()] == ["job.json"]  # no temp files left
    # only the node's first process writes; no variable, no file
    other = tmp_path / "other.json"
    RunStatus.from_env({"ASCENDOPS_STATUS_FILE": str(other), "RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1",
                        "LOCAL_WORLD_SIZE": "2"}).starting(3)
    RunStatus.from_env({}).starting(3)
    assert not other.exists() and [p.name for p in tmp_path.iterdir()] == ["job.json"]


@pytest.mark.parametrize("rc,status,code", [
    (0, {"state": "completed"}, 0),
    (1, {"state": "stopped", "exit_code": 143}, 143),
    (1, {"state": "failed", "exit_code": 4}, 4),
    (1, {"state": "failed", "exit_code": 2}, 2),
    (1, {"state": "failed", "exit_code": 3}, 3),
    (1, {"state": "failed", "exit_code": 1}, 1),
    (1, {"state": "running"}, 1),  # killed without a final state (OOM killer, another node failed)
    (1, None, 1),
    (0, None, 0),
    (2, None, 2),  # torchrun's own usage error
    (2, {"state": "running"}, 1),
])
def test_launcher_exit_code_from_torchrun_and_status(rc, status, code):
    assert ln.exit_code_for(rc, status) == code
    assert DO_NOT_RETRY == (2, 3, 4)


def test_grace_reaches_torchrun_by_flag_or_patch(monkeypatch):
    args = ["--nnodes", "1", "-m", "ascendops_trainer", "train"]
    assert ln.torchrun_command(600, args, "flag")[1:] == ["-m", "torch.distributed.run", "--shutdown-timeout=600",
                                                          *args]
    assert ln.torchrun_command(90.5, args, "patch")[1:] == ["-m", "ascendops_trainer.launch", "--torchrun-grace",
                                                            "90.5", *args]
    import torch

    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    assert ln.torchrun_has_shutdown_timeout() == ((major, minor) >= (2, 10))  # read from torchrun's source
    assert ln.grace_mode({"ASCENDOPS_LAUNCH_GRACE_MODE": "patch"}) == "patch"
    with pytest.raises(ValueError, match="expected auto, flag or patch"):
        ln.grace_mode({"ASCENDOPS_LAUNCH_GRACE_MODE": "later"})


def test_grace_period_for_the_save_warning():
    from ascendops_trainer.config import build_config
    from ascendops_trainer.train import grace_period

    assert grace_period(build_config({}), {})[0] == 30.0  # torchrun's
    assert grace_period(build_config({}), {"ASCENDOPS_GRACE_S": "600"})[0] == 600.0  # the launcher's
    assert grace_period(build_config({"checkpoint.grace_period_s": "90"}), {"ASCENDOPS_GRACE_S": "600"})[0] == 90.0


def test_launch_without_torchrun_arguments_is_a_config_error(capsys):
    from ascendops_trainer.cli import main

    assert main(["launch", "--grace-s", "60", "--"]) == 2
    assert "no torchrun arguments" in capsys.readouterr().err


# ---------------------------------------------------------------- end to end (torchrun, 2 ranks, gloo)


def test_status_completed_at_the_last_step(straight_run):
    """The straight run (conftest: 2 ranks through the launcher) left its node's status file."""
    st = read_status(straight_run.parent / "status.json")
    assert set(st) == INTERFACE_KEYS
    m = read_metrics(straight_run)
    assert (st["state"], st["exit_code"], st["step"], st["steps"], st["reason"]) == ("completed", 0, STEPS, STEPS,
                                                                                    None)
    assert (st["job"], st["node"], st["node_rank"]) == ("straight", "node-a", 0)
    assert (st["last_checkpoint"], st["last_checkpoint_step"]) == (f"step_{STEPS:08d}", STEPS)
    assert st["loss"] == pytest.approx(m[STEPS]["loss"]) and st["mfu"] == pytest.approx(m[STEPS]["mfu"])
    assert st["tokens_per_s_per_device"] == pytest.approx(m[STEPS]["tokens_per_s_per_device"])
    assert st["started_at"] <= st["completed_at"] <= st["updated_at"]
    log = (straight_run.parent / "log.txt").read_text()
    assert "torchrun exited 0; status completed at step 40/40" in log and "exit code 0" in log


@pytest.mark.slow
def test_nothing_to_train_is_completed(prepared, straight_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(straight_run / "checkpoints", run / "checkpoints")
    status_file = tmp_path / "status.json"
    proc = subprocess.run(launch_cmd(train_args(prepared["data"], run)),
                          env=subprocess_env(ASCENDOPS_STATUS_FILE=str(status_file)),
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    st = read_status(status_file)
    assert (st["state"], st["exit_code"], st["step"]) == ("completed", 0, STEPS)
    assert st["reason"] == f"nothing to train: the checkpoint is at step {STEPS} >= train.steps {STEPS}"
    assert st["last_checkpoint"] == f"step_{STEPS:08d}" and st["completed_at"] is not None


@pytest.mark.slow
def test_config_error_fails_with_2_through_torchrun(prepared, tmp_path):
    status_file = tmp_path / "status.json"
    status_file.write_text(json.dumps({"schema": 1, "state": "stopped", "started_at": 0}))  # an earlier launch's
    proc = subprocess.run(launch_cmd(train_args(prepared["data"], tmp_path / "run", "--preset", "llama3-7b")),
                          env=subprocess_env(ASCENDOPS_STATUS_FILE=str(status_file)),
                          capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-3000:]
    assert "torchrun exited 1;" in out
    st = read_status(status_file)
    assert (st["state"], st["exit_code"]) == ("failed", 2)
    assert st["reason"].startswith("config error: unknown model preset 'llama3-7b'")


SLOW_SAVE_HOOK = TESTS / "slow_save"  # sitecustomize.py: the save after a SIGTERM sleeps first


def _run_until_running_then_sigterm(cmd, env, log_path: Path, status_file: Path, min_step: int = 2):
    """Start cmd, wait until the status file says `running` at min_step, SIGTERM it; (rc, seconds to exit)."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 240
            while time.time() < deadline:
                if proc.poll() is not None:
                    pytest.fail(f"ended before step {min_step}: {log_path.read_text()[-3000:]}")
                st = read_status_rec(str(status_file))
                if st and st["state"] == "running" and st["step"] >= min_step:
                    break
                time.sleep(0.05)
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=300)
            return rc, time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["patch", "flag"])
def test_final_save_longer_than_torchruns_30s_completes(prepared, tmp_path, mode):
    """Issue 22.1: a save on SIGTERM that takes 35 s (a 70B ZeRO-3 save, simulated by a sleep before
    it) survives under `ascendops-train launch --grace-s 120`: torchrun's 30 s no longer cut it. `patch`
    is the path of torch < 2.10 (the Ascend images), `flag` torch's --shutdown-timeout."""
    run, status_file = tmp_path / "run", tmp_path / "status.json"
    env = subprocess_env(ASCENDOPS_STATUS_FILE=str(status_file), ASCENDOPS_TEST_SLOW_SAVE_S="35",
                         ASCENDOPS_LAUNCH_GRACE_MODE=mode)
    env["PYTHONPATH"] = f"{SLOW_SAVE_HOOK}{os.pathsep}{env['PYTHONPATH']}"
    cmd = launch_cmd(train_args(prepared["data"], run, "--checkpoint.interval", "1000"), grace_s=120)
    rc, took = _run_until_running_then_sigterm(cmd, env, tmp_path / "log.txt", status_file)
    out = (tmp_path / "log.txt").read_text()
    assert rc == 143, out[-4000:]
    assert out.count("slow save: sleeping 35 s before the checkpoint") == 2 and took > 35  # both ranks slept
    st = read_status(status_file)
    tag = f"step_{st['step']:08d}"
    assert (st["state"], st["last_checkpoint"]) == ("stopped", tag)
    ckpt = run / "checkpoints"
    assert (ckpt / "latest").read_text().strip() == tag  # the only checkpoint: the interval is 1000
    state = json.loads((ckpt / tag / "trainer_state.json").read_text())
    assert state["step"] == st["step"] and not list(ckpt.glob(".tmp-*"))
    assert sorted(p.name for p in (ckpt / tag).glob("rng_rank*.pt")) == ["rng_rank00000.pt", "rng_rank00001.pt"]
    if mode == "flag":
        assert "grace 120 s after SIGTERM (torchrun --shutdown-timeout)" in out
    else:
        assert "torchrun's worker shutdown patched to wait 120 s" in out


@pytest.mark.slow
def test_bare_torchrun_kills_a_save_longer_than_its_timeout(prepared, tmp_path):
    """The control: bare torchrun (its shutdown timeout shortened to 3 s so the test stays short; before
    torch 2.10 it is 30 s, fixed) SIGKILLs the workers in the middle of a 6 s save: no checkpoint."""
    run, status_file = tmp_path / "run", tmp_path / "status.json"
    env = subprocess_env(ASCENDOPS_STATUS_FILE=str(status_file), ASCENDOPS_TEST_SLOW_SAVE_S="6",
                         TORCH_ELASTIC_SHUTDOWN_TIMEOUT="3")
    env["PYTHONPATH"] = f"{SLOW_SAVE_HOOK}{os.pathsep}{env['PYTHONPATH']}"
    cmd = torchrun_cmd(train_args(prepared["data"], run, "--checkpoint.interval", "1000"))
    rc, _ = _run_until_running_then_sigterm(cmd, env, tmp_path / "log.txt", status_file)
    out = (tmp_path / "log.txt").read_text()
    assert rc != 0 and "slow save: sleeping 6 s" in out, out[-3000:]
    assert not (run / "checkpoints" / "latest").exists() and not list((run / "checkpoints").glob("step_*"))
    assert read_status(status_file)["state"] == "running"  # killed: no final state

