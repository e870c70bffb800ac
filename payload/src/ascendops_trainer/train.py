"""The training loop (`ascendops-train train`).

One optimizer step = `grad_accum` micro-steps of `micro_batch_size` sequences on every data-parallel
rank. DeepSpeed (ZeRO, bf16, clipping, accumulation) does the numerics; this file wires data,
checkpoints, signals and metrics around it. Host-device syncs are marked `# SYNC:`; there are none
in the step itself, only at log intervals, checkpoints and the end.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import time
import warnings
from typing import Any

from .config import ConfigError, JobConfig, grad_accum_steps

log = logging.getLogger("ascendops_trainer")

EXIT_PREEMPTED = 143  # 128 + SIGTERM: stopped on request after saving a checkpoint


class StopFlag:
    """Set by SIGTERM; the loop checks it between steps, saves and exits."""

    def __init__(self):
        self.set_by: int | None = None

    def __call__(self, signum, _frame):
        self.set_by = signum

    def install(self) -> StopFlag:
        signal.signal(signal.SIGTERM, self)
        return self

    @property
    def is_set(self) -> bool:
        return self.set_by is not None


def setup_logging(is_main: bool) -> None:
    # torch warns on every ZeRO collective that DeepSpeed calls all_gather_into_tensor /
    # reduce_scatter_tensor by their old names; harmless, and it would drown the metric lines.
    warnings.filterwarnings("ignore", message=r"`torch\.distributed\.\w+` is deprecated", category=FutureWarning)
    logging.basicConfig(level=logging.INFO if is_main else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)
    for noisy in ("DeepSpeed", "deepspeed", "torch.distributed", "transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def causal_lm_loss(engine_or_model, batch):
    """Next-token cross-entropy; logits upcast to fp32 (bf16 logsumexp is lossy, and absent on NPU)."""
    import torch.nn.functional as F

    inputs, targets = batch[:, :-1], batch[:, 1:]
    logits = engine_or_model(input_ids=inputs).logits
    return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), targets.reshape(-1))


def train(cfg: JobConfig) -> int:
    import torch
    import torch.distributed as dist

    from . import checkpoint as ck
    from .data import DistributedLoader, TokenDataset
    from .engine import build_engine, deepspeed_config, load_override, resolve_precision
    from .metrics import (
        MetricsLogger,
        achieved_tflops,
        flops_per_token_for,
        memory_gib,
        mfu,
        resolve_peak_tflops,
    )
    from .model import build_hf_config, build_model, count_model_params, param_counts
    from .parallel import all_agree_flag, device_name, init_distributed, launch_info, shutdown, synchronize

    stop = StopFlag().install()  # before the slow start-up: a SIGTERM then still ends cleanly
    setup_logging(launch_info().is_main)
    if not cfg.data.path:
        raise ConfigError("data.path is required: the directory written by `ascendops-train prepare`")
    ctx = init_distributed(cfg.parallel.device, cfg.parallel.dist_timeout_s)
    precision = resolve_precision(cfg.train.precision, ctx.device_type)
    ga = grad_accum_steps(cfg, ctx.world_size)
    ds_config = deepspeed_config(cfg, ctx.world_size, precision, load_override(cfg.parallel.deepspeed_config))

    dataset = TokenDataset(cfg.data.path)
    hf_config = build_hf_config(cfg.model)
    if dataset.vocab_size > hf_config.vocab_size:
        raise ConfigError(f"the tokenizer of {cfg.data.path} has {dataset.vocab_size} tokens but the model's "
                          f"vocabulary is {hf_config.vocab_size}; set --model.vocab_size or use a matching model")
    seq_len = cfg.data.seq_len
    if seq_len > hf_config.max_position_embeddings:
        log.warning("data.seq_len %d exceeds max_position_embeddings %d", seq_len, hf_config.max_position_embeddings)

    seed_everything(cfg.train.seed)  # same seed on every rank: identical init (ZeRO-3 inits on rank 0 anyway)
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    model = build_model(cfg.model, hf_config, dtype, ds_config, device=ctx.device)
    engine = build_engine(model, cfg, ds_config)
    loader = DistributedLoader(dataset, seq_len, cfg.train.micro_batch_size, ctx.rank, ctx.world_size,
                               cfg.train.seed, cfg.data.shuffle)
    hf_config_dict = hf_config.to_dict()
    ckpt = ck.CheckpointManager(cfg.checkpoint_dir, cfg.checkpoint.keep, cfg.checkpoint.shared_fs, ctx, hf_config_dict)

    step, tokens_seen = 0, 0
    if cfg.checkpoint.resume:
        restored = ckpt.load(engine)
        if restored:
            tag, state = restored
            step, tokens_seen = int(state["step"]), int(state["tokens_seen"])
            loader.load_state_dict(state["loader"])
            log.info("resumed from %s: step %d, data epoch %d, %d samples into it", tag, step,
                     loader.state.epoch, loader.state.consumed)

    # ---- metrics set-up
    counts = param_counts(hf_config)
    built = count_model_params(engine.module)
    if built != counts.total:
        log.warning("analytic parameter count %d differs from the built model's %d", counts.total, built)
    fpt = flops_per_token_for(hf_config, seq_len)
    dev_name = device_name(ctx.device_type)
    peak, peak_src = resolve_peak_tflops(cfg.metrics.peak_tflops, ctx.device_type, dev_name, precision)
    tokens_per_step = cfg.train.global_batch_size * seq_len
    meta: dict[str, Any] = {
        "model": cfg.model.hf_dir or cfg.model.preset,
        "params": counts.total,
        "params_for_flops": counts.non_embedding,
        "flops_per_token": fpt,
        "flops_note": "PaLM 6N+12*L*H*Dh*S; N excludes the input embedding, includes lm_head",
        "device": dev_name,
        "device_type": ctx.device_type,
        "backend": ctx.backend,
        "world_size": ctx.world_size,
        "peak_tflops_per_device": peak,
        "peak_source": peak_src,
        "precision": precision,
        "zero_stage": cfg.parallel.zero_stage,
        "grad_accum": ga,
        "tokens_per_step": tokens_per_step,
        "rank_table_server": (ctx.rank_table_server or {}).get("server_id"),
    }
    if ctx.is_main:
        os.makedirs(cfg.run_dir, exist_ok=True)
        with open(os.path.join(cfg.run_dir, "config.json"), "w") as f:
            json.dump({"config": cfg.to_dict(), "deepspeed": ds_config, "run": meta}, f, indent=1)
        log.info("run: %s", json.dumps(meta))
        if peak is None:
            log.warning("no peak FLOPS known for device %r: MFU is not reported (set --metrics.peak_tflops)",
                        dev_name)
    metrics = MetricsLogger(cfg.run_dir, ctx.is_main, cfg.metrics.tensorboard)

    def save(at_step: int) -> None:
        state = {"step": at_step, "tokens_seen": tokens_seen, "loader": loader.state_dict(),
                 "zero_stage": cfg.parallel.zero_stage, "world_size": ctx.world_size,
                 "tokenizer": dataset.index.get("tokenizer"), "precision": precision}
        ckpt.save(engine, at_step, state)

    # ---- loop
    total = cfg.train.steps
    tokens_per_micro = cfg.train.micro_batch_size * seq_len  # per device
    engine.train()
    loss_sum = torch.zeros((), device=ctx.device, dtype=torch.float32)
    interval_steps, data_wait, paused = 0, 0.0, 0.0  # paused: checkpoint time, not training time
    synchronize(ctx.device_type)  # SYNC: start the clock on an idle device
    t_last = time.perf_counter()
    exit_code = 0
    if step >= total:
        log.info("checkpoint is at step %d >= train.steps %d: nothing to train", step, total)
    while step < total:
        lr = engine.get_lr()[0]  # the LR this step uses (the schedule advances after the update)
        for _ in range(ga):
            t0 = time.perf_counter()
            batch = next(loader)  # [micro, seq_len + 1] int64 from memory-mapped shards
            data_wait += time.perf_counter() - t0
            batch = batch.to(ctx.device, non_blocking=True)  # a few KiB: not worth pinning
            loss = causal_lm_loss(engine, batch)
            engine.backward(loss)
            engine.step()  # optimizer + LR schedule step at the accumulation boundary only
            loss_sum += loss.detach()  # stays on the device: no sync per micro-step
        step += 1
        interval_steps += 1
        tokens_seen += tokens_per_step

        if step % cfg.metrics.log_interval == 0 or step == total:
            dist.all_reduce(loss_sum)  # mean over data-parallel ranks (device collective)
            # SYNC: .item() waits for every queued step; the interval's wall time is then exact.
            mean_loss = loss_sum.item() / (ctx.world_size * ga * interval_steps)
            gn = engine.get_global_grad_norm()
            grad_norm = float(gn) if gn is not None else None  # SYNC if DeepSpeed kept it as a device tensor
            dt = time.perf_counter() - t_last - paused
            tps = interval_steps * ga * tokens_per_micro / dt
            metrics.log({
                "step": step, "total_steps": total, "loss": mean_loss, "lr": lr,
                "grad_norm": grad_norm, "tokens_per_s_per_device": tps,
                "tflops_per_device": achieved_tflops(tps, fpt), "mfu": mfu(tps, fpt, peak),
                "mem_gib": memory_gib(ctx.device_type), "data_wait_s": data_wait,
                "data_wait_frac": data_wait / dt, "step_time_s": dt / interval_steps,
                "tokens_seen": tokens_seen, "epoch": loader.state.epoch, "time": time.time(),
            })
            loss_sum.zero_()
            interval_steps, data_wait, paused = 0, 0.0, 0.0
            t_last = time.perf_counter()

        if all_agree_flag(stop.is_set, ctx):  # host-side gloo all-reduce: every rank stops at the same step
            if ctx.is_main:
                log.warning("SIGTERM: saving a checkpoint at step %d and stopping", step)
            save(step)
            exit_code = EXIT_PREEMPTED
            break
        if step % cfg.checkpoint.interval == 0 or step == total:
            t0 = time.perf_counter()
            save(step)
            paused += time.perf_counter() - t0  # checkpoint time is not training throughput

    if exit_code == 0 and cfg.checkpoint.export_dir:
        export(engine, ctx, cfg, hf_config_dict, precision, dataset, step)
    metrics.close()
    engine.destroy()
    shutdown()
    return exit_code


def export(engine, ctx, cfg: JobConfig, hf_config_dict: dict[str, Any], precision: str, dataset, step: int) -> None:
    """Write a HF directory from the live engine, plus a probe (input ids and the logits the engine
    gives for them) so anyone can check the export with transformers alone."""
    import torch
    from safetensors.torch import save_file

    from .checkpoint import export_from_engine

    out = cfg.checkpoint.export_dir
    export_from_engine(engine, ctx, out, hf_config_dict, precision, dataset.index.get("tokenizer"),
                       {"step": step, "weights": "gathered training weights", "dtype": precision,
                        "run_dir": os.path.abspath(cfg.run_dir)})
    n = min(cfg.data.seq_len, 32)
    probe = torch.from_numpy(dataset.tokens(0, n)).unsqueeze(0).to(ctx.device)
    engine.eval()
    with torch.no_grad():  # every rank runs it: ZeRO-3 gathers weights collectively
        logits = engine(input_ids=probe).logits.float().cpu()  # SYNC: copy to host
    engine.train()
    if ctx.is_main:
        probe_path = os.path.join(out, "export_probe.safetensors")
        save_file({"input_ids": probe.cpu(), "logits": logits}, probe_path)
        os.chmod(probe_path, 0o644)
        log.info("exported step %d to %s", step, out)
