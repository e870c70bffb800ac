"""`ascendops-train bench`: the same model and batch through our DeepSpeed stack and a plain
PyTorch loop (same torch AdamW, same schedule, clipping and accumulation), in one run.

- DeepSpeed: exactly what `train` builds (ZeRO stage, bf16 weights + fp32 master in the optimizer,
  fused kernels on NPU, chunked loss, activation checkpointing as configured).
- `--bench.mode switches`: that stack once as configured and once with each speed switch flipped
  (fused RMSNorm/RoPE/SwiGLU, activation checkpointing, loss chunking, ZeRO stage, fused Adam), plus the
  PyTorch loop: tokens/s and MFU side by side.
- PyTorch: fp32 weights + torch.autocast(bf16) (PyTorch's standard mixed precision), DDP when
  launched on several ranks, no DeepSpeed.

Batches are synthetic random token ids (throughput does not depend on the text), identical for
both stacks. Works without torchrun: a 1-rank process group is set up in-process.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from .config import JobConfig

log = logging.getLogger("ascendops_trainer.bench")


def _no_tick() -> None:
    pass


def document_positions(micro: int, seq_len: int, doc_len: int, gen) -> Any:
    """Position ids [micro, seq_len + 1] of synthetic documents (lengths uniform in 1 .. 2 * doc_len - 1, mean
    doc_len) restarting at 0 at every sample and document start, as the loader gives them for data with
    document boundaries."""
    import torch

    pos = torch.empty(micro, seq_len + 1, dtype=torch.long)
    for r in range(micro):
        at = 0
        while at < seq_len + 1:
            n = int(torch.randint(1, 2 * doc_len, (1,), generator=gen))
            pos[r, at:at + n] = torch.arange(min(n, seq_len + 1 - at))
            at += n
    return pos


def document_kwargs(micro: int, seq_len: int, doc_len: int, gen, device_type: str, device) -> dict[str, Any] | None:
    """`train`'s packed-attention kwargs for a micro-batch of synthetic documents (None: doc_len 0, no packing)."""
    if doc_len <= 0:
        return None
    from .train import packed_attention_kwargs

    return packed_attention_kwargs(document_positions(micro, seq_len, doc_len, gen), device_type, device)


def _timed(step_fn: Callable[[], Any], warmup: int, steps: int, ctx,
           tick: Callable[[], None] = _no_tick) -> tuple[float, float, float]:
    """Seconds for `steps` steps after `warmup` untimed ones (slowest rank), the last loss, and the
    CPU seconds this process used meanwhile (all its threads; on a CPU run that is the work itself,
    unaffected by other jobs competing for the cores). `tick` is called after each step (progress; it
    never synchronizes the device, so the steps are queued as without it)."""
    import torch.distributed as dist

    from .parallel import all_gather_object, synchronize

    for _ in range(warmup):
        step_fn()
        tick()
    synchronize(ctx.device_type)  # SYNC: timing starts on an idle device
    dist.barrier()
    t0, c0 = time.perf_counter(), time.process_time()
    loss = None
    for _ in range(steps):
        loss = step_fn()
        tick()
    synchronize(ctx.device_type)  # SYNC: wait for the last step's kernels
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return max(all_gather_object(dt, ctx)), float(loss), max(all_gather_object(cpu, ctx))  # SYNC: loss to host


def _free(device_type: str) -> None:
    gc.collect()
    if device_type in ("npu", "cuda"):
        import torch

        getattr(torch, device_type).empty_cache()


def _run_deepspeed(cfg: JobConfig, rt, batches, packed, tick: Callable[[], None] = _no_tick) -> dict[str, Any]:
    """`train`'s own engine (Runtime.build_engine: same model, kernels, ZeRO config, optimizer, schedule)."""
    from .kernels import restore_stock_rope
    from .metrics import memory_gib
    from .train import causal_lm_loss

    ctx = rt.ctx
    restore_stock_rope()  # a previous variant may have patched it
    engine = rt.build_engine(cfg)
    engine.train()
    memory_gib(ctx.device_type)  # reset the peak counter

    def step():
        for b, kw in zip(batches, packed, strict=True):
            loss = causal_lm_loss(engine, b, packed=kw)
            engine.backward(loss)
            engine.step()
        return loss.detach()

    dt, loss, cpu = _timed(step, cfg.bench.warmup_steps, cfg.bench.steps, ctx, tick)
    out = {"seconds": dt, "cpu_seconds": cpu, "loss": loss, "mem_gib": memory_gib(ctx.device_type)}
    engine.destroy()
    return out  # the engine goes out of scope here; bench() then frees device memory


def restore_stock_linear() -> None:
    """Put torch's own F.linear back where a ZeRO-3 engine of an earlier round left DeepSpeed's
    (zero.Init's memory_efficient_linear replaces it process-wide and never undoes it; the next zero.Init
    replaces it again): the PyTorch stack runs plain PyTorch."""
    import torch

    try:
        from deepspeed.runtime.zero.partition_parameters import InsertPostInitMethodToModuleSubClasses as ins
    except ImportError:
        return
    stock = getattr(ins, "linear_bk", None)
    if stock is not None:
        torch.nn.functional.linear = stock


def _run_torch(cfg: JobConfig, rt, batches, packed, tick: Callable[[], None] = _no_tick) -> dict[str, Any]:
    import torch

    from .engine import make_optimizer, make_scheduler
    from .kernels import restore_stock_rope
    from .metrics import memory_gib
    from .model import build_model
    from .train import causal_lm_loss, seed_everything

    ctx, precision = rt.ctx, rt.precision
    seed_everything(cfg.train.seed)
    restore_stock_rope()
    restore_stock_linear()
    model = build_model(cfg.model, rt.hf_config, torch.float32, None, device=ctx.device,
                        kernels=rt.kernels).to(ctx.device)
    model.train()
    ddp = ctx.world_size > 1
    if ddp:
        from torch.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(model, device_ids=[ctx.device.index] if ctx.device.index is not None else None)
    opt = make_optimizer(model.module if ddp else model, cfg, ctx.device_type)
    sched = make_scheduler(opt, cfg)
    amp = (torch.autocast(ctx.device_type, dtype=torch.bfloat16) if precision == "bf16"
           else contextlib.nullcontext())
    ga = len(batches)
    memory_gib(ctx.device_type)

    def step():
        for i, (b, kw) in enumerate(zip(batches, packed, strict=True)):
            sync = contextlib.nullcontext() if (not ddp or i == ga - 1) else model.no_sync()
            with sync:
                with amp:
                    loss = causal_lm_loss(model, b, packed=kw)
                (loss / ga).backward()
        if cfg.optim.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.optim.grad_clip)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    try:
        dt, loss, cpu = _timed(step, cfg.bench.warmup_steps, cfg.bench.steps, ctx, tick)
        out = {"seconds": dt, "cpu_seconds": cpu, "loss": loss, "mem_gib": memory_gib(ctx.device_type)}
    except torch.OutOfMemoryError as e:
        out = {"error": f"out of memory: {str(e).splitlines()[0]}"}
    return out


def switch_variants(cfg: JobConfig) -> list[tuple[str, dict[str, Any]]]:
    """(label, overrides) for `bench.mode switches`: our stack as configured, then each speed switch
    flipped in turn, so their effect shows side by side."""
    m, p = cfg.model, cfg.parallel
    out: list[tuple[str, dict[str, Any]]] = [("deepspeed", {})]
    fused = {"fused_rms_norm": m.fused_rms_norm, "fused_rope": m.fused_rope, "fused_swiglu": m.fused_swiglu}
    for name, on in fused.items():
        out.append((f"{name}={'off' if on else 'on'}", {f"model.{name}": not on}))
    out.append(("activation_ckpt=" + ("off" if m.activation_checkpointing else "on"),
                {"model.activation_checkpointing": not m.activation_checkpointing}))
    if m.activation_checkpointing and m.checkpoint_every == 1:
        out.append(("checkpoint_every=2", {"model.checkpoint_every": 2}))
    out.append(("loss_chunk=" + ("off" if m.loss_chunk_tokens else "4096"),
                {"model.loss_chunk_tokens": 0 if m.loss_chunk_tokens else 4096}))
    for stage in (1, 2, 3):
        if stage != p.zero_stage:
            out.append((f"zero_stage={stage}", {"parallel.zero_stage": stage}))
    out.append(("fused_adam=" + ("off" if p.fused_adam else "on"), {"parallel.fused_adam": not p.fused_adam}))
    return out


def _variant(cfg: JobConfig, overrides: dict[str, Any]) -> JobConfig:
    import copy

    v = copy.deepcopy(cfg)
    for key, val in overrides.items():
        section, name = key.split(".", 1)
        setattr(getattr(v, section), name, val)
    return v


def bench_runs(cfg: JobConfig) -> list[str]:
    """The labels of the timed runs `bench` makes, in order (each warmup_steps + steps steps)."""
    runs: list[str] = []
    for r in range(cfg.bench.rounds):
        suffix = f" round {r + 1}/{cfg.bench.rounds}" if cfg.bench.rounds > 1 else ""
        if cfg.bench.mode in ("both", "torch", "switches"):
            runs.append("torch" + suffix)
        if cfg.bench.mode in ("both", "deepspeed"):
            runs.append("deepspeed" + suffix)
    if cfg.bench.mode == "switches":
        runs.extend(label for label, _ in switch_variants(cfg))
    return runs


class _BenchProgress:
    """`bench`'s progress: steps of all its runs (bench_runs) against their total, the run at hand as postfix.
    A run that stops early (out of memory) is counted as done, so the meter still ends at its total."""

    def __init__(self, cfg: JobConfig, mode: str, enabled: bool):
        from .progress import Progress

        self.labels = bench_runs(cfg)
        self.per_run = cfg.bench.warmup_steps + cfg.bench.steps
        self.meter = Progress(len(self.labels) * self.per_run, "bench", unit="step", mode=mode, enabled=enabled)
        self.done_runs = 0

    def start(self) -> Callable[[], None]:
        self.meter.set_postfix(self.labels[self.done_runs] if self.done_runs < len(self.labels) else "")
        return lambda: self.meter.update(1)

    def finish(self) -> None:
        self.done_runs += 1
        self.meter.update(self.done_runs * self.per_run - self.meter.n)

    def close(self) -> None:
        self.meter.close()


def bench(cfg: JobConfig, progress: str = "off") -> int:
    """Both stacks on `train`'s own set-up (train.Runtime: process group, precision, model config, memory
    plan and ZeRO stage, FLOPs, peak), then `train`'s engine (Runtime.build_engine) against plain PyTorch.
    progress: a progress.MODES value, shown by the first rank on stderr (the summary is unchanged)."""
    from .train import Runtime

    rt = Runtime.create(cfg)  # NPU environment before torch, logging, process group, ZeRO auto, peak
    import torch

    from .metrics import achieved_tflops, mfu
    from .model import param_counts
    from .parallel import shutdown

    ctx, precision, hf_config, ga = rt.ctx, rt.precision, rt.hf_config, rt.grad_accum
    seq_len, micro = cfg.data.seq_len, cfg.train.micro_batch_size
    fpt, dev, peak, peak_src = rt.flops_per_token, rt.device_name, rt.peak_tflops, rt.peak_source

    g = torch.Generator().manual_seed(cfg.train.seed + ctx.rank)
    batches = [torch.randint(0, hf_config.vocab_size, (micro, seq_len + 1), generator=g).to(ctx.device)
               for _ in range(ga)]
    tokens_per_step = ga * micro * seq_len  # per device
    from .model import masks_documents

    documents = cfg.bench.doc_len if cfg.data.document_masking and masks_documents(cfg.model, hf_config) else 0
    packed = [document_kwargs(micro, seq_len, documents, g, ctx.device_type, ctx.device) for _ in range(ga)]

    # Plain PyTorch first: DeepSpeed leaves helper threads behind that would slow a later CPU run.
    results: dict[str, dict[str, Any]] = {}
    # Alternating rounds pair the stacks in time: on a shared machine the load changes between runs.
    runs: dict[str, list[dict[str, Any]]] = {}
    meter = _BenchProgress(cfg, progress, enabled=ctx.is_main)
    for _ in range(cfg.bench.rounds):
        if cfg.bench.mode in ("both", "torch", "switches"):
            runs.setdefault("torch", []).append(_run_torch(cfg, rt, batches, packed, meter.start()))
            meter.finish()
            _free(ctx.device_type)
        if cfg.bench.mode in ("both", "deepspeed"):
            runs.setdefault("deepspeed", []).append(_run_deepspeed(cfg, rt, batches, packed, meter.start()))
            meter.finish()
            _free(ctx.device_type)
    for name, rs in runs.items():
        ok = sorted((r for r in rs if "seconds" in r), key=lambda r: r["seconds"])
        results[name] = dict(ok[len(ok) // 2]) if ok else rs[0]  # the median round
        if len(rs) > 1:
            results[name]["round_seconds"] = [r.get("seconds") for r in rs]
            cpus = sorted(r["cpu_seconds"] for r in rs if "cpu_seconds" in r)
            results[name]["cpu_seconds"] = cpus[len(cpus) // 2] if cpus else None
    if cfg.bench.mode == "switches":
        for label, overrides in switch_variants(cfg):
            try:
                results[label] = _run_deepspeed(_variant(cfg, overrides), rt, batches, packed, meter.start())
            except Exception as e:  # noqa: BLE001 - one variant failing (e.g. out of memory) must not hide the rest
                results[label] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"}
            meter.finish()
            _free(ctx.device_type)
    meter.close()
    order = [k for k in results if k != "torch"] + (["torch"] if "torch" in results else [])
    results = {k: results[k] for k in order}
    for r in results.values():
        if "seconds" in r:
            r["tokens_per_s_per_device"] = cfg.bench.steps * tokens_per_step / r["seconds"]
            r["step_s"] = r["seconds"] / cfg.bench.steps
            r["tflops_per_device"] = achieved_tflops(r["tokens_per_s_per_device"], fpt)
            r["mfu"] = mfu(r["tokens_per_s_per_device"], fpt, peak)
    ds, pt = results.get("deepspeed", {}), results.get("torch", {})
    ratio = (ds["tokens_per_s_per_device"] / pt["tokens_per_s_per_device"]
             if "seconds" in ds and "seconds" in pt else None)
    # CPU runs: the same ratio in process CPU time (stable on a shared machine; wall time is what counts on a device)
    ratio_cpu = (pt["cpu_seconds"] / ds["cpu_seconds"] if ctx.device_type == "cpu" and ds.get("cpu_seconds")
                 and pt.get("cpu_seconds") else None)

    summary = {
        "model": cfg.model.hf_dir or cfg.model.preset, "layers": hf_config.num_hidden_layers,
        "params": param_counts(hf_config).total, "flops_per_token": fpt, "seq_len": seq_len,
        "micro_batch": micro, "grad_accum": ga, "world_size": ctx.world_size, "precision": precision,
        "zero_stage": cfg.parallel.zero_stage, "activation_checkpointing": cfg.model.activation_checkpointing,
        "device": dev, "peak_tflops_per_device": peak, "peak_source": peak_src,
        "steps": cfg.bench.steps, "warmup_steps": cfg.bench.warmup_steps, "rounds": cfg.bench.rounds,
        "doc_len": cfg.bench.doc_len, "documents_packed": bool(documents),
        "results": results,
        "ratio_deepspeed_over_torch": ratio, "ratio_deepspeed_over_torch_cpu_time": ratio_cpu,
    }
    if ctx.is_main:
        print(format_summary(summary), flush=True)
        print("BENCH_RESULT " + json.dumps(summary), flush=True)
        os.makedirs(cfg.run_dir, exist_ok=True)
        with open(os.path.join(cfg.run_dir, "bench.json"), "w") as f:
            json.dump(summary, f, indent=1)
    shutdown()
    return 0 if all("seconds" in r for r in results.values()) else 1


def format_summary(s: dict[str, Any]) -> str:
    peak = f"{s['peak_tflops_per_device']:.3f}" if s["peak_tflops_per_device"] else "unknown"
    lines = [
        f"bench: {s['model']} ({s['layers']} layers, {s['params'] / 1e6:,.1f}M params), seq {s['seq_len']}, "
        f"micro {s['micro_batch']} x accum {s['grad_accum']} x {s['world_size']} rank(s), {s['precision']}, "
        f"ZeRO-{s['zero_stage']}, activation ckpt {'on' if s['activation_checkpointing'] else 'off'}",
        f"device: {s['device']}; peak {peak} TFLOPS/device ({s['peak_source']}); "
        f"{s['flops_per_token'] / 1e9:.3f} GFLOP/token (PaLM, N without input embedding); "
        f"{s['steps']} timed steps after {s['warmup_steps']} warm-up"
        + (f", median of {s['rounds']} alternating rounds" if s.get("rounds", 1) > 1 else "")
        + (f"; documents of ~{s['doc_len']} tokens, " + ("packed, attention masked per document"
           if s.get("documents_packed") else "not packed (this attention cannot mask documents)")
           if s.get("doc_len") else ""),
        f"{'stack':<24} {'tokens/s/dev':>13} {'TFLOPS/dev':>11} {'MFU':>7} {'s/step':>8} {'mem GiB':>8} {'loss':>7}",
    ]
    for name, r in s["results"].items():
        if "seconds" not in r:
            lines.append(f"{name:<24} {r.get('error', 'failed')}")
            continue
        m = f"{r['mfu'] * 100:6.2f}%" if r["mfu"] is not None else "    n/a"
        lines.append(f"{name:<24} {r['tokens_per_s_per_device']:>13,.0f} {r['tflops_per_device']:>11.3f} {m:>7} "
                     f"{r['step_s']:>8.3f} {r['mem_gib']:>8.2f} {r['loss']:>7.3f}")
    if s["ratio_deepspeed_over_torch"] is not None:
        lines.append(f"ratio deepspeed/torch tokens/s: {s['ratio_deepspeed_over_torch']:.3f}")
    if s.get("ratio_deepspeed_over_torch_cpu_time") is not None:
        lines.append(f"ratio deepspeed/torch, process CPU time: {s['ratio_deepspeed_over_torch_cpu_time']:.3f}")
    return "\n".join(lines)
