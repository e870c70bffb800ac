"""Throughput accounting (FLOPs, peak, MFU) and the metric sinks (console line, JSONL, TensorBoard).

FLOPs per token follow the PaLM paper (Chowdhery et al. 2022, appendix B):

    flops_per_token = 6 * N + 12 * n_layers * n_heads * head_dim * seq_len

- ``6 * N``: forward (2) + backward (4) FLOPs per weight that takes part in a matmul.
  N EXCLUDES the input token-embedding table (a lookup, no matmul) and INCLUDES the lm_head
  output projection (a real [hidden x vocab] matmul); for tied embeddings the shared matrix is
  counted once, as the lm_head (torchtitan does the same).
- ``12 * L * H * Dh * S``: attention scores and weighted values (QK^T and AV), forward + backward,
  with no discount for the causal mask.
- Activation recomputation is not counted: this is model FLOPs utilisation (MFU), not hardware
  FLOPs; a run with activation checkpointing does ~1/3 more work than it gets credit for.

MFU = achieved FLOP/s per device / the device's dense bf16 peak (table below, each entry with its source).
A device without an entry has no peak known: MFU null. For a CPU there is no datasheet figure: the
trainer measures a matmul's throughput at start-up and uses that.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from typing import Any

log = logging.getLogger(__name__)

# Dense BF16 peak per device in TFLOPS, matched as a substring of the device name torch reports
# (torch_npu: "Ascend910B1"; CUDA: "NVIDIA H100 80GB HBM3"). First match wins: specific names first.
# Each entry: (name, TFLOPS, where the figure comes from). A device without an entry has no peak: MFU is
# null for it unless metrics.peak_tflops is set; nothing is estimated here.
#
# Ascend: the figures are the project's vendor facts (shared/ascend-facts.md, Hardware). Checked as
# AI cores x FLOP per clock x clock: one Da Vinci AI Core's cube does 16x16x16 = 4096 FP16/BF16
# multiply-adds = 8192 FLOP per clock (Huawei, "DaVinci: A Scalable Architecture for Neural Network
# Computing", Hot Chips 31, 2019). 910B1's 25 AI cores are public (npu-smi `Aicore Count : 25`, gpustack
# issue 2135); the counts of 910B2/B3/B4 and the clocks are the ones that reproduce the vendor figures (the
# simulator assumes the same, docs/sim-contract.md), not read from a vendor sheet.
# NVIDIA: the dense figure of the vendor's datasheet (half the "with sparsity" figure it lists first).
PEAK_TABLE: list[tuple[str, float, str]] = [
    ("Ascend910B1", 373.9, "vendor facts (Atlas 800T A2, 910B1); NOT reproduced by 25 AI cores x 8192 FLOP/clock "
     "x 1.8 GHz = 368.6: it implies 1.826 GHz, unconfirmed"),
    ("Ascend910B2", 353.9, "vendor facts (Atlas 800T A2, 910B2, also 910B2C) = 24 AI cores x 8192 FLOP/clock "
     "x 1.8 GHz = 353.9"),
    ("Ascend910B3", 294.9, "vendor facts (910B3) = 20 AI cores x 8192 FLOP/clock x 1.8 GHz = 294.9"),
    ("Ascend910B4", 245.8, "vendor facts (910B4) = 20 AI cores x 8192 FLOP/clock x 1.5 GHz = 245.8"),
    ("H100 PCIe", 756.0, "NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe: BF16 Tensor Core 1,513 TFLOPS "
     "with sparsity, 756 dense"),
    ("H100 NVL", 835.0, "NVIDIA H100 Tensor Core GPU datasheet, H100 NVL: BF16 Tensor Core 1,671 TFLOPS "
     "with sparsity, 835 dense"),
    ("H100", 989.0, "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: BF16 Tensor Core 1,979 TFLOPS with "
     "sparsity, 989 dense"),
    ("H200 NVL", 835.0, "NVIDIA H200 Tensor Core GPU datasheet, H200 NVL: BF16 Tensor Core 1,671 TFLOPS "
     "with sparsity, 835 dense"),
    ("H200", 989.0, "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM: BF16 Tensor Core 1,979 TFLOPS with "
     "sparsity, 989 dense"),
    ("A100", 312.0, "NVIDIA A100 Tensor Core GPU datasheet: BF16 Tensor Core 312 TFLOPS dense (624 with "
     "sparsity)"),
]
# Ascend 910C / Atlas A3 ("Ascend910_93xx", one torch_npu device per die) has no entry: no per-die figure
# from the vendor; set metrics.peak_tflops where you know yours.

# The table's two views (name -> figure, name -> source), as earlier code and tests read them.
PEAK_TFLOPS_BF16: list[tuple[str, float]] = [(name, tflops) for name, tflops, _ in PEAK_TABLE]
PEAK_SOURCES: dict[str, str] = {name: source for name, _, source in PEAK_TABLE}

NO_PEAK = "no peak known"


def peak_source_for(device_name: str) -> str | None:
    """The source of the table entry that peak_tflops_for would use; None when none matches."""
    for key, _ in PEAK_TFLOPS_BF16:
        if key.lower() in device_name.lower():
            return PEAK_SOURCES[key]
    return None


def flops_per_token(n_params_non_embedding: int, n_layers: int, n_heads: int, head_dim: int, seq_len: int) -> int:
    """PaLM model FLOPs per trained token; see the module docstring for what N includes."""
    return 6 * n_params_non_embedding + 12 * n_layers * n_heads * head_dim * seq_len


def flops_per_token_for(hf_config, seq_len: int) -> int:
    from .model import param_counts

    c = hf_config
    hd = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    return flops_per_token(param_counts(c).non_embedding, c.num_hidden_layers, c.num_attention_heads, hd, seq_len)


def packed_attention_flops(
    doc_lengths: list[list[int]], n_layers: int, n_heads: int, head_dim: int, causal: bool = True
) -> int:
    """Exact attention FLOPs (QK^T and AV, forward + backward) of a packed batch.

    ``doc_lengths``: per sample, the lengths of the documents packed into it (document masking: a
    token attends only inside its own document). One document of length d costs
    ``12 * L * H * Dh * d**2`` (forward 4 * d**2 * H * Dh per layer: 2 for QK^T, 2 for AV; backward 2x);
    the causal mask computes only the lower triangle, so half of that. The PaLM term
    ``12 * L * H * Dh * S`` per token is the unmasked, one-document-of-length-S case.
    """
    sq = sum(d * d for sample in doc_lengths for d in sample)
    total = 12 * n_layers * n_heads * head_dim * sq
    return total // 2 if causal else total


def hfu_flops_factor(recompute: str, n_layers: int, every_k: int = 1) -> float:
    """Hardware FLOPs / model FLOPs for the dense (6N) part under a recompute mode: a recomputed
    layer runs its forward (2N of the 6N) twice. ``selective`` recomputes no matmul weights (counted
    as 1.0 for the dense part; its attention-core recompute is added by the caller)."""
    if recompute == "full":
        return 8.0 / 6.0
    if recompute == "every_k" and n_layers > 0:
        k = max(1, every_k)
        recomputed = len(range(0, n_layers, k))
        return 1.0 + (2.0 / 6.0) * recomputed / n_layers
    return 1.0


def peak_tflops_for(device_name: str) -> float | None:
    """Table lookup by device name; None when the device is not in the table."""
    for key, tflops in PEAK_TFLOPS_BF16:
        if key.lower() in device_name.lower():
            return tflops
    return None


def resolve_peak_tflops(
    configured: float | None, device_type: str, device: str, precision: str
) -> tuple[float | None, str]:
    """The per-device peak MFU is measured against, and where it came from: the configured value,
    else on CPU a matmul measured now in the run's precision, else the device table ("table: <source>");
    (None, "no peak known") for a device without an entry: MFU is then null, not guessed."""
    if configured:
        return configured, "metrics.peak_tflops"
    if device_type == "cpu":
        return measure_cpu_matmul_tflops(precision), f"measured {precision} matmul"
    peak = peak_tflops_for(device)
    if peak is None:
        return None, NO_PEAK
    return peak, f"table: {peak_source_for(device)}"


def measure_cpu_matmul_tflops(dtype_name: str = "fp32", n: int = 1024, min_seconds: float = 0.3) -> float:
    """Sustained square-matmul throughput of this process on the CPU, in TFLOPS (the CPU 'peak')."""
    import torch

    dtype = torch.bfloat16 if dtype_name == "bf16" else torch.float32
    if dtype == torch.bfloat16:
        n = min(n, 256)  # without native bf16 units this is slow; keep start-up short
    a = torch.randn(n, n, dtype=dtype)
    b = torch.randn(n, n, dtype=dtype)
    a @ b  # warm-up
    iters, t0 = 0, time.perf_counter()
    while True:
        a @ b
        iters += 1
        dt = time.perf_counter() - t0
        if dt >= min_seconds and iters >= 3:
            break
    return 2 * n**3 * iters / dt / 1e12


def mfu(tokens_per_s_per_device: float, flops_per_tok: float, peak_tflops: float | None) -> float | None:
    """Model FLOPs utilisation in [0, 1]; None without a known peak."""
    if not peak_tflops:
        return None
    return tokens_per_s_per_device * flops_per_tok / (peak_tflops * 1e12)


def achieved_tflops(tokens_per_s_per_device: float, flops_per_tok: float) -> float:
    return tokens_per_s_per_device * flops_per_tok / 1e12


def memory_gib(device_type: str) -> float:
    """Peak device memory allocated since the last reset (host-side allocator stats, no sync);
    on CPU the process's peak resident set size."""
    if device_type in ("npu", "cuda"):
        import torch

        mod = getattr(torch, device_type)
        v = mod.max_memory_allocated()
        mod.reset_peak_memory_stats()
        return v / 2**30
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def format_line(m: dict[str, Any]) -> str:
    def f(key: str, fmt: str, scale: float = 1.0, unit: str = "") -> str:
        v = m.get(key)
        return "n/a" if v is None else format(v * scale, fmt) + unit

    return (f"step {m['step']}/{m['total_steps']} | loss {f('loss', '.4f')} | lr {f('lr', '.2e')} | "
            f"gnorm {f('grad_norm', '.3f')} | tok/s/dev {f('tokens_per_s_per_device', ',.0f')} | "
            f"TFLOPS/dev {f('tflops_per_device', '.2f')} | MFU {f('mfu', '.1f', 100, '%')} | "
            f"mem {f('mem_gib', '.2f', unit=' GiB')} | data wait {f('data_wait_frac', '.1f', 100, '%')} | "
            f"{f('step_time_s', '.3f', unit=' s/step')}")


class MetricsLogger:
    """Writes one record per log interval: a console line, a JSONL line, TensorBoard scalars.

    ``enabled`` (the main rank) writes the files; ``console`` (default: the same) prints the line, so
    that the first process of every node can show its node's progress in that node's log.
    """

    def __init__(self, run_dir: str, enabled: bool, tensorboard: bool = True, console: bool | None = None):
        self.enabled = enabled
        self.console = enabled if console is None else console
        self.path = os.path.join(run_dir, "metrics.jsonl")
        self._tb = None
        if not enabled:
            return
        os.makedirs(run_dir, exist_ok=True)
        self._f = open(self.path, "a", buffering=1)  # append: a resumed run continues the file
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(os.path.join(run_dir, "tb"))
            except ImportError as e:  # tensorboard missing: keep training, say so once
                log.warning("TensorBoard disabled: %s", e)

    def log(self, record: dict[str, Any]) -> None:
        if self.console:
            print(format_line(record), flush=True)
        if not self.enabled:
            return
        self._f.write(json.dumps(record) + "\n")
        if self._tb is not None:
            for k, v in record.items():
                if isinstance(v, (int, float)) and k not in ("step", "total_steps") and math.isfinite(v):
                    self._tb.add_scalar(k, v, record["step"])
            self._tb.flush()

    def log_eval(self, record: dict[str, Any]) -> None:
        """An evaluation: console line, <run_dir>/eval.jsonl, TensorBoard scalar eval_loss."""
        if not self.enabled:
            return
        print(f"eval step {record['step']} | eval loss {record['eval_loss']:.4f}", flush=True)
        with open(os.path.join(os.path.dirname(self.path), "eval.jsonl"), "a") as f:
            f.write(json.dumps(record) + "\n")
        if self._tb is not None and math.isfinite(record["eval_loss"]):
            self._tb.add_scalar("eval_loss", record["eval_loss"], record["step"])
            self._tb.flush()

    def log_profile(self, summary) -> None:
        """A profiled window's summary (profile.WindowSummary) of this rank: the line is logged by the
        profiler; the main rank also appends it to <run_dir>/profile.jsonl and TensorBoard (profile/*_ms)."""
        if not self.enabled:
            return
        rec = {**summary.record(), "time": time.time()}
        with open(os.path.join(os.path.dirname(self.path), "profile.jsonl"), "a") as f:
            f.write(json.dumps(rec) + "\n")
        if self._tb is not None and summary.steps:
            for key in ("compute_ms", "communication_ms", "exposed_communication_ms", "data_wait_ms", "wall_ms"):
                self._tb.add_scalar(f"profile/{key}", rec[key], summary.steps[1])
            self._tb.flush()

    def close(self) -> None:
        if self.enabled:
            self._f.close()
            if self._tb is not None:
                self._tb.close()


def read_jsonl(path: str) -> list[dict[str, Any]]:
    """Records of a metrics.jsonl, last one per step (a resumed run may repeat steps). A last line
    still being written by a running job is skipped."""
    by_step: dict[int, dict[str, Any]] = {}
    with open(path) as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:  # no newline yet: incomplete
                break
            raise
        by_step[int(rec["step"])] = rec
    return [by_step[k] for k in sorted(by_step)]


def plot(jsonl_path: str, out_dir: str) -> list[str]:
    """PNG plots of a run: loss.png and tokens_per_s.png (plus mfu.png, lr.png, npu_ai_core.png and
    npu_hbm.png when logged), and overview.png: loss, tokens/s and, when sampled, the NPUs' AI Core use
    and HBM in use stacked on one step axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if os.path.isdir(jsonl_path):
        jsonl_path = os.path.join(jsonl_path, "metrics.jsonl")
    recs = read_jsonl(jsonl_path)
    if not recs:
        raise ValueError(f"{jsonl_path} holds no metric records")
    os.makedirs(out_dir, exist_ok=True)
    steps = [r["step"] for r in recs]
    charts = [("loss.png", "loss", "loss", 1.0), ("tokens_per_s.png", "tokens_per_s_per_device",
                                                  "tokens/s per device", 1.0),
              ("mfu.png", "mfu", "MFU (%)", 100.0), ("lr.png", "lr", "learning rate", 1.0),
              ("npu_ai_core.png", "npu_ai_core_pct", "NPU AI Core (%)", 1.0),
              ("npu_hbm.png", "npu_hbm_used_mb", "NPU HBM in use (GiB)", 1.0 / 1024)]
    title = os.path.basename(os.path.dirname(os.path.abspath(jsonl_path)))

    def points(key: str, scale: float) -> list[tuple[int, float]]:
        return [(s, r[key] * scale) for s, r in zip(steps, recs, strict=True) if r.get(key) is not None]

    def draw(ax, pts, label: str) -> None:
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="." if len(pts) < 60 else None)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)

    written = []
    for name, key, label, scale in charts:
        pts = points(key, scale)
        if not pts and name not in ("loss.png", "tokens_per_s.png"):
            continue
        fig, ax = plt.subplots(figsize=(7, 4))
        draw(ax, pts, label)
        ax.set_xlabel("step")
        ax.set_title(f"{label} - {title}")
        fig.tight_layout()
        path = os.path.join(out_dir, name)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    panels = [c for c in charts if c[0] in ("loss.png", "tokens_per_s.png")
              or (c[0].startswith("npu_") and points(c[1], c[3]))]
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 2.4 * len(panels)), sharex=True, squeeze=False)
    for ax, (_name, key, label, scale) in zip(axes[:, 0], panels, strict=True):
        draw(ax, points(key, scale), label)
    axes[-1, 0].set_xlabel("step")
    axes[0, 0].set_title(title)
    fig.tight_layout()
    path = os.path.join(out_dir, "overview.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    written.append(path)
    return written
