"""Fused kernels (torch_npu on Ascend) and the chunked cross-entropy.

Each fused op replaces one piece of transformers' Llama code and has its own switch
(``model.fused_rms_norm``, ``fused_rope``, ``fused_swiglu``):

- RMSNorm -> ``torch_npu.npu_rms_norm(x, weight, epsilon)``
- RoPE    -> ``torch_npu.npu_rotary_mul(x, cos, sin)`` (rotate-half layout, as Llama uses)
- SwiGLU  -> ``torch_npu.npu_swiglu(cat([gate, up], -1), dim=-1)`` = silu(gate) * up
- attention: ``model.attn_implementation`` auto = transformers' flash_attention_2, which on NPU calls
  ``torch_npu.npu_fusion_attention`` (and masks packed documents through position_ids).

Where torch_npu is missing (CPU, CUDA) nothing is patched: the stock transformers code runs. The
``REFERENCE`` kernels below compute in plain PyTorch what each NPU kernel computes, with the same
arguments; the tests patch a model with them and check it matches the stock model, so the wiring
(argument layouts, concatenation order, shapes) is tested without an NPU.
"""

from __future__ import annotations

import logging
import types
from typing import Any

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- kernels

# npu_fusion_attention, input_layout TND (packed documents): at most 2K sequences (B) per call.
NPU_FA_MAX_SEQUENCES = 2048


def _ref_rms_norm(x, weight, epsilon=1e-6):
    import torch

    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + epsilon)
    return (weight * y.to(x.dtype),)  # npu_rms_norm returns (y, rstd)


def _ref_rotary_mul(x, cos, sin):
    import torch

    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def _ref_swiglu(x, dim=-1):
    import torch.nn.functional as F

    gate, up = x.chunk(2, dim=dim)
    return F.silu(gate) * up


def _ref_fusion_attention(query, key, value, head_num, input_layout, atten_mask=None, scale=1.0, keep_prob=1.0,
                          sparse_mode=0, actual_seq_qlen=None, actual_seq_kvlen=None, **_):
    """npu_fusion_attention as the native model calls it: TND layout ([tokens, heads, dim], GQA), causal
    (sparse_mode 3) inside each sequence; actual_seq_qlen/kvlen = the cumulative end of each one."""
    import torch
    import torch.nn.functional as F

    if input_layout != "TND" or sparse_mode != 3 or keep_prob != 1.0 or list(actual_seq_qlen) != list(actual_seq_kvlen):
        raise NotImplementedError("reference npu_fusion_attention: TND, sparse_mode 3, no dropout only")
    if head_num != query.shape[1] or atten_mask is None or atten_mask.shape != (2048, 2048):
        raise ValueError("npu_fusion_attention: head_num must be the query's heads; sparse_mode 3 needs a "
                         "2048 x 2048 mask")
    rep = query.shape[1] // key.shape[1]
    outs, start = [], 0
    for end in actual_seq_qlen:
        q, k, v = (x[start:end].transpose(0, 1) for x in (query, key, value))  # [heads, len, dim]
        k, v = k.repeat_interleave(rep, 0), v.repeat_interleave(rep, 0)
        outs.append(F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale).transpose(0, 1))
        start = end
    if start != query.shape[0]:
        raise ValueError(f"actual_seq_qlen ends at {start}, the query has {query.shape[0]} tokens")
    return (torch.cat(outs, 0),)  # (attention_out, softmax_max, softmax_sum, ...): the output first


REFERENCE = types.SimpleNamespace(npu_rms_norm=_ref_rms_norm, npu_rotary_mul=_ref_rotary_mul,
                                  npu_swiglu=_ref_swiglu, npu_fusion_attention=_ref_fusion_attention,
                                  name="reference (plain PyTorch)")


def npu_kernels():
    """torch_npu (which holds the fused kernels) when it is importable, else None."""
    import importlib.util

    if importlib.util.find_spec("torch_npu") is None:
        return None
    import torch_npu

    return torch_npu


# ---------------------------------------------------------------- patching


def apply_fused_kernels(model, mcfg, ops) -> list[str]:
    """Route the switched-on ops of a LlamaForCausalLM through `ops` (torch_npu or REFERENCE).

    Returns the names of the ops patched. ``ops=None`` patches nothing (stock code).
    """
    if ops is None:
        return []
    from transformers.models.llama import modeling_llama as ml

    done = []
    if mcfg.fused_rms_norm and hasattr(ops, "npu_rms_norm"):
        def rms_forward(self, hidden_states):
            return ops.npu_rms_norm(hidden_states, self.weight, epsilon=self.variance_epsilon)[0]

        for m in model.modules():
            if isinstance(m, ml.LlamaRMSNorm):
                m.forward = types.MethodType(rms_forward, m)
        done.append("rms_norm")
    if mcfg.fused_swiglu and hasattr(ops, "npu_swiglu") and model.config.hidden_act == "silu":
        import torch

        def mlp_forward(self, x):
            return self.down_proj(ops.npu_swiglu(torch.cat((self.gate_proj(x), self.up_proj(x)), dim=-1), dim=-1))

        for m in model.modules():
            if isinstance(m, ml.LlamaMLP):
                m.forward = types.MethodType(mlp_forward, m)
        done.append("swiglu")
    if mcfg.fused_rope and hasattr(ops, "npu_rotary_mul"):
        def rope(q, k, cos, sin, unsqueeze_dim=1):
            cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
            return ops.npu_rotary_mul(q, cos, sin), ops.npu_rotary_mul(k, cos, sin)

        # LlamaAttention.forward looks the function up in its module's globals at call time.
        _remember_stock_rope()
        ml.apply_rotary_pos_emb = rope
        done.append("rope")
    if done:
        log.info("fused kernels (%s): %s", getattr(ops, "name", getattr(ops, "__name__", "?")), ", ".join(done))
    return done


_STOCK_ROPE: Any = None


def _remember_stock_rope() -> None:
    global _STOCK_ROPE
    if _STOCK_ROPE is None:
        from transformers.models.llama import modeling_llama as ml

        _STOCK_ROPE = ml.apply_rotary_pos_emb


def restore_stock_rope() -> None:
    """Undo the module-level RoPE patch (tests, and a bench run that compares the switches)."""
    if _STOCK_ROPE is not None:
        from transformers.models.llama import modeling_llama as ml

        ml.apply_rotary_pos_emb = _STOCK_ROPE


# ---------------------------------------------------------------- chunked cross-entropy


IGNORE_INDEX = -100  # targets with this id take no part in the loss (F.cross_entropy's default)


def _chunked_ce_function():
    import torch

    class ChunkedCrossEntropy(torch.autograd.Function):
        """mean CE(hidden @ weight.T, targets) over the targets != ignore_index, `chunk` rows at a time.

        Forward keeps only each row's logsumexp; backward recomputes each chunk's logits. The fp32
        logits of at most `chunk` tokens exist at any time (not [tokens x vocab] for the whole batch).
        Matmuls run in the weight's dtype, the softmax in fp32 (as ``logits.float()`` would). The mean
        is over the valid tokens (F.cross_entropy's reduction); with none valid the loss is 0 with zero
        gradients (F.cross_entropy gives NaN, which would stop the run as non-finite). The count stays
        on the device: no host sync.
        """

        @staticmethod
        def forward(ctx, hidden, weight, targets, chunk, ignore_index):
            h = hidden.reshape(-1, hidden.size(-1))
            t = targets.reshape(-1)
            valid = t != ignore_index
            safe_t = torch.where(valid, t, torch.zeros_like(t))  # any id: the row is masked out below
            n_valid = valid.sum().clamp(min=1).float()
            total = torch.zeros((), dtype=torch.float32, device=h.device)
            lses = []
            for s in range(0, h.size(0), chunk):
                logits = (h[s:s + chunk] @ weight.t()).float()
                lse = torch.logsumexp(logits, dim=-1)
                nll = lse - logits.gather(1, safe_t[s:s + chunk, None]).squeeze(1)
                total += torch.where(valid[s:s + chunk], nll, torch.zeros_like(nll)).sum()
                lses.append(lse)
            ctx.save_for_backward(hidden, weight, safe_t, valid, n_valid, torch.cat(lses))
            ctx.chunk = chunk
            return total / n_valid

        @staticmethod
        def backward(ctx, grad_out):
            hidden, weight, safe_t, valid, n_valid, lse = ctx.saved_tensors
            chunk = ctx.chunk
            h = hidden.reshape(-1, hidden.size(-1))
            grad_h = torch.empty_like(h)
            grad_w = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device)
            scale = grad_out / n_valid
            for s in range(0, h.size(0), chunk):
                hc = h[s:s + chunk]
                # in place on the chunk's fresh logits: no further [chunk x vocab] buffers
                p = (hc @ weight.t()).float().sub_(lse[s:s + chunk, None]).exp_()
                p[torch.arange(p.size(0), device=p.device), safe_t[s:s + chunk]] -= 1.0
                p = p.mul_(valid[s:s + chunk, None] * scale).to(weight.dtype)  # ignored rows: no gradient
                grad_h[s:s + chunk] = p @ weight
                grad_w += (p.t() @ hc).float()
            return grad_h.view_as(hidden), grad_w.to(weight.dtype), None, None, None

    return ChunkedCrossEntropy


_CE = None


def chunked_cross_entropy(hidden, weight, targets, chunk: int, ignore_index: int = IGNORE_INDEX):
    """Mean next-token cross-entropy of hidden @ weight.T against targets (ignore_index excluded),
    `chunk` tokens at a time."""
    global _CE
    if _CE is None:
        _CE = _chunked_ce_function()
    return _CE.apply(hidden, weight, targets, chunk, ignore_index)


def install_chunked_loss(model, chunk: int) -> bool:
    """Make ``model.lm_head`` compute the loss itself when targets are set on it (see train.causal_lm_loss).

    The lm_head module's own forward runs it, so ZeRO-3 gathers the weight for it as for any layer.
    """
    if chunk <= 0:
        return False
    head = model.lm_head
    stock = head.forward

    def forward(self, hidden_states):
        targets = getattr(self, "_ascendops_targets", None)
        if targets is None:
            return stock(hidden_states)
        return chunked_cross_entropy(hidden_states, self.weight, targets, chunk)

    head.forward = types.MethodType(forward, head)
    # causal_lm_loss sets the targets on a head that has this attribute (it looks with hasattr): without it the
    # chunked loss never ran and the full [tokens x vocab] fp32 logits the memory plan leaves out were built.
    head._ascendops_targets = None
    return True
