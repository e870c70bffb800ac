"""Device memory per rank: the model the ZeRO `auto` choice, the hpZ default and the start-up line use.

Bytes per device for P parameters over N data-parallel ranks (bf16 training, fp32 master weights and
Adam moments, fp32 gradient accumulation), following DeepSpeed's own estimators
(`estimate_zero2_model_states_mem_needs`, `estimate_zero3_model_states_mem_needs`, no offload; the
tests compare them on the debug and Llama 3 8B shapes):

- weights: bf16 copy. ZeRO 0-2: all of it, 2P. ZeRO-3: a partition 2P/N plus the largest unit gathered
  at once (4 x its parameters, DeepSpeed's allowance for the gathered bf16 copy and its gradient): the
  trainer gathers a decoder layer whole (model.gather_per_layer), so the larger of a layer and the
  largest single module (the embedding or the lm_head).
- grads: ZeRO-2: 6P/N (bf16 gradients plus the fp32 partition they accumulate into); ZeRO-3: 4P/N
  (reduce-scattered straight into the fp32 partition); ZeRO 0-1: the full gradients (2P bf16, plus 4P
  fp32 with fp32 accumulation on ZeRO-1).
- optimizer: fp32 master weights + Adam m and v, 12P/N (ZeRO >= 1) or 12P (ZeRO-0).
- hpZ: ZeRO++'s secondary bf16 copy, partitioned within the node: 2P/hpz.
- buckets: the gradient reduce buckets (two of reduce_bucket_size elements in the communication
  dtype, overlap_comm double-buffers) plus, on ZeRO-3, the prefetch bucket (bf16 elements).
- activations (per micro-batch, with flash attention: no S x S scores): per token and layer,
  6h + 2*kv + 4*ffn elements (residuals, norm outputs, q/k/v, attention output; gate, up, SiLU and
  the product). A recomputed layer keeps only its input (h) and one layer is rebuilt at a time in
  backward. Selective recompute keeps the matmul outputs and inputs it cannot rebuild cheaply (the layer
  input, q/k/v, the attention output, the mid-layer residual, gate and up: 4h + 2kv + 2ffn) and
  rebuilds the norms, the attention core and SwiGLU (2h + 2ffn, one layer at a time). Plus the loss: the
  fp32 logits and their gradient of one loss chunk (or of every token without chunking) and the bf16
  logits.

Estimates, not measurements: the allocator's fragmentation and the framework's workspaces come on
top, hence the budget below the device's memory (FIT_FRACTION).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

FIT_FRACTION = 0.9  # of the device's memory the estimate may fill (allocator, workspaces, HCCL buffers)
GIB = 2**30
DEFAULT_BUCKET = 500_000_000  # elements: DeepSpeed's reduce bucket default; ours before the planner


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per device."""

    stage: int
    weights: int
    grads: int
    optimizer: int
    hpz: int
    buckets: int
    activations: int

    @property
    def model_states(self) -> int:
        """What DeepSpeed's estimators count: weights, gradients and optimizer state."""
        return self.weights + self.grads + self.optimizer

    @property
    def total(self) -> int:
        return self.model_states + self.hpz + self.buckets + self.activations

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total": self.total}

    def line(self, device_bytes: int | None = None) -> str:
        g = {k: v / GIB for k, v in asdict(self).items() if k != "stage"}
        dev = f" of {device_bytes / GIB:.1f} GiB" if device_bytes else ""
        return (f"ZeRO-{self.stage}: weights {g['weights']:.2f} + grads {g['grads']:.2f} + optimizer "
                f"{g['optimizer']:.2f} + hpZ {g['hpz']:.2f} + buckets {g['buckets']:.2f} + activations "
                f"{g['activations']:.2f} = {self.total / GIB:.2f} GiB per device{dev}")


def _shape(hf_config) -> tuple[int, int, int, int, int]:
    c = hf_config
    hd = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    return c.hidden_size, c.num_key_value_heads * hd, c.intermediate_size, c.vocab_size, c.num_hidden_layers


def largest_layer_params(hf_config) -> int:
    """Parameters of the largest single module (DeepSpeed's `largest_layer_params`): the embedding or the
    lm_head for Llama, else the biggest projection."""
    h, kv, ffn, v, _ = _shape(hf_config)
    hd = getattr(hf_config, "head_dim", None) or h // hf_config.num_attention_heads
    return max(v * h, h * ffn, h * hf_config.num_attention_heads * hd, h * kv)


def layer_params(hf_config) -> int:
    """Parameters of one decoder layer (attention, MLP, its two norms)."""
    h, kv, ffn, _, _ = _shape(hf_config)
    hd = getattr(hf_config, "head_dim", None) or h // hf_config.num_attention_heads
    q = hf_config.num_attention_heads * hd
    return 2 * h * q + 2 * h * kv + 3 * h * ffn + 2 * h


def gathered_unit_params(hf_config) -> int:
    """Parameters ZeRO-3 gathers at once: a whole decoder layer (model.gather_per_layer) or the largest module
    outside the layers (the embedding, the lm_head), whichever is larger."""
    return max(largest_layer_params(hf_config), layer_params(hf_config))


def activation_bytes(hf_config, seq_len: int, micro_batch: int, dtype_bytes: int, checkpointing: bool,
                     checkpoint_every: int = 1, loss_chunk_tokens: int = 0, selective: bool = False) -> int:
    """Peak activation memory of one micro-batch (forward kept for backward, plus the loss)."""
    h, kv, ffn, v, layers = _shape(hf_config)
    tokens = seq_len * micro_batch
    full_layer = tokens * (6 * h + 2 * kv + 4 * ffn) * dtype_bytes
    if selective and not checkpointing:
        kept = tokens * (4 * h + 2 * kv + 2 * ffn) * dtype_bytes
        layer_mem = layers * kept + tokens * (2 * h + 2 * ffn) * dtype_bytes  # + one layer's rebuilt part
    elif checkpointing:
        recomputed = len(range(0, layers, max(checkpoint_every, 1)))
        kept = layers - recomputed
        layer_mem = recomputed * tokens * h * dtype_bytes + kept * full_layer + full_layer  # + one rebuilt
    else:
        layer_mem = layers * full_layer
    loss_tokens = min(loss_chunk_tokens, tokens) if loss_chunk_tokens else tokens
    loss_mem = loss_tokens * v * (4 + 4) + (0 if loss_chunk_tokens else tokens * v * dtype_bytes)
    embed_and_norm = 2 * tokens * h * dtype_bytes
    return layer_mem + loss_mem + embed_and_norm


def estimate_memory(hf_config, n_params: int, stage: int, dp_size: int, precision: str = "bf16",
                    grad_accum_dtype: str = "fp32", hpz: int = 1, reduce_bucket_size: int = 500_000_000,
                    prefetch_bucket_size: int = 500_000_000, seq_len: int = 8192, micro_batch: int = 1,
                    checkpointing: bool = True, checkpoint_every: int = 1, loss_chunk_tokens: int = 4096,
                    comm_dtype: str | None = None, selective: bool = False) -> MemoryEstimate:
    """Per-device bytes of a ZeRO stage for this model and batch (see the module docstring). comm_dtype:
    the gradient communication dtype (None: fp32 with fp32 accumulation, else the model's)."""
    p, n = n_params, max(dp_size, 1)
    w = 2 if precision == "bf16" else 4
    fp32_accum = precision != "bf16" or grad_accum_dtype == "fp32"
    if stage == 3:
        weights = w * p // n + 4 * gathered_unit_params(hf_config)
        grads = 4 * p // n
    else:
        weights = w * p
        if stage == 2:
            grads = (w + 4) * p // n if precision == "bf16" else 4 * p // n * 2
        else:
            grads = w * p + (4 * p if stage == 1 and fp32_accum and precision == "bf16" else 0)
    optimizer = 12 * p // (n if stage >= 1 else 1)
    hpz_bytes = w * p // hpz if stage == 3 and hpz > 1 else 0
    comm = {"fp32": 4, "bf16": 2}.get(comm_dtype or "", 4 if fp32_accum else w)
    buckets = (2 * reduce_bucket_size * comm if stage >= 1 else 0) + (w * prefetch_bucket_size if stage == 3 else 0)
    act = activation_bytes(hf_config, seq_len, micro_batch, w, checkpointing, checkpoint_every, loss_chunk_tokens,
                           selective)
    return MemoryEstimate(stage, weights, grads, optimizer, hpz_bytes, buckets, act)


def estimate_for(cfg, hf_config, n_params: int, stage: int, dp_size: int, precision: str, hpz: int = 1
                 ) -> MemoryEstimate:
    """estimate_memory with the job's own settings (JobConfig; settings still auto: their old defaults -
    full recompute, 5e8-element buckets, communication in the accumulation dtype)."""
    m, p = cfg.model, cfg.parallel
    comm = None if p.grad_comm_dtype == "auto" else p.grad_comm_dtype
    return estimate_memory(hf_config, n_params, stage, dp_size, precision, cfg.train.grad_accum_dtype, hpz,
                           p.reduce_bucket_size or DEFAULT_BUCKET, p.prefetch_bucket_size or DEFAULT_BUCKET,
                           cfg.data.seq_len, cfg.train.micro_batch_size,
                           m.activation_checkpointing is not False, m.checkpoint_every or 1, m.loss_chunk_tokens,
                           comm)


def fits(estimate: MemoryEstimate, device_bytes: int | None) -> bool:
    return bool(device_bytes) and estimate.total <= FIT_FRACTION * device_bytes
