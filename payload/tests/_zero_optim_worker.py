"""Worker of test_optimizer_zero.py: trains a tiny model for STEPS optimizer steps under DeepSpeed ZeRO 1, 2
and 3 (CPU, gloo; alone or under torchrun) with each optimizer case, and the same model with plain PyTorch and
torch.optim.AdamW as the reference. Prints one line ``RESULT <json>`` (rank 0): per case and stage, each
parameter's largest difference from the reference and whether it moved from its initial value.

Its own process: DeepSpeed's process groups stay registered to the first engine of a process, and the
test must not leave a process group behind in the pytest process.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import torch  # noqa: E402

STEPS = 3
MICRO_BATCH = 4
STAGES = (1, 2, 3)


class FlattenOnceAdamW(torch.optim.Optimizer):
    """A stand-in that behaves like torch_npu's fused optimizers (NpuFusedAdamW, NpuFusedOptimizerBase):
    on its first step() it combines each group's parameters and gradients once and keeps them by the
    group's POSITION in param_groups; every later step() updates those, whatever param_groups holds then,
    with the gradient tensors of that first step (zero_grad zeroes them in place). The update is AdamW's
    (decoupled weight decay, bias correction), so in a plain PyTorch loop it equals torch.optim.AdamW."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})
        self.combined = None  # [(params, grads)] by group position, made on the first step

    def zero_grad(self, set_to_none: bool = True) -> None:
        """In place whatever set_to_none says, as torch_npu's do: the combined gradients stay."""
        del set_to_none  # never None: the combined gradients are kept
        for params in self.param_groups:
            for p in params["params"]:
                if p.grad is not None:
                    p.grad.zero_()

    @torch.no_grad()
    def step(self, closure=None):
        if self.combined is None:
            self.combined = [([p for p in g["params"] if p.grad is not None],
                              [p.grad for p in g["params"] if p.grad is not None]) for g in self.param_groups]
        for group, (params, grads) in zip(self.param_groups, self.combined, strict=True):
            beta1, beta2 = group["betas"]
            for p, g in zip(params, grads, strict=True):
                st = self.state[p]
                if not st:
                    st.update(step=0, exp_avg=torch.zeros_like(p), exp_avg_sq=torch.zeros_like(p))
                st["step"] += 1
                p.mul_(1 - group["lr"] * group["weight_decay"])
                st["exp_avg"].lerp_(g, 1 - beta1)
                st["exp_avg_sq"].mul_(beta2).addcmul_(g, g, value=1 - beta2)
                denom = (st["exp_avg_sq"].sqrt() / math.sqrt(1 - beta2 ** st["step"])).add_(group["eps"])
                p.addcdiv_(st["exp_avg"], denom, value=-group["lr"] / (1 - beta1 ** st["step"]))
        return None


def job_config(world_size: int):
    from ascendops_trainer.config import build_config

    return build_config({
        "optim.lr": "0.01", "optim.min_lr": "0.001", "optim.warmup_steps": "0", "optim.weight_decay": "0.1",
        "optim.grad_clip": "0", "train.steps": str(STEPS), "train.micro_batch_size": str(MICRO_BATCH),
        "train.global_batch_size": str(MICRO_BATCH * world_size), "parallel.reduce_bucket_size": "100000",
        "parallel.prefetch_bucket_size": "100000", "parallel.zero_stage": "1"})


def tiny_model():
    """Matrices (the weight-decay group) and biases and a norm (the no-decay group), same init each call."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.GELU(),
                               torch.nn.Linear(16, 4))


def batches(world_size: int) -> list[list[tuple[torch.Tensor, torch.Tensor]]]:
    """Per step, per rank: (inputs, targets)."""
    g = torch.Generator().manual_seed(1)
    return [[(torch.randn(MICRO_BATCH, 8, generator=g), torch.randn(MICRO_BATCH, 4, generator=g))
             for _ in range(world_size)] for _ in range(STEPS)]


def loss_of(model, x, y):
    return torch.nn.functional.mse_loss(model(x), y)


def reference(cfg, data) -> dict[str, torch.Tensor]:
    """torch.optim.AdamW (its defaults otherwise), same groups and schedule, no DeepSpeed: the gradient of the
    mean of the ranks' losses is the average DeepSpeed reduces."""
    from ascendops_trainer.engine import param_groups

    def adamw(model, cfg):
        o = cfg.optim
        return torch.optim.AdamW(param_groups(model, o.weight_decay), lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps)
    return plain_loop(cfg, data, adamw)


def plain_loop(cfg, data, opt_factory) -> dict[str, torch.Tensor]:
    """The reference loop with another optimizer (no DeepSpeed)."""
    from ascendops_trainer.engine import make_scheduler

    model = tiny_model()
    opt = opt_factory(model, cfg)
    sched = make_scheduler(opt, cfg)
    for step in data:
        opt.zero_grad()
        (sum(loss_of(model, x, y) for x, y in step) / len(step)).backward()
        opt.step()
        sched.step()
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def under_zero(cfg, data, stage: int, rank: int, opt_factory) -> dict[str, torch.Tensor]:
    """STEPS steps of a DeepSpeed engine at this ZeRO stage (fp32, the trainer's generated config with every
    parameter partitioned under ZeRO-3); the full parameters afterwards."""
    import deepspeed

    from ascendops_trainer.engine import deepspeed_config, make_scheduler

    ds = deepspeed_config(cfg, int(os.environ.get("WORLD_SIZE", "1")), "fp32", hpz=1)
    ds["zero_optimization"]["stage"] = stage
    if stage == 3:
        ds["zero_optimization"]["stage3_param_persistence_threshold"] = 0
    model = tiny_model()
    opt = opt_factory(model, cfg)
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=opt, lr_scheduler=make_scheduler(opt, cfg),
                                           config=ds)
    for step in data:
        x, y = step[rank]
        engine.backward(loss_of(engine, x, y))
        engine.step()
    params = list(engine.module.named_parameters())
    with deepspeed.zero.GatheredParameters([p for _, p in params], enabled=stage == 3):
        return {n: p.detach().clone() for n, p in params}


def deepspeed_fused_adam(model, cfg):
    """DeepSpeed's FusedAdam, the CUDA default (make_optimizer on 'cuda' when the op loads), with its kernel
    replaced by DeepSpeed's own NPU op (torch._fused_adamw_ per tensor, which torch also runs on CPU): the
    optimizer class and its state handling under ZeRO are DeepSpeed's, unchanged."""
    import deepspeed.ops.adam.fused_adam as fa
    from deepspeed.ops.op_builder.npu.fused_adam import NPUFusedAdam

    from ascendops_trainer import engine

    class ReferenceKernelBuilder:
        def load(self, verbose=True):
            return NPUFusedAdam

    fa.FusedAdamBuilder = ReferenceKernelBuilder
    saved = engine.fused_adam_class
    engine.fused_adam_class = lambda device_type: fa.FusedAdam if device_type == "cuda" else None
    try:
        return engine.make_optimizer(model, cfg, "cuda")
    finally:
        engine.fused_adam_class = saved


def default_on(device_type: str, fused_adam: bool = True):
    """What make_optimizer gives on this device (NPU: no torch_npu needed, it is never asked)."""
    def make(model, cfg):
        import dataclasses

        from ascendops_trainer.engine import make_optimizer

        cfg = dataclasses.replace(cfg, parallel=dataclasses.replace(cfg.parallel, fused_adam=fused_adam))
        return make_optimizer(model, cfg, device_type)

    return make


def npu_fused_standin(model, cfg):
    from ascendops_trainer.engine import param_groups

    o = cfg.optim
    return FlattenOnceAdamW(param_groups(model, o.weight_decay), lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps)


CASES = {"npu_default": default_on("npu"), "cpu_default": default_on("cpu"), "cuda_default": deepspeed_fused_adam,
         "fused_adam_off": default_on("npu", fused_adam=False), "npu_fused_standin": npu_fused_standin}


def compare(got: dict[str, torch.Tensor], ref: dict[str, torch.Tensor], init: dict[str, torch.Tensor]) -> dict:
    return {n: {"max_diff": (got[n] - ref[n]).abs().max().item(), "moved": not torch.equal(got[n], init[n])}
            for n in ref}


def results(ctx) -> dict:
    cfg = job_config(ctx.world_size)
    data = batches(ctx.world_size)
    ref = reference(cfg, data)
    init = {n: p.detach().clone() for n, p in tiny_model().named_parameters()}
    out: dict = {"world_size": ctx.world_size, "groups": {}, "plain": {}, "zero": {}, "optimizer": {}}
    from ascendops_trainer.engine import param_groups

    model = tiny_model()
    names = {id(p): n for n, p in model.named_parameters()}
    out["groups"] = [[names[id(p)] for p in g["params"]] for g in param_groups(model, 0.1)]
    for case, factory in CASES.items():
        out["optimizer"][case] = {"type": type(factory(tiny_model(), cfg)).__name__,
                                  "foreach": factory(tiny_model(), cfg).defaults.get("foreach")}
        out["plain"][case] = compare(plain_loop(cfg, data, factory), ref, init)
        out["zero"][case] = {str(s): compare(under_zero(cfg, data, s, ctx.rank, factory), ref, init)
                             for s in STAGES}
    return out


if __name__ == "__main__":
    from _trainer_helpers import worker_main

    worker_main(results)
