"""The training loop (`ascendops-train train`).

One optimizer step = `grad_accum` micro-steps of `micro_batch_size` sequences on every data-parallel
rank. DeepSpeed (ZeRO, bf16, fp32 gradient accumulation, clipping) does the numerics; this file wires data,
checkpoints, signals, evaluation and metrics around it. Host-device syncs are marked `# SYNC:`; there
are none in the step itself, only at log intervals, evaluations, checkpoints and the end.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import signal
import time
import warnings
from typing import Any

from .config import ConfigError, JobConfig, grad_accum_steps
from .status import EXIT_NONFINITE, EXIT_STOPPED, GRACE_ENV, RunStatus

log = logging.getLogger("ascendops_trainer")

EXIT_PREEMPTED = EXIT_STOPPED  # 128 + SIGTERM: stopped on request after saving a checkpoint


class StopFlag:
    """Set by SIGTERM; the loop checks it between micro-steps, saves and exits."""

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
    """INFO for the process that logs for its node (local rank 0), warnings only for the others."""
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


TORCHRUN_GRACE_S = 30.0  # torchrun's SIGTERM -> SIGKILL time for its workers (before --shutdown-timeout)


def grace_period(cfg: JobConfig, env: dict[str, str] | None = None) -> tuple[float, str]:
    """(seconds a save on SIGTERM may take before the worker is killed, where that number comes from)."""
    env = os.environ if env is None else env
    if cfg.checkpoint.grace_period_s:
        return cfg.checkpoint.grace_period_s, "checkpoint.grace_period_s"
    try:
        launcher = float(env.get(GRACE_ENV, ""))
    except ValueError:
        launcher = 0.0
    if launcher > 0:
        return launcher, f"ascendops-train launch --grace-s, {GRACE_ENV}"
    return TORCHRUN_GRACE_S, "torchrun's default; run under `ascendops-train launch --grace-s N` for more"


def _lm_head(model):
    """The lm_head of a LlamaForCausalLM, also through a DeepSpeed engine or DDP wrapper."""
    return getattr(model, "module", model).lm_head


def packed_attention_kwargs(positions, device_type: str, device, max_sequences: int | None = None) -> dict[str, Any]:
    """Model kwargs for a packed micro-batch (document masking), from the loader's host-side position
    ids ([micro, seq + 1] CPU tensor): position ids plus transformers' varlen flash-attention kwargs
    (cu_seq_lens_q/k, max_length_q/k), computed here once per micro-batch. Without them transformers
    derives them from position_ids in every layer, with a device -> host copy each time (on NPU its
    npu_fusion_attention wrapper reads the lengths on the host: given CPU tensors, that read costs no
    sync). On CUDA the lengths go to the device (flash_attn reads them there); copies, no sync."""
    import torch

    from .data import pack_layout
    from .kernels import NPU_FA_MAX_SEQUENCES

    layout = pack_layout(positions.numpy(), max_sequences or NPU_FA_MAX_SEQUENCES)
    if layout.merged:
        log.warning("packed micro-batch holds more than %d documents: %d short ones merged into their "
                    "neighbours (the fused attention kernel's limit; lower train.micro_batch_size to avoid it)",
                    max_sequences or NPU_FA_MAX_SEQUENCES, layout.merged)
    cu = torch.from_numpy(layout.cu_seqlens)
    if device_type == "cuda":
        cu = cu.to(device, non_blocking=True)
    return {"position_ids": torch.from_numpy(layout.position_ids).to(device, non_blocking=True),
            "cu_seq_lens_q": cu, "cu_seq_lens_k": cu, "max_length_q": layout.max_len,
            "max_length_k": layout.max_len}


def causal_lm_loss(engine_or_model, batch, position_ids=None, packed: dict[str, Any] | None = None):
    """Mean next-token cross-entropy of a [micro, seq + 1] batch, softmax in fp32 (bf16 logsumexp is
    lossy, and absent on NPU).

    With model.loss_chunk_tokens the lm_head computes the loss itself, chunk by chunk (kernels.py):
    the full [tokens x vocab] fp32 logits never exist. With position_ids ([micro, seq + 1], restarting
    at every document: document masking) the micro-batch is packed into one row of micro x seq
    inputs whose positions restart at every sample and document; transformers then hands the implied
    sequence lengths to the varlen flash-attention kernel, so attention stays inside each document.
    """
    import torch.nn.functional as F

    inputs, targets = batch[:, :-1], batch[:, 1:]
    kwargs = {}
    if packed is not None:  # packed_attention_kwargs: position ids and the varlen lengths, computed once
        inputs, targets = inputs.reshape(1, -1), targets.reshape(1, -1)
        kwargs.update(packed)
    elif position_ids is not None:
        inputs, targets = inputs.reshape(1, -1), targets.reshape(1, -1)
        kwargs["position_ids"] = position_ids[:, :-1].reshape(1, -1)  # the last token is only a target
    head = _lm_head(engine_or_model)
    if hasattr(head, "_ascendops_targets"):
        head._ascendops_targets = targets
        try:
            return engine_or_model(input_ids=inputs, **kwargs).logits  # the loss (a scalar), see kernels.py
        finally:
            head._ascendops_targets = None
    logits = engine_or_model(input_ids=inputs, **kwargs).logits
    return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), targets.reshape(-1))


def train(cfg: JobConfig, status: RunStatus | None = None) -> int:
    """Train; returns the exit code (status.py). `status` (the node's status file) gets the progress;
    the caller writes the final state of a raised error (cli.main)."""
    status = status or RunStatus(None)
    from .parallel import apply_npu_env

    npu_env = apply_npu_env()  # before torch is imported: torch autoloads torch_npu, which reads them at import
    import torch
    import torch.distributed as dist

    from . import checkpoint as ck
    from .data import DistributedLoader, TokenDataset
    from .engine import (
        build_engine,
        deepspeed_config,
        device_memory_bytes,
        load_override,
        resolve_precision,
        resolve_zero_stage,
    )
    from .kernels import npu_kernels
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
    setup_logging(launch_info().is_node_main)  # each node's journal shows steps, saves and resumes
    if npu_env and launch_info().is_main:
        log.info("NPU environment set (export a variable to override it): %s", npu_env)
    if not cfg.data.path:
        raise ConfigError("data.path is required: the directory written by `ascendops-train prepare`")
    ctx = init_distributed(cfg.parallel.device, cfg.parallel.dist_timeout_s)
    precision = resolve_precision(cfg.train.precision, ctx.device_type)
    ga = grad_accum_steps(cfg, ctx.world_size)
    try:
        dataset = TokenDataset(cfg.data.path)
    except (OSError, ValueError) as e:  # missing or foreign directory: no retry will fix it
        raise ConfigError(f"data.path: {e}") from None
    hf_config = build_hf_config(cfg.model, ctx.device_type)
    cfg.parallel.zero_stage = resolve_zero_stage(cfg, ctx.world_size, param_counts(hf_config).total, precision,
                                                 device_memory_bytes(ctx.device_type, ctx.launch.local_world_size))
    ds_config = deepspeed_config(cfg, ctx.world_size, precision, load_override(cfg.parallel.deepspeed_config),
                                 devices_per_node=ctx.launch.local_world_size)

    if dataset.vocab_size > hf_config.vocab_size:
        raise ConfigError(f"the tokenizer of {cfg.data.path} has {dataset.vocab_size} tokens but the model's "
                          f"vocabulary is {hf_config.vocab_size}; set --model.vocab_size or use a matching model")
    seq_len = cfg.data.seq_len
    if seq_len > hf_config.max_position_embeddings:
        log.warning("data.seq_len %d exceeds max_position_embeddings %d", seq_len, hf_config.max_position_embeddings)
    attn = hf_config._attn_implementation
    packed = cfg.data.document_masking and attn == "flash_attention_2" and dataset.has_boundaries
    if cfg.data.document_masking and not packed and ctx.is_main:
        log.info("document masking off: attention %s %s", attn, "cannot mask packed documents"
                 if attn != "flash_attention_2" else "but the data has no document boundaries")

    # The data must serve this launch before anything slow is built: a missing or too small validation
    # split (or training data) is a config error now, not after minutes of model build and resume.
    try:
        loader = DistributedLoader(dataset, seq_len, cfg.train.micro_batch_size, ctx.rank, ctx.world_size,
                                   cfg.train.seed, cfg.data.shuffle, positions=packed)
        val = TokenDataset(cfg.data.path, split="val") if cfg.train.eval_interval else None
        if val is not None:
            if val.num_tokens == 0:
                raise ValueError(f"train.eval_interval is set but {cfg.data.path} has no validation split "
                                 "(prepare it with --val-fraction)")
            DistributedLoader(val, seq_len, cfg.train.micro_batch_size, ctx.rank, ctx.world_size, cfg.train.seed,
                              shuffle=False)  # raises when the split has less than one micro-step
    except ValueError as e:
        raise ConfigError(str(e)) from None

    hf_config_dict = hf_config.to_dict()
    ckpt = ck.CheckpointManager(cfg.checkpoint_dir, cfg.checkpoint.keep, cfg.checkpoint.shared_fs, ctx, hf_config_dict)
    resume_tag = ckpt.resume_tag() if cfg.checkpoint.resume else None
    if resume_tag is not None:  # refuse an incompatible checkpoint (or other data) before the slow model build
        saved_state = ckpt.check_compatible(resume_tag, cfg.parallel.zero_stage)
        try:
            loader.load_state_dict(saved_state["loader"])  # loaded again with the engine below
        except ValueError as e:
            raise ConfigError(f"checkpoint {resume_tag}: {e}") from None

    seed_everything(cfg.train.seed)  # same seed on every rank: identical init (ZeRO-3 inits on rank 0 anyway)
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    kernels = npu_kernels() if ctx.device_type == "npu" else None
    model = build_model(cfg.model, hf_config, dtype, ds_config, device=ctx.device, kernels=kernels)
    engine = build_engine(model, cfg, ds_config, ctx.device_type)

    step, tokens_seen = 0, 0
    if resume_tag is not None:
        restored = ckpt.load(engine, resume_tag)
        if restored:
            tag, state = restored
            step, tokens_seen = int(state["step"]), int(state["tokens_seen"])
            loader.load_state_dict(state["loader"])
            log.info("resumed from %s: step %d, data epoch %d, %d samples into it", tag, step,
                     loader.state.epoch, loader.state.consumed)
            status.resumed(step, tag)

    # ---- metrics set-up
    counts = param_counts(hf_config)
    built = count_model_params(engine.module)
    if built != counts.total:
        log.warning("analytic parameter count %d differs from the built model's %d", counts.total, built)
    fpt = flops_per_token_for(hf_config, seq_len)
    dev_name = device_name(ctx.device_type)
    peak, peak_src = resolve_peak_tflops(cfg.metrics.peak_tflops, ctx.device_type, dev_name, precision)
    tokens_per_step = cfg.train.global_batch_size * seq_len
    model_dtype, accum_dtype = engine.get_data_types()
    meta: dict[str, Any] = {
        "model": cfg.model.hf_dir or cfg.model.preset,
        "params": counts.total,
        "params_for_flops": counts.non_embedding,
        "tied_embeddings": counts.tied,
        "flops_per_token": fpt,
        "flops_note": "PaLM 6N+12*L*H*Dh*S; N excludes the input embedding, includes lm_head (tied: counted once)",
        "device": dev_name,
        "device_type": ctx.device_type,
        "backend": ctx.backend,
        "world_size": ctx.world_size,
        "peak_tflops_per_device": peak,
        "peak_source": peak_src,
        "precision": precision,
        "model_dtype": str(model_dtype).replace("torch.", ""),
        "grad_accum_dtype": str(accum_dtype).replace("torch.", ""),  # as the DeepSpeed engine resolved it
        "communication_dtype": str(engine.communication_data_type).replace("torch.", ""),
        "optimizer": type(engine.optimizer.optimizer if hasattr(engine.optimizer, "optimizer")
                          else engine.optimizer).__name__,
        "zero_stage": cfg.parallel.zero_stage,
        "attn_implementation": attn,
        "document_masking": packed,
        "activation_checkpointing": [i for i, layer in enumerate(engine.module.model.layers)
                                     if getattr(layer, "gradient_checkpointing", False)],
        "fused_kernels": getattr(kernels, "__name__", None),
        "loss_chunk_tokens": cfg.model.loss_chunk_tokens,
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
    # Rank 0 writes the run's files; every node's local rank 0 prints the metric line, with the throughput
    # its own node measured (the loss is the all-reduced one, the same everywhere).
    metrics = MetricsLogger(cfg.run_dir, ctx.is_main, cfg.metrics.tensorboard, console=ctx.launch.is_node_main)

    # ---- loop state
    total = cfg.train.steps
    tokens_per_micro = cfg.train.micro_batch_size * seq_len  # per device
    engine.train()
    loss_sum = torch.zeros((), device=ctx.device, dtype=torch.float32)
    bad_norm = torch.zeros((), device=ctx.device, dtype=torch.float32)  # > 0 once a grad norm was not finite
    interval_steps, data_wait, paused = 0, 0.0, 0.0  # paused: checkpoint/eval time, not training time
    last_save_t = time.monotonic()
    last_good = ckpt.last_saved_step
    grace_s, grace_src = grace_period(cfg)
    reason: str | None = None  # one line for the status file when the run ends other than by completing

    def health() -> tuple[float, bool]:
        """(loss sum of the interval over all ranks, all finite?). Collective: every rank calls it."""
        h = torch.stack([loss_sum, bad_norm])
        if ctx.world_size > 1:
            dist.all_reduce(h)  # device collective; NaN/inf on any rank reaches all
        # SYNC: .item() at log intervals and before a save only
        total_loss, bad = h[0].item(), h[1].item()
        return total_loss, math.isfinite(total_loss) and bad == 0

    def refuse_nonfinite(at_step: int, loss_value: float | None) -> int:
        nonlocal reason
        reason = (f"non-finite loss or gradient norm by step {at_step} (loss {loss_value}); not saved, the newest "
                  f"checkpoint stays {ck.tag_for(last_good) if last_good is not None else 'none'}")
        gn = engine.get_global_grad_norm()
        if ctx.is_main:
            log.error("non-finite %s by step %d (loss %s, last grad norm %s): stopping WITHOUT saving, so the newest "
                      "checkpoint stays %s. Restarting resumes from there; lower optim.lr, keep optim.grad_clip on, "
                      "or check the data near this step", "loss or gradient norm", at_step, loss_value,
                      None if gn is None else float(gn),
                      ck.tag_for(last_good) if last_good is not None else "none (nothing saved yet)")
        return EXIT_NONFINITE

    def save(at_step: int, loader_state: dict[str, Any], seen: int) -> bool:
        """Save unless the state is not finite; False if refused."""
        nonlocal last_save_t, last_good
        _, ok = health()
        if not ok:
            return False
        state = {"step": at_step, "tokens_seen": seen, "loader": loader_state,
                 "zero_stage": cfg.parallel.zero_stage, "world_size": ctx.world_size,
                 "tokenizer": dataset.index.get("tokenizer"), "precision": precision}
        t0 = time.monotonic()
        ckpt.save(engine, at_step, state)
        took = time.monotonic() - t0
        if took > 0.5 * grace_s and ctx.is_main:
            log.warning("checkpoint save took %.1f s, more than half of the %.0f s grace period (%s): a save on "
                        "SIGTERM may be killed; raise the launcher's grace period (see README, Checkpoints)",
                        took, grace_s, grace_src)
        last_save_t, last_good = time.monotonic(), at_step
        status.saved(at_step, ck.tag_for(at_step))
        return True

    def evaluate() -> float:
        """Mean loss over the validation split's first train.eval_batches micro-batches per rank."""
        vl = DistributedLoader(val, seq_len, cfg.train.micro_batch_size, ctx.rank, ctx.world_size,
                               cfg.train.seed, shuffle=False, positions=packed)
        acc = torch.zeros((), device=ctx.device, dtype=torch.float32)
        engine.eval()
        with torch.no_grad():  # every rank runs the same number of batches: ZeRO-3 gathers collectively
            for _ in range(cfg.train.eval_batches):
                b, pos = vl.next_batch()
                packed_kw = None if pos is None else packed_attention_kwargs(pos, ctx.device_type, ctx.device)
                acc += causal_lm_loss(engine, b.to(ctx.device), packed=packed_kw).float()
        engine.train()
        if ctx.world_size > 1:
            dist.all_reduce(acc)
        return acc.item() / (ctx.world_size * cfg.train.eval_batches)  # SYNC: once per evaluation

    synchronize(ctx.device_type)  # SYNC: start the clock on an idle device
    t_last = time.perf_counter()
    exit_code = 0
    if step >= total:
        log.info("checkpoint is at step %d >= train.steps %d: nothing to train", step, total)
        reason = f"nothing to train: the checkpoint is at step {step} >= train.steps {total}"
    while step < total:
        lr = engine.get_lr()[0]  # the LR this step uses (the schedule advances after the update)
        step_loader_state = loader.state_dict()  # where this step's data starts (for a save mid-step)
        stopped_mid_step = False
        for _ in range(ga):
            # SIGTERM is honoured between micro-steps (not only optimizer steps, which can take minutes with
            # a long accumulation). Host-side gloo all-reduce of one int: every rank breaks at the same point.
            if all_agree_flag(stop.is_set, ctx):
                stopped_mid_step = True
                break
            t0 = time.perf_counter()
            batch, pos = loader.next_batch()  # [micro, seq_len + 1] int64 from memory-mapped shards
            # document masking: position ids and varlen lengths on the host, once per micro-batch
            packed_kw = None if pos is None else packed_attention_kwargs(pos, ctx.device_type, ctx.device)
            data_wait += time.perf_counter() - t0
            batch = batch.to(ctx.device, non_blocking=True)  # a few KiB: not worth pinning
            loss = causal_lm_loss(engine, batch, packed=packed_kw)
            engine.backward(loss)
            engine.step()  # optimizer + LR schedule step at the accumulation boundary only
            loss_sum += loss.detach()  # stays on the device: no sync per micro-step
        if stopped_mid_step:
            # The partial accumulation is dropped: the weights are those after `step` optimizer steps, and the
            # data position goes back to where this step began, so a resume redoes the whole step.
            if ctx.is_main:
                log.warning("SIGTERM: saving a checkpoint at step %d and stopping", step)
            if ckpt.last_saved_step == step or save(step, step_loader_state, tokens_seen):
                exit_code = EXIT_PREEMPTED  # (an already saved step is not saved again)
                reason = f"SIGTERM: stopped after saving {ck.tag_for(step)}"
            else:
                exit_code = refuse_nonfinite(step, None)
            break
        step += 1
        interval_steps += 1
        tokens_seen += tokens_per_step
        gn = engine.get_global_grad_norm()
        if torch.is_tensor(gn):
            bad_norm += (~torch.isfinite(gn.detach().float())).float()  # device op: no sync
        elif gn is not None and not math.isfinite(gn):
            bad_norm += 1.0

        if step % cfg.metrics.log_interval == 0 or step == total:
            total_loss, ok = health()  # SYNC inside: waits for every queued step; the wall time is then exact
            mean_loss = total_loss / (ctx.world_size * ga * interval_steps)
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
            status.running(step, mean_loss, tps, mfu(tps, fpt, peak))
            if not ok:
                exit_code = refuse_nonfinite(step, mean_loss)
                break
            loss_sum.zero_()
            interval_steps, data_wait, paused = 0, 0.0, 0.0
            t_last = time.perf_counter()

        if val is not None and step % cfg.train.eval_interval == 0:
            t0 = time.perf_counter()
            eval_loss = evaluate()
            if ctx.is_main:
                metrics.log_eval({"step": step, "eval_loss": eval_loss, "time": time.time()})
            paused += time.perf_counter() - t0

        # Time-based cadence: every rank measures its own clock; any rank past the interval makes all save.
        due_by_time = bool(cfg.checkpoint.interval_minutes) and all_agree_flag(
            time.monotonic() - last_save_t >= cfg.checkpoint.interval_minutes * 60, ctx)
        if step % cfg.checkpoint.interval == 0 or step == total or due_by_time:
            t0 = time.perf_counter()
            if not save(step, loader.state_dict(), tokens_seen):
                exit_code = refuse_nonfinite(step, None)
                break
            paused += time.perf_counter() - t0  # checkpoint time is not training throughput

    if exit_code == 0 and cfg.checkpoint.export_dir:
        export(engine, ctx, cfg, hf_config_dict, precision, dataset, step)
    metrics.close()
    engine.destroy()
    shutdown()
    status.finish(exit_code, step, reason)
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
