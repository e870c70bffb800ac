"""Checkpoints that a crash cannot damage, resume, and export to a Hugging Face directory.

Layout of checkpoint.dir:
  step_00000100/        complete checkpoints (DeepSpeed files + trainer_state.json + rng_rank*.pt + hf_config.json)
  latest                name of the newest complete checkpoint (DeepSpeed's own format: the tag as text)
  .tmp-step_00000200/   a save in progress; removed at the next start (kept only to finish a swap, below)
  .old-step_00000100/   the previous copy of a tag being saved again; removed once the new copy is in place

A save writes everything into the .tmp- directory; every rank fsyncs the files it wrote itself, and that
directory, before the barrier (on NFS or Lustre only the client that wrote a file can make it durable);
the writer then writes hf_config.json and, last, trainer_state.json (the completeness marker: written
to a temp file, fsynced, renamed), renames the directory to its final name (atomic on one filesystem),
fsyncs the parent, and only then replaces `latest` (written the same way). A crash at any point leaves
the previous checkpoint and the pointer to it intact. The newest `checkpoint.keep` checkpoints are kept.

Saving a tag that exists already (a re-run reaching the same step) keeps one complete copy at every
instant: the old copy is renamed aside to .old-<tag>, the new one renamed to <tag>, then the old one is
removed. The start-up clean-up (clean_stale) finishes or undoes an interrupted swap: a complete <tag>
wins; else the complete one of .old-<tag> (the previous copy) and .tmp-<tag>. Nothing complete is
deleted while it is the only copy (tests: test_trainer_units.py, the save's kill points).

Unpickling: everything the trainer writes itself loads with torch.load(weights_only=True) (tensors,
dicts, lists, numbers). DeepSpeed's own files (its model and optimizer states, the universal copy's
optimizer_state.pt) hold Python objects that need weights_only=False; DeepSpeed's loaders use it. They are
read only from a checkpoint directory owned by the job's uid that no group or other user can write to
(check_job_owned), so nobody else can plant a pickle there.

Resuming at another world size (nodes added or removed): a ZeRO checkpoint's optimizer state is
sharded per rank, so DeepSpeed cannot load it into another number of ranks. `plan_resume` decides
(checkpoint.resume_universal auto|always|never); when needed, rank 0 converts the checkpoint once
into DeepSpeed's universal format next to it (deepspeed.checkpoint.ds_to_universal, in a child
process) and every rank loads that with `"checkpoint": {"load_universal": true}`:
  step_00000100_universal/   the universal copy (zero/<param>/{fp32,exp_avg,exp_avg_sq}.pt, the
                             model-states files, ascendops_universal.json: what it was made from)
  latest_universal           DeepSpeed's pointer to it
  .tmp-universal/            a conversion in progress; never read, removed at the next start
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import random
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .config_rules import RESUME_UNIVERSAL

log = logging.getLogger(__name__)

STEP_RE = re.compile(r"^step_(\d{8})$")
TMP_PREFIX = ".tmp-"
OLD_PREFIX = ".old-"  # the previous copy of a tag while it is saved again
LATEST = "latest"
TRAINER_STATE = "trainer_state.json"
HF_CONFIG = "hf_config.json"
UNIVERSAL_SUFFIX = "_universal"  # DeepSpeed's name for a universal copy of a checkpoint tag
UNIVERSAL_RE = re.compile(r"^(step_\d{8})" + UNIVERSAL_SUFFIX + "$")
LATEST_UNIVERSAL = "latest_universal"  # what ds_to_universal writes; DeepSpeed reads it when no tag is given
UNIVERSAL_INFO = "ascendops_universal.json"  # in the universal copy: the checkpoint it was made from
UNIVERSAL_TMP = TMP_PREFIX + "universal"
UNIVERSAL_MODES = RESUME_UNIVERSAL
UNIVERSAL_STAGES = (1, 2, 3)  # ds_to_universal reads ZeRO optimizer shards: stage 0 has none


def tag_for(step: int) -> str:
    return f"step_{step:08d}"


def rng_file(rank: int) -> str:
    return f"rng_rank{rank:05d}.pt"


# ---------------------------------------------------------------- RNG


def capture_rng_state(device_type: str = "cpu") -> dict[str, Any]:
    """Every RNG state in types torch.load(weights_only=True) accepts: tensors, lists, dicts, numbers."""
    import torch

    version, internal, gauss = random.getstate()
    name, key, pos, has_gauss, cached = np.random.get_state()
    st = {"python": [version, list(internal), gauss],
          "numpy": {"bit_generator": name, "key": torch.from_numpy(key.astype(np.int64)), "pos": int(pos),
                    "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
          "torch": torch.get_rng_state()}
    if device_type in ("npu", "cuda"):
        st["device"] = getattr(torch, device_type).get_rng_state()
    return st


def restore_rng_state(st: dict[str, Any], device_type: str = "cpu") -> None:
    import torch

    version, internal, gauss = st["python"]
    random.setstate((version, tuple(internal), gauss))
    npst = st["numpy"]
    if isinstance(npst, dict):
        np.random.set_state((npst["bit_generator"], npst["key"].numpy().astype(np.uint32), npst["pos"],
                             npst["has_gauss"], npst["cached_gaussian"]))
    else:  # a state captured in memory by an older trainer (numpy's own tuple)
        np.random.set_state(npst)
    torch.set_rng_state(st["torch"])
    if "device" in st and device_type in ("npu", "cuda"):
        getattr(torch, device_type).set_rng_state(st["device"])


def load_rng_file(path: str | Path) -> dict[str, Any] | None:
    """A rank's RNG state file, with weights_only=True (the trainer wrote it: tensors, lists, numbers). None
    for a file of an older trainer (it pickled numpy arrays): that rank's RNG then starts fresh, which
    changes nothing the run depends on (the data order is seeded by its position, the model has no
    dropout)."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        log.warning("RNG state %s is not in the weights-only format (written by an older trainer?): not "
                    "restored (%s)", path, str(e).splitlines()[0] if str(e) else type(e).__name__)
        return None


# ---------------------------------------------------------------- durable files


def fsync_dir(path: str | Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: str | Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(root: str | Path) -> None:
    """fsync every file and directory below root (data first, then the directory entries)."""
    for dirpath, _, files in os.walk(root, topdown=False):
        for name in files:
            fsync_file(os.path.join(dirpath, name))
        fsync_dir(dirpath)


def fsync_own_files(paths: list[str | Path], directory: str | Path) -> None:
    """fsync the files this process wrote (their data), then the directory holding them (their names).
    Every rank calls it for its own files before the save's barrier: on a network filesystem (NFS,
    Lustre) an fsync by another client does not make them durable."""
    for path in paths:
        if os.path.isfile(path):
            _no_group_write(path)
            fsync_file(path)
    for d in {Path(p).parent for p in paths} | {Path(directory)}:
        if d.is_dir():
            fsync_dir(d)


def _no_group_write(path: str | Path) -> None:
    """Drop group and other write permission (a umask of 002 would leave it): check_job_owned refuses it."""
    mode = os.stat(path).st_mode
    if mode & 0o022:
        os.chmod(path, mode & 0o7755)


class UnsafeCheckpointError(RuntimeError):
    """A checkpoint file would have to be unpickled from a place another user can write to."""


def check_job_owned(directory: str | Path, root: str | Path | None = None) -> None:
    """Refuse to go on unless `directory`, every file in it and `root` (the checkpoint directory above it) are
    owned by this process's uid (or root's) and not writable by their group or others. Called before
    DeepSpeed's own checkpoint files are unpickled (weights_only=False: they hold Python objects), so nobody
    else can have planted a pickle there (or swapped the directory)."""
    uid = os.getuid()
    d = Path(directory)
    items = ([Path(root)] if root is not None else []) + [d, *(c for c in d.iterdir() if c.is_file())]
    for item in items:
        st = item.lstat()
        problem = None
        if st.st_uid not in (uid, 0):
            problem = f"it is owned by uid {st.st_uid}, this job runs as uid {uid}"
        elif st.st_mode & 0o022:
            problem = f"it is writable by its group or others (mode {st.st_mode & 0o7777:04o})"
        if problem:
            raise UnsafeCheckpointError(
                f"refusing to load checkpoint {d}: DeepSpeed's checkpoint files are unpickled (weights_only=False), "
                f"so they are read only from a directory the job's user alone can write, but {item}: {problem}. "
                "Fix the ownership and mode (chown; chmod go-w) if the files are yours")


def torch_load_job_file(path: str | Path, root: str | Path | None = None):
    """torch.load of a file DeepSpeed wrote for this job (weights_only=False: it pickles Python objects
    such as its loss scaler and config), after check_job_owned on the file's directory (and `root`)."""
    import torch

    path = Path(path)
    check_job_owned(path.parent, root)
    return torch.load(path, map_location="cpu", weights_only=False)


def write_atomic(path: str | Path, text: str) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    _no_group_write(tmp)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def has_marker(path: Path) -> bool:
    """A checkpoint directory whose save finished: trainer_state.json is written last, atomically."""
    return path.is_dir() and (path / TRAINER_STATE).is_file()


def is_complete(path: Path) -> bool:
    return bool(STEP_RE.match(path.name)) and has_marker(path)


def complete_checkpoints(ckpt_dir: str | Path) -> list[Path]:
    """Complete checkpoints, oldest first."""
    d = Path(ckpt_dir)
    if not d.is_dir():
        return []
    return sorted((p for p in d.iterdir() if p.is_dir() and is_complete(p)), key=lambda p: p.name)


def resolve_resume_tag(ckpt_dir: str | Path) -> str | None:
    """The checkpoint to resume from: what `latest` names, or (if that is missing or broken)
    the newest complete checkpoint."""
    d = Path(ckpt_dir)
    latest = d / LATEST
    if latest.is_file():
        tag = latest.read_text().strip()
        if is_complete(d / tag):
            return tag
        log.warning("%s names %r, which is not a complete checkpoint; using the newest complete one", latest, tag)
    done = complete_checkpoints(d)
    return done[-1].name if done else None


def prune(ckpt_dir: str | Path, keep: int, protect: str) -> list[str]:
    """Remove all but the newest `keep` complete checkpoints (never `protect`), and the universal
    copies of checkpoints that are gone."""
    done = complete_checkpoints(ckpt_dir)
    removed = []
    for p in done[:-keep] if keep > 0 else done:
        if p.name != protect:
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p.name)
    d = Path(ckpt_dir)
    for p in sorted(d.iterdir()) if d.is_dir() else []:
        m = UNIVERSAL_RE.match(p.name)
        if m and p.is_dir() and not is_complete(d / m.group(1)):
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p.name)
            latest = d / LATEST_UNIVERSAL
            if latest.is_file() and latest.read_text().strip() == p.name:
                latest.unlink()
    return removed


def _remove(p: Path) -> None:
    shutil.rmtree(p, ignore_errors=True) if p.is_dir() and not p.is_symlink() else p.unlink(missing_ok=True)


def clean_stale(ckpt_dir: str | Path) -> list[str]:
    """Finish or undo saves that never finished (at start-up, before anything is read); returns what it
    did. A swap of a re-saved tag interrupted between its renames (.old-<tag> present): the complete
    <tag> stays if there is one, else the complete previous copy (.old-) is put back, else the complete
    new one (.tmp-); only then is the rest removed. Other .tmp- leftovers are removed."""
    d = Path(ckpt_dir)
    done: list[str] = []
    if not d.is_dir():
        return done
    for old in sorted(p for p in d.iterdir() if p.name.startswith(OLD_PREFIX)):
        tag = old.name[len(OLD_PREFIX):]
        final, new = d / tag, d / (TMP_PREFIX + tag)
        if not STEP_RE.match(tag) or has_marker(final):
            pass
        elif has_marker(old) or has_marker(new):
            keep = old if has_marker(old) else new
            if final.exists():
                _remove(final)
            os.rename(keep, final)
            fsync_dir(d)
            done.append(f"restored {tag} from {keep.name}")
        _remove(old)
        done.append(f"removed {old.name}")
    for p in sorted(d.iterdir()):
        if p.name.startswith(TMP_PREFIX) or p.name == LATEST + ".tmp":
            _remove(p)
            done.append(f"removed {p.name}")
    if done:
        fsync_dir(d)
    return done


# The points of a save's finalization, in order (finalize_save calls its hook after each: the tests kill
# the process there).
SAVE_POINTS = ("data-durable", "marker-written", "old-aside", "new-in-place", "latest-written", "old-removed",
               "pruned")


def finalize_save(ckpt_dir: str | Path, tag: str, trainer_state: dict[str, Any], hf_config_dict: dict[str, Any],
                  keep: int, hook=None) -> list[str]:
    """The writer's part of a save, once every rank's files in .tmp-<tag> are durable: the trainer's files
    (trainer_state.json last: the completeness marker), the rename into place (a tag saved before is swapped:
    one complete copy at every instant), `latest`, pruning. `hook(point)` after each of SAVE_POINTS.
    Returns the pruned checkpoints."""
    hook = hook or (lambda point: None)
    d = Path(ckpt_dir)
    tmp, final, old = d / (TMP_PREFIX + tag), d / tag, d / (OLD_PREFIX + tag)
    write_atomic(tmp / HF_CONFIG, json.dumps(hf_config_dict, indent=1))
    for dirpath, _, files in os.walk(tmp):
        for name in [".", *files]:
            _no_group_write(os.path.join(dirpath, name))
    fsync_tree(tmp)
    hook("data-durable")
    write_atomic(tmp / TRAINER_STATE, json.dumps(trainer_state, indent=1))
    hook("marker-written")
    swapped = final.exists()
    if swapped:  # the same step saved before (e.g. a re-run): keep it until the new copy is in place
        if old.exists():  # a swap of this process that failed half-way: <tag> is the copy to keep
            _remove(old)
        os.rename(final, old)
        fsync_dir(d)
        hook("old-aside")
    os.rename(tmp, final)
    fsync_dir(d)
    hook("new-in-place")
    write_atomic(d / LATEST, tag)
    hook("latest-written")
    if swapped:
        shutil.rmtree(old)
        fsync_dir(d)
        hook("old-removed")
    removed = prune(d, keep, protect=tag)
    hook("pruned")
    return removed


class _RecordSaves:
    """The files DeepSpeed's checkpoint engine writes in this process during a save (each rank fsyncs its
    own). Wraps the engine's checkpoint_engine.save for the duration; an engine without one records none."""

    def __init__(self, engine):
        self.ce = getattr(engine, "checkpoint_engine", None)
        self.paths: list[str] = []

    def __enter__(self):
        if self.ce is not None and callable(getattr(self.ce, "save", None)):
            stock = self.ce.save

            def save(state_dict, path, *args, **kwargs):
                out = stock(state_dict, path, *args, **kwargs)
                self.paths.append(str(path))
                return out

            self.ce.save = save
        return self

    def __exit__(self, *exc):
        if self.ce is not None and "save" in vars(self.ce):
            del self.ce.save  # the class's method again
        return False


# ---------------------------------------------------------------- resume at another world size


def fresh_optimizer_hint(ckpt_dir: str | Path, tag: str) -> str:
    """The way out when a checkpoint's optimizer state cannot be resumed: its weights, through export."""
    return (f"continue from its weights with a fresh optimizer: `ascendops-train export --checkpoint-dir {ckpt_dir} "
            f"--tag {tag} --out DIR --dtype fp32`, then train with --model.hf_dir DIR and a new checkpoint.dir (the "
            "LR schedule, optimizer moments and data position start over)")


def universal_tag(tag: str) -> str:
    return tag + UNIVERSAL_SUFFIX


@dataclass(frozen=True)
class ResumePlan:
    """How a checkpoint is resumed: `tag` (its trainer_state.json: step, data position), loaded by
    DeepSpeed from `load_tag`: the checkpoint itself, or its universal copy (`universal`)."""

    tag: str
    saved_world_size: int
    world_size: int
    zero_stage: int
    universal: bool
    shared_fs: bool = True

    @property
    def load_tag(self) -> str:
        return universal_tag(self.tag) if self.universal else self.tag

    def line(self) -> str:
        how = "universal" if self.universal else "its own ZeRO shards"
        return (f"resumed at world size {self.world_size} from a checkpoint of world size {self.saved_world_size} "
                f"({how})")

    def as_dict(self) -> dict[str, Any]:
        return {"tag": self.tag, "loaded": self.load_tag, "world_size": self.world_size,
                "checkpoint_world_size": self.saved_world_size, "zero_stage": self.zero_stage,
                "universal": self.universal}


def saved_implementation(state: dict[str, Any]) -> str:
    """The model implementation a checkpoint's trainer state was saved by (transformers where it does not say:
    the only one before model.implementation)."""
    return str(state.get("model_implementation") or "transformers")


def plan_resume(ckpt_dir: str | Path, tag: str, state: dict[str, Any], world_size: int, zero_stage: int,
                mode: str = "auto", shared_fs: bool = True, implementation: str | None = None) -> ResumePlan:
    """Decide how to resume checkpoint `tag` (its trainer state `state`) with `world_size` ranks at ZeRO
    `zero_stage`: DeepSpeed's own load (same world size), or through a universal copy (another world size
    under mode auto; always under mode always). Raises ConfigError, naming the way out, where neither works:
    another ZeRO stage, mode never at another world size, ZeRO stage 0 (no optimizer shards to convert),
    another model implementation (`implementation`: its parameters are other tensors; a state without the key
    was written by `transformers`, the only one before `model.implementation`).
    Whether the files are there is checked where they are read (UniversalConversion): with node-local
    checkpoints (shared_fs false) every node converts its own copy and so needs every rank's shards."""
    from .config import ConfigError

    if mode not in UNIVERSAL_MODES:
        raise ConfigError(f"checkpoint.resume_universal must be one of {', '.join(UNIVERSAL_MODES)}, got '{mode}'")
    path = Path(ckpt_dir) / tag
    old_ws = int(state.get("world_size") or world_size)
    old_stage = int(state["zero_stage"]) if state.get("zero_stage") is not None else zero_stage
    hint = fresh_optimizer_hint(ckpt_dir, tag)
    old_impl = saved_implementation(state)
    if implementation is not None and old_impl != implementation:
        raise ConfigError(
            f"checkpoint {path} was saved by model.implementation {old_impl}, this run uses {implementation}. "
            f"Their parameters are other tensors (fused wqkv/w13 in native), so DeepSpeed cannot load one into the "
            f"other. Either relaunch with model.implementation {old_impl}, or {hint} (both implementations read "
            f"and write that format)")
    if old_stage != zero_stage:
        raise ConfigError(
            f"checkpoint {path} was saved with ZeRO stage {old_stage}, this run uses stage {zero_stage}. Its "
            f"optimizer state is sharded for its own stage. Either relaunch with parallel.zero_stage={old_stage} "
            f"(or auto, which keeps it), or {hint}")
    universal = mode == "always" or (mode == "auto" and old_ws != world_size)
    if not universal and old_ws != world_size:
        raise ConfigError(
            f"checkpoint {path} was saved by {old_ws} ranks, this launch has {world_size}. Its optimizer state is "
            f"sharded per rank and checkpoint.resume_universal is never, so it is not re-sharded. Either relaunch "
            f"with {old_ws} ranks, set checkpoint.resume_universal auto (a DeepSpeed universal checkpoint keeps the "
            f"optimizer state across world sizes), or {hint}")
    if universal and old_stage not in UNIVERSAL_STAGES:
        raise ConfigError(
            f"checkpoint {path} was saved by {old_ws} ranks with ZeRO stage {old_stage}, this launch has {world_size} "
            f"(checkpoint.resume_universal {mode}). A DeepSpeed universal checkpoint is made from ZeRO optimizer "
            f"shards, which stage {old_stage} does not write, so it cannot be resumed at another world size with its "
            f"optimizer state. Either relaunch with {old_ws} ranks, or {hint}")
    return ResumePlan(tag, old_ws, world_size, old_stage, universal, shared_fs)


def missing_universal_inputs(path: str | Path, world_size: int, zero_stage: int) -> list[str]:
    """The files of checkpoint `path` (saved by `world_size` ranks at ZeRO `zero_stage`) that the universal
    conversion needs and that are not there: every rank's optimizer shard (bf16_ prefixed or not) and the
    model states (ZeRO-3: one per rank; else mp_rank_00's)."""
    p = Path(path)
    names = {f.name for f in p.iterdir()} if p.is_dir() else set()
    missing = []
    for r in range(world_size):
        optim = f"zero_pp_rank_{r}_mp_rank_00_optim_states.pt"
        if optim not in names and "bf16_" + optim not in names:
            missing.append(optim)
        if zero_stage == 3 and f"zero_pp_rank_{r}_mp_rank_00_model_states.pt" not in names:
            missing.append(f"zero_pp_rank_{r}_mp_rank_00_model_states.pt")
    if zero_stage < 3 and "mp_rank_00_model_states.pt" not in names:
        missing.append("mp_rank_00_model_states.pt")
    return missing


def universal_is_current(ckpt_dir: str | Path, tag: str) -> bool:
    """A complete universal copy of `tag` exists and was made from this very save of it: its info file
    names the tag and the mtime of the checkpoint's trainer_state.json (a checkpoint saved again at the
    same step, e.g. by a re-run, gets a new one, so its old copy is stale)."""
    d = Path(ckpt_dir)
    info = d / universal_tag(tag) / UNIVERSAL_INFO
    try:
        meta = json.loads(info.read_text())
        return (meta.get("source") == tag and (d / universal_tag(tag) / "zero").is_dir()
                and meta.get("source_state_mtime_ns") == (d / tag / TRAINER_STATE).stat().st_mtime_ns)
    except (OSError, ValueError):
        return False


def converter_workers(cpus: int | None = None) -> tuple[int, int]:
    """(extract, merge) worker processes of ds_to_universal: DeepSpeed's defaults (4, 2) on a big host,
    fewer on a small one. Each extract worker holds one rank's optimizer shard in memory, each merge worker
    one parameter's full fp32 state."""
    cpus = cpus or os.cpu_count() or 1
    return max(1, min(4, cpus // 4)), max(1, min(2, cpus // 8))


def converter_command(src: str | Path, out: str | Path, cpus: int | None = None) -> list[str]:
    """DeepSpeed's `python -m deepspeed.checkpoint.ds_to_universal` (its main and argument parser; `-c` avoids
    runpy's warning about the module being imported twice). --inject_missing_state: DeepSpeed writes the
    universal_checkpoint_info a ZeRO-1/2 conversion asserts only for models that set it (Megatron); ours
    has no tensor or pipeline parallelism, which is what the injected default describes."""
    extract, merge = converter_workers(cpus)
    return [sys.executable, "-c", "from deepspeed.checkpoint.ds_to_universal import main, parse_arguments; "
            "main(parse_arguments())", "--input_folder", str(src), "--output_folder", str(out),
            "--num_extract_workers", str(extract), "--num_merge_workers", str(merge), "--inject_missing_state"]


def repair_zero3_universal_load(optimizer, universal_dir: str | Path, report: bool = True) -> list[str]:
    """Undo two slips of DeepSpeed 0.19's ZeRO-3 universal load (stage3.py,
    load_hp_checkpoint_state_from_checkpoint_dir_stage3; its ZeRO-1/2 load has neither) on the wrapped
    torch optimizer, so the run continues as it would have without the world-size change:
    - it copies the FIRST parameter group's hyperparameters onto every group. Ours are [decayed matrices,
      norms without decay]: the norms would silently get weight decay. Each group gets its saved ones back
      (the universal copy's zero/optimizer_state.pt keeps them all).
    - it hands every group the SAME `step` tensor, which torch's Adam(W) increments in place once per group
      and step: the bias correction would count N steps per step with N groups. Each group gets its own.
    Returns what it changed (for the log and the tests)."""
    import torch

    # DeepSpeed's ds_to_universal wrote it (optimizer state dict plus its own objects): not weights-only
    saved = torch_load_job_file(Path(universal_dir) / "zero" / "optimizer_state.pt", universal_dir)
    groups = saved.get("optimizer_state_dict", saved).get("param_groups", [])
    if len(groups) != len(optimizer.param_groups):
        raise RuntimeError(f"universal checkpoint {universal_dir} has {len(groups)} optimizer parameter groups, "
                           f"the optimizer {len(optimizer.param_groups)}")
    changed = []
    for i, (group, saved_group) in enumerate(zip(optimizer.param_groups, groups, strict=True)):
        for key, value in saved_group.items():
            if key != "params" and group.get(key) != value:
                changed.append(f"group {i} {key} {group.get(key)} -> {value}")
                group[key] = value
    seen: set[int] = set()
    for i, st in enumerate(optimizer.state.values()):
        step = st.get("step")
        if torch.is_tensor(step):
            if id(step) in seen:
                st["step"] = step.clone()
                changed.append(f"state {i} step: own tensor")
            seen.add(id(st["step"]))
    if changed and report:
        log.info("ZeRO-3 universal load repaired (DeepSpeed had given every parameter group the first one's "
                 "hyperparameters and one shared step counter): %s", "; ".join(changed))
    return changed


class UniversalConversion:
    """Rank 0's conversion of checkpoint `tag` into `<tag>_universal` (idempotent, crash-safe), run as a
    child process so that rank 0 keeps answering the other ranks while it runs (CheckpointManager.
    prepare_universal). Into .tmp-universal/<tag>_universal first; renamed into place when complete;
    then latest_universal. `error` is set (a message naming the way out) when it cannot be done."""

    def __init__(self, ckpt_dir: str | Path, plan: ResumePlan, command=converter_command):
        self.dir, self.plan = Path(ckpt_dir), plan
        self.final = self.dir / plan.load_tag
        self.tmp_root = self.dir / UNIVERSAL_TMP
        self.log_path = self.tmp_root / "convert.log"
        self.error: str | None = None
        self.converter_failed = False  # error came from DeepSpeed's converter (else: a checkpoint it cannot take)
        self.reused = False
        self.proc: subprocess.Popen | None = None
        self.started = time.monotonic()
        src = self.dir / plan.tag
        if universal_is_current(self.dir, plan.tag):
            self.reused = True
            return
        missing = missing_universal_inputs(src, plan.saved_world_size, plan.zero_stage)
        if missing:
            shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
            where = "" if plan.shared_fs else f" on {socket.gethostname()}"
            local = ("" if plan.shared_fs else
                     f" With node-local checkpoints (checkpoint.shared_fs false) every node converts its own copy and "
                     f"needs the files of every rank: copy each node's {src} into this directory on every node of "
                     "the new launch (or use a shared filesystem).")
            self.error = (f"checkpoint {src}{where} (saved by {plan.saved_world_size} ranks, ZeRO stage "
                          f"{plan.zero_stage}) cannot be converted to a DeepSpeed universal checkpoint to resume at "
                          f"world size {plan.world_size}: it lacks {shown}.{local} Or relaunch with "
                          f"{plan.saved_world_size} ranks, or {fresh_optimizer_hint(self.dir, plan.tag)}")
            return
        shutil.rmtree(self.tmp_root, ignore_errors=True)
        self.tmp_out = self.tmp_root / plan.load_tag
        try:
            self.tmp_root.mkdir(parents=True)
            with open(self.log_path, "w") as logf:
                self.proc = subprocess.Popen(command(src, self.tmp_out), stdout=logf, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL)
        except OSError as e:  # reported to every rank (prepare_universal) instead of leaving them waiting
            self.converter_failed = True
            self.error = f"could not start DeepSpeed's universal checkpoint conversion of {src}: {e}"

    def poll(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds; True when done (finished, failed or nothing to do)."""
        if self.proc is None:
            return True
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        self.proc = None
        if rc == 0:
            try:
                self._finish()
            except OSError as e:
                self.converter_failed = True
                self.error = f"could not finish the universal copy {self.final}: {e}"
            return True
        self.converter_failed = True
        tail = self.log_path.read_text(errors="replace").strip().splitlines()[-8:]
        self.error = (f"DeepSpeed's universal checkpoint conversion of {self.dir / self.plan.tag} failed (exit "
                      f"{rc}; its output: {self.log_path}):\n  " + "\n  ".join(tail) + "\nRelaunch with "
                      f"{self.plan.saved_world_size} ranks to resume it as it is, or "
                      + fresh_optimizer_hint(self.dir, self.plan.tag))
        return True

    def _finish(self) -> None:
        """Mark the copy with its source, make it durable, rename it into place, point latest_universal at it."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            ds_version = version("deepspeed")
        except PackageNotFoundError:
            ds_version = None
        src_state = self.dir / self.plan.tag / TRAINER_STATE
        info = {"source": self.plan.tag, "source_state_mtime_ns": src_state.stat().st_mtime_ns,
                "checkpoint_world_size": self.plan.saved_world_size, "zero_stage": self.plan.zero_stage,
                "deepspeed": ds_version, "converted_at": time.time(),
                "seconds": round(time.monotonic() - self.started, 1)}
        (self.tmp_out / UNIVERSAL_INFO).write_text(json.dumps(info, indent=1))
        fsync_tree(self.tmp_out)
        if self.final.exists():  # a stale copy (the checkpoint was saved again since)
            shutil.rmtree(self.final)
        os.rename(self.tmp_out, self.final)
        fsync_dir(self.dir)
        write_atomic(self.dir / LATEST_UNIVERSAL, self.final.name)
        shutil.rmtree(self.tmp_root, ignore_errors=True)


# ---------------------------------------------------------------- manager


class CheckpointManager:
    """Collective save/load of a DeepSpeed engine plus the trainer's own state."""

    def __init__(self, ckpt_dir: str, keep: int, shared_fs: bool, ctx, hf_config_dict: dict[str, Any] | None = None):
        from .parallel import barrier

        self.dir = Path(ckpt_dir)
        self.keep, self.shared_fs, self.ctx = keep, shared_fs, ctx
        self.hf_config_dict = hf_config_dict  # the model's config.json, saved with each checkpoint (set before save)
        # Who finalizes (fsync, rename, latest, prune): one process per filesystem.
        self.is_writer = ctx.is_main if shared_fs else ctx.launch.local_rank == 0
        if self.is_writer:
            self.dir.mkdir(mode=0o755, parents=True, exist_ok=True)
            for line in clean_stale(self.dir):
                log.info("checkpoint clean-up in %s: %s", self.dir, line)
        barrier(ctx)
        self.last_saved_step: int | None = None

    def save(self, engine, step: int, trainer_state: dict[str, Any], hook=None) -> Path:
        """Collective. `hook(point)`: called by the writer after each of SAVE_POINTS (tests)."""
        import torch

        from .parallel import barrier

        tag = tag_for(step)
        tmp_tag = TMP_PREFIX + tag
        tmp = self.dir / tmp_tag
        if self.is_writer and tmp.exists():
            shutil.rmtree(tmp)
        barrier(self.ctx)
        with _RecordSaves(engine) as saved:
            engine.save_checkpoint(str(self.dir), tag=tmp_tag, client_state={"trainer_state": trainer_state},
                                   save_latest=False)
        rng_path = tmp / rng_file(self.ctx.rank)
        torch.save(capture_rng_state(self.ctx.device_type), rng_path)
        fsync_own_files([*saved.paths, rng_path], tmp)  # this rank's files are durable before the barrier
        barrier(self.ctx)  # every rank's files are written and durable
        final = self.dir / tag
        if self.is_writer:
            removed = finalize_save(self.dir, tag, trainer_state, self.hf_config_dict, self.keep, hook)
            log.info("saved checkpoint %s%s", final, f" (removed {', '.join(removed)})" if removed else "")
        barrier(self.ctx)  # nobody moves on (or exits) before the checkpoint is final
        self.last_saved_step = step
        return final

    def resume_tag(self) -> str | None:
        from .parallel import all_gather_object, broadcast_object

        if self.shared_fs:
            return broadcast_object(resolve_resume_tag(self.dir) if self.ctx.is_main else None, self.ctx)
        tags = all_gather_object(resolve_resume_tag(self.dir), self.ctx)
        if len(set(tags)) != 1:
            raise RuntimeError(f"nodes disagree on the checkpoint to resume from: {sorted(set(map(str, tags)))}")
        return tags[0]

    def saved_implementation(self, tag: str) -> str:
        """The model implementation checkpoint `tag` was saved by (module function saved_implementation)."""
        return saved_implementation(json.loads((self.dir / tag / TRAINER_STATE).read_text()))

    def saved_zero_stage(self, tag: str) -> int | None:
        """The ZeRO stage a checkpoint was saved with (None when it does not say)."""
        state = json.loads((self.dir / tag / TRAINER_STATE).read_text())
        return int(state["zero_stage"]) if state.get("zero_stage") is not None else None

    def plan(self, tag: str, zero_stage: int, mode: str = "auto",
             implementation: str | None = None) -> tuple[ResumePlan, dict[str, Any]]:
        """How to resume `tag` at this launch's world size (plan_resume), decided before DeepSpeed reads any
        shard (it would fail deep inside with a shape or file error). Returns (plan, its trainer state)."""
        state = json.loads((self.dir / tag / TRAINER_STATE).read_text())
        plan = plan_resume(self.dir, tag, state, self.ctx.world_size, zero_stage, mode, self.shared_fs,
                           implementation)
        return plan, state

    def prepare_universal(self, plan: ResumePlan, poll_s: float = 5.0, command=converter_command) -> bool:
        """Collective: make sure the universal copy of plan.tag exists. The writer of each filesystem converts
        it, once (rank 0 on a shared filesystem; each node's local rank 0 with node-local checkpoints); a
        current copy is reused. Returns True when it was converted now (on the main rank's filesystem). Raises
        ConfigError naming the way out when it cannot be converted, RuntimeError when DeepSpeed's converter
        failed."""
        from .config import ConfigError
        from .parallel import all_agree_flag, all_gather_object

        job = UniversalConversion(self.dir, plan, command) if self.is_writer else None
        if job is not None and job.proc is not None and self.ctx.launch.is_node_main:
            log.info("converting %s (world size %d) to a DeepSpeed universal checkpoint %s for world size %d "
                     "(output: %s)", plan.tag, plan.saved_world_size, job.final, plan.world_size, job.log_path)
        # SYNC (host): every other rank waits here while the writers convert, which can take many minutes for a
        # large model (each reads every rank's optimizer shard). A writer waits for its child process poll_s at a
        # time and joins a gloo all-reduce of one flag ("still converting") in between, so no single collective
        # waits much longer than poll_s (well inside parallel.dist_timeout_s); the loop ends when no rank is busy.
        while all_agree_flag(not job.poll(poll_s) if job is not None else False, self.ctx):
            pass
        results = all_gather_object((job.error, job.converter_failed, job.reused) if job is not None else None,
                                    self.ctx)
        for result in results:
            if result is not None and result[0]:
                raise (RuntimeError if result[1] else ConfigError)(result[0])
        reused = results[0][2]
        if self.ctx.is_main:
            log.info("%s universal checkpoint %s", "reusing the" if reused else "converted to the",
                     self.dir / plan.load_tag)
        return not reused

    def load(self, engine, plan: ResumePlan) -> dict[str, Any]:
        """Load a checkpoint as planned into the engine (its universal copy when plan.universal: the engine was
        built with "checkpoint": {"load_universal": true}); restores this rank's RNG when the world size is the
        one it was saved with. Returns the trainer state."""
        # DeepSpeed's loader unpickles its files with weights_only=False: only from a directory that is the job's own
        check_job_owned(self.dir / plan.load_tag, self.dir)
        path, _ = engine.load_checkpoint(str(self.dir), tag=plan.load_tag, load_optimizer_states=True,
                                         load_lr_scheduler_states=True)
        if path is None:
            raise RuntimeError(f"DeepSpeed could not load checkpoint {self.dir / plan.load_tag}")
        if plan.universal and engine.zero_optimization_stage() == 3:
            repair_zero3_universal_load(engine.optimizer.optimizer, self.dir / plan.load_tag, self.ctx.is_main)
        state = json.loads((self.dir / plan.tag / TRAINER_STATE).read_text())
        rng_path = self.dir / plan.tag / rng_file(self.ctx.rank)
        if plan.saved_world_size != plan.world_size:
            if self.ctx.is_main:  # the data order does not depend on them (data.py), nor does the model (no dropout)
                log.info("world size changed: the per-rank RNG states of %s are not restored", plan.tag)
        elif rng_path.is_file():
            st = load_rng_file(rng_path)
            if st is not None:
                restore_rng_state(st, self.ctx.device_type)
        else:
            log.warning("no RNG state for rank %d in %s", self.ctx.rank, plan.tag)
        self.last_saved_step = int(state["step"])
        return state


# ---------------------------------------------------------------- export


def _write_safetensors_shards(tensors_iter, out: Path, max_shard_bytes: int) -> None:
    """Write (name, tensor) pairs as model-0000i-of-0000n.safetensors (+ index when sharded)."""
    from safetensors.torch import save_file

    shards: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    size = 0

    def flush():
        nonlocal current, size
        if current:
            name = f"model-part{len(shards):05d}.safetensors"
            save_file(current, str(out / name), metadata={"format": "pt"})
            os.chmod(out / name, 0o644)  # safetensors creates 0600; a model directory is meant to be shared
            shards.append({"file": name, "keys": list(current), "bytes": size})
            current, size = {}, 0

    for name, t in tensors_iter:
        nbytes = t.numel() * t.element_size()
        if current and size + nbytes > max_shard_bytes:
            flush()
        current[name] = t.contiguous()
        size += nbytes
    flush()
    if len(shards) == 1:
        os.replace(out / shards[0]["file"], out / "model.safetensors")
        return
    n = len(shards)
    weight_map = {}
    for i, s in enumerate(shards):
        final = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
        os.replace(out / s["file"], out / final)
        weight_map.update({k: final for k in s["keys"]})
    index = {"metadata": {"total_size": sum(s["bytes"] for s in shards)}, "weight_map": weight_map}
    (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=1))


def hf_config_for_readers(hf_config_dict: dict[str, Any], dtype_name: str) -> dict[str, Any]:
    """config.json that every reader understands: transformers >= 5 reads `rope_parameters` and
    `dtype`; transformers 4.x, vLLM and llama.cpp's convert_hf_to_gguf read the top-level
    `rope_theta`, `rope_scaling` (Llama 3.1: {"rope_type": "llama3", "factor", "low_freq_factor",
    "high_freq_factor", "original_max_position_embeddings"}; null without scaling) and `torch_dtype`."""
    from .model import normalize_rope_fields

    cfg = normalize_rope_fields(hf_config_dict)  # one place for RoPE, whatever layout came in
    cfg["dtype"] = cfg["torch_dtype"] = "bfloat16" if dtype_name == "bf16" else "float32"
    cfg["architectures"] = ["LlamaForCausalLM"]
    cfg["use_cache"] = True
    rope = dict(cfg["rope_parameters"])
    cfg["rope_theta"] = rope.pop("rope_theta")
    cfg["rope_scaling"] = rope if rope.get("rope_type", "default") != "default" else None
    return cfg


def _finish_export(out: Path, hf_config_dict: dict[str, Any], dtype_name: str, tokenizer_dir: str | None,
                   meta: dict[str, Any]) -> None:
    cfg = hf_config_for_readers(hf_config_dict, dtype_name)
    (out / "config.json").write_text(json.dumps(cfg, indent=1))
    if tokenizer_dir and os.path.isdir(tokenizer_dir):
        for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            if os.path.isfile(os.path.join(tokenizer_dir, name)):
                shutil.copy2(os.path.join(tokenizer_dir, name), out / name)
    (out / "ascendops_export.json").write_text(json.dumps(meta, indent=1))


def _torch_dtype(dtype_name: str):
    import torch

    return torch.bfloat16 if dtype_name == "bf16" else torch.float32


def skip_tied(name: str, hf_config_dict: dict[str, Any]) -> bool:
    return bool(hf_config_dict.get("tie_word_embeddings")) and name == "lm_head.weight"


def _hf_namer(module, hf_config_dict: dict[str, Any]):
    """(name, tensor) -> the HF (name, tensor) pairs it holds: the native model's fused tensors are split
    into transformers' names (llama.native_to_hf); LlamaForCausalLM's names are HF's already."""
    from .llama import LlamaArgs, is_native, native_to_hf

    if not is_native(module):
        return lambda n, t: [(n, t)]
    args = LlamaArgs.from_hf(hf_config_dict)
    return lambda n, t: native_to_hf(n, t, args)


def export_from_engine(engine, ctx, out_dir: str, hf_config_dict: dict[str, Any], dtype_name: str,
                       tokenizer_dir: str | None, meta: dict[str, Any], max_shard_bytes: int = 5 * 2**30) -> None:
    """Write the engine's current weights as a HF directory (collective: call on every rank).

    Under ZeRO-3 every parameter is a shard; each layer's parameters are gathered in turn
    (GatheredParameters), copied to CPU on rank 0, and streamed into safetensors shards, so the
    full model is never materialized on a device.
    """
    import deepspeed

    from .parallel import barrier

    module = engine.module
    hf_names = _hf_namer(module, hf_config_dict)
    out = Path(out_dir)
    tmp = out.with_name(out.name + ".tmp-export")
    if ctx.is_main:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    dtype = _torch_dtype(dtype_name)
    zero3 = engine.zero_optimization_stage() == 3

    def tensors():
        # Group by owning module so one gather covers one layer's weights.
        groups: dict[str, list] = {}
        for name, p in module.named_parameters():
            groups.setdefault(name.rsplit(".", 1)[0], []).append((name, p))
        for _, items in groups.items():
            params = [p for _, p in items]
            if zero3:
                ctxm = deepspeed.zero.GatheredParameters(params, modifier_rank=None)
            else:
                import contextlib

                ctxm = contextlib.nullcontext()
            with ctxm:
                # SYNC: device -> host copy of one gathered layer (export only)
                host = [(n, p.detach().to("cpu", dtype=dtype).clone()) for n, p in items] if ctx.is_main else []
            yield from ((hn, ht) for n, t in host for hn, ht in hf_names(n, t) if not skip_tied(hn, hf_config_dict))

    if ctx.is_main:
        _write_safetensors_shards(tensors(), tmp, max_shard_bytes)
        _finish_export(tmp, hf_config_dict, dtype_name, tokenizer_dir, meta)
        fsync_tree(tmp)
        if out.exists():
            shutil.rmtree(out)
        os.rename(tmp, out)
    else:
        for _ in tensors():  # take part in the gathers
            pass
    barrier(ctx)


def export_from_checkpoint(ckpt_dir: str, out_dir: str, tag: str | None = None, dtype_name: str = "bf16",
                           tokenizer_dir: str | None = None, max_shard_bytes: int = 5 * 2**30,
                           progress: str = "off") -> str:
    """Offline export (one process, no devices): merge a checkpoint's ZeRO shards (fp32 master
    weights, DeepSpeed's zero_to_fp32) and write a HF directory. Returns the tag exported.

    progress: a progress.MODES value (stderr only): the tensors converted and written against their
    number, with the bytes so far. The merge before it is DeepSpeed's and reports nothing."""
    from .progress import Progress

    ckpt = Path(ckpt_dir)
    tag = tag or resolve_resume_tag(ckpt)
    if tag is None or not (ckpt / tag).is_dir():
        raise FileNotFoundError(f"no complete checkpoint in {ckpt_dir}" + (f" named {tag}" if tag else ""))
    src = ckpt / tag
    check_job_owned(src, ckpt)  # DeepSpeed's files below are unpickled (weights_only=False)
    hf_config_dict = json.loads((src / HF_CONFIG).read_text())
    state = json.loads((src / TRAINER_STATE).read_text())
    if list(src.glob("*optim_states.pt")) and state.get("zero_stage", 3) > 0:
        from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint

        sd = get_fp32_state_dict_from_zero_checkpoint(str(ckpt), tag=tag)
    else:
        # DeepSpeed's model states file: its config, version and client state beside the weights
        sd = torch_load_job_file(src / "mp_rank_00_model_states.pt", ckpt)["module"]
    if "tok_embeddings.weight" in sd:  # a native model's checkpoint: fused tensors, split into HF's names
        from .llama import LlamaArgs, to_hf_state_dict

        sd = to_hf_state_dict(sd, LlamaArgs.from_hf(hf_config_dict))
    dtype = _torch_dtype(dtype_name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = [k for k in sd if not skip_tied(k, hf_config_dict)]
    with Progress(len(names), "export", unit="tensor", mode=progress) as meter:
        written = 0

        def items():
            nonlocal written
            for k in names:
                t = sd[k].to(dtype)
                yield k, t
                written += t.numel() * t.element_size()
                meter.set_postfix(f"{written / 2**30:,.2f} GiB")
                meter.update(1)

        _write_safetensors_shards(items(), out, max_shard_bytes)
    _finish_export(out, hf_config_dict, dtype_name, tokenizer_dir or state.get("tokenizer"),
                   {"source": str(src), "step": state.get("step"), "weights": "fp32 master (zero_to_fp32)",
                    "dtype": dtype_name})
    return tag
