"""DeepSpeed engine: its config generated from ours, torch AdamW, warmup + cosine schedule.

The DeepSpeed JSON is derived from JobConfig (one source of truth). A user JSON
(parallel.deepspeed_config) is merged over it key by key, for tuning knobs we do not model
(bucket sizes, prefetch, offload...). Batch-size keys in it must agree with the trainer's config,
because the data loader is built from the latter.
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

from .config import ConfigError, JobConfig, grad_accum_steps

BATCH_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")


def resolve_precision(precision: str, device_type: str) -> str:
    """'auto' -> bf16 on NPU/CUDA, fp32 on CPU (no bf16 matmul units on most CPUs)."""
    if precision == "auto":
        return "fp32" if device_type == "cpu" else "bf16"
    return precision


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def deepspeed_config(cfg: JobConfig, dp_size: int, precision: str,
                     override: dict[str, Any] | None = None) -> dict[str, Any]:
    """The DeepSpeed config for this job (precision already resolved: 'bf16' or 'fp32')."""
    t = cfg.train
    ga = grad_accum_steps(cfg, dp_size)
    stage = cfg.parallel.zero_stage
    zero: dict[str, Any] = {"stage": stage}
    if stage >= 1:
        zero.update({"overlap_comm": True, "contiguous_gradients": True, "reduce_bucket_size": int(5e8)})
    if stage == 3:
        zero.update({
            "stage3_prefetch_bucket_size": int(5e8),
            "stage3_param_persistence_threshold": int(1e6),
            "stage3_max_live_parameters": int(1e9),
            "stage3_gather_16bit_weights_on_model_save": False,  # we gather ourselves on export
        })
    ds: dict[str, Any] = {
        "train_batch_size": t.global_batch_size,
        "train_micro_batch_size_per_gpu": t.micro_batch_size,
        "gradient_accumulation_steps": ga,
        "gradient_clipping": cfg.optim.grad_clip,
        "bf16": {"enabled": precision == "bf16"},
        "fp16": {"enabled": False},
        "zero_optimization": zero,
        # torch.optim.AdamW is passed in: DeepSpeed's fused Adam has no NPU build.
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 2**31 - 1,  # we log ourselves (metrics module)
        "wall_clock_breakdown": False,
        "checkpoint": {"use_node_local_storage": not cfg.checkpoint.shared_fs},
    }
    if override:
        ds = deep_merge(ds, override)
        ours = {"train_batch_size": t.global_batch_size, "train_micro_batch_size_per_gpu": t.micro_batch_size,
                "gradient_accumulation_steps": ga}
        for key in BATCH_KEYS:
            if key in override and override[key] != ours[key]:
                raise ConfigError(f"deepspeed config override sets {key}={override[key]} but the trainer config "
                                  f"gives {ours[key]} (train.global_batch_size/train.micro_batch_size); set the "
                                  "batch through the trainer config only")
        if "optimizer" in override or "scheduler" in override:
            raise ConfigError("deepspeed config override must not define 'optimizer' or 'scheduler': the trainer "
                              "passes torch AdamW and its own schedule (see the optim section)")
    return ds


def load_override(path: str | None) -> dict[str, Any] | None:
    if not path:
        return None
    with open(path) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise ConfigError(f"parallel.deepspeed_config {path} is not valid JSON: {e}") from None


def lr_at(step: int, cfg: JobConfig) -> float:
    """LR used by optimizer step `step` (0-based): linear warmup to optim.lr, cosine down to min_lr."""
    o, total = cfg.optim, cfg.train.steps
    if o.warmup_steps and step < o.warmup_steps:
        return o.lr * (step + 1) / o.warmup_steps
    span = max(total - o.warmup_steps - 1, 1)  # the last step (total - 1) runs at min_lr
    progress = min(max(step - o.warmup_steps, 0) / span, 1.0)
    return o.min_lr + 0.5 * (o.lr - o.min_lr) * (1 + math.cos(math.pi * progress))


def param_groups(model, weight_decay: float) -> list[dict[str, Any]]:
    """Decay matrices; not norms or biases (1-D). Uses ds_shape under ZeRO-3 (local tensors are empty)."""
    decay, no_decay = [], []
    for _, p in model.named_parameters():
        if not p.requires_grad:
            continue
        shape = getattr(p, "ds_shape", p.shape)
        (decay if len(shape) >= 2 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_optimizer(model, cfg: JobConfig):
    import torch

    o = cfg.optim
    return torch.optim.AdamW(param_groups(model, o.weight_decay), lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps)


def make_scheduler(optimizer, cfg: JobConfig):
    import torch

    peak = cfg.optim.lr
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_at(step, cfg) / peak)


def build_engine(model, cfg: JobConfig, ds_config: dict[str, Any]):
    """deepspeed.initialize with our optimizer and schedule; DeepSpeed steps the schedule at each
    gradient-accumulation boundary."""
    import deepspeed

    optimizer = make_optimizer(model, cfg)
    scheduler = make_scheduler(optimizer, cfg)
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, lr_scheduler=scheduler,
                                           config=ds_config)
    return engine
