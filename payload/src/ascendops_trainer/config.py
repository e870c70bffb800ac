"""Typed run configuration: one source of truth for the trainer, DeepSpeed and the benchmark.

Values are resolved in this order, later wins:

1. the dataclass defaults below;
2. the job defaults of the chosen preset (``PRESET_JOB_DEFAULTS``, e.g. ``debug`` for CI);
3. a YAML or JSON file given with ``--config``;
4. command-line flags: ``--section.field VALUE`` for every field (``--train.steps 40``,
   ``--optim.lr 3e-4``) plus a few short aliases (``--preset``, ``--steps``, ``--layers``...).

The values are parsed and type-checked by pydantic models generated from the dataclasses (``_job_model``);
the rules (choices, ranges, batch sizes) are config_rules', shared with the Ansible collection.

Nothing here imports torch (pydantic only when a config is built), so configuration errors surface
in about a second.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The rules (presets, choices, ranges, batch sizes) live in config_rules, which the Ansible collection
# shares: its validate.yml refuses the job the trainer would refuse, before any change.
from . import config_rules
from .config_rules import ATTN_IMPLEMENTATIONS, BENCH_MODES, DEVICES, MODEL_PRESETS, PRECISIONS  # noqa: F401


class ConfigError(ValueError):
    """A configuration the trainer refuses; the message says what to change."""


@dataclass
class ModelConfig:
    preset: str = "debug"  # one of MODEL_PRESETS; ignored when hf_dir is set
    hf_dir: str | None = None  # local Hugging Face model dir (config.json + *.safetensors) to continue training
    num_layers: int | None = None  # override the preset's layer count (benchmarks: 8B shapes, fewer layers)
    vocab_size: int | None = None  # override the preset's vocabulary size (must cover the tokenizer)
    # transformers = transformers' LlamaForCausalLM; native = the trainer's own Llama 3 (llama.py: fused QKV and
    # gate/up, document-masked attention on every device, the NPU fused ops without patching), same weights;
    # auto = the implementation of the checkpoint this launch resumes (a DeepSpeed checkpoint loads only into the
    # model code that wrote it; one from before this setting is transformers'), for a new job native where it
    # builds the model (Llama 3: SiLU, no biases, RoPE default or llama3) and transformers otherwise
    implementation: str = "auto"
    # auto = flash_attention_2 on NPU (transformers calls torch_npu's npu_fusion_attention; packed documents
    # are masked per document), sdpa elsewhere; or name one: sdpa | eager | flash_attention_2
    attn_implementation: str = "auto"
    # recompute decoder layers in backward (see checkpoint_every); auto (null) = the memory planner's choice
    # (planner.py: none, every k-th layer or all, the least recompute that fits)
    activation_checkpointing: bool | None = None
    checkpoint_every: int | None = None  # recompute every k-th decoder layer only (1 = all); auto = the planner's
    # NPU fused kernels (used only where torch_npu provides them; the stock PyTorch code elsewhere)
    fused_rms_norm: bool = True  # torch_npu.npu_rms_norm
    fused_rope: bool = True  # torch_npu.npu_rotary_mul
    fused_swiglu: bool = True  # torch_npu.npu_swiglu
    loss_chunk_tokens: int = 4096  # cross-entropy N tokens at a time (fp32 logits of one chunk only); 0 = off


@dataclass
class DataConfig:
    path: str | None = None  # directory written by `ascendops-train prepare` (holds index.json)
    seq_len: int = 8192  # tokens per training sequence
    shuffle: bool = True  # shuffle sequences each epoch (seeded by train.seed and the epoch)
    document_masking: bool = True  # attend within each packed document (only where the attention kernel supports it)


@dataclass
class OptimConfig:
    lr: float = 3e-4  # peak learning rate, reached after warmup
    min_lr: float = 3e-5  # end of the cosine decay
    warmup_steps: int = 200  # linear warmup, in optimizer steps
    weight_decay: float = 0.1  # not applied to norms and biases
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    grad_clip: float = 1.0  # global grad-norm clipping; 0 disables


@dataclass
class TrainConfig:
    steps: int = 1000  # optimizer steps in total (a resumed run continues up to this number)
    global_batch_size: int = 512  # sequences per optimizer step, over all data-parallel ranks
    micro_batch_size: int = 1  # sequences per device per forward pass
    seed: int = 42
    precision: str = "auto"  # auto = bf16 on NPU/CUDA, fp32 on CPU (CPUs without bf16 units are ~100x slower in bf16)
    grad_accum_dtype: str = "fp32"  # dtype gradients accumulate and reduce in under bf16 (fp32 | bf16)
    eval_interval: int = 0  # evaluate on the validation split every N optimizer steps (0 = never)
    eval_batches: int = 16  # micro-batches per evaluation (per data-parallel rank)


@dataclass
class ParallelConfig:
    device: str = "auto"  # auto = npu if torch_npu sees a device, else cuda, else cpu
    # DeepSpeed ZeRO stage 0..3, or auto: 2 when weights + sharded fp32 optimizer state fit in half a device's
    # memory (no parameter gathers in forward/backward), else 3
    zero_stage: str | int = "auto"
    zero_hpz_partition_size: int = 0  # ZeRO-3 secondary partition (hpZ); 0 = devices per node when multi-node
    reduce_bucket_size: int | None = None  # elements per gradient reduce bucket; auto = the planner's (2 layers)
    prefetch_bucket_size: int | None = None  # ZeRO-3: elements of parameters fetched ahead; auto = one layer
    # dtype gradients are reduced in (accumulation stays train.grad_accum_dtype): auto = the planner's (fp32
    # where one reduce per step, bf16 where ZeRO-2/3 reduce every micro-step), or fp32 | bf16
    grad_comm_dtype: str = "auto"
    # AdamW on its fastest path proven equal to torch AdamW under ZeRO: DeepSpeed FusedAdam on CUDA (when it
    # loads), else torch AdamW foreach; false: torch AdamW per-parameter loop. Never torch_npu's NpuFusedAdamW.
    fused_adam: bool = True
    deepspeed_config: str | None = None  # JSON file merged over the generated DeepSpeed config
    dist_timeout_s: int = 1800  # process-group timeout (first HCCL connect can be slow)


@dataclass
class CheckpointConfig:
    dir: str | None = None  # default: <run_dir>/checkpoints
    interval: int = 500  # save every N optimizer steps (and always at the end and on SIGTERM)
    interval_minutes: float = 0.0  # also save when this many minutes passed since the last save (0 = off)
    # the launcher's SIGTERM -> SIGKILL time; a save slower than half of it is warned about.
    # 0 = what `ascendops-train launch --grace-s` exports (ASCENDOPS_GRACE_S), else torchrun's 30 s
    grace_period_s: float = 0.0
    keep: int = 3  # keep the newest K checkpoints
    resume: bool = True  # resume from <dir>/latest when present
    # resuming at another world size (nodes added or removed): auto = convert the checkpoint to a DeepSpeed
    # universal checkpoint when the world size changed, keeping the optimizer state; always = also at the same
    # world size; never = refuse another world size
    resume_universal: str = "auto"
    shared_fs: bool = True  # checkpoint dir is one shared filesystem; False = node-local disks
    export_dir: str | None = None  # write a Hugging Face model directory here at the end of training


@dataclass
class MetricsConfig:
    log_interval: int = 10  # optimizer steps between metric lines
    tensorboard: bool = True  # also write TensorBoard events to <run_dir>/tb
    peak_tflops: float | None = None  # override the per-device peak used for MFU
    npu_usage_interval_s: float = 10.0  # NPU usage (npu-smi) sampled into the metrics every N s; 0 = off


@dataclass
class BenchConfig:
    steps: int = 10  # timed optimizer steps per stack
    warmup_steps: int = 3  # untimed steps first (allocator, kernels, caches)
    mode: str = "both"  # both | deepspeed | torch | switches (each speed switch off in turn, side by side)
    rounds: int = 1  # alternate the stacks this many times (torch, ours, torch, ours...); medians are reported
    # synthetic documents of about this many tokens in every sample, packed into one row per micro-batch as
    # `train` packs data with document boundaries (where the model masks documents: model.implementation
    # native, or flash_attention_2); 0 = none (plain causal rows)
    doc_len: int = 0


@dataclass
class ProfileConfig:
    # Record a window of optimizer steps with torch.profiler (torch_npu.profiler on NPU) and print one summary
    # line per window: compute, communication, exposed communication, data wait (profile.py). Also turns on
    # DeepSpeed's comms logger (timing the window's warmup steps only).
    enabled: bool = False
    start_step: int = 0  # record from this step of the run (warmup steps before it); 0 = wait, warmup, active
    wait: int = 1  # steps idle before each window (with start_step 0)
    warmup: int = 1  # steps traced and discarded before the recorded ones (the comms logger times these)
    active: int = 3  # steps recorded per window
    repeat: int = 1  # windows; 0 = until the end of the run
    ranks: str = "0"  # global ranks that trace: comma-separated (0,8) or all
    dir: str | None = None  # default: <run_dir>/profile (traces and summary.jsonl under rank<N>/)
    record_shapes: bool = False  # input shapes of every operator (bigger traces)
    with_stack: bool = False  # Python stacks of every operator (much bigger traces)


@dataclass
class JobConfig:
    run_dir: str = "runs/ascendops"  # metrics.jsonl, tb/, config.json and (by default) checkpoints/
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    parallel: ParallelConfig = field(default_factory=ParallelConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    bench: BenchConfig = field(default_factory=BenchConfig)
    profile: ProfileConfig = field(default_factory=ProfileConfig)

    @property
    def checkpoint_dir(self) -> str:
        return self.checkpoint.dir or os.path.join(self.run_dir, "checkpoints")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# Job-level defaults that come with a model preset (applied before the file and the flags).
PRESET_JOB_DEFAULTS: dict[str, dict[str, Any]] = config_rules.PRESET_JOB_DEFAULTS

# Short flags -> dotted keys.
ALIASES: dict[str, str] = {
    "preset": "model.preset",
    "layers": "model.num_layers",
    "hf-dir": "model.hf_dir",
    "data": "data.path",
    "seq-len": "data.seq_len",
    "steps": "train.steps",
    "global-batch-size": "train.global_batch_size",
    "micro-batch-size": "train.micro_batch_size",
    "precision": "train.precision",
    "seed": "train.seed",
    "lr": "optim.lr",
    "device": "parallel.device",
    "zero-stage": "parallel.zero_stage",
    "deepspeed-config": "parallel.deepspeed_config",
    "run-dir": "run_dir",
    "log-interval": "metrics.log_interval",
    "export-dir": "checkpoint.export_dir",
    "eval-interval": "train.eval_interval",
    "resume-universal": "checkpoint.resume_universal",
}


def field_types() -> dict[str, Any]:
    """Every settable dotted key and its type, e.g. {'train.steps': int, 'run_dir': str}."""
    out: dict[str, Any] = {}
    for name, tp in typing.get_type_hints(JobConfig).items():
        if dataclasses.is_dataclass(tp):
            for sub, stp in typing.get_type_hints(tp).items():
                out[f"{name}.{sub}"] = stp
        else:
            out[name] = tp
    return out


# ---------------------------------------------------------------- validation (pydantic)
#
# The dataclasses above are the declaration (their fields, defaults and comments; config_rules and the
# collection's TRAINER_KEYS read them); pydantic models generated from them parse and type-check a job's
# values, from a file or a command line alike. Beyond pydantic's lax mode: "", "none" and "null" mean None
# for an optional setting, and a bool is no number.


def _split_optional(tp: Any) -> tuple[Any, bool]:
    """(the type without None, whether None is allowed) of a field annotation."""
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) < len(typing.get_args(tp))
        return (args[0] if len(args) == 1 else typing.Union[tuple(args)]), optional  # noqa: UP007
    return tp, False


def _before(optional: bool, numeric: bool):
    def check(value: Any) -> Any:
        if optional and isinstance(value, str) and value.strip().lower() in ("", "none", "null"):
            return None
        if numeric and isinstance(value, bool):
            raise ValueError("a bool is not a number")
        return value

    return check


# Optional settings whose None means "the planner chooses": `auto` is accepted for None there.
AUTO_AS_NONE = config_rules.AUTO_KEYS


def _pydantic_field(tp: Any, auto_none: bool = False) -> Any:
    from pydantic import BeforeValidator

    base, optional = _split_optional(tp)
    numeric = base in (int, float)
    check = _before(optional, numeric)
    if auto_none:
        def check(value: Any, _inner=check) -> Any:  # noqa: F811
            if isinstance(value, str) and value.strip().lower() == "auto":
                return None
            return _inner(value)
    return typing.Annotated[(base | None) if optional else base, BeforeValidator(check)]


@functools.cache
def _job_model():
    """The pydantic model of a job: one model per config section, generated from its dataclass."""
    from pydantic import ConfigDict, create_model

    conf = ConfigDict(extra="forbid", coerce_numbers_to_str=True)
    top: dict[str, Any] = {}
    for name, tp in typing.get_type_hints(JobConfig).items():
        if dataclasses.is_dataclass(tp):
            hints = typing.get_type_hints(tp)
            sub = {f.name: (_pydantic_field(hints[f.name], f"{name}.{f.name}" in AUTO_AS_NONE), None)
                   for f in dataclasses.fields(tp)}
            top[name] = (create_model(f"{tp.__name__}Model", __config__=conf, **sub) | None, None)
        else:
            top[name] = (_pydantic_field(tp), None)
    return create_model("JobConfigModel", __config__=conf, **top)


def _type_name(tp: Any) -> str:
    base, _ = _split_optional(tp)
    return getattr(base, "__name__", None) or str(base).replace("typing.", "")


def _parse(values: dict[str, Any], types_: dict[str, Any]) -> dict[str, Any]:
    """Flat {dotted key: raw value} -> flat {dotted key: typed value}, through the pydantic model; the first
    problem as a ConfigError naming the setting (`train.steps='ten' is not a valid int`)."""
    from pydantic import ValidationError

    nested: dict[str, Any] = {}
    for key, raw in values.items():
        if "." in key:
            section, name = key.split(".", 1)
            nested.setdefault(section, {})[name] = raw
        else:
            nested[key] = raw
    try:
        model = _job_model().model_validate(nested)
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        if err.get("input") is None:
            raise ConfigError(f"{key} must not be empty") from None
        raise ConfigError(f"{key}={err['input']!r} is not a valid {_type_name(types_.get(key, str))}") from None
    out: dict[str, Any] = {}
    for key in values:
        if "." in key:
            section, name = key.split(".", 1)
            out[key] = getattr(getattr(model, section), name)
        else:
            out[key] = getattr(model, key)
    return out


def _unknown_key(key: str, known: list[str]) -> ConfigError:
    return ConfigError(config_rules.unknown_key_problem(key, known))


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def load_file(path: str) -> dict[str, Any]:
    """Read a YAML (.yaml/.yml) or JSON config file into a flat {dotted key: value} dict."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {path} does not exist")
    text = p.read_text()
    if p.suffix in (".yaml", ".yml"):
        import yaml

        data = yaml.safe_load(text) or {}
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"config file {path} is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping at the top level")
    return flatten(data)


def build_config(overrides: dict[str, Any] | None = None, config_file: str | None = None) -> JobConfig:
    """Resolve defaults < preset job defaults < file < overrides, then validate."""
    types_ = field_types()
    known = sorted(types_)
    file_values = load_file(config_file) if config_file else {}
    overrides = dict(overrides or {})
    for key in list(file_values) + list(overrides):
        if key not in types_:
            raise _unknown_key(key, known)
    preset = overrides.get("model.preset", file_values.get("model.preset", ModelConfig.preset))
    values: dict[str, Any] = {}
    values.update(PRESET_JOB_DEFAULTS.get(str(preset), {}))
    values.update(file_values)
    values.update(overrides)

    cfg = JobConfig()
    for key, val in _parse(values, types_).items():
        if "." in key:
            section, name = key.split(".", 1)
            setattr(getattr(cfg, section), name, val)
        else:
            setattr(cfg, key, val)
    validate(cfg)
    return cfg


def validate(cfg: JobConfig) -> None:
    """Static checks (no devices needed): config_rules.problems. The data-parallel size is checked at launch."""
    found = config_rules.problems(flatten(cfg.to_dict()))
    if found:
        raise ConfigError(found[0])
    zs = str(cfg.parallel.zero_stage).strip().lower()
    cfg.parallel.zero_stage = zs if zs == "auto" else int(zs)
    if cfg.parallel.deepspeed_config and not os.path.isfile(cfg.parallel.deepspeed_config):
        raise ConfigError(f"parallel.deepspeed_config {cfg.parallel.deepspeed_config} does not exist")


def grad_accum_steps(cfg: JobConfig, dp_size: int) -> int:
    """Gradient-accumulation steps for a data-parallel size; refuses batch sizes that don't divide."""
    t = cfg.train
    found = config_rules.batch_problem(t.global_batch_size, t.micro_batch_size, dp_size)
    if found:
        raise ConfigError(found)
    return t.global_batch_size // (t.micro_batch_size * dp_size)


def add_config_arguments(parser) -> None:
    """Add --config, every --section.field flag and the short aliases to an argparse parser."""
    parser.add_argument("--config", help="YAML or JSON config file (flags override it)")
    for key, tp in field_types().items():
        parser.add_argument(f"--{key}", dest=f"cfg:{key}", default=None, metavar=_metavar(tp))
    types_ = field_types()
    for alias, key in ALIASES.items():
        parser.add_argument(f"--{alias}", dest=f"cfg:{key}", default=None, metavar=_metavar(types_[key]),
                            help=f"same as --{key}")


def _metavar(tp: Any) -> str:
    name = getattr(tp, "__name__", None) or str(tp).replace("typing.", "")
    return name.replace(" | None", "").upper()


def config_from_args(args) -> JobConfig:
    overrides = {k[4:]: v for k, v in vars(args).items() if k.startswith("cfg:") and v is not None}
    return build_config(overrides, getattr(args, "config", None))
