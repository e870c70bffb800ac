"""Worker of test_zero3_layers.py: the trainer's own model (native and transformers' Llama) and engine
(model.build_model inside zero.Init, engine.build_engine) under ZeRO-3 with every parameter partitioned,
gathered per decoder layer (model.gather_per_layer), trained STEPS optimizer steps of ACCUM micro-steps with
one layer recomputed (activation checkpointing) and, for the native model, packed documents; the reference is
the same model and weights without DeepSpeed, trained by the trainer's AdamW, schedule and clipping on the
mean loss of every rank's micro-batches. Prints ``RESULT <json>`` (rank 0): per implementation, the modules
ZeRO-3 treats as units, each parameter's largest difference from the reference and whether it moved, and the
gradient norm of each step (before clipping) on both sides.

Its own process (DeepSpeed keeps process-wide state); under torchrun for 2 ranks or alone for 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import torch  # noqa: E402

STEPS = 3
MICRO = 2
ACCUM = 2
SEQ = 48
DOC_LEN = 12  # mean length of the packed synthetic documents


def job_config(world_size: int, implementation: str):
    from ascendops_trainer.config import build_config

    return build_config({
        "model.preset": "debug", "model.implementation": implementation,
        "model.activation_checkpointing": "true", "model.checkpoint_every": "2",
        "optim.lr": "0.01", "optim.min_lr": "0.001", "optim.warmup_steps": "0", "optim.grad_clip": "0.5",
        "train.steps": str(STEPS), "train.micro_batch_size": str(MICRO),
        "train.global_batch_size": str(MICRO * ACCUM * world_size), "data.seq_len": str(SEQ),
        "parallel.zero_stage": "3", "parallel.reduce_bucket_size": "20000", "parallel.prefetch_bucket_size": "20000"})


def data(world_size: int, vocab: int, packed: bool) -> list[list[list[tuple]]]:
    """Per step, per rank, per micro-step: (token ids [MICRO, SEQ + 1], packed-attention kwargs or None)."""
    from ascendops_trainer.bench import document_kwargs

    g = torch.Generator().manual_seed(1)
    return [[[(torch.randint(0, vocab, (MICRO, SEQ + 1), generator=g),
               document_kwargs(MICRO, SEQ, DOC_LEN if packed else 0, g, "cpu", torch.device("cpu")))
              for _ in range(ACCUM)] for _ in range(world_size)] for _ in range(STEPS)]


def layers_of(model, implementation: str) -> list:
    return list(model.layers) if implementation == "native" else list(model.model.layers)


def zero3_config(cfg, world_size: int) -> dict:
    """The trainer's DeepSpeed config (fp32) with every parameter partitioned (persistence threshold 0)."""
    from ascendops_trainer.engine import deepspeed_config

    ds = deepspeed_config(cfg, world_size, "fp32", hpz=1)
    ds["zero_optimization"]["stage3_param_persistence_threshold"] = 0
    return ds


def full_weights(module) -> dict[str, torch.Tensor]:
    """Every parameter, gathered (ZeRO-3), as a copy."""
    import deepspeed

    params = list(module.named_parameters())
    with deepspeed.zero.GatheredParameters([p for _, p in params]):
        return {n: p.detach().clone() for n, p in params}


def train_steps(engine, steps, rank: int) -> list[float]:
    """This rank's micro-batches of `steps` (data()) through the engine; the last loss of each step."""
    from ascendops_trainer.train import causal_lm_loss

    losses = []
    for step in steps:
        for tokens, packed in step[rank]:
            loss = causal_lm_loss(engine, tokens, packed=packed)
            engine.backward(loss)
            engine.step()
        losses.append(float(loss))
    return losses


def run(implementation: str, ctx) -> dict:
    from deepspeed.utils import z3_leaf_module

    from ascendops_trainer.engine import build_engine, make_optimizer, make_scheduler
    from ascendops_trainer.model import build_hf_config, build_model
    from ascendops_trainer.train import causal_lm_loss

    cfg = job_config(ctx.world_size, implementation)
    hf = build_hf_config(cfg.model, "cpu")
    ds = zero3_config(cfg, ctx.world_size)
    torch.manual_seed(0)
    model = build_model(cfg.model, hf, torch.float32, ds, device=torch.device("cpu"))
    units = [m for m in model.modules() if z3_leaf_module(m)]
    layers = layers_of(model, implementation)
    init = full_weights(model)
    batches = data(ctx.world_size, hf.vocab_size, implementation == "native")
    engine = build_engine(model, cfg, ds, "cpu")
    losses, norms = [], []
    for step in batches:
        losses += train_steps(engine, [step], ctx.rank)
        norms.append(float(engine.get_global_grad_norm()))  # before clipping, of the ranks' mean gradient
    got = full_weights(model)
    engine.destroy()

    ref = build_model(cfg.model, hf, torch.float32, None, device=torch.device("cpu"))
    with torch.no_grad():
        for n, p in ref.named_parameters():
            p.copy_(init[n])
    opt = make_optimizer(ref, cfg, "cpu")
    sched = make_scheduler(opt, cfg)
    ref_norms = []
    for step in batches:
        opt.zero_grad(set_to_none=True)
        for rank_batches in step:
            for tokens, packed in rank_batches:
                (causal_lm_loss(ref, tokens, packed=packed) / (ctx.world_size * ACCUM)).backward()
        ref_norms.append(float(torch.nn.utils.clip_grad_norm_(ref.parameters(), cfg.optim.grad_clip)))
        opt.step()
        sched.step()
    want = dict(ref.named_parameters())
    return {
        "units": [type(m).__name__ for m in units],
        "units_are_the_layers": len(units) == len(layers) and all(u is lay for u, lay in zip(units, layers,
                                                                                               strict=True)),
        "layers": len(layers),
        "diff": {n: (got[n] - want[n].detach()).abs().max().item() for n in got},
        "moved": {n: not torch.equal(got[n], init[n]) for n in got},
        "losses": losses,
        "grad_norms": norms,
        "reference_grad_norms": ref_norms,
    }


def results(ctx) -> dict:
    return {"world_size": ctx.world_size, "runs": {impl: run(impl, ctx) for impl in ("native", "transformers")}}


if __name__ == "__main__":
    from _trainer_helpers import worker_main

    worker_main(results)
