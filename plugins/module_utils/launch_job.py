# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch role's job description (``launch_job``) checked on the controller, before any change.

``job_problems()`` lists every problem of the description as a message that names what the user
wrote (``launch_job.global_batch_size``, ``launch_job.config.optim.lr``), its value and the fix: the
launch role's own rules (keys, absolute paths, names, environment) and the trainer's configuration
rules (``trainer_rules``, generated from the trainer's config_rules.py), applied to the trainer
configuration the launch role renders (tasks/job.yml: the job's keys, then ``config`` merged over
them, then the preset's job defaults for what is left unset), with the data-parallel size of the
cluster (nodes x devices per node).
"""

from __future__ import annotations

import difflib
import re

from ansible_collections.ascendops.cluster.plugins.module_utils import setting_checks as sc
from ansible_collections.ascendops.cluster.plugins.module_utils import trainer_rules as rules

# launch_job key -> the trainer config key it renders (tasks/job.yml).
JOB_KEYS = {
    "preset": "model.preset",
    "hf_model_dir": "model.hf_dir",
    "data_path": "data.path",
    "seq_len": "data.seq_len",
    "steps": "train.steps",
    "global_batch_size": "train.global_batch_size",
    "micro_batch_size": "train.micro_batch_size",
    "device": "parallel.device",
    "zero_stage": "parallel.zero_stage",
    "checkpoint_dir": "checkpoint.dir",
    "checkpoint_interval": "checkpoint.interval",
}
ABSOLUTE_PATHS = ("data_path", "checkpoint_dir", "run_dir")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _flatten(data, prefix=""):
    out = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _merge(base, over):
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(out.get(key), dict) and isinstance(value, dict) else value
    return out


def trainer_values(job):
    """The flat trainer configuration the launch role renders from a (complete) job description, and
    {trainer key: what the user wrote}. Keys neither the job nor its config set take the preset's job
    defaults (named as such); the trainer's own defaults are valid by construction."""
    values, names = {}, {}
    for key, dotted in JOB_KEYS.items():
        if job.get(key) is not None:
            values[dotted] = job[key]
            names[dotted] = f"launch_job.{key}"
    config = job.get("config") if isinstance(job.get("config"), dict) else {}
    for dotted, value in _flatten(config).items():
        values[dotted] = value
        names[dotted] = f"launch_job.config.{dotted}"
    preset = values.get("model.preset")
    defaults = rules.PRESET_JOB_DEFAULTS.get(preset, {}) if isinstance(preset, str) else {}
    for dotted in ("train.global_batch_size", "train.micro_batch_size"):
        if dotted not in values and dotted in defaults:
            values[dotted] = defaults[dotted]
            short = dotted.split(".", 1)[1]
            names[dotted] = f"launch_job.{short} (unset: preset {preset}'s default)"
    for dotted in JOB_KEYS.values():
        names.setdefault(dotted, "launch_job." + next(k for k, v in JOB_KEYS.items() if v == dotted))
    return values, names


def job_problems(launch_job, job_defaults, nodes=1, devices_per_node=1, devices_setting="devices per node"):
    """Every problem of ``launch_job`` (the user's mapping) over ``job_defaults`` (the role's), as
    messages. ``nodes`` x ``devices_per_node`` is the job's data-parallel size; ``devices_setting``
    names where the device count comes from."""
    if not isinstance(launch_job, dict):
        return [f"launch_job must be a mapping of job settings, got {type(launch_job).__name__} {launch_job!r}"]
    out = []
    unknown = sorted(set(launch_job) - set(job_defaults))
    for key in unknown:
        hint = difflib.get_close_matches(str(key), [str(k) for k in job_defaults], n=1)
        out.append(f"launch_job.{key} is not a job setting" + (f" (did you mean launch_job.{hint[0]}?)" if hint else "")
                   + f"; the settings are {', '.join(job_defaults)} (trainer settings go under launch_job.config)")
    job = _merge(job_defaults, {k: v for k, v in launch_job.items() if k in job_defaults})

    # The job's directories are created (data: root's; checkpoints, run: the job user's) and mounted into
    # its container: never a system directory itself (module_utils/setting_checks.py).
    for key in ABSOLUTE_PATHS + ("hf_model_dir",):
        value = job.get(key)
        if key == "hf_model_dir" and value in (None, ""):
            continue
        if not isinstance(value, str) or not value.startswith("/"):
            out.append(f"launch_job.{key} must be an absolute path on the nodes, got {value!r}")
        else:
            out.extend(sc.path_problems(f"launch_job.{key}", value))
    if not isinstance(job.get("name"), str) or not NAME_RE.match(job["name"]):
        out.append("launch_job.name must be letters, digits, '.', '_' or '-' (a unit and file name), "
                   f"got {job.get('name')!r}")
    zero = rules.number(job.get("zero_stage"), integer=True)
    if zero not in (0, 1, 2, 3):
        out.append(f"launch_job.zero_stage must be 0, 1, 2 or 3 (DeepSpeed ZeRO stage), got {job.get('zero_stage')!r}")
    env = job.get("extra_env")
    if not isinstance(env, dict):
        out.append(f"launch_job.extra_env must be a mapping of environment variables, got {env!r}")
    else:
        for key, value in env.items():
            if not ENV_NAME_RE.match(str(key)):
                out.append(f"launch_job.extra_env.{key} is not a shell-style variable name (letters, digits, '_')")
            elif sc.control_char(value):
                pos, what = sc.control_char(value)  # the value (maybe a secret) is not shown
                out.append(f"launch_job.extra_env.{key} must be one line without control characters (holds {what} "
                           f"at character {pos + 1})")
    config = job.get("config")
    if not isinstance(config, dict):
        out.append(f"launch_job.config must be a mapping of trainer config sections (e.g. {{optim: {{lr: 1e-4}}}}), "
                   f"got {config!r}")
    else:
        # The trainer refuses a key its config does not have (TRAINER_KEYS: generated from its dataclasses).
        for section, value in config.items():
            if isinstance(value, dict):
                keys = [f"{section}.{k}" for k in _flatten(value)]
            elif str(section) in rules.TRAINER_KEYS:
                continue
            elif any(k.startswith(f"{section}.") for k in rules.TRAINER_KEYS):
                out.append(f"launch_job.config.{section} must be a mapping of {section} settings, got {value!r}")
                continue
            else:
                keys = [str(section)]
            for dotted in keys:
                found = rules.unknown_key_problem(dotted, rules.TRAINER_KEYS, {dotted: f"launch_job.config.{dotted}"})
                if found:
                    out.append(found)
    values, names = trainer_values(job)
    if values.get("model.hf_dir") == "":
        values.pop("model.hf_dir")
    ranks = None
    n, d = rules.number(nodes, integer=True), rules.number(devices_per_node, integer=True)
    if n and d and n > 0 and d > 0:
        ranks = n * d
    ranks_text = f"ranks ({n} node{'s' if n != 1 else ''} in npu_nodes x {d} per node: {devices_setting})"
    # zero_stage is the role's stricter rule above (0..3: the role renders it as an integer).
    values.pop("parallel.zero_stage", None)
    out.extend(rules.problems(values, names, ranks=ranks, ranks_text=ranks_text))
    return out
