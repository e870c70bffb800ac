"""End to end on CPU: torchrun, 2 processes, gloo, DeepSpeed ZeRO-3, the debug model."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _trainer_helpers import (
    STEPS,
    launch_cmd,
    rank_table,
    read_metrics,
    read_status,
    subprocess_env,
    torchrun_cmd,
    train_args,
)

pytestmark = pytest.mark.slow


def test_loss_falls_and_metrics_are_complete(straight_run):
    m = read_metrics(straight_run)
    assert sorted(m) == list(range(1, STEPS + 1))  # log interval 1, every step once
    first = m[1]["loss"]
    # A fresh model predicts ~uniformly over the 512-token vocabulary: loss ~ ln(512).
    assert abs(first - math.log(512)) < 0.5, first
    early = sum(m[s]["loss"] for s in range(1, 4)) / 3
    late = sum(m[s]["loss"] for s in range(STEPS - 4, STEPS + 1)) / 5
    assert late < 0.6 * early, (early, late)
    meta = json.loads((straight_run / "config.json").read_text())
    run = meta["run"]
    # the throughput fields are the formula applied to the run's own numbers (PaLM FLOPs, measured CPU peak)
    assert run["flops_per_token"] == 6 * run["params_for_flops"] + 12 * 2 * 4 * 16 * 64
    assert run["params_for_flops"] == run["params"] - 512 * 64  # untied: the input embedding is left out
    for rec in m.values():
        assert rec["tflops_per_device"] == pytest.approx(rec["tokens_per_s_per_device"] * run["flops_per_token"] / 1e12)
        assert rec["mfu"] == pytest.approx(rec["tflops_per_device"] / run["peak_tflops_per_device"])
        assert rec["step_time_s"] == pytest.approx(8 * 64 / 2 / rec["tokens_per_s_per_device"])  # 4 seqs/rank/step
        assert rec["mem_gib"] > 0 and rec["data_wait_s"] >= 0 and 0 <= rec["data_wait_frac"] < 1
        assert rec["grad_norm"] is not None and rec["grad_norm"] > 0
    # warmup then cosine decay, as configured by the debug preset (lr 3e-3 -> 3e-4, 4 warmup steps)
    assert m[1]["lr"] == pytest.approx(3e-3 / 4)
    assert m[4]["lr"] == pytest.approx(3e-3)
    assert m[STEPS]["lr"] == pytest.approx(3e-4, rel=1e-3)
    assert list((straight_run / "tb").glob("events.out.tfevents.*")), "no TensorBoard events written"
    assert meta["run"]["world_size"] == 2 and meta["run"]["zero_stage"] == 3
    # model.implementation auto on a new job: the trainer's own model, recorded as such (config and checkpoints)
    assert meta["config"]["model"]["implementation"] == "native"
    assert meta["run"]["attn_implementation"].startswith("native-")
    assert meta["run"]["rank_table_server"] == "127.0.0.1"  # the matching rank table was accepted
    assert meta["deepspeed"]["zero_optimization"]["stage"] == 3
    est = run["memory_estimate_bytes_per_device"]  # printed at start, per device
    assert est["stage"] == 3 and est["total"] == sum(est[k] for k in ("weights", "grads", "optimizer", "hpz",
                                                                       "buckets", "activations"))
    assert "memory estimate ZeRO-3: weights " in (straight_run.parent / "log.txt").read_text()


def test_checkpoints_rotate_and_latest_points_to_last(straight_run):
    ckpt = straight_run / "checkpoints"
    kept = sorted(p.name for p in ckpt.glob("step_*"))
    # saved at 10, 20, 30, 40; checkpoint.keep=3 removed the oldest
    assert kept == [f"step_{s:08d}" for s in (20, 30, 40)]
    assert (ckpt / "latest").read_text().strip() == f"step_{STEPS:08d}"
    state = json.loads((ckpt / f"step_{STEPS:08d}" / "trainer_state.json").read_text())
    assert state["step"] == STEPS and state["loader"]["consumed"] > 0
    assert sorted(p.name for p in (ckpt / f"step_{STEPS:08d}").glob("rng_rank*.pt")) == \
        ["rng_rank00000.pt", "rng_rank00001.pt"]
    assert not list(ckpt.glob(".tmp-*"))


def test_sigterm_then_resume_matches_uninterrupted(prepared, straight_run, tmp_path):
    """2N steps straight == N(ish) steps, SIGTERM, resume to 2N: same losses, grad norms and LRs.
    Through `ascendops-train launch`: it exits 143 and the status file says stopped, with the checkpoint."""
    run = tmp_path / "run"
    status_file = tmp_path / "status.json"
    log = open(tmp_path / "first.log", "w")
    cmd = launch_cmd(train_args(prepared["data"], run))
    env = subprocess_env(ASCENDOPS_STATUS_FILE=str(status_file))
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    half = STEPS // 2
    try:
        deadline = time.time() + 180
        while time.time() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"run ended before step {half}: {(tmp_path / 'first.log').read_text()[-3000:]}")
            if (run / "metrics.jsonl").is_file() and max(read_metrics(run), default=0) >= half:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)  # to the launcher, as podman stop would; it forwards to torchrun
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
    first_log = (tmp_path / "first.log").read_text()
    assert proc.returncode == 143, first_log[-3000:]  # stopped after saving
    stopped = int((run / "checkpoints" / "latest").read_text().strip().split("_")[1])
    assert half <= stopped < STEPS, first_log[-3000:]
    assert f"SIGTERM: saving a checkpoint at step {stopped} and stopping" in first_log
    assert max(read_metrics(run)) == stopped
    st = read_status(status_file)
    assert (st["state"], st["exit_code"], st["step"], st["steps"]) == ("stopped", 143, stopped, STEPS)
    assert (st["last_checkpoint"], st["last_checkpoint_step"]) == (f"step_{stopped:08d}", stopped)
    assert st["reason"] == f"SIGTERM: stopped after saving step_{stopped:08d}" and st["completed_at"] is None

    resumed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    out = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, out[-5000:]
    assert f"resumed from step_{stopped:08d}: step {stopped}" in out
    assert read_status(status_file)["state"] == "completed"

    ref, got = read_metrics(straight_run), read_metrics(run)
    assert sorted(got) == list(range(1, STEPS + 1))
    for s in range(stopped + 1, STEPS + 1):
        for key in ("loss", "grad_norm", "lr"):
            assert got[s][key] == pytest.approx(ref[s][key], rel=1e-6, abs=1e-9), (s, key)
        assert got[s]["tokens_seen"] == ref[s]["tokens_seen"]


def test_export_loads_in_transformers_with_same_logits(prepared, straight_run):
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ascendops_trainer.data import TokenDataset

    hf = straight_run / "hf"
    model = AutoModelForCausalLM.from_pretrained(str(hf), local_files_only=True).eval()
    assert model.config.num_hidden_layers == 2 and model.config.rope_parameters["rope_theta"] == 500000.0
    written = json.loads((hf / "config.json").read_text())
    assert written["rope_theta"] == 500000.0 and written["rope_parameters"]["rope_theta"] == 500000.0
    assert written["rope_scaling"] is None and written["torch_dtype"] == written["dtype"] == "float32"
    probe = load_file(str(hf / "export_probe.safetensors"))  # logits the DeepSpeed engine gave at export
    with torch.no_grad():
        logits = model(input_ids=probe["input_ids"]).logits.float()
    torch.testing.assert_close(logits, probe["logits"], rtol=1e-4, atol=1e-4)
    # and these are the trained weights, not an initial model: low loss on the training data
    batch = torch.from_numpy(TokenDataset(prepared["data"]).tokens(0, 257)).unsqueeze(0)
    with torch.no_grad():
        loss = model(input_ids=batch, labels=batch).loss.item()
    assert loss < read_metrics(straight_run)[1]["loss"] - 2.0, loss
    tok = AutoTokenizer.from_pretrained(str(hf), local_files_only=True)
    assert tok.eos_token == "</s>"


def test_offline_export_of_checkpoint_matches_live_export(straight_run, tmp_path):
    from safetensors.torch import load_file

    from ascendops_trainer.cli import main

    out = tmp_path / "hf_offline"
    assert main(["export", "--checkpoint-dir", str(straight_run / "checkpoints"), "--out", str(out),
                 "--dtype", "fp32"]) == 0
    live, offline = load_file(str(straight_run / "hf" / "model.safetensors")), load_file(str(out / "model.safetensors"))
    assert sorted(live) == sorted(offline) and len(live) == 21
    for k in live:
        assert (live[k] == offline[k]).all(), k
    assert json.loads((out / "ascendops_export.json").read_text())["step"] == STEPS


def test_plot_writes_pngs(straight_run, tmp_path):
    from ascendops_trainer.cli import main

    assert main(["plot", str(straight_run), "--out", str(tmp_path)]) == 0
    for name in ("loss.png", "tokens_per_s.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000


@pytest.mark.parametrize("servers,message", [
    # 2 servers x 2 devices = 4 ranks, but torchrun starts 2 processes on 1 node
    ([("10.0.0.11", [0, 1]), ("10.0.0.12", [0, 1])],
     "lists 4 devices on 2 servers but torchrun launched WORLD_SIZE=2"),
    # right size, but the devices are 4 and 5 while local ranks 0 and 1 use devices 0 and 1
    ([("10.0.0.11", [4, 5])], "rank 0 is device 4 on server 10.0.0.11, but this process (LOCAL_RANK=0) "
                              "would use device 0"),
])
def test_rank_table_that_disagrees_with_launch_is_refused(prepared, tmp_path, servers, message):
    table = tmp_path / "rank_table.json"
    table.write_text(rank_table(servers))
    proc = subprocess.run(torchrun_cmd(train_args(prepared["data"], tmp_path / "run")),
                          env=subprocess_env(RANK_TABLE_FILE=str(table)), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0
    assert "ascendops-train: rank table error: rank table " + str(table) in proc.stderr
    assert message in proc.stderr, proc.stderr[-3000:]
    assert not (tmp_path / "run" / "metrics.jsonl").exists()  # refused before training started


def test_bench_switches_side_by_side_without_torchrun(tmp_path):
    """bench.mode switches: our stack, each speed switch flipped, and plain PyTorch, in one run. On CPU
    every variant does the same math (no NPU kernels here), so all of them end at the same loss."""
    proc = subprocess.run(
        [sys.executable, "-m", "ascendops_trainer", "bench", "--preset", "debug", "--run-dir", str(tmp_path),
         "--bench.steps", "1", "--bench.warmup_steps", "0", "--bench.mode", "switches",
         "--global-batch-size", "2", "--micro-batch-size", "2",
         "--model.activation_checkpointing", "true", "--progress", "plain"],
        env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # progress: the 11 runs of 1 step each, one plain line at the end, on stderr only
    assert "\r" not in proc.stderr and "bench: 100% 11/11" in proc.stderr, proc.stderr[-3000:]
    assert "bench:" not in proc.stdout.replace("bench: debug", "")
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("BENCH_RESULT "))
    res = json.loads(line[len("BENCH_RESULT "):])
    assert res["world_size"] == 1 and res["peak_source"] == "measured fp32 matmul"
    assert res["zero_stage"] == 2  # auto, one rank: ZeRO-1 buys nothing there (planner.stage_order)
    expected = {"deepspeed", "torch", "fused_rms_norm=off", "fused_rope=off", "fused_swiglu=off",
                "activation_ckpt=off", "checkpoint_every=2", "loss_chunk=off", "zero_stage=1", "zero_stage=3",
                "fused_adam=off"}
    assert set(res["results"]) == expected
    ref = res["results"]["torch"]["loss"]
    assert abs(ref - math.log(512)) < 1.0  # one step from a fresh init
    for name, r in res["results"].items():
        assert "error" not in r, (name, r)
        if name == "zero_stage=3":  # zero.Init draws the random init in another order: same distribution only
            assert abs(r["loss"] - ref) < 0.1, (name, r["loss"], ref)
        else:  # same model, init, batch and math in every other variant
            assert r["loss"] == pytest.approx(ref, abs=2e-4), name
        assert r["tflops_per_device"] == pytest.approx(r["tokens_per_s_per_device"] * res["flops_per_token"] / 1e12)
        assert r["mfu"] == pytest.approx(r["tflops_per_device"] / res["peak_tflops_per_device"])
    assert res["ratio_deepspeed_over_torch"] == pytest.approx(
        res["results"]["deepspeed"]["tokens_per_s_per_device"] / res["results"]["torch"]["tokens_per_s_per_device"])
    assert res["ratio_deepspeed_over_torch_cpu_time"] == pytest.approx(
        res["results"]["torch"]["cpu_seconds"] / res["results"]["deepspeed"]["cpu_seconds"])
    assert "ratio deepspeed/torch tokens/s:" in proc.stdout and "checkpoint_every=2" in proc.stdout
    assert Path(tmp_path / "bench.json").is_file()


def test_cli_config_errors_are_clear(tmp_path):
    """Static config errors stop before torch is imported (checked without a clock), with exit code 2."""
    bad_file = tmp_path / "bad.yaml"
    bad_file.write_text("optim:\n  lrr: 0.1\n")
    for args, msg in [
        (["--preset", "llama3-7b"], "unknown model preset 'llama3-7b'; choose one of: debug, llama3-8b, llama3-70b"),
        (["--global-batch-size", "10", "--micro-batch-size", "4"],
         "train.global_batch_size (10) is not divisible by train.micro_batch_size (4)"),
        (["--config", str(bad_file)], "unknown config key 'optim.lrr'; did you mean 'optim.lr'?"),
    ]:
        # python -X importtime lists every module imported; torch must not be among them
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "ascendops_trainer", "train", "--data",
                               "/nonexistent", *args], env=subprocess_env(), capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert "ascendops-train: config error: " + msg in proc.stderr
        assert "Traceback" not in proc.stderr
        imported = {ln.split("|")[-1].strip() for ln in proc.stderr.splitlines() if ln.startswith("import time:")}
        assert "ascendops_trainer.config" in imported and "torch" not in imported



def _tied_copy(src: Path, dst: Path) -> None:
    """The exported directory as a tied-embedding model: lm_head dropped, the config says tied."""
    import shutil

    from safetensors.torch import load_file, save_file

    shutil.copytree(src, dst)
    weights = load_file(str(dst / "model.safetensors"))
    weights.pop("lm_head.weight")
    save_file(weights, str(dst / "model.safetensors"), metadata={"format": "pt"})
    cfg = json.loads((dst / "config.json").read_text())
    cfg["tie_word_embeddings"] = True
    (dst / "config.json").write_text(json.dumps(cfg))


def test_continue_from_export_bf16_recompute_eval_time_cadence(prepared, straight_run, tmp_path):
    """One process: continue from the exported directory in bf16 with fp32 gradient accumulation,
    activation checkpointing on every 2nd layer, evaluation and time-based checkpoints."""
    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "ascendops_trainer", "train", "--hf-dir", str(straight_run / "hf"),
         "--data", prepared["data"], "--run-dir", str(run), "--steps", "6", "--precision", "bf16",
         "--lr", "3e-4", "--optim.min_lr", "3e-5", "--model.activation_checkpointing", "true",
         "--model.checkpoint_every", "2", "--eval-interval", "3", "--train.eval_batches", "2",
         "--checkpoint.interval", "1000", "--checkpoint.interval_minutes", "0.00001", "--checkpoint.keep", "10",
         "--metrics.tensorboard", "false"],
        env=subprocess_env(), capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    meta = json.loads((run / "config.json").read_text())["run"]
    # what the DeepSpeed engine resolved, read back from it: bf16 weights, fp32 accumulation and reduction
    assert (meta["model_dtype"], meta["grad_accum_dtype"], meta["communication_dtype"]) == \
        ("bfloat16", "float32", "float32")
    assert meta["activation_checkpointing"] == [0]  # 2 layers, every 2nd recomputed
    m = read_metrics(run)
    # continued training: starts at the exported model's loss, far below a fresh model's ln(512)
    assert m[1]["loss"] < read_metrics(straight_run)[STEPS]["loss"] + 0.5 < math.log(512) - 2
    evals = [json.loads(ln) for ln in (run / "eval.jsonl").read_text().splitlines()]
    assert [e["step"] for e in evals] == [3, 6] and all(0 < e["eval_loss"] < math.log(512) - 2 for e in evals)
    # interval 1000 steps, but 0.6 ms of wall time between saves: a checkpoint at every step
    assert sorted(p.name for p in (run / "checkpoints").glob("step_*")) == [f"step_{s:08d}" for s in range(1, 7)]


@pytest.mark.parametrize("implementation", ["transformers", "native"])
def test_tied_embeddings_train_count_once_and_export_without_lm_head(prepared, straight_run, tmp_path, implementation):
    """A tied model (lm_head shares the embedding) under ZeRO-3, with either model implementation: MFU's N
    counts the matrix once, the shared weight trains, the export leaves lm_head out and says tied."""
    from safetensors.torch import load_file

    hf = tmp_path / "tied"
    _tied_copy(straight_run / "hf", hf)
    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "ascendops_trainer", "train", "--hf-dir", str(hf), "--data", prepared["data"],
         "--run-dir", str(run), "--steps", "3", "--zero-stage", "3", "--export-dir", str(run / "hf"),
         "--metrics.tensorboard", "false", "--model.implementation", implementation],
        env=subprocess_env(), capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    saved = json.loads((run / "config.json").read_text())
    assert saved["config"]["model"]["implementation"] == implementation
    meta = saved["run"]
    assert meta["tied_embeddings"] is True and meta["params_for_flops"] == meta["params"]
    assert meta["params"] == 151872 - 512 * 64  # the debug model less its lm_head matrix
    before, after = load_file(str(hf / "model.safetensors")), load_file(str(run / "hf" / "model.safetensors"))
    assert "lm_head.weight" not in after and json.loads((run / "hf" / "config.json").read_text())["tie_word_embeddings"]
    assert not (before["model.embed_tokens.weight"] == after["model.embed_tokens.weight"]).all()  # it trained
    if implementation == "transformers":
        # model.implementation auto (the default) resumes this checkpoint with the model code that wrote it,
        # as a job started before the setting existed keeps transformers' model across a payload upgrade
        proc = subprocess.run(
            [sys.executable, "-m", "ascendops_trainer", "train", "--hf-dir", str(hf), "--data", prepared["data"],
             "--run-dir", str(run), "--steps", "4", "--zero-stage", "3", "--metrics.tensorboard", "false"],
            env=subprocess_env(), capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
        assert ("model.implementation auto: transformers (the checkpoint this launch resumes was written by it)"
                in proc.stdout + proc.stderr)
        assert "resumed from step_00000003: step 3" in proc.stdout + proc.stderr
        assert json.loads((run / "config.json").read_text())["config"]["model"]["implementation"] == "transformers"
        state = json.loads((run / "checkpoints" / "step_00000004" / "trainer_state.json").read_text())
        assert state["model_implementation"] == "transformers"


def test_resume_with_another_world_size_is_refused_clearly(prepared, straight_run, tmp_path):
    """With checkpoint.resume_universal never (auto converts: test_resume_world_size.py)."""
    import shutil

    ckpt = tmp_path / "checkpoints"
    shutil.copytree(straight_run / "checkpoints", ckpt)
    proc = subprocess.run(
        [sys.executable, "-m", "ascendops_trainer", *train_args(prepared["data"], tmp_path / "run",
                                                              "--checkpoint.dir", str(ckpt),
                                                              "--resume-universal", "never")],
        env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert (f"ascendops-train: config error: checkpoint {ckpt}/step_{STEPS:08d} was saved by 2 ranks, this launch "
            "has 1.") in proc.stderr
    assert "checkpoint.resume_universal is never" in proc.stderr
    assert not list(ckpt.glob("*_universal")) and not (ckpt / ".tmp-universal").exists()  # nothing converted
    assert "ascendops-train export --checkpoint-dir" in proc.stderr and "--model.hf_dir" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_zero_auto_resumes_a_checkpoint_with_its_own_stage(prepared, tmp_path):
    """A checkpoint written with ZeRO-3 (an older memory model, another device) resumes under
    zero_stage auto, which would pick ZeRO-2 for the debug model on one rank: the checkpoint's stage is kept
    instead of refusing the resume."""
    run = tmp_path / "run"
    base = [sys.executable, "-m", "ascendops_trainer", "train", "--preset", "debug", "--data", prepared["data"],
            "--run-dir", str(run), "--checkpoint.interval", "1", "--metrics.tensorboard", "false"]
    first = subprocess.run([*base, "--steps", "1", "--zero-stage", "3"], env=subprocess_env(), capture_output=True,
                           text=True, timeout=180)
    assert first.returncode == 0, (first.stdout + first.stderr)[-3000:]
    second = subprocess.run([*base, "--steps", "2"], env=subprocess_env(), capture_output=True, text=True,
                            timeout=180)
    out = second.stdout + second.stderr
    assert second.returncode == 0, out[-3000:]
    assert "memory plan: ZeRO-2: fits" in out and "ZeRO-1 not tried (one data-parallel rank" in out  # auto alone
    assert "saved with ZeRO-3 (auto would choose ZeRO-2 now): keeping ZeRO-3" in out
    assert "resumed from step_00000001: step 1" in out
    rec = json.loads((run / "config.json").read_text())["run"]
    assert rec["zero_stage"] == 3
    # the plan of the resumed stage, in the run's record: its choices and the estimate against the capacity
    choices = rec["memory_plan_choices"]
    assert (choices["zero_stage"], choices["activation_checkpointing"], choices["grad_comm_dtype"]) == (
        3, False, "fp32")
    assert 0 < choices["estimate_bytes_per_device"] < choices["device_bytes"] and choices["fits"] is True
    assert rec["memory_plan"][0].startswith("memory plan: ZeRO-3: as set")


def test_nonfinite_loss_stops_without_becoming_the_newest_checkpoint(prepared, tmp_path):
    """A learning rate of 1e4 without clipping diverges within a few steps. The run stops with exit code 4
    and a message; every step before is saved (interval 1, keep 2), the bad one is not. 2 ranks under
    `ascendops-train launch`: torchrun only says a worker failed (1); the launcher returns the trainer's 4."""
    run = tmp_path / "run"
    status_file = tmp_path / "status.json"
    proc = subprocess.run(
        launch_cmd(["train", "--preset", "debug", "--data", prepared["data"],
                    "--run-dir", str(run), "--steps", "30", "--lr", "1e4", "--optim.min_lr", "1e4",
                    "--optim.warmup_steps", "0", "--optim.grad_clip", "0", "--checkpoint.interval", "1",
                    "--checkpoint.keep", "2", "--metrics.tensorboard", "false"]),
        env=subprocess_env(ASCENDOPS_STATUS_FILE=str(status_file)), capture_output=True, text=True, timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out[-3000:]
    assert "torchrun exited 1;" in out  # what systemd would see without the launcher
    m = read_metrics(run)
    bad = max(m)
    assert bad < 30 and not (math.isfinite(m[bad]["loss"]) and math.isfinite(m[bad]["grad_norm"]))
    assert all(math.isfinite(m[s]["loss"]) and math.isfinite(m[s]["grad_norm"]) for s in range(1, bad))
    ckpt = run / "checkpoints"
    assert (ckpt / "latest").read_text().strip() == f"step_{bad - 1:08d}"
    assert sorted(p.name for p in ckpt.glob("step_*")) == [f"step_{s:08d}" for s in (bad - 2, bad - 1) if s > 0]
    assert (f"non-finite loss or gradient norm by step {bad}" in out
            and f"the newest checkpoint stays step_{bad - 1:08d}" in out)
    st = read_status(status_file)
    assert (st["state"], st["exit_code"], st["step"]) == ("failed", 4, bad)
    assert st["reason"].startswith(f"non-finite loss or gradient norm by step {bad}")
    assert (st["last_checkpoint"], st["last_checkpoint_step"]) == (f"step_{bad - 1:08d}", bad - 1)
