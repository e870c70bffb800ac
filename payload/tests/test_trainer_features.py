"""Unit tests of the issue-11 features: fused-kernel wiring, chunked loss, selective recompute, NPU
environment, device ids in containers, ZeRO choices, data formats and document boundaries."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys

import _trainer_helpers  # noqa: F401  (puts payload/src on sys.path)
import numpy as np
import pytest

from ascendops_trainer.config import ConfigError, build_config
from ascendops_trainer.engine import deepspeed_config, hpz_partition_size
from ascendops_trainer.model import build_hf_config, param_counts
from ascendops_trainer.parallel import (
    LaunchInfo,
    RankTableError,
    check_rank_table,
    check_rank_table_env,
    npu_env_defaults,
    parse_rank_table,
    visible_devices,
)

# ---------------------------------------------------------------- model: kernels, loss, recompute


def _debug_pair(**model_overrides):
    """Two identical debug models (same weights), fp32, CPU: transformers' LlamaForCausalLM (the patched
    path; the native model's own tests are test_llama_model.py)."""
    import torch

    from ascendops_trainer.model import build_model

    cfg = build_config({"model.implementation": "transformers",
                        **{f"model.{k}": v for k, v in model_overrides.items()}})
    hf = build_hf_config(cfg.model, "cpu")
    torch.manual_seed(0)
    a = build_model(cfg.model, hf, torch.float32)
    b = build_model(cfg.model, hf, torch.float32)
    b.load_state_dict(a.state_dict())
    return cfg, a, b


def test_fused_kernel_wiring_matches_stock_model():
    """Routing RMSNorm, RoPE and SwiGLU through kernels with the NPU kernels' signatures (plain-PyTorch
    reference versions here) computes what the stock transformers model computes, forward and backward."""
    import torch

    from ascendops_trainer.kernels import REFERENCE, apply_fused_kernels, restore_stock_rope

    cfg, stock, fused = _debug_pair(loss_chunk_tokens=0)
    try:
        assert apply_fused_kernels(fused, cfg.model, REFERENCE) == ["rms_norm", "swiglu", "rope"]
        ids = torch.randint(0, 512, (2, 33), generator=torch.Generator().manual_seed(1))
        out_fused = fused(input_ids=ids).logits
        out_fused.float().pow(2).mean().backward()
        restore_stock_rope()
        out_stock = stock(input_ids=ids).logits
        out_stock.float().pow(2).mean().backward()
    finally:
        restore_stock_rope()
    torch.testing.assert_close(out_fused, out_stock, rtol=1e-5, atol=1e-5)
    for (name, p), q in zip(stock.named_parameters(), fused.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-6, msg=name)
    # a switch that is off leaves that op stock
    cfg2 = build_config({"model.fused_swiglu": "false", "model.fused_rope": "false"})
    _, _, m = _debug_pair()
    assert apply_fused_kernels(m, cfg2.model, REFERENCE) == ["rms_norm"]
    assert apply_fused_kernels(m, cfg2.model, None) == []  # no torch_npu: nothing patched


def test_the_transformers_model_computes_the_loss_chunked_when_asked(monkeypatch):
    """model.loss_chunk_tokens on transformers' model: causal_lm_loss goes through the chunked loss (the memory
    plan leaves the full fp32 logits out), with the loss and gradients of the full logits; 0 keeps them."""
    import torch

    from ascendops_trainer import kernels
    from ascendops_trainer.train import causal_lm_loss

    calls = []
    real = kernels.chunked_cross_entropy
    monkeypatch.setattr(kernels, "chunked_cross_entropy", lambda *a: calls.append(a[3]) or real(*a))
    _, chunked, _ = _debug_pair(loss_chunk_tokens=16)
    _, whole, _ = _debug_pair(loss_chunk_tokens=0)
    whole.load_state_dict(chunked.state_dict())
    batch = torch.randint(0, 512, (2, 33), generator=torch.Generator().manual_seed(3))
    got, want = causal_lm_loss(chunked, batch), causal_lm_loss(whole, batch)
    assert calls == [16]  # once, with the setting's chunk; the model without it never calls it
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    got.backward()
    want.backward()
    for (name, p), q in zip(whole.named_parameters(), chunked.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-6, msg=name)
    assert chunked.lm_head._ascendops_targets is None  # not left set after the step


def test_chunked_cross_entropy_equals_full_logits():
    import torch
    import torch.nn.functional as F

    from ascendops_trainer.kernels import chunked_cross_entropy

    g = torch.Generator().manual_seed(0)
    h = torch.randn(3, 11, 16, generator=g, requires_grad=True)
    w = torch.randn(50, 16, generator=g, requires_grad=True)
    t = torch.randint(0, 50, (3, 11), generator=g)
    ref = F.cross_entropy((h @ w.t()).float().reshape(-1, 50), t.reshape(-1))
    gh, gw = torch.autograd.grad(ref, (h, w))
    got = chunked_cross_entropy(h, w, t, 7)  # 33 tokens in chunks of 7: uneven last chunk
    ch, cw = torch.autograd.grad(got, (h, w))
    torch.testing.assert_close(got, ref)
    torch.testing.assert_close(ch, gh)
    torch.testing.assert_close(cw, gw)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_chunked_cross_entropy_honours_ignore_index(dtype):
    """Targets of -100 take no part: the mean is over the valid tokens, as F.cross_entropy computes it
    (fp32 softmax over logits in the weights' dtype), in value and gradients; in fp32 and in bf16."""
    import torch
    import torch.nn.functional as F

    from ascendops_trainer.kernels import chunked_cross_entropy

    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(0)
    h = torch.randn(3, 11, 16, generator=g).to(dt).requires_grad_()
    w = torch.randn(50, 16, generator=g).to(dt).requires_grad_()
    t = torch.randint(0, 50, (3, 11), generator=g)
    t[0, :4] = -100  # e.g. a prompt, padding, a document boundary
    t[2, 7] = -100
    t[1, :] = -100  # a whole sample
    ref = F.cross_entropy((h @ w.t()).float().reshape(-1, 50), t.reshape(-1))  # ignore_index=-100, mean
    gh, gw = torch.autograd.grad(ref, (h, w))
    got = chunked_cross_entropy(h, w, t, 7)
    ch, cw = torch.autograd.grad(got, (h, w))
    tol = {"rtol": 1e-5, "atol": 1e-6} if dt == torch.float32 else {"rtol": 2e-2, "atol": 2e-3}
    torch.testing.assert_close(got, ref, **tol)
    assert ch.dtype == dt and cw.dtype == dt
    torch.testing.assert_close(ch, gh, **tol)
    torch.testing.assert_close(cw, gw, **tol)
    assert (ch[1] == 0).all() and (ch[0, :4] == 0).all()  # ignored positions get no gradient
    # the mean is over valid tokens, not all: 33 tokens, 17 valid
    plain = chunked_cross_entropy(h, w, torch.where(t < 0, 0, t), 7)
    assert not torch.allclose(got.float(), plain.float())
    # nothing valid: 0 with zero gradients (F.cross_entropy would give NaN and stop the run as non-finite)
    none = chunked_cross_entropy(h, w, torch.full_like(t, -100), 7)
    zh, zw = torch.autograd.grad(none, (h, w))
    assert none.item() == 0.0 and not zh.any() and not zw.any()


def test_model_loss_through_chunked_head_equals_stock_loss():
    import torch

    from ascendops_trainer.train import causal_lm_loss

    _, chunked, _ = _debug_pair(loss_chunk_tokens=16)
    _, stock, _ = _debug_pair(loss_chunk_tokens=0)
    stock.load_state_dict(chunked.state_dict())
    batch = torch.randint(0, 512, (2, 41), generator=torch.Generator().manual_seed(2))
    a, b = causal_lm_loss(chunked, batch), causal_lm_loss(stock, batch)
    a.backward()
    b.backward()
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(chunked.lm_head.weight.grad, stock.lm_head.weight.grad)
    assert chunked(input_ids=batch[:, :-1]).logits.shape == (2, 40, 512)  # no targets set: plain logits


def test_selective_activation_checkpointing_every_k_layers():
    from ascendops_trainer.model import enable_activation_checkpointing

    _, m, _ = _debug_pair(num_layers=5)
    assert enable_activation_checkpointing(m, 2) == [0, 2, 4]
    assert [layer.gradient_checkpointing for layer in m.model.layers] == [True, False, True, False, True]
    assert enable_activation_checkpointing(m, 1) == [0, 1, 2, 3, 4]


def test_tied_embeddings_count_once_in_flops_n():
    untied = build_hf_config(build_config({}).model)
    tied = build_hf_config(build_config({}).model)
    tied.tie_word_embeddings = True
    u, t = param_counts(untied), param_counts(tied)
    vh = untied.vocab_size * untied.hidden_size
    assert u.total - t.total == vh  # one matrix fewer
    assert u.non_embedding == u.total - vh  # untied: lm_head in N, input embedding out
    assert t.non_embedding == t.total  # tied: the shared matrix counted once, as the lm_head
    assert t.non_embedding == u.non_embedding  # the same matmuls are done either way


def test_attn_implementation_auto():
    from ascendops_trainer.model import resolve_attn_implementation

    assert resolve_attn_implementation("auto", "npu") == "flash_attention_2"
    assert resolve_attn_implementation("auto", "cpu") == "sdpa"
    with pytest.raises(ConfigError, match="flash_attention_2 needs an NPU"):
        resolve_attn_implementation("flash_attention_2", "cpu")


@pytest.mark.parametrize("scaled", [True, False])
def test_export_config_reads_the_same_in_both_key_styles(tmp_path, scaled):
    """The exported config.json carries rope_parameters + dtype (transformers >= 5) and rope_theta,
    rope_scaling (Llama 3.1 `llama3`) + torch_dtype (transformers 4.x, vLLM, llama.cpp's converter).
    Read back through each style alone, it is the same model."""
    from transformers import LlamaConfig

    from ascendops_trainer.checkpoint import _finish_export
    from ascendops_trainer.model import normalize_rope_fields

    llama31 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8192}
    legacy_in = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2,
                 "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512,
                 "max_position_embeddings": 131072, "rope_theta": 500000.0,
                 "rope_scaling": llama31 if scaled else None}
    hf = build_hf_config(build_config({}).model)
    cfg = LlamaConfig.from_dict({**hf.to_dict(), **normalize_rope_fields(legacy_in)})
    _finish_export(tmp_path, cfg.to_dict(), "bf16", None, {})
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["torch_dtype"] == written["dtype"] == "bfloat16" and written["rope_theta"] == 500000.0
    assert written["rope_scaling"] == (llama31 if scaled else None)
    assert written["rope_parameters"] == {**(llama31 if scaled else {"rope_type": "default"}), "rope_theta": 500000.0}
    # transformers 5 on the file as written
    t5 = LlamaConfig.from_pretrained(str(tmp_path))
    assert t5.rope_parameters == written["rope_parameters"] and t5.max_position_embeddings == 131072
    # a 4.x-style reader sees only the legacy keys; a 5-style one only rope_parameters: same RoPE
    legacy_only = {k: v for k, v in written.items() if k != "rope_parameters"}
    new_only = {k: v for k, v in written.items() if k not in ("rope_theta", "rope_scaling")}
    assert normalize_rope_fields(legacy_only)["rope_parameters"] == normalize_rope_fields(new_only)["rope_parameters"]
    assert LlamaConfig.from_dict(legacy_only).rope_parameters == t5.rope_parameters


# ---------------------------------------------------------------- DeepSpeed config


def test_npu_never_uses_torch_npu_fused_adamw(monkeypatch):
    """On NPU the optimizer is torch AdamW (foreach; the per-parameter loop with parallel.fused_adam=false)
    even where torch_npu provides NpuFusedAdamW (a stand-in module here, no NPU): that one flattens each group
    once and indexes by group position, which ZeRO's one-group-at-a-time steps break (test_optimizer_zero.py).
    Our param groups and hyperparameters are passed on."""
    import importlib.machinery
    import sys
    import types

    import torch

    from ascendops_trainer.engine import make_optimizer

    class FakeNpuFusedAdamW(torch.optim.AdamW):
        pass

    npu = types.ModuleType("torch_npu")
    npu.__spec__ = importlib.machinery.ModuleSpec("torch_npu", None)
    optim = types.ModuleType("torch_npu.optim")
    optim.NpuFusedAdamW = FakeNpuFusedAdamW
    npu.optim = optim
    monkeypatch.setitem(sys.modules, "torch_npu", npu)
    monkeypatch.setitem(sys.modules, "torch_npu.optim", optim)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
    cfg = build_config({"optim.lr": "0.01", "optim.weight_decay": "0.2"})
    opt = make_optimizer(model, cfg, "npu")
    assert type(opt) is torch.optim.AdamW and opt.defaults["foreach"] is True
    assert [g["weight_decay"] for g in opt.param_groups] == [0.2, 0.0] and opt.defaults["lr"] == 0.01
    off = make_optimizer(model, build_config({"parallel.fused_adam": "false"}), "npu")
    assert type(off) is torch.optim.AdamW and off.defaults["foreach"] is False
    assert type(make_optimizer(model, cfg, "cpu")) is torch.optim.AdamW


def test_bf16_accumulates_and_reduces_gradients_in_fp32():
    cfg = build_config({"parallel.zero_stage": "3"})
    ds = deepspeed_config(cfg, 1, "bf16")
    assert ds["data_types"] == {"grad_accum_dtype": "fp32"} and ds["communication_data_type"] == "fp32"
    assert "data_types" not in deepspeed_config(cfg, 1, "fp32")
    low = build_config({"parallel.zero_stage": "2", "train.grad_accum_dtype": "bf16"})
    assert deepspeed_config(low, 1, "bf16")["data_types"] == {"grad_accum_dtype": "bf16"}
    with pytest.raises(ConfigError, match="needs parallel.zero_stage >= 1"):
        deepspeed_config(build_config({"parallel.zero_stage": "0"}), 1, "bf16")


def test_zero_stage_auto_and_hierarchical_partitioning():
    """ZeRO auto and the hpZ default follow the memory model: weights, gradients, optimizer, the hpZ copy,
    buckets and the activations of the chosen sequence length and checkpointing (memory.py)."""
    from ascendops_trainer.engine import plan_memory

    gib64 = 64 * 2**30

    def plan(preset, dp, **over):
        cfg = build_config({"model.preset": preset, **over})
        return plan_memory(cfg, build_hf_config(cfg.model), dp, "bf16", over.pop("_mem", gib64), 8)

    assert plan("llama3-8b", 8).stage == 2  # 8 x 64 GB, seq 8192: ZeRO-1's full fp32 gradients do not fit
    no_ckpt = plan("llama3-8b", 8, **{"model.activation_checkpointing": "false"})
    assert no_ckpt.stage == 3 and no_ckpt.estimate.activations > 40 * 2**30  # 32 layers of full activations
    assert plan("llama3-8b", 8, **{"data.seq_len": "2048", "model.activation_checkpointing": "false"}).stage == 2
    assert plan("debug", 2).stage == 1  # 2 ranks x 2 micro-steps: fits, one reduce per step
    assert plan("debug", 1).stage == 2  # one rank: nothing to reduce, ZeRO-1 buys nothing
    assert plan_memory(build_config({}), build_hf_config(build_config({}).model), 8, "bf16", None, 8).stage == 3
    assert plan("llama3-8b", 8, **{"parallel.zero_stage": "1"}).stage == 1  # explicit wins
    # 70B, ZeRO-3 across nodes: hpZ's node-local copy (2P/8 = 16 GiB) fits with 8 nodes (the planner halves the
    # buckets and sends bf16 gradients to make room) and 16, not with 6
    six, eight, sixteen = plan("llama3-70b", 48), plan("llama3-70b", 64), plan("llama3-70b", 128)
    assert (six.stage, six.hpz, eight.stage, eight.hpz, sixteen.stage, sixteen.hpz) == (3, 1, 3, 8, 3, 8)
    assert any("would not fit" in n for n in six.notes) and sixteen.estimate.hpz == 2 * 70_553_706_496 // 8
    with pytest.raises(ConfigError, match="cannot fit 2 nodes x 8 devices"):  # does not fit at all: refused
        plan("llama3-70b", 16)
    forced = plan("llama3-70b", 48, **{"parallel.zero_hpz_partition_size": "8"})  # explicit: as asked, warned
    assert forced.hpz == 8 and forced.notes[-1].startswith("memory plan: WARNING: the estimate")
    z3 = build_config({"parallel.zero_stage": "3"})
    assert hpz_partition_size(z3, 16, 8) == 8  # the static rule (no memory model): gathers stay inside the node
    assert hpz_partition_size(z3, 8, 8) == 1  # one node: nothing to gain
    ds = deepspeed_config(build_config({"parallel.zero_stage": "3", "train.global_batch_size": "32",
                                        "train.micro_batch_size": "1", "parallel.prefetch_bucket_size": "1234"}),
                          16, "bf16", devices_per_node=8)
    assert ds["zero_optimization"]["zero_hpz_partition_size"] == 8
    assert ds["zero_optimization"]["stage3_prefetch_bucket_size"] == 1234
    z3_32 = build_config({"parallel.zero_stage": "3", "train.global_batch_size": "32", "train.micro_batch_size": "1"})
    assert "zero_hpz_partition_size" not in deepspeed_config(z3_32, 16, "bf16", devices_per_node=8, hpz=1)[
        "zero_optimization"]  # what plan_memory decided wins over the static rule
    with pytest.raises(ConfigError, match="does not divide the data-parallel size 12"):
        hpz_partition_size(build_config({"parallel.zero_stage": "3", "parallel.zero_hpz_partition_size": "8"}),
                           12, 4)


@pytest.mark.parametrize("preset", ["debug", "llama3-8b"])
def test_memory_model_agrees_with_deepspeeds_estimators(preset):
    """Weights + gradients + optimizer state per device equal DeepSpeed's own ZeRO-2 and ZeRO-3 estimators
    (no offload), with the parameter counts and the largest layer DeepSpeed reads off the model; for ZeRO-3
    the largest unit gathered at once, which is a whole decoder layer where that is larger (gather_per_layer:
    the debug preset's layer outweighs its embedding, the 8B's embedding its layer)."""
    import torch
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs
    from transformers import LlamaForCausalLM

    from ascendops_trainer.memory import estimate_memory, gathered_unit_params, largest_layer_params, layer_params

    hf = build_hf_config(build_config({"model.preset": preset}).model)
    with torch.device("meta"):  # shapes only: the 8B needs no memory
        model = LlamaForCausalLM(hf)
    total = sum(p.numel() for p in model.parameters())
    largest = max(sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules())  # as DeepSpeed
    assert (total, largest) == (param_counts(hf).total, largest_layer_params(hf))
    layer = sum(p.numel() for p in model.model.layers[0].parameters())
    assert layer == layer_params(hf)
    unit = gathered_unit_params(hf)
    assert unit == max(largest, layer) and (unit == layer) == (preset == "debug")
    for nodes, per_node in ((1, 8), (2, 8), (4, 8)):
        n = nodes * per_node
        _, ds2 = estimate_zero2_model_states_mem_needs(total, per_node, nodes, cpu_offload=False)
        _, ds3, _ = estimate_zero3_model_states_mem_needs(total, unit, per_node, nodes, cpu_offload=False,
                                                          cpu_offload_params=False)
        ours2 = estimate_memory(hf, total, 2, n).model_states
        ours3 = estimate_memory(hf, total, 3, n).model_states
        assert abs(ours2 - ds2) <= 4 and abs(ours3 - ds3) <= 4, (preset, n, ours2, ds2, ours3, ds3)


def test_activation_estimate_follows_sequence_and_checkpointing():
    from ascendops_trainer.memory import activation_bytes

    hf = build_hf_config(build_config({"model.preset": "llama3-8b"}).model)
    full = activation_bytes(hf, 8192, 1, 2, checkpointing=False)
    every = activation_bytes(hf, 8192, 1, 2, checkpointing=True, checkpoint_every=1)
    half = activation_bytes(hf, 8192, 1, 2, checkpointing=True, checkpoint_every=2)
    assert every < half < full
    # per token and layer: 6h + 2kv + 4ffn bf16 elements kept = 164 KiB for the 8B
    per_layer = 8192 * (6 * 4096 + 2 * 1024 + 4 * 14336) * 2
    assert full - activation_bytes(hf.__class__(**{**hf.to_dict(), "num_hidden_layers": 31}), 8192, 1, 2,
                                   checkpointing=False) == per_layer
    assert activation_bytes(hf, 4096, 1, 2, checkpointing=False) < full / 1.9  # linear in tokens (flash attention)
    # chunked loss: one chunk's fp32 logits and gradient instead of all tokens' (plus their bf16 logits)
    chunked = activation_bytes(hf, 8192, 1, 2, checkpointing=False, loss_chunk_tokens=4096)
    assert full - chunked == 8192 * 128256 * 2 + 4096 * 128256 * 8

# ---------------------------------------------------------------- NPU environment, devices, rank table


def test_npu_env_defaults_and_overrides():
    env = npu_env_defaults({})
    assert env == {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True", "TASK_QUEUE_ENABLE": "2",
                   "CPU_AFFINITY_CONF": "1"}  # no rank table: HCCL's own connect timeout
    with_table = npu_env_defaults({"RANK_TABLE_FILE": "/etc/ascendops/rank_table.json", "TASK_QUEUE_ENABLE": "1"})
    assert with_table["HCCL_CONNECT_TIMEOUT"] == "1200"
    assert "TASK_QUEUE_ENABLE" not in with_table  # the environment's value wins
    assert "HCCL_CONNECT_TIMEOUT" not in npu_env_defaults({"RANK_TABLE_FILE": "x", "HCCL_CONNECT_TIMEOUT": "600"})


def test_visible_devices_in_a_container_with_a_subset_of_npus():
    assert visible_devices({}) is None
    assert visible_devices({"ASCEND_VISIBLE_DEVICES": "4-7"}) == [4, 5, 6, 7]
    assert visible_devices({"ASCEND_VISIBLE_DEVICES": "0-2,4"}) == [0, 1, 2, 4]
    assert visible_devices({"ASCEND_VISIBLE_DEVICES": "4-7", "ASCEND_RT_VISIBLE_DEVICES": "1,3"}) == [5, 7]
    assert visible_devices({"ASCEND_RT_VISIBLE_DEVICES": "2,3"}) == [2, 3]
    with pytest.raises(RankTableError, match="the container has only 2 NPUs"):
        visible_devices({"ASCEND_VISIBLE_DEVICES": "1,3", "ASCEND_RT_VISIBLE_DEVICES": "2"})
    # container given host NPUs 4 and 5: the rank table names the host's ids 4, 5; local ranks use 0, 1
    servers = parse_rank_table(_trainer_helpers.rank_table([("10.0.0.11", [4, 5])]))
    launch = LaunchInfo(rank=1, world_size=2, local_rank=1, local_world_size=2, node_rank=0, torchrun=True)
    assert check_rank_table(servers, launch, {"ASCEND_VISIBLE_DEVICES": "4,5"})["server_id"] == "10.0.0.11"
    with pytest.raises(RankTableError, match=r"would use device 1 \(ASCEND_VISIBLE_DEVICES=0,1\)"):
        check_rank_table(servers, launch, {"ASCEND_VISIBLE_DEVICES": "0,1"})


def test_part_of_a_node_in_a_container_given_those_devices():
    """The launch stage's partial job: the container gets /dev/davinci4 and 5 only (inside, CANN numbers
    them 0 and 1: aclrtSetDevice takes 0..count-1), ASCENDOPS_HOST_DEVICES=4,5 says which host NPUs they
    are, and no ASCEND_RT_VISIBLE_DEVICES (its 4,5 would name devices the container does not have)."""
    from ascendops_trainer.parallel import check_visible_devices

    servers = parse_rank_table(_trainer_helpers.rank_table([("10.0.0.11", [4, 5])]))
    for local in (0, 1):
        launch = LaunchInfo(rank=local, world_size=2, local_rank=local, local_world_size=2, node_rank=0,
                            torchrun=True)
        assert check_visible_devices(launch, {"ASCENDOPS_HOST_DEVICES": "4,5"}) == 4 + local
        assert check_rank_table(servers, launch, {"ASCENDOPS_HOST_DEVICES": "4,5"})["server_id"] == "10.0.0.11"
    # the container numbers its devices in ascending host order, whatever order the list is in
    assert visible_devices({"ASCENDOPS_HOST_DEVICES": "5,4"}) == [4, 5]
    with pytest.raises(RankTableError, match=r"names device\(s\) \[4, 5\] but the container has only 2 NPUs "
                                             r"\(ASCENDOPS_HOST_DEVICES=4,5; inside, devices are numbered from 0\)"):
        visible_devices({"ASCENDOPS_HOST_DEVICES": "4,5", "ASCEND_RT_VISIBLE_DEVICES": "4,5"})


def test_part_of_a_node_through_ascend_rt_visible_devices():
    """A job on NPUs 4 and 5 of a node: ASCEND_RT_VISIBLE_DEVICES=4,5, the rank table names 4 and 5,
    local rank i uses visible index i, whose physical id is what the table is checked against."""
    from ascendops_trainer.parallel import check_visible_devices

    servers = parse_rank_table(_trainer_helpers.rank_table([("10.0.0.11", [4, 5])]))
    for local in (0, 1):
        launch = LaunchInfo(rank=local, world_size=2, local_rank=local, local_world_size=2, node_rank=0,
                            torchrun=True)
        assert check_visible_devices(launch, {"ASCEND_RT_VISIBLE_DEVICES": "4,5"}) == 4 + local
        assert check_rank_table(servers, launch, {"ASCEND_RT_VISIBLE_DEVICES": "4,5"})["server_id"] == "10.0.0.11"
    with pytest.raises(RankTableError, match=r"rank 1 is device 5 on server 10.0.0.11, but this process "
                                             r"\(LOCAL_RANK=1\) would use device 3 \(ASCEND_RT_VISIBLE_DEVICES=2,3\)"):
        check_rank_table(servers, launch, {"ASCEND_RT_VISIBLE_DEVICES": "2,3"})
    with pytest.raises(ConfigError, match=r"starts 2 processes on this node .* only 1 NPUs are visible "
                                          r"\(ASCEND_RT_VISIBLE_DEVICES=4\); launch --nproc_per_node 1"):
        check_rank_table(servers, launch, {"ASCEND_RT_VISIBLE_DEVICES": "4"})
    assert check_visible_devices(launch, {}) is None  # nothing restricts: device = LOCAL_RANK


def test_socket_interfaces_are_checked_before_the_process_group():
    from ascendops_trainer.parallel import check_socket_ifnames

    have = ["eth0", "ib0", "lo"]
    env = {"GLOO_SOCKET_IFNAME": "eth0", "HCCL_SOCKET_IFNAME": "eth"}
    assert check_socket_ifnames(env, have) == env
    assert check_socket_ifnames({"HCCL_SOCKET_IFNAME": "=ib0"}, have) == {"HCCL_SOCKET_IFNAME": "=ib0"}
    assert check_socket_ifnames({"HCCL_SOCKET_IFNAME": "^docker,lo"}, have)  # exclusions: nothing to check
    with pytest.raises(ConfigError, match=r"GLOO_SOCKET_IFNAME=eth1: no interface eth1 on this host "
                                          r"\(interfaces: eth0, ib0, lo\)"):
        check_socket_ifnames({"GLOO_SOCKET_IFNAME": "eth1"}, have)
    with pytest.raises(ConfigError, match="HCCL_SOCKET_IFNAME==eth1 matches no interface"):
        check_socket_ifnames({"HCCL_SOCKET_IFNAME": "=eth1"}, have)
    assert check_socket_ifnames({}, have) == {}
    assert "lo" in check_socket_ifnames({"GLOO_SOCKET_IFNAME": "lo"})["GLOO_SOCKET_IFNAME"]  # this host's own list


def test_rank_table_symlink_is_refused(tmp_path):
    real = tmp_path / "hccl.json"
    real.write_text(_trainer_helpers.rank_table([("10.0.0.11", [0])]))
    link = tmp_path / "rank_table.json"
    link.symlink_to(real)
    launch = LaunchInfo(0, 1, 0, 1, 0, torchrun=True)
    with pytest.raises(RankTableError, match=f"RANK_TABLE_FILE={link} is a symbolic link \\(to {real}\\)"):
        check_rank_table_env(launch, {"RANK_TABLE_FILE": str(link)})
    assert check_rank_table_env(launch, {"RANK_TABLE_FILE": str(real)})["server_id"] == "10.0.0.11"


# ---------------------------------------------------------------- data


def test_prepare_formats_workers_val_split_and_boundaries(prepared, tmp_path):
    from _trainer_corpus import documents

    from ascendops_trainer.data import DistributedLoader, TokenDataset, prepare

    docs = documents(120, seed=3)
    gz = tmp_path / "a.jsonl.gz"
    with gzip.open(gz, "wt") as f:
        for d in docs[:60]:
            f.write(json.dumps({"text": d}) + "\n")
    txt = tmp_path / "b.txt"
    txt.write_text("\n\n".join(docs[60:]) + "\n")
    one = prepare([str(gz), str(txt)], prepared["tokenizer"], str(tmp_path / "w1"), shard_tokens=1500,
                  val_fraction=0.1, workers=1, batch_docs=8)
    two = prepare([str(gz), str(txt)], prepared["tokenizer"], str(tmp_path / "w2"), shard_tokens=1500,
                  val_fraction=0.1, workers=2, batch_docs=8)
    assert one["num_documents"] + one["val_num_documents"] == 120
    assert 3 <= one["val_num_documents"] <= 25 and one["val_num_tokens"] > 0
    for key in ("num_tokens", "val_num_tokens", "num_documents"):
        assert one[key] == two[key]
    assert [s["sha256"] for s in one["shards"]] == [s["sha256"] for s in two["shards"]]  # worker count: same bytes

    ds, val = TokenDataset(str(tmp_path / "w1")), TokenDataset(str(tmp_path / "w1"), split="val")
    assert ds.has_boundaries and val.num_tokens == one["val_num_tokens"]
    # every document starts with BOS (id 1) and ends with EOS: positions restart exactly after each EOS
    toks = ds.tokens(0, ds.num_tokens)
    pos = ds.positions(0, ds.num_tokens)
    assert (pos == 0).sum() == one["num_documents"]
    assert (toks[pos == 0] == one["bos_id"]).all()
    starts = np.flatnonzero(pos == 0)
    assert (toks[starts[1:] - 1] == one["eos_id"]).all()
    # a window starting mid-document counts from its own start
    window = ds.positions(starts[3] - 2, 10)
    assert list(window[:3]) == [0, 1, 0] and window[3] == 1
    loader = DistributedLoader(ds, 32, 2, 0, 1, seed=0, positions=True)
    batch, bpos = loader.next_batch()
    assert batch.shape == bpos.shape == (2, 33) and (bpos[:, 0] == 0).all()


def test_prepare_parquet(prepared, tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from ascendops_trainer.data import prepare

    pq.write_table(pa.table({"text": ["the cat sees a red ball .", "we count one two three ."]}),
                   tmp_path / "x.parquet", row_group_size=1)
    idx = prepare([str(tmp_path / "x.parquet")], prepared["tokenizer"], str(tmp_path / "out"))
    assert idx["num_documents"] == 2


def test_prepare_refuses_unknown_input(prepared, tmp_path):
    from ascendops_trainer.data import prepare

    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n")
    with pytest.raises(ValueError, match="unsupported input"):
        prepare([str(bad)], prepared["tokenizer"], str(tmp_path / "out"))


def test_old_version1_data_dir_still_loads(prepared, tmp_path):
    """A directory prepared before document boundaries existed still trains (without masking)."""
    from ascendops_trainer.data import TokenDataset

    d = tmp_path / "v1"
    shutil.copytree(prepared["data"], d)
    idx = json.loads((d / "index.json").read_text())
    for s in idx["shards"]:
        s.pop("docs")
        os.unlink(d / s["file"].replace(".bin", ".docs"))
    idx.pop("val_shards")
    (d / "index.json").write_text(json.dumps(idx))
    ds = TokenDataset(str(d))
    assert not ds.has_boundaries and ds.num_tokens == idx["num_tokens"]
    assert TokenDataset(str(d), split="val").num_tokens == 0


def test_validation_split_is_checked_before_the_model_is_built(prepared, tmp_path, monkeypatch):
    """train.eval_interval on data without a validation split: a config error before any model exists."""
    import ascendops_trainer.model as model_mod
    from ascendops_trainer.parallel import shutdown
    from ascendops_trainer.train import train

    d = tmp_path / "noval"
    shutil.copytree(prepared["data"], d)
    idx = json.loads((d / "index.json").read_text())
    idx["val_shards"], idx["val_num_tokens"] = [], 0
    (d / "index.json").write_text(json.dumps(idx))

    def no_build(*a, **k):
        raise AssertionError("the model was built before the data was checked")

    monkeypatch.setattr(model_mod, "build_model", no_build)
    env, sigterm = dict(os.environ), signal.getsignal(signal.SIGTERM)  # train() sets both; restored below
    try:
        cfg = build_config({"data.path": str(d), "run_dir": str(tmp_path / "run"), "train.eval_interval": "2",
                            "metrics.tensorboard": "false"})
        with pytest.raises(ConfigError, match="train.eval_interval is set but .* has no validation split"):
            train(cfg)
        # the training data too: fewer samples than one optimizer step
        cfg = build_config({"data.path": str(d), "run_dir": str(tmp_path / "run"), "data.seq_len": "1000000"})
        with pytest.raises(ConfigError, match=r"fewer than one optimizer step needs \(train.global_batch_size\)"):
            train(cfg)
    finally:
        shutdown()
        os.environ.clear()
        os.environ.update(env)
        signal.signal(signal.SIGTERM, sigterm)


def test_trainer_pieces_step_evaluate_save(prepared, tmp_path):
    """The Trainer's parts on their own (one process, gloo): set-up, train_step, evaluate, save; the same
    Runtime that bench uses."""
    import torch

    from ascendops_trainer.parallel import shutdown
    from ascendops_trainer.train import Runtime, Trainer

    env, sigterm = dict(os.environ), signal.getsignal(signal.SIGTERM)
    try:
        cfg = build_config({"data.path": prepared["data"], "run_dir": str(tmp_path / "run"), "train.steps": "4",
                            "train.eval_interval": "2", "train.eval_batches": "2", "metrics.tensorboard": "false"})
        t = Trainer(cfg)
        assert isinstance(t.rt, Runtime) and t.rt.grad_accum == 4 and t.rt.plan.stage == 2  # auto, one rank
        before = t.loader.state_dict()["consumed"]
        assert t.train_step() is True
        assert t.loader.state_dict()["consumed"] == before + 4 * 2  # grad_accum micro-batches of 2
        assert torch.isfinite(t.loss_sum) and t.loss_sum.item() > 0
        t.step, t.interval_steps = 1, 1
        assert 0 < t.evaluate() < 10
        assert t.save(1, t.loader.state_dict()) is True and t.ckpt.last_saved_step == 1
        assert (tmp_path / "run" / "checkpoints" / "latest").read_text().strip() == "step_00000001"
        t.stop.set_by = signal.SIGTERM  # a stop between micro-steps: the step is not taken
        assert t.train_step() is False
        t.close()
    finally:
        shutdown()
        os.environ.clear()
        os.environ.update(env)
        signal.signal(signal.SIGTERM, sigterm)


def test_a_cpu_rank_samples_npu_usage_where_the_node_has_npus(prepared, tmp_path):
    """The training device does not decide NPU sampling: a CPU trainer on a node with npu-smi and visible NPUs
    samples them into its metrics; without them (a CPU or CUDA box) it starts nothing and says nothing."""


    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "usages").write_text("NPU ID : 0\nChip Count : 1\n\nHBM Capacity(MB) : 65536\nHBM Usage Rate(%) : 10\n"
                                    "Aicore Usage Rate(%) : 87\nChip ID : 0\n")
    (bin_dir / "common").write_text("NPU ID : 0\nChip Count : 1\n\nChip ID : 0\nTemperature(C) : 63\n"
                                    "NPU Real-time Power(W) : 298.4\n")
    (bin_dir / "npu-smi").write_text(f"""#!/bin/sh
case "$*" in
  "info -l") printf 'Total Count : 1\\n\\nNPU ID : 0\\n';;
  "info -t usages -i 0") cat {bin_dir}/usages;;
  "info -t common -i 0") cat {bin_dir}/common;;
  *) exit 1;;
esac
""")
    (bin_dir / "npu-smi").chmod(0o755)
    # Its own process: a second Trainer in this test process fails inside DeepSpeed (its process groups
    # stay registered to the first one), whatever order the tests run in.
    code = f"""
import json, time
from ascendops_trainer.config import build_config
from ascendops_trainer.parallel import shutdown
from ascendops_trainer.train import Trainer
cfg = build_config({{"data.path": {prepared["data"]!r}, "run_dir": {str(tmp_path / "run")!r}, "train.steps": "2",
                    "metrics.tensorboard": "false", "metrics.npu_usage_interval_s": "0.05"}})
t = Trainer(cfg)
try:
    end = time.monotonic() + 10
    while not t.npu_usage.latest() and time.monotonic() < end:
        time.sleep(0.05)
    print("RESULT " + json.dumps({{"device": t.ctx.device_type, "usage": t.npu_usage.latest()}}))
finally:
    t.close()
    shutdown()
"""
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["ASCEND_VISIBLE_DEVICES"] = "0"  # as the Ascend Docker Runtime sets it
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stdout + proc.stderr
    got = json.loads(lines[-1][len("RESULT "):])
    assert got["device"] == "cpu"
    assert got["usage"] == {"npu_ai_core_pct": 87.0, "npu_hbm_used_mb": 6554, "npu_hbm_total_mb": 65536,
                            "npu_power_w": 298.4, "npu_temp_c": 63.0}


def test_packed_documents_line_up_inputs_targets_and_positions():
    """Document masking packs a micro-batch into one row. With an attention that masks by the position
    ids' segments (what the varlen flash kernel does on NPU), the packed loss equals the loss of the
    samples run separately, and a document boundary inside a sample cuts attention there."""
    import torch
    import torch.nn.functional as F
    from transformers import AttentionInterface

    from ascendops_trainer.model import build_model
    from ascendops_trainer.train import causal_lm_loss

    def segment_sdpa(module, q, k, v, attention_mask, scaling=None, dropout=0.0, **kwargs):
        pos = kwargs["position_ids"][0]
        seg = torch.cumsum((pos == 0).long(), 0)
        n = pos.numel()
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        mask = causal & (seg[:, None] == seg[None, :])
        k = k.repeat_interleave(q.size(1) // k.size(1), dim=1)
        v = v.repeat_interleave(q.size(1) // v.size(1), dim=1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scaling)
        return out.transpose(1, 2).contiguous(), None

    AttentionInterface.register("ascendops_test_segment_sdpa", segment_sdpa)
    cfg = build_config({"model.attn_implementation": "sdpa", "model.implementation": "transformers"})
    hf = build_hf_config(cfg.model, "cpu")
    torch.manual_seed(0)
    ref = build_model(cfg.model, hf, torch.float32).eval()
    hf_seg = build_hf_config(cfg.model, "cpu")
    hf_seg._attn_implementation = "ascendops_test_segment_sdpa"
    seg = build_model(cfg.model, hf_seg, torch.float32).eval()
    seg.load_state_dict(ref.state_dict())
    batch = torch.randint(0, 512, (3, 17), generator=torch.Generator().manual_seed(4))
    whole = torch.arange(17).repeat(3, 1)  # each sample one document
    with torch.no_grad():
        torch.testing.assert_close(causal_lm_loss(seg, batch, whole), causal_lm_loss(ref, batch))
        # sample 0 holds two documents, split after token 8: same as running them separately
        split = whole.clone()
        split[0, 9:] = torch.arange(8)
        a, b = batch[:1, :10], batch[:1, 9:]
        parts = [causal_lm_loss(ref, a) * 9, causal_lm_loss(ref, b) * 7, causal_lm_loss(ref, batch[1:]) * 32]
        torch.testing.assert_close(causal_lm_loss(seg, batch, split), sum(parts) / 48)


def test_packed_layout_lengths_once_per_micro_batch_and_the_kernel_limit():
    from ascendops_trainer.data import pack_layout

    pos = np.array([[0, 1, 2, 0, 1, 0, 1, 2, 3],  # sample 0: documents of 3, 2, 3 tokens (+ a target token)
                    [0, 1, 2, 3, 0, 1, 2, 3, 4]])  # sample 1: 4 + 4 (each sample starts at position 0)
    lay = pack_layout(pos, 2048)
    assert lay.cu_seqlens.tolist() == [0, 3, 5, 8, 12, 16] and lay.max_len == 4 and lay.merged == 0
    assert lay.cu_seqlens.dtype == np.int32 and lay.position_ids.shape == (1, 16)
    np.testing.assert_array_equal(lay.position_ids[0], np.concatenate([pos[0, :-1], pos[1, :-1]]))
    # over the kernel's limit: the shortest sequences join their predecessors until 3 remain
    lim = pack_layout(pos, 3)
    assert lim.merged == 2 and len(lim.cu_seqlens) == 4 and lim.cu_seqlens[-1] == 16
    assert lim.cu_seqlens.tolist() == [0, 8, 12, 16]  # the 2-token one and then a 3-token one merged
    starts = set(lim.cu_seqlens[:-1].tolist())
    pid = lim.position_ids[0]
    assert all((pid[i] == 0) == (i in starts) for i in range(16))  # positions restart exactly at the kept starts
    assert lim.max_len == 8


def test_packed_attention_gets_host_lengths_and_masks_documents():
    """The varlen kwargs computed once per micro-batch reach every attention call as they are: CPU int32
    lengths and Python-int maxima (so torch_npu's wrapper reads them without a device sync), and the
    loss equals the documents run separately."""
    import torch
    import torch.nn.functional as F
    from transformers import AttentionInterface

    from ascendops_trainer.model import build_model
    from ascendops_trainer.train import causal_lm_loss, packed_attention_kwargs

    seen = []

    def varlen_sdpa(module, q, k, v, attention_mask, scaling=None, dropout=0.0, **kwargs):
        cu = kwargs["cu_seq_lens_q"]
        seen.append((cu.device.type, cu.dtype, type(kwargs["max_length_q"]), kwargs["cu_seq_lens_k"] is cu))
        n = q.size(2)
        seg = torch.zeros(n, dtype=torch.long)
        seg[cu[1:-1].long()] = 1
        seg = seg.cumsum(0)
        mask = torch.ones(n, n, dtype=torch.bool).tril() & (seg[:, None] == seg[None, :])
        k = k.repeat_interleave(q.size(1) // k.size(1), dim=1)
        v = v.repeat_interleave(q.size(1) // v.size(1), dim=1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scaling)
        return out.transpose(1, 2).contiguous(), None

    AttentionInterface.register("ascendops_test_varlen_sdpa", varlen_sdpa)
    cfg = build_config({"model.attn_implementation": "sdpa", "model.implementation": "transformers"})
    torch.manual_seed(0)
    ref = build_model(cfg.model, build_hf_config(cfg.model, "cpu"), torch.float32).eval()
    hf = build_hf_config(cfg.model, "cpu")
    hf._attn_implementation = "ascendops_test_varlen_sdpa"
    var = build_model(cfg.model, hf, torch.float32).eval()
    var.load_state_dict(ref.state_dict())
    batch = torch.randint(0, 512, (3, 17), generator=torch.Generator().manual_seed(4))
    pos = torch.arange(17).repeat(3, 1)
    pos[0, 9:] = torch.arange(8)  # sample 0: two documents, split after token 8
    packed = packed_attention_kwargs(pos, "npu", torch.device("cpu"))
    with torch.no_grad():
        got = causal_lm_loss(var, batch, packed=packed)
        parts = [causal_lm_loss(ref, batch[:1, :10]) * 9, causal_lm_loss(ref, batch[:1, 9:]) * 7,
                 causal_lm_loss(ref, batch[1:]) * 32]
    torch.testing.assert_close(got, sum(parts) / 48)
    assert packed["cu_seq_lens_q"].tolist() == [0, 9, 16, 32, 48] and packed["max_length_q"] == 16
    assert seen == [("cpu", torch.int32, int, True)] * 2  # both layers, the same host tensor


def test_image_env_check_names_what_is_needed(monkeypatch):
    import importlib.util
    from pathlib import Path

    payload = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("check_image_env", payload / "check-image-env.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    req = str(payload / "requirements.txt")

    def image(torch_v, npu_v):
        monkeypatch.setattr(mod, "_probe", lambda code: torch_v if "torch.__version__" in code else npu_v)

    image("2.6.0", "2.6.0.post3")
    assert mod.check(req, torch_from_image=True) == []
    image("2.5.1", "2.5.1")
    assert any("older than 2.6, which transformers 5 needs" in p for p in mod.check(req, True))
    image("2.7.1+cpu", "2.6.0")
    assert any("torch_npu 2.6.0 is built for torch 2.6, but the image has torch 2.7.1+cpu" in p
               for p in mod.check(req, True))
    image(None, None)
    assert any("`import torch` fails" in p for p in mod.check(req, True))
    assert mod.check(req, torch_from_image=False) == []  # torch comes from TORCH_SPEC
    monkeypatch.setattr(mod.sys, "version_info", (3, 9, 18))
    assert any("Python 3.9 is too old" in p for p in mod.check(req, False))
