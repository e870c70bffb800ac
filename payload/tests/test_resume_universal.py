"""Resuming at another world size: the decision (plan_resume), the conversion's bookkeeping (idempotent,
crash-safe, clear errors) and the repair of DeepSpeed's ZeRO-3 universal load. No process group, no
DeepSpeed conversion: the converter is a stand-in command here (the real one: test_resume_world_size.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _trainer_helpers  # noqa: E402,F401  (puts payload/src on sys.path)

from ascendops_trainer import checkpoint as ck  # noqa: E402
from ascendops_trainer.config import ConfigError, build_config  # noqa: E402

TAG = "step_00000030"


def state(world_size=2, zero_stage=3, **more):
    return {"step": 30, "world_size": world_size, "zero_stage": zero_stage, **more}


# ---------------------------------------------------------------- the decision


def test_same_world_size_loads_its_own_shards():
    plan = ck.plan_resume("/ck", TAG, state(2), world_size=2, zero_stage=3)
    assert not plan.universal and plan.load_tag == TAG
    assert plan.line() == "resumed at world size 2 from a checkpoint of world size 2 (its own ZeRO shards)"


@pytest.mark.parametrize("new_ws", [1, 3])
@pytest.mark.parametrize("stage", [1, 2, 3])
def test_other_world_size_goes_through_a_universal_copy(new_ws, stage):
    plan = ck.plan_resume("/ck", TAG, state(2, stage), world_size=new_ws, zero_stage=stage)
    assert plan.universal and plan.load_tag == "step_00000030_universal"
    assert plan.line() == f"resumed at world size {new_ws} from a checkpoint of world size 2 (universal)"
    assert plan.as_dict() == {"tag": TAG, "loaded": "step_00000030_universal", "world_size": new_ws,
                              "checkpoint_world_size": 2, "zero_stage": stage, "universal": True}


def test_always_converts_also_at_the_same_world_size():
    assert ck.plan_resume("/ck", TAG, state(2), 2, 3, mode="always").universal


def test_a_checkpoint_without_a_world_size_counts_as_this_one():
    assert not ck.plan_resume("/ck", TAG, {"step": 3}, 4, 3).universal


def test_never_refuses_another_world_size_naming_the_ways_out():
    with pytest.raises(ConfigError) as e:
        ck.plan_resume("/ck", TAG, state(2), 1, 3, mode="never")
    msg = str(e.value)
    assert msg.startswith(f"checkpoint /ck/{TAG} was saved by 2 ranks, this launch has 1.")
    assert "checkpoint.resume_universal is never" in msg and "relaunch with 2 ranks" in msg
    assert "checkpoint.resume_universal auto" in msg
    assert f"ascendops-train export --checkpoint-dir /ck --tag {TAG} --out DIR" in msg and "--model.hf_dir" in msg


def test_zero_stage_0_cannot_be_converted():
    with pytest.raises(ConfigError) as e:
        ck.plan_resume("/ck", TAG, state(2, 0), 3, 0)
    msg = str(e.value)
    assert "ZeRO stage 0" in msg and "universal checkpoint is made from ZeRO optimizer shards" in msg
    assert "relaunch with 2 ranks" in msg and "ascendops-train export --checkpoint-dir /ck" in msg
    assert not ck.plan_resume("/ck", TAG, state(2, 0), 2, 0).universal  # the same world size still loads


def test_another_zero_stage_is_refused_whatever_the_mode():
    for mode in ck.UNIVERSAL_MODES:
        with pytest.raises(ConfigError, match=r"saved with ZeRO stage 2, this run uses stage 3.*zero_stage=2"):
            ck.plan_resume("/ck", TAG, state(2, 2), 1, 3, mode=mode)


def test_resume_universal_is_a_config_choice_with_a_short_flag():
    assert build_config({}).checkpoint.resume_universal == "auto"
    assert build_config({"checkpoint.resume_universal": "never"}).checkpoint.resume_universal == "never"
    with pytest.raises(ConfigError, match="checkpoint.resume_universal must be one of auto, always, never, got 'yes'"):
        build_config({"checkpoint.resume_universal": "yes"})
    from ascendops_trainer.cli import _parser
    from ascendops_trainer.config import config_from_args

    args = _parser().parse_args(["train", "--resume-universal", "always"])
    assert config_from_args(args).checkpoint.resume_universal == "always"


# ---------------------------------------------------------------- the conversion's bookkeeping


def write_checkpoint(d: Path, tag=TAG, world_size=2, stage=3, drop=()) -> Path:
    src = d / tag
    src.mkdir(parents=True)
    names = [f"zero_pp_rank_{r}_mp_rank_00_optim_states.pt" for r in range(world_size)]
    names += ([f"zero_pp_rank_{r}_mp_rank_00_model_states.pt" for r in range(world_size)] if stage == 3
              else ["mp_rank_00_model_states.pt"])
    for name in names:
        if name not in drop:
            (src / name).write_bytes(b"x")
    (src / ck.TRAINER_STATE).write_text(json.dumps(state(world_size, stage)))
    return src


def fake_converter(calls: list, rc: int = 0):
    """A stand-in for ds_to_universal: writes <out>/zero/ (and latest_universal beside it, as DeepSpeed does)."""
    script = ("import os, sys; out = sys.argv[1]; os.makedirs(os.path.join(out, 'zero')); "
              "open(os.path.join(os.path.dirname(out), 'latest_universal'), 'w').write(os.path.basename(out)); "
              f"print('converted'); sys.exit({rc})")

    def command(src, out):
        calls.append((str(src), str(out)))
        return [sys.executable, "-c", script, str(out)]

    return command


def run(job: ck.UniversalConversion) -> ck.UniversalConversion:
    while not job.poll(1.0):
        pass
    return job


def test_missing_inputs_name_each_rank_file(tmp_path):
    src = write_checkpoint(tmp_path, stage=2, drop=("zero_pp_rank_1_mp_rank_00_optim_states.pt",))
    assert ck.missing_universal_inputs(src, 2, 2) == ["zero_pp_rank_1_mp_rank_00_optim_states.pt"]
    assert ck.missing_universal_inputs(src, 3, 2) == ["zero_pp_rank_1_mp_rank_00_optim_states.pt",
                                                      "zero_pp_rank_2_mp_rank_00_optim_states.pt"]
    (src / "zero_pp_rank_1_mp_rank_00_optim_states.pt").write_bytes(b"x")
    os.rename(src / "zero_pp_rank_1_mp_rank_00_optim_states.pt", src / "bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt")
    assert ck.missing_universal_inputs(src, 2, 2) == []  # bf16 optimizer shards have a prefix
    src3 = write_checkpoint(tmp_path / "z3", stage=3, drop=("zero_pp_rank_0_mp_rank_00_model_states.pt",))
    assert ck.missing_universal_inputs(src3, 2, 3) == ["zero_pp_rank_0_mp_rank_00_model_states.pt"]


def test_conversion_once_then_reused_until_the_checkpoint_is_saved_again(tmp_path):
    write_checkpoint(tmp_path)
    plan = ck.plan_resume(tmp_path, TAG, state(2), 1, 3)
    calls: list = []
    job = run(ck.UniversalConversion(tmp_path, plan, fake_converter(calls)))
    assert job.error is None and not job.reused and len(calls) == 1
    out = tmp_path / "step_00000030_universal"
    assert calls[0] == (str(tmp_path / TAG), str(tmp_path / ".tmp-universal" / "step_00000030_universal"))
    assert (out / "zero").is_dir() and not (tmp_path / ".tmp-universal").exists()
    info = json.loads((out / ck.UNIVERSAL_INFO).read_text())
    assert info["source"] == TAG and info["checkpoint_world_size"] == 2 and info["zero_stage"] == 3
    assert (tmp_path / ck.LATEST_UNIVERSAL).read_text() == "step_00000030_universal"

    again = run(ck.UniversalConversion(tmp_path, plan, fake_converter(calls)))
    assert again.reused and again.error is None and len(calls) == 1  # not converted again

    st = tmp_path / TAG / ck.TRAINER_STATE  # the same step saved again (a re-run): the copy is stale
    os.utime(st, ns=(st.stat().st_atime_ns, st.stat().st_mtime_ns + 1_000_000))
    assert not ck.universal_is_current(tmp_path, TAG)
    third = run(ck.UniversalConversion(tmp_path, plan, fake_converter(calls)))
    assert not third.reused and len(calls) == 2 and ck.universal_is_current(tmp_path, TAG)


def test_an_interrupted_conversion_is_not_taken_for_a_copy(tmp_path):
    write_checkpoint(tmp_path)
    (tmp_path / ".tmp-universal" / "step_00000030_universal" / "zero").mkdir(parents=True)  # killed midway
    assert not ck.universal_is_current(tmp_path, TAG)
    ck.clean_stale(tmp_path)
    assert not (tmp_path / ".tmp-universal").exists()
    (tmp_path / "step_00000030_universal" / "zero").mkdir(parents=True)  # no info file: not ours / not finished
    assert not ck.universal_is_current(tmp_path, TAG)


def test_missing_shards_are_a_clear_error_without_running_the_converter(tmp_path):
    write_checkpoint(tmp_path, drop=("zero_pp_rank_1_mp_rank_00_optim_states.pt",))
    calls: list = []
    job = run(ck.UniversalConversion(tmp_path, ck.plan_resume(tmp_path, TAG, state(2), 1, 3),
                                     fake_converter(calls)))
    assert calls == [] and not job.converter_failed
    assert f"checkpoint {tmp_path / TAG} (saved by 2 ranks, ZeRO stage 3) cannot be converted" in job.error
    assert "it lacks zero_pp_rank_1_mp_rank_00_optim_states.pt" in job.error
    assert "ascendops-train export" in job.error
    local = run(ck.UniversalConversion(tmp_path, ck.plan_resume(tmp_path, TAG, state(2), 1, 3, shared_fs=False),
                                       fake_converter(calls)))
    assert "checkpoint.shared_fs false" in local.error and "every node" in local.error


def test_a_failing_converter_reports_its_output(tmp_path):
    write_checkpoint(tmp_path)
    job = run(ck.UniversalConversion(tmp_path, ck.plan_resume(tmp_path, TAG, state(2), 1, 3),
                                     fake_converter([], rc=3)))
    assert job.converter_failed and "failed (exit 3" in job.error and "converted" in job.error
    assert not (tmp_path / "step_00000030_universal").exists()


def test_prepare_universal_on_one_rank(tmp_path):
    ctx = SimpleNamespace(world_size=1, rank=0, is_main=True, launch=SimpleNamespace(local_rank=0, is_node_main=True))
    write_checkpoint(tmp_path)
    mgr = ck.CheckpointManager(str(tmp_path), 3, True, ctx, {})
    plan, _ = mgr.plan(TAG, 3)
    assert plan.universal  # saved by 2 ranks, this "launch" has 1
    assert mgr.prepare_universal(plan, poll_s=0.2, command=fake_converter([])) is True
    assert mgr.prepare_universal(plan, poll_s=0.2, command=fake_converter([], rc=1)) is False  # reused
    (tmp_path / TAG / "zero_pp_rank_0_mp_rank_00_optim_states.pt").unlink()
    os.utime(tmp_path / TAG / ck.TRAINER_STATE, ns=(1, 1))  # stale copy, and a shard missing now
    with pytest.raises(ConfigError, match="it lacks zero_pp_rank_0_mp_rank_00_optim_states.pt"):
        mgr.prepare_universal(plan, poll_s=0.2, command=fake_converter([]))


def test_prune_removes_universal_copies_of_removed_checkpoints(tmp_path):
    for step in (10, 20, 30):
        d = tmp_path / ck.tag_for(step)
        d.mkdir()
        (d / ck.TRAINER_STATE).write_text("{}")
    (tmp_path / "step_00000010_universal").mkdir()
    (tmp_path / "step_00000030_universal").mkdir()
    (tmp_path / ck.LATEST_UNIVERSAL).write_text("step_00000010_universal")
    removed = ck.prune(tmp_path, keep=2, protect="step_00000030")
    assert removed == ["step_00000010", "step_00000010_universal"]
    assert (tmp_path / "step_00000030_universal").is_dir() and not (tmp_path / ck.LATEST_UNIVERSAL).exists()


# ---------------------------------------------------------------- DeepSpeed's ZeRO-3 universal load


def test_zero3_universal_load_repair_restores_groups_and_separate_step_counters(tmp_path):
    """What DeepSpeed 0.19's ZeRO-3 universal load leaves: group 0's hyperparameters on every group and one
    step tensor shared by all; torch's AdamW then decays the norms and counts the step once per group."""
    import torch

    decay, norm = torch.nn.Parameter(torch.ones(4)), torch.nn.Parameter(torch.ones(2))
    saved_opt = torch.optim.AdamW([{"params": [decay], "weight_decay": 0.1}, {"params": [norm], "weight_decay": 0.0}],
                                  lr=1e-3)
    (tmp_path / "zero").mkdir()
    torch.save({"optimizer_state_dict": saved_opt.state_dict()}, tmp_path / "zero" / "optimizer_state.pt")

    opt = torch.optim.AdamW([{"params": [decay], "weight_decay": 0.1}, {"params": [norm], "weight_decay": 0.1}],
                            lr=1e-3)
    shared = torch.tensor(3.0)
    for p in (decay, norm):
        opt.state[p] = {"step": shared, "exp_avg": torch.zeros_like(p), "exp_avg_sq": torch.zeros_like(p)}
    changed = ck.repair_zero3_universal_load(opt, tmp_path, report=False)
    assert changed == ["group 1 weight_decay 0.1 -> 0.0", "state 1 step: own tensor"]
    assert [g["weight_decay"] for g in opt.param_groups] == [0.1, 0.0]
    decay.grad, norm.grad = torch.ones(4), torch.ones(2)
    opt.step()
    assert [float(opt.state[p]["step"]) for p in (decay, norm)] == [4.0, 4.0]  # not 4 and 5
    assert ck.repair_zero3_universal_load(opt, tmp_path, report=False) == []  # nothing left to repair


def test_another_model_implementation_is_refused_naming_both_ways_out():
    saved_native = state(2, 3, model_implementation="native")
    with pytest.raises(ConfigError) as e:
        ck.plan_resume("/ck", TAG, saved_native, 2, 3, implementation="transformers")
    msg = str(e.value)
    assert "saved by model.implementation native, this run uses transformers" in msg
    assert "relaunch with model.implementation native" in msg and "ascendops-train export --checkpoint-dir /ck" in msg
    # a state from before the setting was written by transformers' model
    with pytest.raises(ConfigError, match="saved by model.implementation transformers, this run uses native"):
        ck.plan_resume("/ck", TAG, state(2, 3), 2, 3, implementation="native")
    assert not ck.plan_resume("/ck", TAG, state(2, 3), 2, 3, implementation="transformers").universal
    assert not ck.plan_resume("/ck", TAG, saved_native, 2, 3, implementation="native").universal
