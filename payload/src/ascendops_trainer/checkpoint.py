"""Checkpoints that a crash cannot damage, resume, and export to a Hugging Face directory.

Layout of checkpoint.dir:
  step_00000100/        complete checkpoints (DeepSpeed files + trainer_state.json + rng_rank*.pt + hf_config.json)
  latest                name of the newest complete checkpoint (DeepSpeed's own format: the tag as text)
  .tmp-step_00000200/   a save in progress; never read, removed at the next start

A save writes everything into the .tmp- directory, fsyncs every file, renames the directory to its
final name (atomic on one filesystem), fsyncs the parent, and only then replaces `latest` (written
to a temp file, fsynced, os.replace). A crash at any point leaves the previous checkpoint and the
pointer to it intact. The newest `checkpoint.keep` checkpoints are kept.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

STEP_RE = re.compile(r"^step_(\d{8})$")
TMP_PREFIX = ".tmp-"
LATEST = "latest"
TRAINER_STATE = "trainer_state.json"
HF_CONFIG = "hf_config.json"


def tag_for(step: int) -> str:
    return f"step_{step:08d}"


def rng_file(rank: int) -> str:
    return f"rng_rank{rank:05d}.pt"


# ---------------------------------------------------------------- RNG


def capture_rng_state(device_type: str = "cpu") -> dict[str, Any]:
    import torch

    st = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if device_type in ("npu", "cuda"):
        st["device"] = getattr(torch, device_type).get_rng_state()
    return st


def restore_rng_state(st: dict[str, Any], device_type: str = "cpu") -> None:
    import torch

    random.setstate(st["python"])
    np.random.set_state(st["numpy"])
    torch.set_rng_state(st["torch"])
    if "device" in st and device_type in ("npu", "cuda"):
        getattr(torch, device_type).set_rng_state(st["device"])


# ---------------------------------------------------------------- durable files


def fsync_dir(path: str | Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(root: str | Path) -> None:
    """fsync every file and directory below root (data first, then the directory entries)."""
    for dirpath, _, files in os.walk(root, topdown=False):
        for name in files:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(dirpath)


def write_atomic(path: str | Path, text: str) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def is_complete(path: Path) -> bool:
    return bool(STEP_RE.match(path.name)) and (path / TRAINER_STATE).is_file()


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
    """Remove all but the newest `keep` complete checkpoints (never `protect`)."""
    done = complete_checkpoints(ckpt_dir)
    removed = []
    for p in done[:-keep] if keep > 0 else done:
        if p.name != protect:
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p.name)
    return removed


def clean_stale(ckpt_dir: str | Path) -> None:
    """Remove leftovers of saves that never finished."""
    d = Path(ckpt_dir)
    if d.is_dir():
        for p in d.iterdir():
            if p.name.startswith(TMP_PREFIX) or p.name.startswith(".old-"):
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)


# ---------------------------------------------------------------- manager


class CheckpointManager:
    """Collective save/load of a DeepSpeed engine plus the trainer's own state."""

    def __init__(self, ckpt_dir: str, keep: int, shared_fs: bool, ctx, hf_config_dict: dict[str, Any]):
        from .parallel import barrier

        self.dir = Path(ckpt_dir)
        self.keep, self.shared_fs, self.ctx = keep, shared_fs, ctx
        self.hf_config_dict = hf_config_dict
        # Who finalizes (fsync, rename, latest, prune): one process per filesystem.
        self.is_writer = ctx.is_main if shared_fs else ctx.launch.local_rank == 0
        if self.is_writer:
            self.dir.mkdir(parents=True, exist_ok=True)
            clean_stale(self.dir)
        barrier(ctx)
        self.last_saved_step: int | None = None

    def save(self, engine, step: int, trainer_state: dict[str, Any]) -> Path:
        import torch

        from .parallel import barrier

        tag = tag_for(step)
        tmp_tag = TMP_PREFIX + tag
        tmp = self.dir / tmp_tag
        if self.is_writer and tmp.exists():
            shutil.rmtree(tmp)
        barrier(self.ctx)
        engine.save_checkpoint(str(self.dir), tag=tmp_tag, client_state={"trainer_state": trainer_state},
                               save_latest=False)
        torch.save(capture_rng_state(self.ctx.device_type), tmp / rng_file(self.ctx.rank))
        barrier(self.ctx)  # every rank's files are written
        final = self.dir / tag
        if self.is_writer:
            (tmp / TRAINER_STATE).write_text(json.dumps(trainer_state, indent=1))
            (tmp / HF_CONFIG).write_text(json.dumps(self.hf_config_dict, indent=1))
            fsync_tree(tmp)
            if final.exists():  # same step saved before (e.g. a re-run): replace it
                old = self.dir / f".old-{tag}"
                os.rename(final, old)
                shutil.rmtree(old)
            os.rename(tmp, final)
            fsync_dir(self.dir)
            write_atomic(self.dir / LATEST, tag)
            removed = prune(self.dir, self.keep, protect=tag)
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

    def check_compatible(self, tag: str, zero_stage: int) -> dict[str, Any]:
        """Refuse, before DeepSpeed reads any shard, a checkpoint saved by another world size or ZeRO
        stage (DeepSpeed would fail deep inside with a shape or file error). Returns its trainer state."""
        from .config import ConfigError

        state = json.loads((self.dir / tag / TRAINER_STATE).read_text())
        old_ws, new_ws = int(state.get("world_size", self.ctx.world_size)), self.ctx.world_size
        old_stage = int(state.get("zero_stage", zero_stage))
        if old_ws != new_ws or old_stage != zero_stage:
            what = (f"{old_ws} ranks, this launch has {new_ws}" if old_ws != new_ws
                    else f"ZeRO stage {old_stage}, this run uses stage {zero_stage}")
            raise ConfigError(
                f"checkpoint {self.dir / tag} was saved by {what}. Its optimizer state is sharded per rank and is "
                f"not re-sharded on resume. Either relaunch with {old_ws} ranks and parallel.zero_stage={old_stage}, "
                f"or continue from its weights with a fresh optimizer: `ascendops-train export --checkpoint-dir "
                f"{self.dir} --tag {tag} --out DIR --dtype fp32`, then train with --model.hf_dir DIR and a new "
                "checkpoint.dir (the LR schedule, optimizer moments and data position start over)")
        return state

    def load(self, engine, tag: str | None = None) -> tuple[str, dict[str, Any]] | None:
        """Load a checkpoint (default: the newest) into the engine; restores this rank's RNG.
        Returns (tag, trainer_state)."""
        import torch

        tag = tag or self.resume_tag()
        if tag is None:
            return None
        self.check_compatible(tag, engine.zero_optimization_stage())
        path, _ = engine.load_checkpoint(str(self.dir), tag=tag, load_optimizer_states=True,
                                         load_lr_scheduler_states=True)
        if path is None:
            raise RuntimeError(f"DeepSpeed could not load checkpoint {self.dir / tag}")
        state = json.loads((self.dir / tag / TRAINER_STATE).read_text())
        rng_path = self.dir / tag / rng_file(self.ctx.rank)
        if rng_path.is_file():
            restore_rng_state(torch.load(rng_path, weights_only=False), self.ctx.device_type)
        else:
            log.warning("no RNG state for rank %d in %s (world size changed?)", self.ctx.rank, tag)
        self.last_saved_step = int(state["step"])
        return tag, state


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
            yield from ((n, t) for n, t in host if not skip_tied(n, hf_config_dict))

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
                           tokenizer_dir: str | None = None, max_shard_bytes: int = 5 * 2**30) -> str:
    """Offline export (one process, no devices): merge a checkpoint's ZeRO shards (fp32 master
    weights, DeepSpeed's zero_to_fp32) and write a HF directory. Returns the tag exported."""
    import torch

    ckpt = Path(ckpt_dir)
    tag = tag or resolve_resume_tag(ckpt)
    if tag is None or not (ckpt / tag).is_dir():
        raise FileNotFoundError(f"no complete checkpoint in {ckpt_dir}" + (f" named {tag}" if tag else ""))
    src = ckpt / tag
    hf_config_dict = json.loads((src / HF_CONFIG).read_text())
    state = json.loads((src / TRAINER_STATE).read_text())
    if list(src.glob("*optim_states.pt")) and state.get("zero_stage", 3) > 0:
        from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint

        sd = get_fp32_state_dict_from_zero_checkpoint(str(ckpt), tag=tag)
    else:
        sd = torch.load(src / "mp_rank_00_model_states.pt", map_location="cpu", weights_only=False)["module"]
    dtype = _torch_dtype(dtype_name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    items = ((k, v.to(dtype)) for k, v in sd.items() if not skip_tied(k, hf_config_dict))
    _write_safetensors_shards(items, out, max_shard_bytes)
    _finish_export(out, hf_config_dict, dtype_name, tokenizer_dir or state.get("tokenizer"),
                   {"source": str(src), "step": state.get("step"), "weights": "fp32 master (zero_to_fp32)",
                    "dtype": dtype_name})
    return tag
