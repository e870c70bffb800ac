"""The native Llama 3 (llama.py) against transformers' LlamaForCausalLM: same logits and loss from the same
weights, document masking, the Hugging Face round trip, the NPU path with stand-in kernels, and no patching."""

from __future__ import annotations

import types

import _trainer_helpers  # noqa: F401  (puts payload/src on sys.path)
import pytest
import torch

from ascendops_trainer.config import ConfigError, build_config
from ascendops_trainer.kernels import REFERENCE
from ascendops_trainer.llama import (
    Backend,
    Llama,
    LlamaArgs,
    load_hf_state_dict,
    rope_inv_freq,
    to_hf_state_dict,
)
from ascendops_trainer.model import _llama_config_from_dict, build_model, config_dict, param_counts
from ascendops_trainer.train import causal_lm_loss

LLAMA3_SCALING = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                  "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
# Llama 3 8B's real layer shapes (hidden 4096, 32 heads / 8 KV heads, FFN 14336), 2 layers, a small vocabulary
SHAPE_8B = {"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
            "num_hidden_layers": 2, "vocab_size": 1024}


def hf_config(rope=None, **over):
    cfg = build_config({"model.preset": "debug"})
    d = config_dict(cfg.model)
    d.update(over)
    if rope is not None:
        d["rope_parameters"] = dict(rope)
    c = _llama_config_from_dict(d)
    c._attn_implementation = "eager"  # the plainest reference
    return c


def pair(c, seed=0, **native_kw):
    """(LlamaForCausalLM, native Llama) holding the same weights (through the HF state dict)."""
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    ref = LlamaForCausalLM(c).eval()
    native = Llama(LlamaArgs.from_hf(c), **native_kw).eval()
    native.load_state_dict(load_hf_state_dict(ref.state_dict(), native.args))
    return ref, native


def tokens(b, s, vocab, seed=1):
    return torch.randint(0, vocab, (b, s), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("rope", [None, LLAMA3_SCALING], ids=["rope-default", "rope-llama3"])
def test_debug_preset_logits_and_loss_equal_transformers(rope):
    c = hf_config(rope)
    ref, native = pair(c)
    batch = tokens(3, 33, c.vocab_size)
    with torch.no_grad():
        torch.testing.assert_close(native(batch).logits, ref(input_ids=batch).logits, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(causal_lm_loss(native, batch), causal_lm_loss(ref, batch), rtol=1e-6, atol=1e-6)
    # gradients too: one backward through both, same gradient for every HF tensor
    causal_lm_loss(native, batch).backward()
    causal_lm_loss(ref, batch).backward()
    grads = to_hf_state_dict({n: p.grad for n, p in native.named_parameters()}, native.args)
    for n, p in ref.named_parameters():
        torch.testing.assert_close(grads[n], p.grad, rtol=1e-4, atol=1e-6, msg=n)


def test_llama3_rope_scaling_changes_the_frequencies_as_transformers_does():
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    c = hf_config(LLAMA3_SCALING)
    ours = rope_inv_freq(16, LLAMA3_SCALING)
    theirs, scale = ROPE_INIT_FUNCTIONS["llama3"](c, "cpu")
    assert scale == 1.0
    assert torch.equal(ours, theirs)
    plain = rope_inv_freq(16, {"rope_type": "default", "rope_theta": 500000.0})
    assert not torch.equal(ours, plain) and torch.equal(ours[:4], plain[:4])  # high frequencies unscaled
    with pytest.raises(ConfigError, match="rope_type"):
        rope_inv_freq(16, {"rope_type": "yarn", "rope_theta": 1e4, "factor": 2.0})


def test_8b_shaped_two_layers_equal_transformers():
    c = hf_config(LLAMA3_SCALING, **SHAPE_8B)  # Llama 3.1's RoPE scaling (the plain one: the debug tests)
    ref, native = pair(c)
    assert sum(p.numel() for p in native.parameters()) == param_counts(c).total
    batch = tokens(1, 16, c.vocab_size)
    with torch.no_grad():
        torch.testing.assert_close(native(batch).logits, ref(input_ids=batch).logits, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(causal_lm_loss(native, batch), causal_lm_loss(ref, batch), rtol=1e-5, atol=1e-5)


def test_hf_state_dict_round_trip_is_exact():
    c = hf_config(None, num_hidden_layers=3)
    from transformers import LlamaForCausalLM

    torch.manual_seed(2)
    sd = LlamaForCausalLM(c).state_dict()
    args = LlamaArgs.from_hf(c)
    native = load_hf_state_dict(sd, args)
    assert native["layers.1.attention.wqkv.weight"].shape == ((4 + 2 * 2) * 16, 64)
    assert native["layers.1.feed_forward.w13.weight"].shape == (2 * 160, 64)
    back = to_hf_state_dict(native, args)
    assert sorted(back) == sorted(sd)
    for k, t in sd.items():
        assert torch.equal(back[k], t), k
    # a missing or foreign tensor is refused, not silently ignored
    with pytest.raises(ConfigError, match="missing"):
        load_hf_state_dict({k: v for k, v in sd.items() if "k_proj" not in k}, args)
    with pytest.raises(ConfigError, match="unexpected"):
        load_hf_state_dict({**sd, "model.layers.0.self_attn.q_proj.bias": torch.zeros(64)}, args)


def test_export_reads_back_in_transformers_and_native(tmp_path):
    """The native model's export is a HF directory: LlamaForCausalLM.from_pretrained gives the same
    logits, and building the native model from it (model.hf_dir) gives them too."""
    from transformers import LlamaForCausalLM

    from ascendops_trainer.checkpoint import export_from_engine

    cfg = build_config({"model.preset": "debug", "model.implementation": "native"})
    from ascendops_trainer.model import build_hf_config

    hf = build_hf_config(cfg.model, "cpu")
    torch.manual_seed(3)
    model = build_model(cfg.model, hf, torch.float32).eval()
    engine = types.SimpleNamespace(module=model, zero_optimization_stage=lambda: 0)
    ctx = types.SimpleNamespace(is_main=True, world_size=1)
    out = tmp_path / "export"
    export_from_engine(engine, ctx, str(out), hf.to_dict(), "fp32", None, {"test": True})
    batch = tokens(2, 20, hf.vocab_size)
    with torch.no_grad():
        want = model(batch).logits
        back = LlamaForCausalLM.from_pretrained(str(out), local_files_only=True, dtype=torch.float32).eval()
        torch.testing.assert_close(back(input_ids=batch).logits, want, rtol=1e-5, atol=1e-5)
        cfg2 = build_config({"model.hf_dir": str(out), "model.implementation": "native"})
        again = build_model(cfg2.model, build_hf_config(cfg2.model, "cpu"), torch.float32).eval()
        assert torch.equal(again(batch).logits, want)


def _packed_positions(lengths_per_row):
    return torch.cat([torch.cat([torch.arange(n) for n in row]).unsqueeze(0) for row in lengths_per_row])


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
@pytest.mark.parametrize("backend", ["sdpa", "flex", "npu"])
def test_packed_documents_equal_each_document_alone(backend):
    """A packed micro-batch (document masking through position ids) gives the loss of every document run
    on its own: on SDPA with the block-diagonal mask, on flex_attention's block mask (uncompiled on CPU),
    and on the NPU path with stand-in kernels for npu_fusion_attention and the other fused ops."""
    c = hf_config(LLAMA3_SCALING)
    _, plain = pair(c)
    kw = {"backend": Backend(backend, REFERENCE, compile_flex=False)}
    if backend == "npu":
        kw["ops"] = REFERENCE
    native = Llama(LlamaArgs.from_hf(c), **kw).eval()
    native.load_state_dict(plain.state_dict())
    lengths = [[9, 13, 11], [33]]  # row 0 holds three documents, row 1 one (+ the last token: a target only)
    batch = tokens(2, 34, c.vocab_size, seed=5)
    pos = torch.cat([_packed_positions(lengths), torch.zeros(2, 1, dtype=torch.long)], dim=1)
    with torch.no_grad():
        packed = causal_lm_loss(native, batch, pos)
        # each document alone (its targets: the next tokens inside the row, the last one crossing into the next)
        total, n = 0.0, 0
        for r, row in enumerate(lengths):
            start = 0
            for length in row:
                total = total + causal_lm_loss(plain, batch[r:r + 1, start:start + length + 1]) * length
                n, start = n + length, start + length
        torch.testing.assert_close(packed, total / n, rtol=1e-5, atol=1e-5)
        # without the document boundaries the same batch gives another loss (the test can fail)
        assert not torch.allclose(causal_lm_loss(native, batch), packed)


def test_packed_kwargs_from_the_trainer_are_understood():
    """train.packed_attention_kwargs (position ids + varlen lengths) drives the native model directly."""
    from ascendops_trainer.train import packed_attention_kwargs

    c = hf_config()
    _, native = pair(c)
    batch = tokens(2, 17, c.vocab_size, seed=6)
    pos = torch.cat([_packed_positions([[5, 11], [16]]), torch.zeros(2, 1, dtype=torch.long)], dim=1)
    kw = packed_attention_kwargs(pos, "cpu", torch.device("cpu"))
    with torch.no_grad():
        torch.testing.assert_close(causal_lm_loss(native, batch, packed=kw), causal_lm_loss(native, batch, pos))
        only_cu = {"cu_seq_lens_q": kw["cu_seq_lens_q"]}  # positions derived from the lengths
        torch.testing.assert_close(causal_lm_loss(native, batch, packed=only_cu), causal_lm_loss(native, batch, pos))


# (documents per sample, max_sequences of pack_layout, chunk the SDPA backend must pick, one document per chunk)
CHUNK_LAYOUTS = {
    "one-document-per-sample": ([[16], [16], [16]], 2048, 16, True),
    "documents-inside-samples": ([[5, 11], [16], [3, 3, 10]], 2048, 16, False),
    "equal-short-documents": ([[4, 4, 4, 4], [4, 4, 4, 4], [4, 4, 4, 4]], 2048, 4, True),  # smallest chunk wins
    # 6 documents, 3 kept: the sample start at token 32 merged into the document before it -> whole-row mask
    "merged-sample-start": ([[5, 11], [16], [3, 3, 10]], 3, 0, False),
}


@pytest.mark.parametrize("layout", list(CHUNK_LAYOUTS))
def test_packed_sdpa_per_chunk_equals_the_whole_row_mask(layout, monkeypatch):
    """The SDPA backend runs a packed row as equal chunks that each start a document (causal kernel when each
    holds one document, else a per-chunk mask) and falls back to the whole-row mask otherwise; loss and
    gradients equal the whole-row mask's."""
    from ascendops_trainer import llama
    from ascendops_trainer.train import packed_attention_kwargs

    lengths, max_sequences, chunk, one_doc = CHUNK_LAYOUTS[layout]
    c = hf_config(LLAMA3_SCALING)
    _, native = pair(c)
    batch = tokens(3, 17, c.vocab_size, seed=8)
    pos = torch.cat([_packed_positions(lengths), torch.zeros(3, 1, dtype=torch.long)], dim=1)
    kw = packed_attention_kwargs(pos, "cpu", torch.device("cpu"), max_sequences)
    ab = native.backend.batch((1, 48), torch.device("cpu"), kw["position_ids"], kw["cu_seq_lens_q"])
    assert ab.chunk == chunk
    if not chunk:
        assert ab.mask.shape == (1, 1, 48, 48)
    else:
        assert ab.mask is None if one_doc else ab.mask.shape == (48 // chunk, 1, chunk, chunk)
    only_cu = native.backend.batch((1, 48), torch.device("cpu"), None, kw["cu_seq_lens_q"])
    assert only_cu.chunk == chunk  # the same split from the lengths alone

    def loss_and_grads():
        native.zero_grad()
        loss = causal_lm_loss(native, batch, packed=kw)
        loss.backward()
        return loss.detach(), [p.grad.clone() for p in native.parameters()]

    got, got_grads = loss_and_grads()
    monkeypatch.setattr(llama, "_document_chunks", lambda *a: None)  # always the whole-row mask
    want, want_grads = loss_and_grads()
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    for (n, _), g, w in zip(native.named_parameters(), got_grads, want_grads, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-7, msg=n)


def test_sdpa_chunks_give_the_attention_of_the_whole_row_mask():
    """Attention itself (GQA, random q/k/v): the per-chunk result equals the whole-row mask's."""
    from ascendops_trainer.llama import AttnBatch, _doc_ids

    be = Backend("sdpa")
    pos = _packed_positions([[7, 9], [16], [2, 14], [16]]).reshape(1, -1)
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 64, h, 8, generator=g) for h in (4, 2, 2))
    ab = be.batch((1, 64), torch.device("cpu"), pos)
    assert ab.chunk == 16 and ab.mask.shape == (4, 1, 16, 16)
    doc, idx = _doc_ids(pos, None, 64, torch.device("cpu")), torch.arange(64)
    whole = AttnBatch("sdpa", mask=((doc[:, None] == doc[None, :]) & (idx[None, :] <= idx[:, None]))[None, None])
    torch.testing.assert_close(be(q, k, v, ab, 0.3), be(q, k, v, whole, 0.3), rtol=1e-6, atol=1e-6)
    assert not torch.allclose(be(q, k, v, AttnBatch("sdpa"), 0.3), be(q, k, v, whole, 0.3))  # masking matters


@pytest.mark.parametrize("packed", [False, True])
def test_npu_path_with_stand_in_kernels_gives_the_cpu_loss_and_gradients(packed):
    c = hf_config(LLAMA3_SCALING)
    _, cpu = pair(c)
    npu = Llama(LlamaArgs.from_hf(c), Backend("npu", REFERENCE), ops=REFERENCE)
    npu.load_state_dict(cpu.state_dict())
    assert npu.fused_ops == ["rms_norm", "rope", "swiglu"]
    calls = {}

    def counted(name):
        fn = getattr(REFERENCE, name)

        def wrapper(*a, **k):
            calls[name] = calls.get(name, 0) + 1
            return fn(*a, **k)
        return wrapper

    ops = types.SimpleNamespace(**{n: counted(n) for n in ("npu_rms_norm", "npu_rotary_mul", "npu_swiglu",
                                                            "npu_fusion_attention")})
    npu = Llama(LlamaArgs.from_hf(c), Backend("npu", ops), ops=ops)
    npu.load_state_dict(cpu.state_dict())
    batch = tokens(2, 25, c.vocab_size, seed=7)
    pos = torch.cat([_packed_positions([[10, 14], [24]]), torch.zeros(2, 1, dtype=torch.long)], dim=1) if packed \
        else None
    want = causal_lm_loss(cpu, batch, pos)
    got = causal_lm_loss(npu, batch, pos)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    want.backward()
    got.backward()
    for (n, p), q in zip(cpu.named_parameters(), npu.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-6, msg=n)
    layers = c.num_hidden_layers
    assert calls == {"npu_rms_norm": 2 * layers + 1, "npu_rotary_mul": 2 * layers,  # q and k
                     "npu_swiglu": layers, "npu_fusion_attention": layers}


def test_npu_backend_without_the_kernel_is_refused():
    with pytest.raises(ConfigError, match="npu_fusion_attention"):
        Backend("npu", types.SimpleNamespace())


def test_activation_checkpointing_and_chunked_loss_keep_the_gradients():
    c = hf_config(None, num_hidden_layers=4)
    _, base = pair(c)
    base.train()
    ck = Llama(LlamaArgs.from_hf(c), loss_chunk=7).train()
    ck.load_state_dict(base.state_dict())
    assert ck.set_activation_checkpointing(2) == [0, 2]
    assert [layer.gradient_checkpointing for layer in ck.layers] == [True, False, True, False]
    batch = tokens(2, 19, c.vocab_size, seed=8)
    a, b = causal_lm_loss(base, batch), causal_lm_loss(ck, batch)
    torch.testing.assert_close(b, a, rtol=1e-6, atol=1e-6)
    a.backward()
    b.backward()
    for (n, p), q in zip(base.named_parameters(), ck.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-5, atol=1e-7, msg=n)
    assert ck.set_activation_checkpointing(None) == []


def test_no_transformers_class_or_function_is_modified():
    """Building and running the native model (fused stand-ins, checkpointing, chunked loss) patches nothing."""
    from transformers.models.llama import modeling_llama as ml

    watched = {(cls, attr): getattr(cls, attr) for cls in (ml.LlamaRotaryEmbedding, ml.LlamaRMSNorm, ml.LlamaMLP,
                                                              ml.LlamaAttention, ml.LlamaDecoderLayer, ml.LlamaModel,
                                                              ml.LlamaForCausalLM) for attr in ("forward", "__init__")}
    module_fns = {n: getattr(ml, n) for n in ("apply_rotary_pos_emb", "rotate_half", "repeat_kv",
                                              "eager_attention_forward")}
    cfg = build_config({"model.preset": "debug", "model.implementation": "native", "model.checkpoint_every": 1,
                        "model.activation_checkpointing": True})
    from ascendops_trainer.model import build_hf_config

    m = build_model(cfg.model, build_hf_config(cfg.model, "cpu"), torch.float32, kernels=REFERENCE)
    assert isinstance(m, Llama) and m.fused_ops == ["rms_norm", "rope", "swiglu"]
    causal_lm_loss(m, tokens(2, 9, 512)).backward()
    for (cls, attr), fn in watched.items():
        assert getattr(cls, attr) is fn, f"{cls.__name__}.{attr} was replaced"
    for n, fn in module_fns.items():
        assert getattr(ml, n) is fn, f"modeling_llama.{n} was replaced"


def test_bf16_keeps_the_rope_frequencies_in_fp32():
    c = hf_config(LLAMA3_SCALING)
    m = Llama(LlamaArgs.from_hf(c)).to(torch.bfloat16)
    assert m.rotary.inv_freq.dtype == torch.float32
    assert torch.equal(m.rotary.inv_freq, rope_inv_freq(16, LLAMA3_SCALING))
    assert m.layers[0].attention.wqkv.weight.dtype == torch.bfloat16


def test_implementation_setting_is_validated_and_params_counted():
    with pytest.raises(ConfigError, match="model.implementation"):
        build_config({"model.implementation": "megatron"})
    from ascendops_trainer.model import build_hf_config, count_model_params

    for impl in ("native", "transformers"):
        cfg = build_config({"model.preset": "debug", "model.implementation": impl})
        hf = build_hf_config(cfg.model, "cpu")
        assert count_model_params(build_model(cfg.model, hf, torch.float32)) == param_counts(hf).total
    with pytest.raises(ConfigError, match="flash_attention_2"):
        build_hf_config(build_config({"model.implementation": "native",
                                      "model.attn_implementation": "flash_attention_2"}).model, "cpu")


def test_implementation_auto_keeps_a_resumed_checkpoint_s_and_builds_native_for_a_new_job(tmp_path):
    """model.implementation auto (the default): a resumed checkpoint's own implementation (a DeepSpeed checkpoint
    loads only into the model code that wrote it), native for a new job, transformers where native refuses the
    model; a set value is kept as it is."""
    import json

    from ascendops_trainer.model import attention_name, build_hf_config, is_native, resolve_implementation

    cfg = build_config({"model.preset": "debug"})
    assert cfg.model.implementation == "auto"
    assert resolve_implementation(cfg.model) == ("native", "a new job, and the trainer's own Llama 3 builds this model")
    assert resolve_implementation(cfg.model, "transformers")[0] == "transformers"
    assert resolve_implementation(cfg.model, "native")[0] == "native"
    assert is_native(cfg.model) and type(build_model(cfg.model, build_hf_config(cfg.model), torch.float32)) is Llama
    assert attention_name(cfg.model, build_hf_config(cfg.model), "cpu") == "native-sdpa"
    for impl in ("native", "transformers"):  # set: kept, whatever a checkpoint says (plan_resume refuses a mismatch)
        set_cfg = build_config({"model.preset": "debug", "model.implementation": impl})
        assert resolve_implementation(set_cfg.model, "transformers" if impl == "native" else "native")[0] == impl
    # a model the native code does not build (biases: not Llama 3) falls back to transformers, saying why
    hf = dict(config_dict(cfg.model), model_type="llama", attention_bias=True)
    (tmp_path / "config.json").write_text(json.dumps(hf))
    biased = build_config({"model.hf_dir": str(tmp_path)})
    impl, why = resolve_implementation(biased.model)
    assert impl == "transformers" and "attention_bias" in why and not is_native(biased.model)
    assert attention_name(biased.model, build_hf_config(biased.model), "cpu") == "sdpa"


def test_backend_choice_per_device():
    assert Backend.choose("npu") == "npu" and Backend.choose("cpu") == "sdpa"
    assert Backend.choose("cuda") == "flex" and Backend.choose("cuda", "sdpa") == "sdpa"
    assert Backend.choose("npu", "eager") == "sdpa"


def test_plain_causal_attention_is_sdpa_causal():
    """Unpacked batches: SDPA's causal kernel; the result equals the explicit mask."""
    c = hf_config()
    _, native = pair(c)
    batch = tokens(1, 12, c.vocab_size)
    pos = torch.arange(12).unsqueeze(0)
    with torch.no_grad():
        torch.testing.assert_close(causal_lm_loss(native, batch), causal_lm_loss(native, batch, pos))


ZERO3_SCRIPT = r"""
import sys, torch, torch.distributed as dist
dist.init_process_group("gloo")
import deepspeed
from ascendops_trainer.config import build_config
from ascendops_trainer.model import build_hf_config, build_model
from ascendops_trainer.train import causal_lm_loss
cfg = build_config({"model.implementation": "native"})
hf = build_hf_config(cfg.model, "cpu")
ds = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}}
m = build_model(cfg.model, hf, torch.float32, ds, device=torch.device("cpu"))
assert all(p.dtype == torch.float32 for p in m.parameters()), "zero.Init changed the dtype"
engine, *_ = deepspeed.initialize(model=m, config=ds)
engine.eval()
x = torch.randint(0, 512, (2, 17), generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    got = engine(input_ids=x).logits
    loss = causal_lm_loss(engine, x)
    full = {}
    for n, p in m.named_parameters():
        with deepspeed.zero.GatheredParameters([p]):
            full[n] = p.detach().clone()
ref = build_model(build_config({"model.implementation": "native"}).model, hf, torch.float32).eval()
ref.load_state_dict(full)
with torch.no_grad():
    torch.testing.assert_close(got, ref(x).logits, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(loss, causal_lm_loss(ref, x), rtol=1e-6, atol=1e-6)
print("ZERO3 OK")
"""


def test_zero3_engine_computes_with_the_weights_it_holds(tmp_path):
    """Built inside zero.Init (ZeRO-3), the engine's logits and loss are those of its gathered weights in
    fp32 (DeepSpeed's zero.Init given dtype= picks bf16 on a CPU accelerator: the logits then differed)."""
    import subprocess
    import sys

    from _trainer_helpers import one_rank_env

    proc = subprocess.run([sys.executable, "-c", ZERO3_SCRIPT], env=one_rank_env(), capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0 and "ZERO3 OK" in proc.stdout, (proc.stdout + proc.stderr)[-4000:]


def test_bench_documents_are_packed_as_train_packs_them():
    """bench.doc_len: synthetic documents restarting at every sample start, packed by train's own
    packed_attention_kwargs; the native SDPA backend then runs one chunk per sample; 0 = no packing."""
    from ascendops_trainer.bench import document_kwargs, document_positions

    g = torch.Generator().manual_seed(0)
    assert document_kwargs(4, 64, 0, g, "cpu", torch.device("cpu")) is None
    pos = document_positions(4, 64, 8, g)
    assert pos.shape == (4, 65) and bool((pos[:, 0] == 0).all())
    starts = torch.nonzero(pos.reshape(-1) == 0).flatten().tolist() + [pos.numel()]
    lengths = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert max(lengths) <= 15 and len(starts) > 4 * 3  # documents inside the samples, at most 2 * 8 - 1 long
    kw = document_kwargs(4, 64, 8, torch.Generator().manual_seed(0), "cpu", torch.device("cpu"))
    assert kw["position_ids"].shape == (1, 256)
    ab = Backend("sdpa").batch((1, 256), torch.device("cpu"), kw["position_ids"], kw["cu_seq_lens_q"])
    assert ab.chunk and 64 % ab.chunk == 0 and ab.mask is not None
