"""Llama 3 models: presets, local HF checkpoints, RoPE fields, and the build: transformers'
LlamaForCausalLM (model.implementation transformers) or the trainer's own (native, llama.py).

Shapes of the presets follow Meta's Llama 3 release (see shared/ascend-facts.md). Nothing is ever
fetched from a hub: a real checkpoint is a local directory with config.json and *.safetensors.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Any

from .config import ConfigError, ModelConfig

log = logging.getLogger(__name__)

DEFAULT_ROPE_THETA = 10000.0  # transformers' default when a config names no theta at all

_LLAMA3_COMMON: dict[str, Any] = {
    "model_type": "llama",
    "hidden_act": "silu",
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "mlp_bias": False,
    "initializer_range": 0.02,
    "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0},
}

PRESETS: dict[str, dict[str, Any]] = {
    # Tiny model for CPU tests: every code path of the big ones (GQA, RoPE, SwiGLU), ~0.1M params.
    "debug": {**_LLAMA3_COMMON, "vocab_size": 512, "hidden_size": 64, "intermediate_size": 160,
              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "max_position_embeddings": 2048, "bos_token_id": 1, "eos_token_id": 2},
    "llama3-8b": {**_LLAMA3_COMMON, "vocab_size": 128256, "hidden_size": 4096, "intermediate_size": 14336,
                  "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                  "max_position_embeddings": 8192, "bos_token_id": 128000, "eos_token_id": 128001},
    "llama3-70b": {**_LLAMA3_COMMON, "vocab_size": 128256, "hidden_size": 8192, "intermediate_size": 28672,
                   "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
                   "max_position_embeddings": 8192, "bos_token_id": 128000, "eos_token_id": 128001},
}


def normalize_rope_fields(cfg: dict[str, Any]) -> dict[str, Any]:
    """Put RoPE settings into one place, whichever layout a config.json uses.

    - older configs: ``rope_theta`` at top level, optional ``rope_scaling`` (Llama 3.1: rope_type "llama3");
    - transformers >= 5: ``rope_parameters = {"rope_type": ..., "rope_theta": ...}``.

    Returns a copy with ``rope_parameters`` complete (type and theta) and no ``rope_theta`` /
    ``rope_scaling`` keys. Refuses a config whose two theta fields disagree.
    """
    d = dict(cfg)
    params = dict(d.pop("rope_parameters", None) or {})
    scaling = d.pop("rope_scaling", None) or {}
    for k, v in scaling.items():
        params.setdefault(k, v)
    top_theta = d.pop("rope_theta", None)
    if top_theta is not None and "rope_theta" in params and float(params["rope_theta"]) != float(top_theta):
        raise ConfigError(f"config has rope_theta={top_theta} but rope_parameters.rope_theta="
                          f"{params['rope_theta']}; they must agree")
    params.setdefault("rope_theta", float(top_theta) if top_theta is not None else DEFAULT_ROPE_THETA)
    params["rope_theta"] = float(params["rope_theta"])
    params.setdefault("rope_type", params.pop("type", "default"))
    params.pop("type", None)
    d["rope_parameters"] = params
    return d


def rope_theta_of(config: Any) -> float:
    """RoPE base of a LlamaConfig (or a config dict), whichever field holds it."""
    get = config.get if isinstance(config, dict) else (lambda k, default=None: getattr(config, k, default))
    params = get("rope_parameters") or get("rope_scaling") or {}
    if params.get("rope_theta") is not None:
        return float(params["rope_theta"])
    theta = get("rope_theta")
    return float(theta) if theta is not None else DEFAULT_ROPE_THETA


def _llama_config_from_dict(d: dict[str, Any]):
    """LlamaConfig from a normalized dict, for transformers with or without `rope_parameters`."""
    from transformers import LlamaConfig

    d = dict(d)
    if "rope_parameters" not in LlamaConfig().to_dict():  # transformers 4.x: legacy layout
        params = dict(d.pop("rope_parameters"))
        d["rope_theta"] = params.pop("rope_theta")
        if params.get("rope_type", "default") != "default":
            d["rope_scaling"] = params
    return LlamaConfig.from_dict(d)


def config_dict(mcfg: ModelConfig) -> dict[str, Any]:
    """The model's config as a plain dict (from the preset or <hf_dir>/config.json), overrides applied."""
    if mcfg.hf_dir:
        path = os.path.join(mcfg.hf_dir, "config.json")
        if not os.path.isfile(path):
            raise ConfigError(f"model.hf_dir {mcfg.hf_dir} has no config.json (a local Hugging Face model "
                              "directory is expected; nothing is downloaded)")
        with open(path) as f:
            d = json.load(f)
        if d.get("model_type") != "llama":
            raise ConfigError(f"{path}: model_type is '{d.get('model_type')}', expected 'llama'")
        if mcfg.vocab_size is not None and mcfg.vocab_size != d.get("vocab_size"):
            raise ConfigError("model.vocab_size cannot change the vocabulary of a pretrained model")
    else:
        if mcfg.preset not in PRESETS:
            raise ConfigError(f"unknown model preset '{mcfg.preset}'; choose one of: {', '.join(PRESETS)}")
        d = json.loads(json.dumps(PRESETS[mcfg.preset]))  # deep copy
        if mcfg.vocab_size is not None:
            d["vocab_size"] = mcfg.vocab_size
    if mcfg.num_layers is not None:
        d["num_hidden_layers"] = mcfg.num_layers
    d = normalize_rope_fields(d)
    d["use_cache"] = False
    return d


def native_refusal(mcfg: ModelConfig) -> str | None:
    """Why the trainer's own model (llama.py) cannot build the model of `mcfg` (None: it can)."""
    from .llama import LlamaArgs, rope_inv_freq

    try:
        args = LlamaArgs.from_hf(config_dict(mcfg))
        rope_inv_freq(args.head_dim, args.rope)
    except ConfigError as e:
        return str(e)
    return None


def resolve_implementation(mcfg: ModelConfig, saved: str | None = None) -> tuple[str, str]:
    """The model code a job runs, and why. model.implementation transformers or native: that one; auto: the
    implementation of the checkpoint the launch resumes (`saved`: a DeepSpeed checkpoint loads only into the
    model code that wrote it, so a job keeps its own across a payload upgrade), else native where it builds
    the model, else transformers."""
    if mcfg.implementation != "auto":
        return mcfg.implementation, "set in the job's config"
    if saved is not None:
        return saved, "the checkpoint this launch resumes was written by it"
    refusal = native_refusal(mcfg)
    if refusal is None:
        return "native", "a new job, and the trainer's own Llama 3 builds this model"
    return "transformers", f"the trainer's own Llama 3 cannot build this model ({refusal})"


def is_native(mcfg: ModelConfig) -> bool:
    """Whether `mcfg` builds the trainer's own model (auto not resolved yet: as for a new job)."""
    return resolve_implementation(mcfg)[0] == "native"


def resolve_attn_implementation(requested: str, device_type: str = "cpu") -> str:
    """auto -> flash_attention_2 on NPU (transformers runs torch_npu's npu_fusion_attention), sdpa elsewhere.
    flash_attention_2 on CUDA needs the flash_attn package; on CPU it does not exist."""
    if requested == "auto":
        return "flash_attention_2" if device_type == "npu" else "sdpa"
    if requested == "flash_attention_2" and device_type != "npu":
        import importlib.util

        if device_type == "cpu" or importlib.util.find_spec("flash_attn") is None:
            raise ConfigError(f"model.attn_implementation=flash_attention_2 needs an NPU (torch_npu) or CUDA with "
                              f"the flash_attn package; this run is on {device_type}: use sdpa")
    return requested


def native_attention(requested: str, device_type: str = "cpu") -> str:
    """The native model's attention backend (llama.Backend): auto = npu_fusion_attention on NPU,
    flex_attention on CUDA, SDPA elsewhere; sdpa / eager = SDPA; flash_attention_2 = the fused kernel
    (NPU) or flex_attention (CUDA); on CPU it does not exist."""
    from .llama import Backend

    if requested == "flash_attention_2" and device_type == "cpu":
        raise ConfigError("model.attn_implementation=flash_attention_2 needs an NPU or CUDA; this run is on cpu: "
                          "use sdpa")
    return Backend.choose(device_type, "auto" if requested == "flash_attention_2" else requested)


def build_hf_config(mcfg: ModelConfig, device_type: str = "cpu"):
    """transformers.LlamaConfig for the model section of the run config (the native model reads it too;
    its attention backend is native_attention's, not the config's _attn_implementation)."""
    cfg = _llama_config_from_dict(config_dict(mcfg))
    if is_native(mcfg):
        native_attention(mcfg.attn_implementation, device_type)  # refuse a backend that does not exist here
        cfg._attn_implementation = "sdpa"
    else:
        cfg._attn_implementation = resolve_attn_implementation(mcfg.attn_implementation, device_type)
    return cfg


def attention_name(mcfg: ModelConfig, hf_config, device_type: str) -> str:
    """The attention the built model runs (the run's description)."""
    if is_native(mcfg):
        return "native-" + native_attention(mcfg.attn_implementation, device_type)
    return hf_config._attn_implementation


def masks_documents(mcfg: ModelConfig, hf_config) -> bool:
    """Whether the model keeps attention inside each packed document when given position ids."""
    return is_native(mcfg) or hf_config._attn_implementation == "flash_attention_2"


def decoder_layers(model):
    """The decoder layers of a built model (either implementation; through a DeepSpeed/DDP wrapper too)."""
    m = getattr(model, "module", model)
    return m.layers if hasattr(m, "layers") else m.model.layers


def enable_activation_checkpointing(model, every: int) -> list[int]:
    """Recompute every `every`-th decoder layer in backward (1 = all); returns the layer indices."""
    if hasattr(model, "set_activation_checkpointing"):  # the native model
        return model.set_activation_checkpointing(every)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    chosen = []
    for i, layer in enumerate(model.model.layers):
        layer.gradient_checkpointing = i % every == 0
        if layer.gradient_checkpointing:
            chosen.append(i)
    return chosen


@dataclass(frozen=True)
class ParamCounts:
    total: int
    embedding: int  # the input token-embedding table (a lookup, no matmul FLOPs)

    tied: bool = False  # lm_head shares the embedding matrix

    @property
    def non_embedding(self) -> int:
        """N for the FLOPs formula: every weight that is multiplied, lm_head included. With tied
        embeddings the one shared matrix is the lm_head's weight: counted once (as torchtitan does)."""
        return self.total if self.tied else self.total - self.embedding


def param_counts(hf_config) -> ParamCounts:
    """Analytic parameter count of a LlamaForCausalLM (no model needed: works for 70B on a laptop)."""
    c = hf_config
    hd = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    h, inter, v = c.hidden_size, c.intermediate_size, c.vocab_size
    attn = h * c.num_attention_heads * hd * 2 + h * c.num_key_value_heads * hd * 2  # q, o + k, v
    if getattr(c, "attention_bias", False):
        attn += c.num_attention_heads * hd + 2 * c.num_key_value_heads * hd + h
    mlp = 3 * h * inter + (2 * inter + h if getattr(c, "mlp_bias", False) else 0)
    layer = attn + mlp + 2 * h  # + two RMSNorm weights
    embed = v * h
    lm_head = 0 if c.tie_word_embeddings else v * h
    total = embed + c.num_hidden_layers * layer + h + lm_head
    return ParamCounts(total=total, embedding=embed, tied=bool(c.tie_word_embeddings))


def count_model_params(model) -> int:
    """Parameters of a built model; under ZeRO-3 the local tensors are empty, ds_numel holds the size."""
    return sum(getattr(p, "ds_numel", p.numel()) for p in model.parameters())


_HF_DS_CONFIG = None  # transformers only holds a weak reference; keep the object alive


def gather_per_layer(model, layer_class) -> list:
    """ZeRO-3 unit: each decoder layer (`layer_class`) is gathered whole before its forward and its backward,
    released after them, and its gradients are reduce-scattered once the layer's backward is done - as FSDP
    wraps each transformer block (torchtitan). DeepSpeed's default hooks every module instead (each
    projection and norm: a fetch, a release and their bookkeeping before and after its forward and its
    backward, and a gradient hook per parameter), Python work on every micro-step that the device waits
    for (the CPU bench, ZeRO-3 forced: about 0.76x plain PyTorch per module, 0.84x per layer). A layer's
    weights are what the prefetch bucket holds anyway; the memory model counts the larger of a layer and the
    embedding as the gathered unit (memory.gathered_unit_params). Must run before deepspeed.initialize (it
    places the hooks). Returns the layers so marked."""
    from deepspeed.utils import set_z3_leaf_modules

    layers = set_z3_leaf_modules(model, [layer_class])
    log.info("ZeRO-3: parameters gathered and gradients reduced per decoder layer (%d %s units)", len(layers),
             layer_class.__name__)
    return layers


def build_native_model(mcfg: ModelConfig, hf_config, dtype, ds_config: dict[str, Any] | None = None, device=None,
                       kernels=None):
    """The native Llama (llama.py): random init (on `device`, or inside zero.Init under ZeRO-3) or the
    weights of mcfg.hf_dir, loaded parameter by parameter."""
    import contextlib

    import torch

    from .llama import Backend, Llama, LlamaArgs, load_hf_dir

    zero3 = ds_config is not None and ds_config.get("zero_optimization", {}).get("stage", 0) == 3
    device_type = torch.device(device).type if device is not None else "cpu"
    args = LlamaArgs.from_hf(hf_config)
    backend = Backend(native_attention(mcfg.attn_implementation, device_type), kernels)
    fused = {"rms_norm": mcfg.fused_rms_norm, "rope": mcfg.fused_rope, "swiglu": mcfg.fused_swiglu}
    if zero3:
        import deepspeed

        # no dtype=: DeepSpeed reads it from the config (given one, it picks fp16/bf16 on some accelerators)
        where = deepspeed.zero.Init(config_dict_or_path=ds_config)
    else:
        where = torch.device(device) if device is not None else contextlib.nullcontext()
    with where:
        model = Llama(args, backend, kernels, fused, loss_chunk=mcfg.loss_chunk_tokens)
    if zero3:  # the RoPE table outside zero.Init (its patched tensor constructors), moved where the weights are
        from .llama import Block, Rotary

        model.rotary = Rotary(args.head_dim, args.rope)
        gather_per_layer(model, Block)
    if not zero3:
        model.to(dtype)
    if mcfg.hf_dir:
        import torch.distributed as dist

        is_main = not dist.is_initialized() or dist.get_rank() == 0
        load_hf_dir(model, mcfg.hf_dir, zero3, is_main)
    if mcfg.activation_checkpointing is not False:  # auto (None) unplanned: every layer
        model.set_activation_checkpointing(mcfg.checkpoint_every or 1)
    if model.fused_ops:
        log.info("fused kernels (%s): %s", getattr(kernels, "name", getattr(kernels, "__name__", "?")),
                 ", ".join(model.fused_ops))
    return model


def build_model(mcfg: ModelConfig, hf_config, dtype, ds_config: dict[str, Any] | None = None, device=None,
                kernels=None):
    """Build the model of model.implementation (resolve_implementation): native (build_native_model), or
    LlamaForCausalLM:
    random init from a preset, or the weights of mcfg.hf_dir.

    With ZeRO stage 3 in ``ds_config`` the model is created inside deepspeed.zero.Init (through
    transformers' HfDeepSpeedConfig), so each rank only ever holds its shard of the weights.
    Random init happens on rank 0 and is broadcast: every rank starts from the same model.
    Otherwise a random init is created directly on `device` (when given), not on the host first.
    ``kernels``: torch_npu (or kernels.REFERENCE) to route the switched-on fused ops through; None = stock.
    """
    global _HF_DS_CONFIG
    import contextlib

    if is_native(mcfg):
        return build_native_model(mcfg, hf_config, dtype, ds_config, device, kernels)

    import torch
    from transformers import LlamaForCausalLM
    from transformers.integrations.deepspeed import unset_hf_deepspeed_config

    zero3 = ds_config is not None and ds_config.get("zero_optimization", {}).get("stage", 0) == 3
    if zero3:
        from transformers.integrations import HfDeepSpeedConfig

        _HF_DS_CONFIG = HfDeepSpeedConfig(ds_config)
    else:
        unset_hf_deepspeed_config()
        _HF_DS_CONFIG = None
    where = torch.device(device) if device is not None and not zero3 else contextlib.nullcontext()

    from .kernels import apply_fused_kernels, install_chunked_loss

    attn = hf_config._attn_implementation
    if mcfg.hf_dir:
        model = LlamaForCausalLM.from_pretrained(
            mcfg.hf_dir, config=hf_config, dtype=dtype, local_files_only=True, attn_implementation=attn)
    else:
        with where:
            model = LlamaForCausalLM._from_config(hf_config, dtype=dtype, attn_implementation=attn)
    model.config.use_cache = False
    # auto (None) is resolved by the memory planner before a job builds its model; unplanned: every layer
    if mcfg.activation_checkpointing is not False:
        enable_activation_checkpointing(model, mcfg.checkpoint_every or 1)
    apply_fused_kernels(model, mcfg, kernels)
    install_chunked_loss(model, mcfg.loss_chunk_tokens)
    if zero3:
        from transformers.models.llama.modeling_llama import LlamaDecoderLayer

        gather_per_layer(model, LlamaDecoderLayer)
    return model
