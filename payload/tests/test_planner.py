"""The memory planner (planner.py, through engine.plan_memory): ZeRO stage, recompute, buckets and the gradient
communication dtype chosen to use the memory for speed, each with its reason; explicit settings kept; a model
that cannot fit without model parallelism refused."""

from __future__ import annotations

import _trainer_helpers  # noqa: F401  (puts payload/src on sys.path)
import pytest

from ascendops_trainer.config import ConfigError, build_config
from ascendops_trainer.engine import deepspeed_config, plan_memory
from ascendops_trainer.memory import FIT_FRACTION, activation_bytes, estimate_memory, layer_params
from ascendops_trainer.model import build_hf_config, param_counts
from ascendops_trainer.planner import PlanInputs, Recompute, plan, recompute_options

GIB64 = 64 * 2**30


def _plan(preset: str, nodes: int, per_node: int = 8, mem: int | None = GIB64, **over):
    cfg = build_config({"model.preset": preset, **over})
    return cfg, plan_memory(cfg, build_hf_config(cfg.model), nodes * per_node, "bf16", mem, per_node)


def _inputs(preset: str, dp: int, **kw) -> PlanInputs:
    hf = build_hf_config(build_config({"model.preset": preset}).model)
    base = {"hf_config": hf, "n_params": param_counts(hf).total, "seq_len": 8192, "micro_batch": 1, "dp_size": dp,
            "devices_per_node": 8, "device_bytes": GIB64, "grad_accum": 512 // dp}
    return PlanInputs(**{**base, **kw})


def test_llama3_8b_on_4_nodes_x_8_x_64gb_at_seq_8192():
    cfg, p = _plan("llama3-8b", 4)
    budget = FIT_FRACTION * GIB64
    # ZeRO-1 keeps full bf16 + fp32 gradients (6P = 45 GiB) next to the bf16 weights: no recompute saves that
    assert p.stage == 2 and p.hpz == 1
    assert any("ZeRO-1 does not fit even with recompute full" in n for n in p.notes)
    # the least recompute that fits: every 5th layer (7 of 32); every 6th (6 of 32) does not fit at any bucket size
    assert (p.activation_checkpointing, p.checkpoint_every) == (True, 5)
    assert p.estimate.total <= budget
    hf = build_hf_config(cfg.model)
    n = param_counts(hf).total
    for rb in (p.reduce_bucket_size, p.reduce_bucket_size * 2, p.reduce_bucket_size * 4):
        assert estimate_memory(hf, n, 2, 32, "bf16", "fp32", 1, rb, 0, 8192, 1, True, 6, 4096, "bf16").total > budget
    # ZeRO-2 reduce-scatters each of the 16 micro-steps: bf16 on the wire, fp32 accumulation kept
    assert p.grad_comm_dtype == "bf16"
    assert any("16 micro-steps" in n and "accumulation fp32" in n for n in p.notes)
    # buckets: two decoder layers (2 x 218M) halved twice to make room before recomputing more
    assert layer_params(hf) * 32 == n - 2 * 128256 * 4096 - 4096  # all but the embedding, lm_head, final norm
    assert 2 * layer_params(hf) == 436_224_000 and p.reduce_bucket_size == 110_000_000  # 437M / 4, rounded up
    assert any("halved to fit" in n for n in p.notes)
    assert any("ZeRO-3 would fit without recompute" in n for n in p.notes)  # the alternative, named
    assert all(n.startswith("memory plan: ") for n in p.notes)
    # the job's DeepSpeed config carries the plan
    p.apply(cfg)
    ds = deepspeed_config(cfg, 32, "bf16", devices_per_node=8, hpz=p.hpz)
    assert ds["zero_optimization"]["stage"] == 2 and ds["zero_optimization"]["reduce_bucket_size"] == 110_000_000
    assert ds["communication_data_type"] == "bf16" and ds["data_types"] == {"grad_accum_dtype": "fp32"}


def test_the_chunked_loss_buffers_are_part_of_the_plan():
    """The chunked loss's fp32 logits and their gradient (4096 x 128256 x 8 bytes = 3.9 GiB) and, without
    chunking, every token's (plus the bf16 logits): the planner needs more recompute without it."""
    _, chunked = _plan("llama3-8b", 4)
    _, whole = _plan("llama3-8b", 4, **{"model.loss_chunk_tokens": "0"})
    hf = build_hf_config(build_config({"model.preset": "llama3-8b"}).model)
    loss = 4096 * 128256 * 8
    assert (activation_bytes(hf, 8192, 1, 2, False, loss_chunk_tokens=4096)
            - activation_bytes(hf, 8192, 1, 2, False, loss_chunk_tokens=0)) == loss - 8192 * 128256 * 10
    assert whole.checkpoint_every < chunked.checkpoint_every  # more layers recomputed without chunking


def test_llama3_70b_is_refused_without_model_parallelism():
    with pytest.raises(ConfigError) as e:
        _plan("llama3-70b", 4)
    msg = str(e.value)
    assert "the model (70.6B parameters) cannot fit 4 nodes x 8 devices of 64.0 GiB at seq 8192" in msg
    assert "even ZeRO-3 with full recompute" in msg and "no tensor or pipeline parallelism" in msg
    assert "it fits from 40 devices (5 nodes of 8)" in msg
    _, five = _plan("llama3-70b", 5, **{"train.global_batch_size": "520"})  # as the message says
    assert five.stage == 3 and (five.activation_checkpointing, five.checkpoint_every) == (True, 1)
    with pytest.raises(ConfigError, match="no number of devices fits"):  # a device too small for the floor
        _plan("llama3-70b", 4, mem=8 * 2**30)


def test_debug_preset():
    _, p = _plan("debug", 1, per_node=2, mem=8 * 2**30)
    assert p.stage == 1 and p.grad_comm_dtype == "fp32"  # fits: one reduce per step, kept exact
    assert p.activation_checkpointing is False  # the preset sets it: as set
    assert any("recompute none: as set" in n for n in p.notes)
    _, auto = _plan("debug", 1, per_node=2, mem=8 * 2**30, **{"model.activation_checkpointing": "auto"})
    assert auto.activation_checkpointing is False and any("nothing to recompute" in n for n in auto.notes)
    assert auto.reduce_bucket_size == 1_000_000  # two tiny layers: the smallest bucket
    cfg = build_config({})  # fp32 on CPU: fp32 everywhere
    fp32 = plan_memory(cfg, build_hf_config(cfg.model), 2, "fp32", 8 * 2**30, 2)
    assert fp32.stage == 1 and fp32.grad_comm_dtype == "fp32" and any("fp32 training" in n for n in fp32.notes)


def test_zero1_only_where_its_one_reduce_per_step_buys_something():
    """ZeRO-1 holds what ZeRO-2 holds plus full gradients; its gain is one reduce per optimizer step instead of one
    per micro-step. One rank has nothing to reduce and one micro-step reduces once either way: ZeRO-2 there."""
    one = _plan("debug", 1, per_node=1, mem=8 * 2**30)[1]  # the CPU bench's job: 1 rank, 4 micro-steps
    assert one.stage == 2 and any("ZeRO-1 not tried (one data-parallel rank" in n for n in one.notes)
    assert one.grad_comm_dtype == "fp32"  # bf16 would round each micro-step's gradient and save no traffic
    assert any("one data-parallel rank: nothing crosses a link" in n for n in one.notes)
    # 8 ranks, global batch 8 of micro-batch 1: one micro-step per step, so ZeRO-2 reduces once per step too
    single = _plan("debug", 1, per_node=8, mem=8 * 2**30, **{"train.micro_batch_size": "1"})[1]
    assert single.stage == 2 and any("one micro-step per optimizer step" in n for n in single.notes)
    # 2 ranks x 2 micro-steps: ZeRO-1 reduces once where ZeRO-2 reduce-scatters twice
    two = _plan("debug", 1, per_node=2, mem=8 * 2**30)[1]
    assert two.stage == 1 and not any("not tried" in n for n in two.notes)
    # an explicit stage still wins on one rank, and the CPU bench's fp32 job keeps fp32 on the wire
    forced = _plan("debug", 1, per_node=1, mem=8 * 2**30, **{"parallel.zero_stage": "1"})[1]
    assert forced.stage == 1 and any("ZeRO-1: as set" in n for n in forced.notes)
    cfg = build_config({"model.preset": "debug", "data.seq_len": "512", "train.micro_batch_size": "4"})
    bench = plan_memory(cfg, build_hf_config(cfg.model), 1, "fp32", 8 * 2**30, 1)
    assert (bench.stage, bench.grad_comm_dtype) == (2, "fp32")


def test_explicit_settings_win():
    _, p = _plan("llama3-8b", 4, **{"parallel.zero_stage": "3", "model.activation_checkpointing": "true",
                                    "model.checkpoint_every": "2", "parallel.reduce_bucket_size": "200000000",
                                    "parallel.prefetch_bucket_size": "50000000", "parallel.grad_comm_dtype": "fp32"})
    assert (p.stage, p.activation_checkpointing, p.checkpoint_every, p.reduce_bucket_size, p.prefetch_bucket_size,
            p.grad_comm_dtype) == (3, True, 2, 200_000_000, 50_000_000, "fp32")
    assert any("ZeRO-3: as set" in n for n in p.notes) and any("as set (model." in n for n in p.notes)
    # an explicit choice that cannot fit is kept and warned about (the model itself fits: not refused)
    _, tight = _plan("llama3-8b", 1, **{"model.activation_checkpointing": "false", "parallel.zero_stage": "2"})
    assert (tight.stage, tight.activation_checkpointing) == (2, False)
    assert tight.notes[-1].startswith("memory plan: WARNING: the estimate")
    # checkpointing on, how much left to the planner: every k-th chosen, never "none"
    _, on = _plan("llama3-8b", 4, **{"model.activation_checkpointing": "true"})
    assert on.activation_checkpointing is True and on.checkpoint_every == 1  # on + no k = every layer (as before)


def test_selective_recompute_is_preferred_where_the_model_supports_it():
    """Selective keeps the matmul outputs (4h + 2kv + 2ffn per token and layer) and rebuilds norms, the attention
    core and SwiGLU: no matmul is recomputed, so it comes before any whole-layer recompute."""
    hf = build_hf_config(build_config({"model.preset": "llama3-8b"}).model)
    sel = activation_bytes(hf, 8192, 1, 2, False, loss_chunk_tokens=4096, selective=True)
    none = activation_bytes(hf, 8192, 1, 2, False, loss_chunk_tokens=4096)
    assert none - sel == 32 * 8192 * (2 * 4096 + 2 * 14336) * 2 - 8192 * (2 * 4096 + 2 * 14336) * 2
    assert [r.mode for r in recompute_options(4, True)] == ["none", "selective", "every", "every", "full"]
    assert [r.recomputed_layers(4) for r in recompute_options(4, False)] == [0, 1, 2, 4]
    p = plan(_inputs("llama3-8b", 32, selective_available=True))
    assert (p.stage, p.recompute) == (2, Recompute("selective")) and p.fits
    assert plan(_inputs("llama3-8b", 32)).recompute == Recompute("every", 5)  # the HF model: whole layers only


def test_unknown_device_memory_keeps_the_safe_settings():
    p = plan(_inputs("llama3-8b", 32, device_bytes=None))
    assert (p.stage, p.recompute, p.comm_dtype) == (3, Recompute("full"), "bf16")
    assert "device memory unknown" in p.reasons[0]


def test_plan_command_prints_the_choices_and_why(capsys):
    from ascendops_trainer.cli import main

    assert main(["plan", "--preset", "llama3-8b", "--nodes", "4", "--device-memory-gib", "64"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("memory plan: ZeRO-2: the lowest stage that fits")
    assert any(line.startswith("memory plan: recompute every 5th layer (7 of 32)") for line in out)
    assert out[-1].startswith("memory estimate ZeRO-2: weights") and out[-1].endswith("of 64.0 GiB")
    assert main(["plan", "--preset", "llama3-70b", "--nodes", "4", "--device-memory-gib", "64"]) == 2
    assert "cannot fit 4 nodes x 8 devices" in capsys.readouterr().err


def test_auto_is_a_value_of_the_planned_settings_in_the_shared_rules():
    """`auto` (the planner's) passes the static rules the Ansible collection applies too (config_rules, copied to
    plugins/module_utils/trainer_rules.py), and the trainer reads it as the planner's choice; other words do not."""
    from ascendops_trainer.config_rules import AUTO_KEYS, value_problems

    auto = {key: "auto" for key in AUTO_KEYS}
    assert value_problems(auto) == []
    cfg = build_config(auto)
    assert (cfg.model.activation_checkpointing, cfg.model.checkpoint_every, cfg.parallel.reduce_bucket_size,
            cfg.parallel.prefetch_bucket_size) == (None, None, None, None)
    assert value_problems({"model.checkpoint_every": "often"}) == [
        "model.checkpoint_every must be an integer, got 'often'"]
    assert value_problems({"optim.lr": "auto"}) == ["optim.lr must be a number, got 'auto'"]  # not a planned one
