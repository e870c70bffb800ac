"""The trainer's own Llama 3 (torchtitan style, one file): `model.implementation: native`.

Same numerics as transformers' LlamaForCausalLM, loaded from and exported to its safetensors names
exactly (load_hf_state_dict / to_hf_state_dict), but built for training:

- fused projections: ``wqkv`` = [q; k; v] rows of q_proj, k_proj, v_proj (GQA), ``w13`` = [gate; up];
- RoPE cos/sin computed once per forward (default or Llama 3.1 "llama3" frequency scaling), applied
  in the rotate-half layout HF's q/k weights use (no permutation of the weights);
- attention chosen once, when the model is built (``Backend``): on NPU torch_npu's
  ``npu_fusion_attention`` (TND layout, one causal sequence per packed document), on CUDA
  flex_attention with a document block mask, elsewhere SDPA (plain causal when the batch is not packed;
  packed: per chunk when the row splits into equal chunks that each start a document, as the trainer's
  samples do - causal, or a per-chunk block-diagonal mask - else one block-diagonal causal mask over
  the whole row);
- NPU fused ops (``npu_rms_norm``, ``npu_rotary_mul``, ``npu_swiglu``, ``npu_fusion_attention``) come
  from a dispatch table (torch_npu, or kernels.REFERENCE in the tests): nothing is patched, in
  transformers or anywhere else;
- the loss in the output head's own forward (chunked cross-entropy, kernels.chunked_cross_entropy), so
  ZeRO-3 gathers the head's weight for it as for any layer;
- activation checkpointing per layer (every k-th layer), as model.activation_checkpointing asks.
"""

from __future__ import annotations

import glob
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from .config import ConfigError

IGNORE_INDEX = -100


# ---------------------------------------------------------------- config


@dataclass(frozen=True)
class LlamaArgs:
    vocab_size: int
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    ffn_dim: int
    norm_eps: float = 1e-5
    rope: dict[str, Any] = field(default_factory=lambda: {"rope_type": "default", "rope_theta": 500000.0})
    tie_embeddings: bool = False
    init_std: float = 0.02

    @classmethod
    def from_hf(cls, config) -> LlamaArgs:
        """From a transformers LlamaConfig or its dict (any RoPE layout: model.normalize_rope_fields)."""
        from .model import normalize_rope_fields

        d = dict(config) if isinstance(config, dict) else config.to_dict()
        d = normalize_rope_fields(d)
        if d.get("hidden_act", "silu") != "silu":
            raise ConfigError(f"model.implementation native: hidden_act {d.get('hidden_act')} (only silu: Llama)")
        if d.get("attention_bias") or d.get("mlp_bias"):
            raise ConfigError("model.implementation native: attention_bias/mlp_bias are not Llama 3; use transformers")
        heads = d["num_attention_heads"]
        return cls(vocab_size=d["vocab_size"], dim=d["hidden_size"], n_layers=d["num_hidden_layers"], n_heads=heads,
                   n_kv_heads=d.get("num_key_value_heads") or heads,
                   head_dim=d.get("head_dim") or d["hidden_size"] // heads, ffn_dim=d["intermediate_size"],
                   norm_eps=float(d.get("rms_norm_eps", 1e-5)), rope=dict(d["rope_parameters"]),
                   tie_embeddings=bool(d.get("tie_word_embeddings", False)),
                   init_std=float(d.get("initializer_range", 0.02)))


# ---------------------------------------------------------------- RoPE


def rope_inv_freq(head_dim: int, rope: dict[str, Any]) -> torch.Tensor:
    """Inverse frequencies (fp32, CPU), as transformers computes them (default, or "llama3" scaling)."""
    base = float(rope["rope_theta"])
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).to(dtype=torch.float) / head_dim))
    kind = rope.get("rope_type", "default")
    if kind == "default":
        return inv
    if kind != "llama3":
        raise ConfigError(f"model.implementation native supports rope_type default and llama3, not {kind}")
    factor, low, high = float(rope["factor"]), float(rope["low_freq_factor"]), float(rope["high_freq_factor"])
    old_len = rope["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old_len / low, old_len / high
    wavelen = 2 * math.pi / inv
    scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (old_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, scaled)


class Rotary(nn.Module):
    """cos/sin of the positions, [B, S, 1, head_dim] in the activations' dtype (computed in fp32)."""

    def __init__(self, head_dim: int, rope: dict[str, Any]):
        super().__init__()
        self._host = rope_inv_freq(head_dim, rope)
        self.register_buffer("inv_freq", self._host.clone(), persistent=False)

    def _apply(self, fn, recurse=True):  # .to(bf16) / .half() must not round the frequencies
        super()._apply(fn, recurse)
        if self.inv_freq.dtype != torch.float32 and self.inv_freq.device.type != "meta":
            self.inv_freq = self._host.to(self.inv_freq.device)
        return self

    def forward(self, position_ids: torch.Tensor, dtype: torch.dtype):
        inv = self.inv_freq if self.inv_freq.dtype == torch.float32 else self._host.to(position_ids.device)
        with torch.autocast(position_ids.device.type, enabled=False):
            freqs = position_ids[..., None].float() * inv  # [B, S, D/2]
            emb = torch.cat((freqs, freqs), dim=-1)[:, :, None, :]
            return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


# ---------------------------------------------------------------- attention backends


@dataclass
class AttnBatch:
    """What the attention of every layer needs about the batch, built once per forward."""

    backend: str
    # sdpa: bool [1, 1, T, T] over the whole row, or [T / chunk, 1, chunk, chunk] per chunk (None = plain
    # causal, per chunk when chunk is set); flex: BlockMask
    mask: Any = None
    cu_seqlens: list[int] | None = None  # npu: cumulative end of each sequence (host ints)
    chunk: int = 0  # sdpa, packed: the row runs as rows of `chunk` tokens, each starting a document (0: one row)


class Backend:
    """The attention implementation, chosen once: "npu" (npu_fusion_attention), "flex" (CUDA),
    "sdpa" (SDPA; block-diagonal mask when packed)."""

    NAMES = ("npu", "flex", "sdpa")

    def __init__(self, name: str, ops=None, compile_flex: bool = True):
        if name not in self.NAMES:
            raise ConfigError(f"unknown native attention backend {name}")
        if name == "npu" and (ops is None or not hasattr(ops, "npu_fusion_attention")):
            raise ConfigError("native attention on NPU needs torch_npu's npu_fusion_attention")
        self.name, self.ops = name, ops
        self._flex = None
        if name == "flex":
            from torch.nn.attention.flex_attention import flex_attention

            self._flex = torch.compile(flex_attention, dynamic=False) if compile_flex else flex_attention
        self._npu_mask: dict[Any, torch.Tensor] = {}

    @staticmethod
    def choose(device_type: str, requested: str = "auto") -> str:
        if requested in ("sdpa", "eager"):
            return "sdpa"
        if device_type == "npu":
            return "npu"
        if device_type == "cuda":
            try:
                import torch.nn.attention.flex_attention  # noqa: F401
            except ImportError:
                return "sdpa"
            return "flex"
        return "sdpa"

    def batch(self, input_shape, device, position_ids=None, cu_seqlens=None) -> AttnBatch:
        """Masks / lengths for a [B, S] batch; packed documents when position_ids (restarting at 0 at
        every document) or cu_seqlens are given (then B must be 1)."""
        b, s = input_shape
        packed = position_ids is not None or cu_seqlens is not None
        if self.name == "npu":
            if cu_seqlens is None and position_ids is not None:  # SYNC: the lengths are read on the host
                starts = torch.nonzero(position_ids.reshape(-1) == 0).flatten().tolist()
                cu_seqlens = starts + [b * s]
            if cu_seqlens is not None:
                ends = [int(x) for x in (cu_seqlens.tolist() if torch.is_tensor(cu_seqlens) else cu_seqlens)][1:]
            else:
                ends = [s * (i + 1) for i in range(b)]
            return AttnBatch("npu", cu_seqlens=ends)
        if not packed:
            return AttnBatch(self.name)  # plain causal
        doc = _doc_ids(position_ids, cu_seqlens, b * s, device)  # [T] on the device, no sync
        if self.name == "flex":
            from torch.nn.attention.flex_attention import create_block_mask

            def mask_mod(_b, _h, q, kv):
                return (doc[q] == doc[kv]) & (kv <= q)

            return AttnBatch("flex", mask=create_block_mask(mask_mod, None, None, b * s, b * s, device=device))
        split = _document_chunks(position_ids, cu_seqlens, b * s)
        if split is not None:  # attention never crosses a chunk boundary: each chunk alone, no T x T mask
            chunk, one_doc_each = split
            if one_doc_each:
                return AttnBatch("sdpa", chunk=chunk)  # causal kernel per chunk, no mask at all
            dc, i = doc.view(-1, chunk), torch.arange(chunk, device=device)
            mask = (dc[:, :, None] == dc[:, None, :]) & (i[None, :] <= i[:, None])
            return AttnBatch("sdpa", mask=mask[:, None], chunk=chunk)
        idx = torch.arange(b * s, device=device)  # no such split: one mask over the whole row
        mask = (doc[:, None] == doc[None, :]) & (idx[None, :] <= idx[:, None])
        return AttnBatch("sdpa", mask=mask[None, None])

    def __call__(self, q, k, v, ab: AttnBatch, scale: float):
        """q [B, S, Hq, D], k/v [B, S, Hkv, D] -> [B, S, Hq, D]."""
        b, s, hq, d = q.shape
        if ab.backend == "npu":
            t = b * s
            key = (q.device, q.dtype)
            if key not in self._npu_mask:  # sparse_mode 3 takes a 2048 x 2048 causal mask, once per device
                self._npu_mask[key] = torch.triu(torch.ones(2048, 2048, device=q.device), diagonal=1).bool()
            out = self.ops.npu_fusion_attention(
                q.reshape(t, hq, d), k.reshape(t, k.shape[2], d), v.reshape(t, v.shape[2], d), hq, "TND",
                atten_mask=self._npu_mask[key], scale=scale, keep_prob=1.0, sparse_mode=3,
                actual_seq_qlen=tuple(ab.cu_seqlens), actual_seq_kvlen=tuple(ab.cu_seqlens))[0]
            return out.reshape(b, s, hq, d)
        gqa = hq != k.shape[2]
        if ab.backend == "flex":
            qf, kf, vf = (x.reshape(1, b * s, x.shape[2], d).transpose(1, 2) for x in (q, k, v))
            out = self._flex(qf, kf, vf, block_mask=ab.mask, scale=scale, enable_gqa=gqa)
            return out.transpose(1, 2).reshape(b, s, hq, d)
        if ab.chunk or ab.mask is not None:  # packed: [T / chunk, chunk] rows, or the whole row as one
            chunk = ab.chunk or b * s
            qs, ks, vs = (x.reshape(b * s // chunk, chunk, x.shape[2], d).transpose(1, 2) for x in (q, k, v))
            out = F.scaled_dot_product_attention(qs, ks, vs, attn_mask=ab.mask, is_causal=ab.mask is None,
                                                 scale=scale, enable_gqa=gqa)
            return out.transpose(1, 2).reshape(b, s, hq, d)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True,
                                             scale=scale, enable_gqa=gqa)
        return out.transpose(1, 2)


def _document_chunks(position_ids, cu_seqlens, total: int) -> tuple[int, bool] | None:
    """(L, one document per chunk) for the smallest L < total dividing the packed row into equal chunks
    that each begin with a document (as every sample of the trainer's micro-batch does: position 0), so
    no attention crosses a chunk boundary; None when there is none (e.g. pack_layout merged a sample
    start into the document before it). The documents come from the same source as _doc_ids's."""
    if position_ids is not None:
        # SYNC: the document starts are read on the host, once per forward (not per layer). This is the
        # SDPA backend: the CPU, where the read costs no device sync, unless SDPA was asked for on an
        # accelerator; there it is one small copy that saves (T / L)-fold attention work in every layer.
        starts = torch.nonzero(position_ids.reshape(-1) == 0).flatten().cpu()
    else:
        # SYNC: as above (the trainer's lengths are host tensors; only lengths already on a device copy)
        cu = torch.as_tensor(cu_seqlens).reshape(-1).cpu()
        starts = cu[:-1].to(torch.int64)
    is_start = torch.zeros(total, dtype=torch.bool)
    is_start[starts] = True
    if not bool(is_start[0]):
        return None
    divisors = sorted({d for i in range(1, math.isqrt(total) + 1) if total % i == 0 for d in (i, total // i)})
    for length in divisors[:-1]:  # the last is the whole row: the whole-row mask
        if bool(is_start[::length].all()):
            return length, int(is_start.sum()) == total // length
    return None


def _doc_ids(position_ids, cu_seqlens, total: int, device) -> torch.Tensor:
    """Document index of every token of the flattened batch."""
    if position_ids is not None:
        return torch.cumsum((position_ids.reshape(-1) == 0).to(torch.int32), 0)
    cu = torch.as_tensor(cu_seqlens, device=device)
    return torch.bucketize(torch.arange(total, device=device), cu[1:-1].to(torch.int64), right=True)


# ---------------------------------------------------------------- layers


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float, ops=None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps, self.ops = eps, ops

    def forward(self, x):
        if self.ops is not None:
            return self.ops.npu_rms_norm(x, self.weight, epsilon=self.eps)[0]
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(x.dtype)


class _Linear(nn.Linear):
    """nn.Linear without bias, initialised N(0, std) in its own constructor (so under ZeRO-3's
    zero.Init the weight is initialised before it is partitioned)."""

    std = 0.02

    def __init__(self, n_in: int, n_out: int):
        super().__init__(n_in, n_out, bias=False)

    def reset_parameters(self):
        nn.init.normal_(self.weight, mean=0.0, std=_Linear.std)


class _Embedding(nn.Embedding):
    def reset_parameters(self):
        nn.init.normal_(self.weight, mean=0.0, std=_Linear.std)


class Attention(nn.Module):
    def __init__(self, a: LlamaArgs, backend: Backend, rope_ops=None):
        super().__init__()
        self.n_heads, self.n_kv, self.head_dim = a.n_heads, a.n_kv_heads, a.head_dim
        self.wqkv = _Linear(a.dim, (a.n_heads + 2 * a.n_kv_heads) * a.head_dim)
        self.wo = _Linear(a.n_heads * a.head_dim, a.dim)
        self.scale = a.head_dim ** -0.5
        self.backend, self.rope_ops = backend, rope_ops

    def _rope(self, x, cos, sin):
        if self.rope_ops is not None:
            return self.rope_ops.npu_rotary_mul(x, cos, sin)
        return x * cos + rotate_half(x) * sin

    def forward(self, x, cos, sin, ab: AttnBatch):
        b, s, _ = x.shape
        hd = self.head_dim
        q, k, v = self.wqkv(x).split([self.n_heads * hd, self.n_kv * hd, self.n_kv * hd], dim=-1)
        q = self._rope(q.view(b, s, self.n_heads, hd), cos, sin)
        k = self._rope(k.view(b, s, self.n_kv, hd), cos, sin)
        out = self.backend(q, k, v.view(b, s, self.n_kv, hd), ab, self.scale)
        return self.wo(out.reshape(b, s, self.n_heads * hd))


class FeedForward(nn.Module):
    def __init__(self, a: LlamaArgs, ops=None):
        super().__init__()
        self.w13 = _Linear(a.dim, 2 * a.ffn_dim)
        self.w2 = _Linear(a.ffn_dim, a.dim)
        self.ops = ops

    def forward(self, x):
        h = self.w13(x)
        if self.ops is not None:
            return self.w2(self.ops.npu_swiglu(h, dim=-1))
        gate, up = h.chunk(2, dim=-1)
        return self.w2(F.silu(gate) * up)


class Block(nn.Module):
    def __init__(self, a: LlamaArgs, backend: Backend, ops: dict[str, Any]):
        super().__init__()
        self.attention_norm = RMSNorm(a.dim, a.norm_eps, ops.get("rms_norm"))
        self.attention = Attention(a, backend, ops.get("rope"))
        self.ffn_norm = RMSNorm(a.dim, a.norm_eps, ops.get("rms_norm"))
        self.feed_forward = FeedForward(a, ops.get("swiglu"))
        self.gradient_checkpointing = False  # recompute this layer in backward

    def forward(self, x, cos, sin, ab: AttnBatch):
        h = x + self.attention(self.attention_norm(x), cos, sin, ab)
        return h + self.feed_forward(self.ffn_norm(h))


class OutputHead(_Linear):
    """The lm head; with targets it returns the mean cross-entropy instead of the logits (chunked:
    only one chunk's fp32 logits at a time)."""

    def __init__(self, dim: int, vocab: int, chunk: int = 0):
        super().__init__(dim, vocab)
        self.chunk = chunk

    def forward(self, h, targets=None):
        if targets is None:
            return super().forward(h)
        if self.chunk > 0:
            from .kernels import chunked_cross_entropy

            return chunked_cross_entropy(h, self.weight, targets, self.chunk, IGNORE_INDEX)
        logits = super().forward(h).float()
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=IGNORE_INDEX)


class LlamaOutput(NamedTuple):
    """A named tuple (DeepSpeed's ZeRO-3 hooks find the tensors in a tuple, not in an arbitrary object)."""

    logits: torch.Tensor | None = None
    loss: torch.Tensor | None = None


class Llama(nn.Module):
    """Llama 3 decoder. forward(input_ids, position_ids=None, cu_seq_lens_q=None, targets=None) ->
    LlamaOutput (logits, or the loss when targets are given). position_ids restarting at 0 mark packed
    documents (attention stays inside each; batch of one row), as train.packed_attention_kwargs gives them."""

    computes_loss = True  # train.causal_lm_loss passes the targets in

    def __init__(self, args: LlamaArgs, backend: Backend | None = None, ops=None, fused: dict[str, bool] | None = None,
                 loss_chunk: int = 0):
        super().__init__()
        self.args = args
        self.backend = backend or Backend("sdpa")
        fused = fused if fused is not None else {"rms_norm": True, "rope": True, "swiglu": True}
        table = {}
        if ops is not None:
            for name, attr in (("rms_norm", "npu_rms_norm"), ("rope", "npu_rotary_mul"), ("swiglu", "npu_swiglu")):
                if fused.get(name) and hasattr(ops, attr):
                    table[name] = ops
        self.fused_ops = sorted(table)
        old = _Linear.std
        _Linear.std = args.init_std
        try:
            self.tok_embeddings = _Embedding(args.vocab_size, args.dim)
            self.layers = nn.ModuleList(Block(args, self.backend, table) for _ in range(args.n_layers))
            self.norm = RMSNorm(args.dim, args.norm_eps, table.get("rms_norm"))
            self.output = OutputHead(args.dim, args.vocab_size, loss_chunk)
        finally:
            _Linear.std = old
        if args.tie_embeddings:
            self.output.weight = self.tok_embeddings.weight
        self.rotary = Rotary(args.head_dim, args.rope)

    def set_activation_checkpointing(self, every: int | None) -> list[int]:
        """Recompute every `every`-th layer in backward (None/0: none); returns the layer indices."""
        chosen = []
        for i, layer in enumerate(self.layers):
            layer.gradient_checkpointing = bool(every) and i % every == 0
            if layer.gradient_checkpointing:
                chosen.append(i)
        return chosen

    def forward(self, input_ids, position_ids=None, cu_seq_lens_q=None, targets=None, **_ignored) -> LlamaOutput:
        b, s = input_ids.shape
        h = self.tok_embeddings(input_ids)
        packed = position_ids is not None or cu_seq_lens_q is not None
        if position_ids is None:
            position_ids = (_positions_from_cu(cu_seq_lens_q, b * s, input_ids.device).view(b, s) if packed
                            else torch.arange(s, device=input_ids.device).expand(b, s))
        cos, sin = self.rotary(position_ids, h.dtype)
        ab = self.backend.batch((b, s), input_ids.device, position_ids if packed else None, cu_seq_lens_q)
        for layer in self.layers:
            if layer.gradient_checkpointing and self.training and torch.is_grad_enabled():
                from torch.utils.checkpoint import checkpoint

                h = checkpoint(layer, h, cos, sin, ab, use_reentrant=False)
            else:
                h = layer(h, cos, sin, ab)
        h = self.norm(h)
        if targets is not None:
            return LlamaOutput(loss=self.output(h, targets))
        return LlamaOutput(logits=self.output(h))


def _positions_from_cu(cu, total: int, device) -> torch.Tensor:
    doc = _doc_ids(None, cu, total, device)
    starts = torch.as_tensor(cu, device=device)[:-1].to(torch.int64)
    return torch.arange(total, device=device) - starts[doc]


# ---------------------------------------------------------------- Hugging Face weights


def _hf_layer(i: int) -> str:
    return f"model.layers.{i}."


def native_to_hf(name: str, tensor: torch.Tensor, args: LlamaArgs) -> list[tuple[str, torch.Tensor]]:
    """The HF (name, tensor) pairs one native parameter holds (fused ones split)."""
    if name == "tok_embeddings.weight":
        return [("model.embed_tokens.weight", tensor)]
    if name == "norm.weight":
        return [("model.norm.weight", tensor)]
    if name == "output.weight":
        return [] if args.tie_embeddings else [("lm_head.weight", tensor)]
    parts = name.split(".")
    if parts[0] != "layers" or len(parts) < 4:
        raise KeyError(f"not a Llama parameter: {name}")
    pre, rest = _hf_layer(int(parts[1])), ".".join(parts[2:])
    q, kv = args.n_heads * args.head_dim, args.n_kv_heads * args.head_dim
    if rest == "attention.wqkv.weight":
        wq, wk, wv = tensor.split([q, kv, kv], dim=0)
        return [(pre + "self_attn.q_proj.weight", wq), (pre + "self_attn.k_proj.weight", wk),
                (pre + "self_attn.v_proj.weight", wv)]
    if rest == "feed_forward.w13.weight":
        gate, up = tensor.split([args.ffn_dim, args.ffn_dim], dim=0)
        return [(pre + "mlp.gate_proj.weight", gate), (pre + "mlp.up_proj.weight", up)]
    simple = {"attention.wo.weight": "self_attn.o_proj.weight", "feed_forward.w2.weight": "mlp.down_proj.weight",
              "attention_norm.weight": "input_layernorm.weight", "ffn_norm.weight": "post_attention_layernorm.weight"}
    if rest not in simple:
        raise KeyError(f"not a Llama parameter: {name}")
    return [(pre + simple[rest], tensor)]


def hf_sources(args: LlamaArgs) -> dict[str, list[str]]:
    """native parameter name -> the HF names it is made of (in concatenation order)."""
    out = {"tok_embeddings.weight": ["model.embed_tokens.weight"], "norm.weight": ["model.norm.weight"]}
    if not args.tie_embeddings:
        out["output.weight"] = ["lm_head.weight"]
    for i in range(args.n_layers):
        p = _hf_layer(i)
        out.update({
            f"layers.{i}.attention.wqkv.weight": [p + f"self_attn.{x}_proj.weight" for x in "qkv"],
            f"layers.{i}.attention.wo.weight": [p + "self_attn.o_proj.weight"],
            f"layers.{i}.feed_forward.w13.weight": [p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"],
            f"layers.{i}.feed_forward.w2.weight": [p + "mlp.down_proj.weight"],
            f"layers.{i}.attention_norm.weight": [p + "input_layernorm.weight"],
            f"layers.{i}.ffn_norm.weight": [p + "post_attention_layernorm.weight"],
        })
    return out


def load_hf_state_dict(hf: dict[str, torch.Tensor], args: LlamaArgs) -> dict[str, torch.Tensor]:
    """HF LlamaForCausalLM state dict -> native (fused) state dict. Refuses missing or unknown names."""
    sources = hf_sources(args)
    used = {n for names in sources.values() for n in names}
    unknown = sorted(k for k in hf if k not in used and not (k == "lm_head.weight" and args.tie_embeddings)
                     and not k.endswith("rotary_emb.inv_freq"))
    missing = sorted(n for n in used if n not in hf)
    if unknown or missing:
        raise ConfigError(f"Llama weights do not match the config: missing {missing[:5]}, unexpected {unknown[:5]}")
    out = {k: hf[names[0]] if len(names) == 1 else torch.cat([hf[n] for n in names], dim=0)
           for k, names in sources.items()}
    if args.tie_embeddings:  # one matrix, two names in the native state dict
        out["output.weight"] = out["tok_embeddings.weight"]
    return out


def to_hf_state_dict(sd: dict[str, torch.Tensor], args: LlamaArgs) -> dict[str, torch.Tensor]:
    """Native state dict -> HF names and shapes (the exact inverse of load_hf_state_dict)."""
    out: dict[str, torch.Tensor] = {}
    for k, t in sd.items():
        for n, piece in native_to_hf(k, t, args):
            out[n] = piece.contiguous()
    return out


class SafetensorsDir:
    """A local HF model directory's tensors, read lazily by name (model.safetensors or its index)."""

    def __init__(self, path: str):
        index = os.path.join(path, "model.safetensors.index.json")
        if os.path.isfile(index):
            with open(index) as f:
                wm = json.load(f)["weight_map"]
            self.where = {k: os.path.join(path, v) for k, v in wm.items()}
        else:
            from safetensors import safe_open

            self.where = {}
            for file in sorted(glob.glob(os.path.join(path, "*.safetensors"))):
                with safe_open(file, "pt") as f:
                    self.where.update({k: file for k in f.keys()})  # noqa: SIM118 - safe_open has no __iter__
        if not self.where:
            raise ConfigError(f"model.hf_dir {path} holds no *.safetensors weights")

    def keys(self):
        return self.where.keys()

    def get(self, name: str) -> torch.Tensor:
        from safetensors import safe_open

        with safe_open(self.where[name], "pt") as f:
            return f.get_tensor(name)


def load_hf_dir(model: Llama, path: str, zero3: bool = False, is_main: bool = True) -> None:
    """Copy the weights of a HF directory into `model`, parameter by parameter (under ZeRO-3 each one is
    gathered, filled on rank 0 and re-partitioned: the full model never exists on one device)."""
    import contextlib

    src = SafetensorsDir(path)
    sources = hf_sources(model.args)
    missing = sorted(n for names in sources.values() for n in names if n not in src.where)
    if missing:
        raise ConfigError(f"model.hf_dir {path}: weights missing for this config: {missing[:5]}")
    for name, p in model.named_parameters():
        if zero3:
            import deepspeed

            ctxm = deepspeed.zero.GatheredParameters([p], modifier_rank=0)
        else:
            ctxm = contextlib.nullcontext()
        with ctxm, torch.no_grad():
            if is_main or not zero3:
                parts = [src.get(n) for n in sources[name]]
                t = parts[0] if len(parts) == 1 else torch.cat(parts, dim=0)
                if tuple(t.shape) != tuple(p.shape):
                    raise ConfigError(f"model.hf_dir {path}: {sources[name]} has shape {tuple(t.shape)}, the config "
                                      f"expects {tuple(p.shape)}")
                p.copy_(t.to(p.dtype))


def is_native(module) -> bool:
    return bool(getattr(getattr(module, "module", module), "computes_loss", False))
