"""Fast unit tests: config, RoPE fields, parameter counts, FLOPs/peak/MFU, DeepSpeed config,
LR schedule, data loader sharding and position, checkpoint bookkeeping, rank table checks."""

from __future__ import annotations

import json
import math
import os

import _trainer_helpers  # noqa: F401  (puts payload/src on sys.path)
import numpy as np
import pytest

from ascendops_trainer import checkpoint as ck
from ascendops_trainer.config import ConfigError, JobConfig, ModelConfig, build_config, grad_accum_steps
from ascendops_trainer.engine import deepspeed_config, lr_at, resolve_precision
from ascendops_trainer.metrics import (
    PEAK_TFLOPS_BF16,
    MetricsLogger,
    flops_per_token,
    flops_per_token_for,
    measure_cpu_matmul_tflops,
    mfu,
    peak_tflops_for,
    read_jsonl,
)
from ascendops_trainer.model import build_hf_config, normalize_rope_fields, param_counts, rope_theta_of
from ascendops_trainer.parallel import LaunchInfo, RankTableError, check_rank_table, launch_info, parse_rank_table

# ---------------------------------------------------------------- config


def test_defaults_and_debug_preset():
    cfg = build_config({})
    assert cfg.model.preset == "debug" and cfg.data.seq_len == 64 and cfg.train.steps == 40
    big = build_config({"model.preset": "llama3-8b"})
    assert big.data.seq_len == 8192 and big.train.micro_batch_size == 1 and big.parallel.zero_stage == "auto"


def test_precedence_preset_file_flags(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("train:\n  steps: 7\n  micro_batch_size: 1\noptim:\n  lr: 0.01\nrun_dir: /x\n")
    cfg = build_config({"train.steps": "9", "model.activation_checkpointing": "true"}, str(f))
    assert cfg.train.steps == 9  # flag beats file
    assert cfg.train.micro_batch_size == 1 and cfg.optim.lr == 0.01 and cfg.run_dir == "/x"  # file beats preset
    assert cfg.data.seq_len == 64  # preset beats dataclass default
    assert cfg.model.activation_checkpointing is True
    j = tmp_path / "c.json"
    j.write_text(json.dumps({"parallel": {"zero_stage": 2}}))
    assert build_config({}, str(j)).parallel.zero_stage == 2


@pytest.mark.parametrize("overrides,message", [
    ({"model.preset": "llama3-7b"}, "unknown model preset 'llama3-7b'; choose one of: debug, llama3-8b, llama3-70b"),
    ({"train.global_batch_size": "10", "train.micro_batch_size": "4"},
     "train.global_batch_size (10) is not divisible by train.micro_batch_size (4)"),
    ({"train.steps": "ten"}, "train.steps='ten' is not a valid int"),
    ({"train.stpes": "3"}, "unknown config key 'train.stpes'; did you mean 'train.steps'?"),
    ({"parallel.zero_stage": "4"}, "parallel.zero_stage must be 0, 1, 2, 3 or auto"),
    ({"train.precision": "fp16"}, "train.precision must be one of"),
    ({"optim.min_lr": "1", "optim.lr": "0.1"}, "optim.min_lr (1.0) <= optim.lr (0.1)"),
    ({"model.activation_checkpointing": "maybe"}, "model.activation_checkpointing='maybe' is not a valid bool"),
])
def test_config_errors_are_clear(overrides, message):
    with pytest.raises(ConfigError) as e:
        build_config(overrides)
    assert message in str(e.value)


def test_grad_accum_needs_divisible_data_parallel_batch():
    cfg = build_config({"train.global_batch_size": "12", "train.micro_batch_size": "2"})
    assert grad_accum_steps(cfg, 1) == 6 and grad_accum_steps(cfg, 2) == 3 and grad_accum_steps(cfg, 6) == 1
    with pytest.raises(ConfigError, match=r"not divisible by train.micro_batch_size \(2\) x data-parallel size "
                                          r"\(4\) = 8; pick a global batch that is a multiple of 8"):
        grad_accum_steps(cfg, 4)


def test_cli_reports_config_error(capsys):
    from ascendops_trainer.cli import main

    assert main(["train", "--preset", "nope", "--data", "x"]) == 2
    assert "config error: unknown model preset 'nope'" in capsys.readouterr().err


# ---------------------------------------------------------------- model / RoPE


def test_rope_fields_legacy_new_and_llama31_scaling():
    legacy = normalize_rope_fields({"rope_theta": 500000, "hidden_size": 8})
    assert legacy["rope_parameters"] == {"rope_theta": 500000.0, "rope_type": "default"}
    assert "rope_theta" not in legacy
    new = normalize_rope_fields({"rope_parameters": {"rope_type": "default", "rope_theta": 1e6}})
    assert new["rope_parameters"]["rope_theta"] == 1e6
    l31 = normalize_rope_fields({"rope_theta": 500000.0, "rope_scaling": {
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192}})
    assert l31["rope_parameters"]["rope_type"] == "llama3" and l31["rope_parameters"]["rope_theta"] == 500000.0
    assert "rope_scaling" not in l31
    old_type_key = normalize_rope_fields({"rope_scaling": {"type": "linear", "factor": 2.0}, "rope_theta": 1e4})
    assert old_type_key["rope_parameters"]["rope_type"] == "linear" and "type" not in old_type_key["rope_parameters"]
    assert normalize_rope_fields({})["rope_parameters"]["rope_theta"] == 10000.0
    with pytest.raises(ConfigError, match="must agree"):
        normalize_rope_fields({"rope_theta": 1.0, "rope_parameters": {"rope_theta": 2.0}})
    assert rope_theta_of({"rope_theta": 123.0}) == 123.0
    assert rope_theta_of({"rope_parameters": {"rope_theta": 7.0}}) == 7.0


@pytest.mark.parametrize("layout", ["rope_theta", "rope_parameters"])
def test_hf_dir_config_either_rope_layout(tmp_path, layout):
    from ascendops_trainer.model import PRESETS

    d = {k: v for k, v in PRESETS["debug"].items() if k != "rope_parameters"}
    d["rope_theta" if layout == "rope_theta" else "rope_parameters"] = (
        250000.0 if layout == "rope_theta" else {"rope_type": "default", "rope_theta": 250000.0})
    (tmp_path / "config.json").write_text(json.dumps(d))
    cfg = build_hf_config(ModelConfig(hf_dir=str(tmp_path)))
    assert rope_theta_of(cfg) == 250000.0 and cfg.num_hidden_layers == 2


def test_presets_have_llama3_shapes_and_param_counts():
    c8 = build_hf_config(ModelConfig(preset="llama3-8b"))
    assert (c8.hidden_size, c8.num_hidden_layers, c8.num_attention_heads, c8.num_key_value_heads,
            c8.intermediate_size, c8.vocab_size) == (4096, 32, 32, 8, 14336, 128256)
    assert rope_theta_of(c8) == 500000.0 and c8.rms_norm_eps == 1e-5 and not c8.tie_word_embeddings
    assert param_counts(c8).total == 8_030_261_248  # Meta-Llama-3-8B
    c70 = build_hf_config(ModelConfig(preset="llama3-70b"))
    assert param_counts(c70).total == 70_553_706_496  # Meta-Llama-3-70B
    two = build_hf_config(ModelConfig(preset="llama3-8b", num_layers=2))
    assert two.num_hidden_layers == 2 and two.hidden_size == 4096


def test_param_count_matches_built_model():
    import torch
    from transformers import LlamaForCausalLM

    cfg = build_hf_config(ModelConfig(preset="debug"))
    model = LlamaForCausalLM._from_config(cfg, dtype=torch.float32)
    counts = param_counts(cfg)
    assert counts.total == sum(p.numel() for p in model.parameters())
    assert counts.embedding == model.model.embed_tokens.weight.numel()


# ---------------------------------------------------------------- FLOPs, peak, MFU


def test_flops_formula():
    # 6N + 12 * L * H * Dh * S, by hand
    assert flops_per_token(1000, 2, 4, 16, 64) == 6 * 1000 + 12 * 2 * 4 * 16 * 64
    c8 = build_hf_config(ModelConfig(preset="llama3-8b"))
    n = 8_030_261_248 - 128256 * 4096  # N excludes the input embedding, keeps lm_head
    assert flops_per_token_for(c8, 8192) == 6 * n + 12 * 32 * 32 * 128 * 8192


def test_peak_table():
    assert peak_tflops_for("Ascend910B1") == 373.9
    assert peak_tflops_for("Ascend910B2") == 353.9
    assert peak_tflops_for("Ascend910B3") == 294.9
    assert peak_tflops_for("Ascend910B4") == 245.8
    assert peak_tflops_for("NVIDIA H100 80GB HBM3") == 989.0
    assert peak_tflops_for("NVIDIA H100 PCIe") == 756.0
    assert peak_tflops_for("NVIDIA H200") == 989.0
    assert peak_tflops_for("NVIDIA A100-SXM4-80GB") == 312.0
    assert peak_tflops_for("NVIDIA H100 NVL") == 835.0  # not the SXM figure
    assert peak_tflops_for("Ascend910B2C") == 353.9
    assert peak_tflops_for("NVIDIA H200 NVL") == 835.0  # not the SXM figure either
    # A3 / 910C: no vendor figure per die, so no entry: no peak, not an estimate
    assert peak_tflops_for("Ascend910_9392") is None and peak_tflops_for("Ascend910_9382") is None
    assert peak_tflops_for("Some other chip") is None
    assert len({k for k, _ in PEAK_TFLOPS_BF16}) == len(PEAK_TFLOPS_BF16)


def test_resolve_peak_tflops_order():
    from ascendops_trainer.metrics import resolve_peak_tflops

    assert resolve_peak_tflops(123.0, "npu", "Ascend910B1", "bf16") == (123.0, "metrics.peak_tflops")
    peak, source = resolve_peak_tflops(None, "npu", "Ascend910B2", "bf16")
    assert peak == 353.9 and source.startswith("table: ") and "24 AI cores" in source
    assert resolve_peak_tflops(None, "cuda", "Some other chip", "bf16") == (None, "no peak known")
    assert resolve_peak_tflops(None, "npu", "Ascend910_9392", "bf16") == (None, "no peak known")
    peak, source = resolve_peak_tflops(None, "cpu", "cpu", "fp32")
    assert peak > 0 and source == "measured fp32 matmul"


def test_mfu_matches_published_anchor():
    # Llama 3 8B on 910B, seq 8192: 2483 tokens/s per device is quoted at about 40% MFU.
    fpt = flops_per_token_for(build_hf_config(ModelConfig(preset="llama3-8b")), 8192)
    assert 0.37 < mfu(2483, fpt, peak_tflops_for("Ascend910B2")) < 0.42
    assert mfu(1.0, 1e12, 2.0) == pytest.approx(0.5)
    assert mfu(1.0, 1e12, None) is None


def test_cpu_matmul_peak_is_measured():
    tflops = measure_cpu_matmul_tflops("fp32", n=256, min_seconds=0.05)
    assert 1e-4 < tflops < 100


def test_metrics_other_nodes_print_the_line_but_write_no_files(tmp_path, capsys):
    rec = {"step": 7, "total_steps": 9, "loss": 2.5, "lr": 1e-3, "grad_norm": 1.0, "tokens_per_s_per_device": 123.0,
           "tflops_per_device": 0.1, "mfu": None, "mem_gib": 1.0, "data_wait_frac": 0.0, "step_time_s": 0.1}
    node_main = MetricsLogger(str(tmp_path / "n1"), enabled=False, tensorboard=False, console=True)
    node_main.log(rec)
    node_main.close()
    assert "step 7/9 | loss 2.5000" in capsys.readouterr().out and not (tmp_path / "n1").exists()
    other = MetricsLogger(str(tmp_path / "n2"), enabled=False, tensorboard=False)
    other.log(rec)
    assert capsys.readouterr().out == ""


def test_metrics_jsonl_keeps_last_record_per_step(tmp_path):
    log = MetricsLogger(str(tmp_path), enabled=True, tensorboard=False)
    for step, loss in [(1, 5.0), (2, 4.0), (2, 3.5), (3, 3.0)]:  # step 2 logged again after a resume
        log.log({"step": step, "total_steps": 3, "loss": loss, "lr": 1e-3, "grad_norm": 1.0,
                 "tokens_per_s_per_device": 10.0, "tflops_per_device": 0.1, "mfu": None, "mem_gib": 1.0,
                 "data_wait_frac": 0.0, "step_time_s": 0.1})
    log.close()
    recs = read_jsonl(str(tmp_path / "metrics.jsonl"))
    assert [r["step"] for r in recs] == [1, 2, 3] and recs[1]["loss"] == 3.5
    with open(tmp_path / "metrics.jsonl", "a") as f:
        f.write('{"step": 4, "lo')  # a running job is writing this line
    assert [r["step"] for r in read_jsonl(str(tmp_path / "metrics.jsonl"))] == [1, 2, 3]


# ---------------------------------------------------------------- DeepSpeed config, schedule


def test_deepspeed_config_from_trainer_config():
    cfg = build_config({"train.global_batch_size": "16", "train.micro_batch_size": "2", "optim.grad_clip": "0.5",
                        "parallel.zero_stage": "3"})
    ds = deepspeed_config(cfg, dp_size=4, precision="bf16")
    assert ds["train_batch_size"] == 16 and ds["train_micro_batch_size_per_gpu"] == 2
    assert ds["gradient_accumulation_steps"] == 2  # 16 / (2 x 4)
    assert ds["gradient_clipping"] == 0.5 and ds["bf16"] == {"enabled": True}
    assert ds["zero_optimization"]["stage"] == 3 and ds["zero_allow_untested_optimizer"] is True
    assert "optimizer" not in ds and "scheduler" not in ds  # torch AdamW + our schedule are passed in
    assert deepspeed_config(cfg, 4, "fp32")["bf16"] == {"enabled": False}
    assert "stage3_prefetch_bucket_size" not in deepspeed_config(
        build_config({"parallel.zero_stage": "1"}), 1, "bf16")["zero_optimization"]


def test_deepspeed_override_merges_and_guards_batch():
    cfg = build_config({})
    over = {"zero_optimization": {"reduce_bucket_size": 123}, "wall_clock_breakdown": True}
    ds = deepspeed_config(cfg, 1, "bf16", over)
    assert ds["zero_optimization"]["reduce_bucket_size"] == 123 and ds["zero_optimization"]["stage"] == 3
    assert ds["wall_clock_breakdown"] is True
    with pytest.raises(ConfigError, match="train_micro_batch_size_per_gpu=8 but the trainer config gives 2"):
        deepspeed_config(cfg, 1, "bf16", {"train_micro_batch_size_per_gpu": 8})
    with pytest.raises(ConfigError, match="must not define 'optimizer'"):
        deepspeed_config(cfg, 1, "bf16", {"optimizer": {"type": "Adam"}})


def test_precision_auto():
    assert resolve_precision("auto", "npu") == "bf16" and resolve_precision("auto", "cuda") == "bf16"
    assert resolve_precision("auto", "cpu") == "fp32" and resolve_precision("bf16", "cpu") == "bf16"


def test_warmup_cosine_schedule():
    cfg = build_config({"optim.lr": "1.0", "optim.min_lr": "0.1", "optim.warmup_steps": "10", "train.steps": "110"})
    assert lr_at(0, cfg) == pytest.approx(0.1) and lr_at(9, cfg) == pytest.approx(1.0)
    assert lr_at(10, cfg) == pytest.approx(1.0)
    assert lr_at(109, cfg) == pytest.approx(0.1)  # the last step runs at min_lr
    assert lr_at(59, cfg) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 49 / 99)))
    lrs = [lr_at(s, cfg) for s in range(10, 110)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:], strict=False))


# ---------------------------------------------------------------- data


def test_prepare_index_and_shards(prepared):
    from transformers import AutoTokenizer

    from ascendops_trainer.data import TokenDataset, is_val_document

    ds = TokenDataset(prepared["data"])
    idx = ds.index
    assert idx["num_documents"] + idx["val_num_documents"] == 400 and idx["val_num_documents"] > 0
    assert len(idx["shards"]) >= 2 and idx["dtype"] == "uint16"
    assert ds.num_tokens == sum(s["num_tokens"] for s in idx["shards"]) == idx["num_tokens"]
    tok = AutoTokenizer.from_pretrained(prepared["tokenizer"], local_files_only=True)
    docs = open(prepared["files"][0]).read().split("\n\n")
    first_doc = next(d for i, d in enumerate(docs) if not is_val_document(i, 0.05))  # the first training one
    ids = tok(first_doc)["input_ids"] + [tok.eos_token_id]
    assert ids[0] == tok.bos_token_id
    assert ds.tokens(0, len(ids)).tolist() == ids  # BOS ... EOS, in order
    # a read across a shard boundary is the concatenation of both shards
    b = idx["shards"][0]["num_tokens"]
    assert ds.tokens(b - 3, 6).tolist() == list(ds.shards[0][-3:]) + list(ds.shards[1][:3])


def test_loader_shards_by_rank_and_covers_epoch(prepared):
    from ascendops_trainer.data import DistributedLoader, TokenDataset

    ds = TokenDataset(prepared["data"])
    loaders = [DistributedLoader(ds, 64, 2, r, 2, seed=5) for r in range(2)]
    n, per_step = loaders[0].n, 4
    seen = []
    for _ in range(n // per_step):
        a, b = loaders[0].next_indices(), loaders[1].next_indices()
        assert len(a) == 2 and len(b) == 2 and not set(a) & set(b)  # ranks get disjoint samples
        seen += [*a, *b]
    assert len(seen) == len(set(seen)) == n - n % per_step  # each sample once per epoch (tail dropped)
    assert loaders[0].next_indices().tolist() != []  # rolls over into epoch 1
    assert loaders[0].state.epoch == 1
    batch = next(loaders[1])  # rank 1, first micro-step of epoch 1: samples order[2:4]
    assert batch.shape == (2, 65) and str(batch.dtype) == "torch.int64"
    order = loaders[1].order(np.arange(loaders[1].n))
    np.testing.assert_array_equal(batch[0].numpy(), ds.sample(int(order[2]), 64))
    np.testing.assert_array_equal(batch[1].numpy(), ds.sample(int(order[3]), 64))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 64, 1000, 4097, 65536, 100_003])
def test_sample_permutation_is_a_seeded_bijection(n):
    from ascendops_trainer.data import SamplePermutation

    p = SamplePermutation(n, seed=7, epoch=0)
    got = p(np.arange(n))
    np.testing.assert_array_equal(np.sort(got), np.arange(n))  # every sample exactly once
    np.testing.assert_array_equal(SamplePermutation(n, 7, 0)(np.arange(n)), got)  # same on every rank, restart
    if n >= 64:
        other_epoch, other_seed = SamplePermutation(n, 7, 1)(np.arange(n)), SamplePermutation(n, 8, 0)(np.arange(n))
        assert (other_epoch != got).mean() > 0.9 and (other_seed != got).mean() > 0.9
        assert (got != np.arange(n)).mean() > 0.9  # actually shuffled
        # no visible structure: neighbours in the order are far apart in the data on average
        assert np.abs(np.diff(got)).mean() > n / 5


def test_loader_order_at_15t_token_scale_uses_constant_memory():
    """15T tokens at seq 8192 = 1.83e9 samples: the explicit permutation would take 15 GB per rank. The
    loader computes its micro-batch's positions only; its memory does not grow with the data."""
    import tracemalloc
    from types import SimpleNamespace

    from ascendops_trainer.data import DistributedLoader

    n = 15 * 10**12 // 8192
    fake = SimpleNamespace(path="/data/15t", num_tokens=n * 8192 + 1, fingerprint="f" * 16,
                           num_samples=lambda seq_len: n)
    tracemalloc.start()
    try:
        loaders = [DistributedLoader(fake, 8192, 1, r, 4096, seed=42) for r in range(3)]
        for ld in loaders:
            ld.state.consumed = 1_500_000_000  # deep into the epoch, as after a resume
        picks = [int(ld.next_indices()[0]) for ld in loaders]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak  # < 1 MiB
    assert len(set(picks)) == 3 and all(0 <= i < n for i in picks)
    again = DistributedLoader(fake, 8192, 1, 1, 4096, seed=42)
    again.load_state_dict({**loaders[1].state_dict(), "consumed": 1_500_000_000})
    assert int(again.next_indices()[0]) == picks[1]  # identical across restarts


def test_loader_resumes_a_checkpoint_of_the_explicit_permutation_in_its_order(prepared):
    """A loader state saved before the on-the-fly order (no `order` key) finishes its epoch in the old
    order (numpy's permutation of (seed, epoch)), then continues with the new one."""
    from ascendops_trainer.data import ORDER, DistributedLoader, TokenDataset

    ds = TokenDataset(prepared["data"])
    ld = DistributedLoader(ds, 64, 2, 0, 1, seed=3)
    old = {"epoch": 0, "consumed": 4, "seed": 3, "seq_len": 64, "fingerprint": ds.fingerprint}
    ld.load_state_dict(old)
    legacy = np.random.default_rng([3, 0]).permutation(ld.n)
    assert ld.next_indices().tolist() == legacy[4:6].tolist()
    ld.state.consumed = ld.n  # end of the epoch
    ld.next_indices()
    assert (ld.state.epoch, ld.state.order) == (1, ORDER)


def test_loader_position_resumes_exactly(prepared):
    from ascendops_trainer.data import DistributedLoader, TokenDataset

    ds = TokenDataset(prepared["data"])
    a = DistributedLoader(ds, 64, 2, 1, 2, seed=3)
    for _ in range(a.n // 4 - 2):  # close to the epoch end: the resume must cross it identically
        next(a)
    state = json.loads(json.dumps(a.state_dict()))  # as stored in the checkpoint
    expected = [next(a) for _ in range(5)]
    b = DistributedLoader(ds, 64, 2, 1, 2, seed=999)  # the seed comes from the checkpoint
    b.load_state_dict(state)
    for want in expected:
        assert (next(b) == want).all()
    fresh = DistributedLoader(ds, 64, 2, 1, 2, seed=3)
    assert not (next(fresh) == expected[0]).all()
    with pytest.raises(ValueError, match="different data"):
        b.load_state_dict({**state, "fingerprint": "0" * 16})
    with pytest.raises(ValueError, match="seq_len=64, this run 32"):
        DistributedLoader(ds, 32, 2, 1, 2, seed=3).load_state_dict(state)


def test_loader_gives_each_optimizer_step_the_same_samples_at_any_world_size(prepared):
    """With the global batch given, an epoch ends only between optimizer steps: 1, 2 or 3 ranks (6, 3, 2
    micro-steps of 2) serve the same samples per optimizer step, across epoch ends too (a resume on more
    or fewer ranks continues the data exactly). The micro-step rule alone would not: n is no multiple of 12."""
    from ascendops_trainer.data import DistributedLoader, TokenDataset

    ds = TokenDataset(prepared["data"])

    def steps(ranks: int, count: int) -> list[list[int]]:
        loaders = [DistributedLoader(ds, 64, 2, r, ranks, seed=7, global_batch=12) for r in range(ranks)]
        out = []
        for _ in range(count):
            ids: list[int] = []
            for _ in range(12 // (2 * ranks)):
                ids += [int(i) for ld in loaders for i in ld.next_indices()]
            out.append(sorted(ids))
        assert len({ld.state.epoch for ld in loaders}) == 1 and loaders[0].state.epoch >= 1  # crossed an epoch end
        return out

    n = DistributedLoader(ds, 64, 2, 0, 1, seed=7).n
    assert n % 12 and n % 12 >= 2  # the tail a micro-step rule would still serve on fewer ranks
    count = n // 12 + 3
    one = steps(1, count)
    assert one == steps(2, count) == steps(3, count)
    with pytest.raises(ValueError, match="fewer than one optimizer step needs"):
        DistributedLoader(ds, 64, 2, 0, 1, seed=7, global_batch=n + 1)


# ---------------------------------------------------------------- checkpoints


def _fake_ckpt(d, step, complete=True):
    p = d / ck.tag_for(step)
    p.mkdir(parents=True)
    if complete:
        (p / ck.TRAINER_STATE).write_text(json.dumps({"step": step}))
    return p


def test_resume_tag_ignores_partial_saves(tmp_path):
    assert ck.resolve_resume_tag(tmp_path) is None
    _fake_ckpt(tmp_path, 10)
    _fake_ckpt(tmp_path, 20)
    (tmp_path / ".tmp-step_00000030").mkdir()  # crashed mid-save
    ck.write_atomic(tmp_path / "latest", "step_00000020")
    assert ck.resolve_resume_tag(tmp_path) == "step_00000020"
    ck.write_atomic(tmp_path / "latest", "step_00000030")  # pointer to something unfinished
    assert ck.resolve_resume_tag(tmp_path) == "step_00000020"
    (tmp_path / "latest").unlink()
    assert ck.resolve_resume_tag(tmp_path) == "step_00000020"
    _fake_ckpt(tmp_path, 40, complete=False)
    assert ck.resolve_resume_tag(tmp_path) == "step_00000020"
    ck.clean_stale(tmp_path)
    assert not (tmp_path / ".tmp-step_00000030").exists() and (tmp_path / "step_00000020").exists()


def test_prune_keeps_newest(tmp_path):
    for s in (10, 20, 30, 40):
        _fake_ckpt(tmp_path, s)
    assert ck.prune(tmp_path, 2, protect="step_00000040") == ["step_00000010", "step_00000020"]
    assert [p.name for p in ck.complete_checkpoints(tmp_path)] == ["step_00000030", "step_00000040"]


def test_rng_state_roundtrip():
    import random

    import torch

    st = ck.capture_rng_state("cpu")
    want = (random.random(), np.random.rand(), torch.rand(3))
    random.random(), np.random.rand(), torch.rand(3)
    ck.restore_rng_state(st, "cpu")
    got = (random.random(), np.random.rand(), torch.rand(3))
    assert got[0] == want[0] and got[1] == want[1] and torch.equal(got[2], want[2])


# ---------------------------------------------------------------- rank table

TABLE = {"version": "1.0", "status": "completed", "server_count": "2", "server_list": [
    {"server_id": "10.0.0.11", "host_ip": "10.0.0.11", "device": [
        {"device_id": "0", "device_ip": "192.168.100.11", "rank_id": "0"},
        {"device_id": "1", "device_ip": "192.168.100.12", "rank_id": "1"}]},
    {"server_id": "10.0.0.12", "host_ip": "10.0.0.12", "device": [
        {"device_id": "0", "device_ip": "192.168.100.21", "rank_id": "2"},
        {"device_id": "1", "device_ip": "192.168.100.22", "rank_id": "3"}]}]}


def _launch(rank, world=4, local_world=2):
    return LaunchInfo(rank, world, rank % local_world, local_world, rank // local_world, torchrun=True)


def test_rank_table_matching_launch():
    servers = parse_rank_table(json.dumps(TABLE))
    assert check_rank_table(servers, _launch(3), env={})["server_id"] == "10.0.0.12"
    assert check_rank_table(servers, _launch(0), env={"HCCL_IF_IP": "10.0.0.11"})["server_id"] == "10.0.0.11"
    env = {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "1"}
    assert launch_info(env) == _launch(3)
    assert launch_info({}).world_size == 1 and not launch_info({}).torchrun


@pytest.mark.parametrize("launch,env,message", [
    (_launch(0, world=2, local_world=2), {}, "lists 4 devices on 2 servers but torchrun launched WORLD_SIZE=2"),
    (_launch(0, world=4, local_world=4), {}, "lists 2 devices but this node runs --nproc_per_node 4"),
    (LaunchInfo(2, 4, 0, 2, 0, True), {}, "holds ranks [2, 3], but torchrun gives node_rank 0 the ranks [0, 1]"),
    (_launch(1), {"ASCEND_RT_VISIBLE_DEVICES": "4,5"},
     "rank 1 is device 1 on server 10.0.0.11, but this process (LOCAL_RANK=1) would use device 5"),
    (_launch(2), {"HCCL_IF_IP": "10.0.0.11"}, "HCCL_IF_IP=10.0.0.11 but this node's server entry is 10.0.0.12"),
])
def test_rank_table_mismatches(launch, env, message):
    servers = parse_rank_table(json.dumps(TABLE))
    with pytest.raises(RankTableError) as e:
        check_rank_table(servers, launch, env=env)
    assert message in str(e.value)


def test_rank_table_malformed():
    with pytest.raises(RankTableError, match="not valid JSON .* missing comma"):
        parse_rank_table('{"server_list": [ {"a": 1} {"b": 2} ]}')
    bad = json.loads(json.dumps(TABLE))
    bad["server_list"][1]["device"][1]["rank_id"] = "2"
    with pytest.raises(RankTableError, match="without gaps or repeats"):
        parse_rank_table(json.dumps(bad))
    bad = {**TABLE, "server_count": "3"}
    with pytest.raises(RankTableError, match="server_count=3 but lists 2 servers"):
        parse_rank_table(json.dumps(bad))


def test_rank_table_env_file_missing(monkeypatch):
    from ascendops_trainer.parallel import check_rank_table_env

    assert check_rank_table_env(_launch(0), env={}) is None
    with pytest.raises(RankTableError, match="does not exist"):
        check_rank_table_env(_launch(0), env={"RANK_TABLE_FILE": os.devnull + ".nope"})


def test_jobconfig_checkpoint_dir_default():
    assert JobConfig(run_dir="/r").checkpoint_dir == "/r/checkpoints"
