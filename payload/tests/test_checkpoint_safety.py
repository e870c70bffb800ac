"""Checkpoint durability and safety: the save killed at each of its points always leaves a complete,
loadable checkpoint; each rank fsyncs its own files; the trainer's files load with weights_only=True;
DeepSpeed's pickles are read only from directories the job alone can write; the data position resumes
at another world size."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import _trainer_helpers  # noqa: F401  (puts payload/src on sys.path)
import numpy as np
import pytest
import torch

from ascendops_trainer import checkpoint as ck

TAG = ck.tag_for(10)

# The child: finalize a prepared .tmp-<tag> and SIGKILL itself right after point argv[2] (no clean-up, no
# exception handling: as a node losing power or the OOM killer).
CHILD = """
import os, signal, sys
from ascendops_trainer import checkpoint as ck
point = sys.argv[2]
def hook(p):
    if p == point:
        os.kill(os.getpid(), signal.SIGKILL)
ck.finalize_save(sys.argv[1], sys.argv[3], {"step": 10, "copy": sys.argv[4]}, {"hidden_size": 8}, 3, hook)
"""


def _write_rank_files(d: Path, copy: str) -> None:
    """What DeepSpeed and the ranks leave in a save's directory (weights and an RNG file), tagged by copy."""
    d.mkdir(parents=True)
    torch.save({"module": {"w": torch.full((4,), 1.0 if copy == "A" else 2.0)}, "copy": copy}, d / "model_states.pt")
    torch.save(ck.capture_rng_state(), d / ck.rng_file(0))


def _previous_copy(root: Path) -> None:
    """A complete step_00000010 (copy A), as a first save leaves it."""
    _write_rank_files(root / (ck.TMP_PREFIX + TAG), "A")
    ck.finalize_save(root, TAG, {"step": 10, "copy": "A"}, {"hidden_size": 8}, 3)


def _loadable_copy(root: Path) -> str:
    """The copy a resume would load, after the start-up clean-up; checks it is whole and consistent."""
    ck.clean_stale(root)
    tag = ck.resolve_resume_tag(root)
    assert tag == TAG
    d = root / tag
    state = json.loads((d / ck.TRAINER_STATE).read_text())
    weights = torch.load(d / "model_states.pt", weights_only=True)
    assert weights["copy"] == state["copy"]  # never the files of one save with the marker of the other
    assert float(weights["module"]["w"][0]) == (1.0 if state["copy"] == "A" else 2.0)
    assert ck.load_rng_file(d / ck.rng_file(0)) is not None
    assert json.loads((d / ck.HF_CONFIG).read_text()) == {"hidden_size": 8}
    leftovers = [p.name for p in root.iterdir() if p.name.startswith((ck.TMP_PREFIX, ck.OLD_PREFIX))]
    assert leftovers == []
    return state["copy"]


SWAP_POINTS = ("old-aside", "old-removed")  # only a tag saved before is swapped


@pytest.mark.parametrize("resave,point", [(False, p) for p in ("writing", *ck.SAVE_POINTS) if p not in SWAP_POINTS]
                         + [(True, p) for p in ("writing", *ck.SAVE_POINTS)])
def test_a_save_killed_at_any_point_leaves_a_complete_checkpoint(tmp_path, point, resave):
    """Re-saving a tag (a re-run reaching the same step) swaps the copies by renames: killed at any point,
    one complete copy of step_00000010 remains (the old one until the new one is in place, then the new);
    a first save killed before its rename leaves no half checkpoint behind."""
    if resave:
        _previous_copy(tmp_path)
    tmp = tmp_path / (ck.TMP_PREFIX + TAG)
    if point == "writing":  # killed while the ranks write: part of the files, no marker
        tmp.mkdir()
        (tmp / "model_states.pt").write_bytes(b"PK\x03\x04 half a file")
    else:
        _write_rank_files(tmp, "B")
        proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), point, TAG, "B"],
                              env=_trainer_helpers.subprocess_env(), capture_output=True, text=True, timeout=60)
        assert proc.returncode == -signal.SIGKILL, proc.stderr
    new_in_place = point not in ("writing", "data-durable", "marker-written", "old-aside")
    if not resave and not new_in_place:
        ck.clean_stale(tmp_path)
        assert ck.resolve_resume_tag(tmp_path) is None and list(tmp_path.iterdir()) == []
        return
    assert _loadable_copy(tmp_path) == ("B" if new_in_place else "A")


def test_clean_up_recovers_a_swap_from_whichever_copy_is_complete(tmp_path):
    """Killed between the two renames of a swap: <tag> is missing. The previous copy (.old-) is put back;
    without it, the new complete one (.tmp-); an incomplete .tmp- is removed, never promoted."""
    old, new = tmp_path / (ck.OLD_PREFIX + TAG), tmp_path / (ck.TMP_PREFIX + TAG)
    _write_rank_files(old, "A")
    (old / ck.TRAINER_STATE).write_text(json.dumps({"step": 10, "copy": "A"}))
    (old / ck.HF_CONFIG).write_text(json.dumps({"hidden_size": 8}))
    _write_rank_files(new, "B")  # complete files but no marker
    assert ck.clean_stale(tmp_path) == [f"restored {TAG} from {old.name}", f"removed {old.name}",
                                        f"removed {new.name}"]
    assert _loadable_copy(tmp_path) == "A"
    os.rename(tmp_path / TAG, new)  # now only the new copy is complete, the old one is a stub
    old.mkdir()
    (new / ck.TRAINER_STATE).write_text(json.dumps({"step": 10, "copy": "A"}))
    assert _loadable_copy(tmp_path) == "A" and not old.exists()


class _FakeCheckpointEngine:
    def save(self, state_dict, path):
        torch.save(state_dict, path)


class _FakeEngine:
    """DeepSpeed's engine as the save sees it: save_checkpoint writes this rank's files through its
    checkpoint_engine (rank r: zero_pp_rank_r's optimizer shard; rank 0 also the model states)."""

    def __init__(self, rank):
        self.rank, self.checkpoint_engine = rank, _FakeCheckpointEngine()

    def save_checkpoint(self, save_dir, tag, client_state, save_latest):
        d = Path(save_dir) / tag
        d.mkdir(parents=True, exist_ok=True)
        shard = d / f"zero_pp_rank_{self.rank}_mp_rank_00_optim_states.pt"
        self.checkpoint_engine.save({"w": torch.ones(2)}, str(shard))
        if self.rank == 0:
            self.checkpoint_engine.save({"module": {"w": torch.ones(2)}, **client_state},
                                        str(d / "mp_rank_00_model_states.pt"))


def _ctx(rank):
    return SimpleNamespace(rank=rank, world_size=1, is_main=rank == 0, device_type="cpu",
                           launch=SimpleNamespace(local_rank=rank))


def test_each_rank_fsyncs_its_own_files_and_the_directory(tmp_path, monkeypatch):
    """On NFS or Lustre only the client that wrote a file makes it durable: a rank that is not the writer
    fsyncs its own optimizer shard and RNG file (and the directory) itself, before the barrier."""
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd)))
    tmp_path.mkdir(exist_ok=True)
    mgr = ck.CheckpointManager(str(tmp_path), 3, True, _ctx(1), {"hidden_size": 8})
    assert not mgr.is_writer
    mgr.save(_FakeEngine(1), 10, {"step": 10})
    tmp = tmp_path / (ck.TMP_PREFIX + TAG)
    assert set(synced) == {str(tmp / "zero_pp_rank_1_mp_rank_00_optim_states.pt"), str(tmp / ck.rng_file(1)), str(tmp)}
    assert not (tmp / ck.TRAINER_STATE).exists()  # the writer (rank 0) finalizes, not this rank


def test_manager_saves_again_keeps_permissions_safe_and_loads_weights_only(tmp_path, monkeypatch):
    """A full save by the writer, twice at the same step (the swap); under a umask of 002 the files still
    end up writable by the job's user only (check_job_owned then accepts them); the RNG file loads with
    weights_only=True and restores every generator."""
    old_umask = os.umask(0o002)
    try:
        mgr = ck.CheckpointManager(str(tmp_path / "ck"), 3, True, _ctx(0), {"hidden_size": 8})
        random.seed(1), np.random.seed(1), torch.manual_seed(1)
        mgr.save(_FakeEngine(0), 10, {"step": 10, "copy": "A"})
        final = mgr.save(_FakeEngine(0), 10, {"step": 10, "copy": "B"})
        want = (random.random(), np.random.rand(), torch.rand(2))  # what follows the state saved with B
    finally:
        os.umask(old_umask)
    assert json.loads((final / ck.TRAINER_STATE).read_text())["copy"] == "B"
    assert sorted(p.name for p in final.parent.iterdir()) == ["latest", TAG]
    ck.check_job_owned(final, final.parent)
    for p in [final, *final.iterdir()]:
        assert not p.stat().st_mode & 0o022, p
    st = ck.load_rng_file(final / ck.rng_file(0))  # weights_only=True inside
    assert isinstance(st["numpy"]["key"], torch.Tensor)
    random.seed(7), np.random.seed(7), torch.manual_seed(7)
    ck.restore_rng_state(st)
    got = (random.random(), np.random.rand(), torch.rand(2))
    assert got[:2] == want[:2] and torch.equal(got[2], want[2])


def test_rng_file_of_an_older_trainer_is_not_unpickled(tmp_path, caplog):
    old = tmp_path / ck.rng_file(0)
    torch.save({"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}, old)
    assert ck.load_rng_file(old) is None
    assert "not in the weights-only format" in caplog.text


def test_deepspeed_pickles_only_from_directories_the_job_alone_can_write(tmp_path):
    d = tmp_path / "ck" / TAG
    d.mkdir(parents=True)
    torch.save({"module": {"w": torch.ones(1)}, "obj": SimpleNamespace}, d / "mp_rank_00_model_states.pt")
    assert ck.torch_load_job_file(d / "mp_rank_00_model_states.pt", tmp_path / "ck")["obj"] is SimpleNamespace
    os.chmod(d, 0o775)
    with pytest.raises(ck.UnsafeCheckpointError, match=r"writable by its group or others \(mode 0775\)"):
        ck.torch_load_job_file(d / "mp_rank_00_model_states.pt")
    os.chmod(d, 0o755)
    os.chmod(d / "mp_rank_00_model_states.pt", 0o666)
    with pytest.raises(ck.UnsafeCheckpointError, match="mp_rank_00_model_states.pt: it is writable"):
        ck.check_job_owned(d, tmp_path / "ck")
    os.chmod(d / "mp_rank_00_model_states.pt", 0o644)
    if os.getuid() == 0:  # root reads only its own files or root's: a file of another user is refused
        os.chown(d / "mp_rank_00_model_states.pt", 4321, 4321)
        with pytest.raises(ck.UnsafeCheckpointError, match="owned by uid 4321, this job runs as uid 0"):
            ck.check_job_owned(d)


def test_data_position_resumes_at_another_world_size(prepared):
    """A loader position saved by 2 ranks (as JSON in trainer_state.json), resumed by 3 ranks and by 1:
    every following optimizer step gets the samples the uninterrupted 2-rank run would have given it,
    also across the epoch end."""
    from ascendops_trainer.data import DistributedLoader, TokenDataset

    ds = TokenDataset(prepared["data"])

    def loaders(ranks, seed=7):
        return [DistributedLoader(ds, 64, 2, r, ranks, seed=seed, global_batch=12) for r in range(ranks)]

    def steps(lds, count):
        out = []
        for _ in range(count):
            ids = []
            for _ in range(12 // (2 * len(lds))):
                ids += [int(i) for ld in lds for i in ld.next_indices()]
            out.append(sorted(ids))
        return out

    n = loaders(1)[0].n
    before, after = n // 12 - 2, 5  # the resumed part crosses the epoch end
    straight = loaders(2)
    steps(straight, before)
    saved = json.loads(json.dumps(straight[0].state_dict()))
    want = steps(straight, after)
    for ranks in (3, 1):
        resumed = loaders(ranks, seed=999)  # the seed comes from the checkpoint
        for ld in resumed:
            ld.load_state_dict(saved)
        assert steps(resumed, after) == want, ranks
        assert resumed[0].state.epoch == 1
