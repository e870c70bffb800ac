"""The trainer's static configuration rules: one source for the trainer and the Ansible collection.

The trainer (``config.validate`` and ``config.grad_accum_steps``) refuses a configuration with these
rules; the collection's validate.yml refuses the same job on the controller, before any node changes,
through ``plugins/module_utils/trainer_rules.py``: a generated copy of this file
(``scripts/sync-trainer-rules.py``; tests/unit/plugins/module_utils/test_trainer_rules.py fails when
the two differ; the copy also carries ``TRAINER_KEYS``, every key of the trainer's config
dataclasses, generated from them). So: standard library only, no imports from the trainer.

Values are a flat ``{dotted key: value}`` mapping (``train.global_batch_size``...); keys that are
absent are not checked. ``names`` maps a dotted key to what the user wrote (the trainer: the key
itself; the collection: ``launch_job.global_batch_size``), so every message names the user's setting.
"""

from __future__ import annotations

import difflib

MODEL_PRESETS = ("debug", "llama3-8b", "llama3-70b")
DEVICES = ("auto", "npu", "cuda", "cpu")
PRECISIONS = ("auto", "bf16", "fp32")
BENCH_MODES = ("both", "deepspeed", "torch", "switches")
ATTN_IMPLEMENTATIONS = ("auto", "sdpa", "eager", "flash_attention_2")
MODEL_IMPLEMENTATIONS = ("auto", "transformers", "native")
GRAD_ACCUM_DTYPES = ("fp32", "bf16")
ZERO_STAGES = ("auto", "0", "1", "2", "3")
RESUME_UNIVERSAL = ("auto", "always", "never")

# Job-level defaults that come with a model preset (applied before the config file and the flags).
PRESET_JOB_DEFAULTS = {
    # Tiny and fast: the CPU test suite and CI use it.
    "debug": {
        "data.seq_len": 64,
        "train.global_batch_size": 8,
        "train.micro_batch_size": 2,
        "train.steps": 40,
        "optim.lr": 3e-3,
        "optim.min_lr": 3e-4,
        "optim.warmup_steps": 4,
        "checkpoint.interval": 20,
        "metrics.log_interval": 1,
        "model.activation_checkpointing": False,
    },
    "llama3-8b": {"data.seq_len": 8192, "train.global_batch_size": 512, "train.micro_batch_size": 1},
    "llama3-70b": {"data.seq_len": 8192, "train.global_batch_size": 512, "train.micro_batch_size": 1},
}

# Settings with a fixed set of values.
CHOICES = {
    "model.attn_implementation": ATTN_IMPLEMENTATIONS,
    "model.implementation": MODEL_IMPLEMENTATIONS,
    "train.precision": PRECISIONS,
    "train.grad_accum_dtype": GRAD_ACCUM_DTYPES,
    "parallel.grad_comm_dtype": ("auto",) + GRAD_ACCUM_DTYPES,
    "parallel.device": DEVICES,
    "bench.mode": BENCH_MODES,
    "checkpoint.resume_universal": RESUME_UNIVERSAL,
}

# Settings the trainer's memory planner fills in when they are `auto` (or left out): `auto` passes the
# checks below and means "the planner chooses" (trainer: None in its config; planner.py).
AUTO_KEYS = frozenset(("model.activation_checkpointing", "model.checkpoint_every", "parallel.reduce_bucket_size",
                       "parallel.prefetch_bucket_size"))

# Numeric settings and their lowest value (what 0 means, where it means something).
MINIMUMS = {
    "model.num_layers": (1, ""),
    "model.checkpoint_every": (1, ""),
    "model.loss_chunk_tokens": (0, "0 = no chunking"),
    "data.seq_len": (2, ""),
    "train.steps": (1, ""),
    "train.global_batch_size": (1, ""),
    "train.micro_batch_size": (1, ""),
    "train.eval_interval": (0, "0 = never"),
    "train.eval_batches": (1, ""),
    "optim.lr": (0, ""),
    "optim.min_lr": (0, ""),
    "optim.warmup_steps": (0, ""),
    "optim.grad_clip": (0, "0 disables clipping"),
    "parallel.zero_hpz_partition_size": (0, "0 = devices per node"),
    "parallel.reduce_bucket_size": (1, ""),
    "parallel.prefetch_bucket_size": (0, ""),
    "parallel.dist_timeout_s": (1, ""),
    "checkpoint.interval": (1, ""),
    "checkpoint.interval_minutes": (0, "0 = off"),
    "checkpoint.grace_period_s": (0, "0 = the launcher's"),
    "checkpoint.keep": (1, ""),
    "metrics.log_interval": (1, ""),
    "metrics.npu_usage_interval_s": (0, "0 = no NPU usage sampling"),
    "bench.steps": (1, ""),
    "bench.warmup_steps": (0, ""),
    "bench.rounds": (1, ""),
    "bench.doc_len": (0, "0 = no documents"),
    "profile.start_step": (0, "0 = wait, warmup, active from the first step"),
    "profile.wait": (0, ""),
    "profile.warmup": (0, ""),
    "profile.active": (1, ""),
    "profile.repeat": (0, "0 = until the end"),
}
INTEGERS = frozenset(("model.num_layers", "model.checkpoint_every", "model.loss_chunk_tokens", "data.seq_len",
                      "train.steps", "train.global_batch_size", "train.micro_batch_size", "train.eval_interval",
                      "train.eval_batches", "optim.warmup_steps", "parallel.zero_hpz_partition_size",
                      "parallel.reduce_bucket_size", "parallel.prefetch_bucket_size", "parallel.dist_timeout_s",
                      "checkpoint.interval", "checkpoint.keep", "metrics.log_interval", "bench.steps",
                      "bench.warmup_steps", "bench.rounds", "bench.doc_len", "profile.start_step", "profile.wait",
                      "profile.warmup", "profile.active", "profile.repeat"))


def _name(names, key):
    return (names or {}).get(key, key)


def number(value, integer=False):
    """The value as an int (integer) or float, or None when it is not one (bools are not numbers)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        if integer:
            if isinstance(value, float):
                return int(value) if value.is_integer() else None
            return int(str(value).strip())
        return float(value)
    except (TypeError, ValueError):
        return None


def preset_problem(preset, hf_dir=None, names=None):
    """A message when the model preset is unknown (and no Hugging Face model directory replaces it)."""
    if hf_dir or preset in MODEL_PRESETS:
        return None
    return (f"unknown model preset '{preset}'; choose one of: {', '.join(MODEL_PRESETS)} for "
            f"{_name(names, 'model.preset')} (or set {_name(names, 'model.hf_dir')} to a local Hugging Face model)")


def value_problems(values, names=None):
    """Messages for every single value out of its range or set of choices."""
    out = []
    for key, choices in CHOICES.items():
        if key in values and values[key] is not None and values[key] not in choices:
            out.append(f"{_name(names, key)} must be one of {', '.join(choices)}, got '{values[key]}'")
    for key, (low, meaning) in MINIMUMS.items():
        if key not in values or values[key] is None:
            continue
        if key in AUTO_KEYS and str(values[key]).strip().lower() == "auto":
            continue
        integer = key in INTEGERS
        val = number(values[key], integer)
        if val is None:
            out.append(f"{_name(names, key)} must be {'an integer' if integer else 'a number'}, got {values[key]!r}")
        elif key == "optim.lr" and val <= 0:
            out.append(f"{_name(names, key)} must be > 0, got {values[key]}")
        elif val < low:
            note = f" ({meaning})" if meaning else ""
            out.append(f"{_name(names, key)} must be >= {low}{note}, got {values[key]}")
    if values.get("profile.ranks") is not None:
        found = ranks_problem(values["profile.ranks"], names)
        if found:
            out.append(found)
    zero = values.get("parallel.zero_stage")
    if zero is not None and str(zero).strip().lower() not in ZERO_STAGES:
        out.append(f"{_name(names, 'parallel.zero_stage')} must be 0, 1, 2, 3 or auto, "
                   f"got {values['parallel.zero_stage']}")
    return out


def ranks_problem(value, names=None):
    """A message when profile.ranks is neither 'all' nor comma-separated rank numbers >= 0, else None."""
    text = str(value).strip().lower()
    if text == "all":
        return None
    parts = [x.strip() for x in text.split(",")]
    if not text or not all(p.isdigit() for p in parts):
        return (f"{_name(names, 'profile.ranks')} must be 'all' or comma-separated rank numbers such as 0,8, "
                f"got {value!r}")
    return None


def nearest_multiples(value, step):
    """The multiples of step nearest to value: [below, above] (below left out when it would be 0)."""
    below = (value // step) * step
    return [m for m in (below, below + step) if m >= step] if value % step else [value]


def batch_problem(global_batch, micro_batch, ranks=1, names=None, ranks_text="data-parallel size"):
    """A message when global_batch is not micro_batch x ranks x gradient-accumulation steps, with the
    nearest global batch sizes (and micro batch sizes) that divide; None when it divides."""
    g, m, r = number(global_batch, True), number(micro_batch, True), number(ranks, True)
    if g is None or m is None or r is None or g < 1 or m < 1 or r < 1:
        return None  # value_problems names these
    per_step = m * r
    if g % per_step == 0:
        return None
    gname, mname = _name(names, "train.global_batch_size"), _name(names, "train.micro_batch_size")
    if r == 1:
        head = f"{gname} ({g}) is not divisible by {mname} ({m})"
    else:
        head = f"{gname} ({g}) is not divisible by {mname} ({m}) x {ranks_text} ({r}) = {per_step}"
    fix = f"pick a global batch that is a multiple of {per_step}"
    fix += f" (the nearest: {' or '.join(str(v) for v in nearest_multiples(g, per_step))})"
    micros = [c for c in range(1, g // r + 1) if g % (c * r) == 0] if g % r == 0 else []
    if micros:
        fix += f", or a {mname} of {', '.join(str(c) for c in micros[-4:])}"
    return f"{head}; {fix} (global = micro x data-parallel ranks x gradient-accumulation steps)"


def unknown_key_problem(key, known, names=None):
    """A message for a config key the trainer does not have (with the nearest one), else None."""
    if key in known:
        return None
    hint = difflib.get_close_matches(key, sorted(known), n=1)
    name = _name(names, key)
    prefix = name[: len(name) - len(key)] if name.endswith(key) else ""
    more = f"; did you mean '{prefix}{hint[0]}'?" if hint else ""
    return f"unknown config key '{name}'{more}"


def problems(values, names=None, ranks=None, ranks_text="data-parallel size"):
    """Every problem of a flat configuration (after the preset's job defaults), as messages naming
    the setting (through names), its value and the fix. With ranks: the data-parallel size too."""
    out = []
    preset = values.get("model.preset")
    if preset is not None or "model.hf_dir" in values:
        found = preset_problem(preset, values.get("model.hf_dir"), names)
        if found:
            out.append(found)
    out.extend(value_problems(values, names))
    lr, min_lr = number(values.get("optim.lr")), number(values.get("optim.min_lr"))
    if lr is not None and min_lr is not None and lr > 0 and min_lr > lr:
        out.append(f"need 0 <= {_name(names, 'optim.min_lr')} ({values['optim.min_lr']}) <= "
                   f"{_name(names, 'optim.lr')} ({values['optim.lr']}) and optim.lr > 0")
    found = batch_problem(values.get("train.global_batch_size"), values.get("train.micro_batch_size"),
                          1 if ranks is None else ranks, names, ranks_text)
    if found:
        out.append(found)
    return out
