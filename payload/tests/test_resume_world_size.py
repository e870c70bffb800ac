"""End to end on CPU: a checkpoint of 2 ranks resumed by 1 rank (ZeRO-3) and by 3 ranks (ZeRO-2) through a
DeepSpeed universal checkpoint. The global batch (the same samples per optimizer step at any world size) and
the data position are global, so the resumed run must reproduce the uninterrupted 2-rank run step for step:
the loss of the first resumed step checks the weights, every later one the optimizer update (Adam's moments
and step count, each parameter group's weight decay, the LR schedule). A fresh or half-restored optimizer
moves the losses by 1e-4 to 1e-2 within two steps; summing micro-batches in another order, by about 1e-7."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from _trainer_helpers import STEPS, read_metrics, subprocess_env, torchrun_cmd, train_args

pytestmark = pytest.mark.slow


def resume_from(run, tag: str, dest):
    """A checkpoint directory holding only `tag` of `run` (the newer ones left out), named by `latest`."""
    ckpt = dest / "checkpoints"
    ckpt.mkdir(parents=True)
    shutil.copytree(run / "checkpoints" / tag, ckpt / tag)
    (ckpt / "latest").write_text(tag)
    return ckpt


def assert_continues(ref: dict, got: dict, first: int, last: int) -> None:
    assert sorted(got) == list(range(first, last + 1))
    for s in range(first, last + 1):
        for key in ("loss", "grad_norm", "lr"):
            assert got[s][key] == pytest.approx(ref[s][key], rel=1e-5, abs=1e-9), (s, key, got[s][key], ref[s][key])
        assert got[s]["tokens_seen"] == ref[s]["tokens_seen"]


def test_two_ranks_zero3_resume_on_one_rank(prepared, straight_run, tmp_path):
    """The straight run (2 ranks, ZeRO-3, global batch 8 = 2 ranks x 2 x 2 accumulation) from its step 30,
    on 1 rank (4 accumulation steps): converted once, loaded as universal, the run ends at STEPS as the
    straight run did."""
    start = STEPS - 10
    tag = f"step_{start:08d}"
    ckpt = resume_from(straight_run, tag, tmp_path)
    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "ascendops_trainer", *train_args(prepared["data"], run, "--checkpoint.dir", str(ckpt),
                                                              "--metrics.tensorboard", "false")],
        env=subprocess_env(), capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    assert f"converting {tag} (world size 2) to a DeepSpeed universal checkpoint" in out
    assert f"resumed from {tag}: step {start}," in out
    line = f"resumed at world size 1 from a checkpoint of world size 2 (universal): {tag}_universal, step {start}"
    assert line in out
    assert "ZeRO-3 universal load repaired" in out and "group 1 weight_decay 0.1 -> 0.0" in out
    assert_continues(read_metrics(straight_run), read_metrics(run), start + 1, STEPS)
    meta = json.loads((run / "config.json").read_text())["run"]
    assert meta["resumed"] == {"tag": tag, "loaded": f"{tag}_universal", "world_size": 1, "checkpoint_world_size": 2,
                               "zero_stage": 3, "universal": True}
    info = json.loads((ckpt / f"{tag}_universal" / "ascendops_universal.json").read_text())
    assert (info["source"], info["checkpoint_world_size"]) == (tag, 2)
    state = json.loads((ckpt / f"step_{STEPS:08d}" / "trainer_state.json").read_text())
    assert (state["step"], state["world_size"], state["zero_stage"]) == (STEPS, 1, 3)  # recorded for the next resume


def test_two_ranks_zero2_resume_on_three_ranks(prepared, tmp_path):
    """ZeRO-2 (DeepSpeed's other universal path), 2 ranks -> 3 ranks: a global batch of 12 divides both."""
    base = ["--zero-stage", "2", "--global-batch-size", "12", "--steps", "4", "--checkpoint.interval", "2",
            "--metrics.tensorboard", "false"]
    ref_run = tmp_path / "ref"
    ref = subprocess.run(torchrun_cmd([*train_args(prepared["data"], ref_run), *base], nproc=2),
                         env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert ref.returncode == 0, (ref.stdout + ref.stderr)[-5000:]
    ckpt = resume_from(ref_run, "step_00000002", tmp_path / "grown")
    run = tmp_path / "grown" / "run"
    proc = subprocess.run(torchrun_cmd([*train_args(prepared["data"], run, "--checkpoint.dir", str(ckpt)), *base],
                                       nproc=3),
                          env=subprocess_env(), capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    assert "resumed at world size 3 from a checkpoint of world size 2 (universal): step_00000002_universal" in out
    assert out.count("converting step_00000002") == 1  # rank 0 alone converts
    assert "repaired" not in out  # DeepSpeed's ZeRO-1/2 universal load needs no repair
    assert_continues(read_metrics(ref_run), read_metrics(run), 3, 4)
