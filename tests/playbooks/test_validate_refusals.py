"""Bad inventories are refused by validate.yml before any change, naming what the user wrote.

Each test runs validate.yml and then a stand-in stage (conftest.py) against inventories/sample with
the test's settings over it: a refusal must fail the run, name the host, the user's setting, its
value and the fix, and leave every node unchanged (no marker). The sample itself passes and reaches
the stand-in stage, so the marker check can fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
# The sample's job, changed by each test.
SAMPLE_JOB = yaml.safe_load((ROOT / "inventories/sample/group_vars/npu_nodes/ascend.yml").read_text())["launch_job"]


def job(**changes):
    return {**SAMPLE_JOB, **changes}


def test_the_sample_inventory_passes_and_reaches_the_next_stage(run_validate):
    run = run_validate()
    assert run.rc == 0, run.out
    assert run.changed_nodes() == ["a2-node01", "a2-node02"]


def test_a_global_batch_the_ranks_do_not_divide_is_refused_before_any_change(run_validate):
    # 2 nodes x 8 NPUs x micro batch 2 = 32 sequences per micro-step; 500 is no multiple of 32.
    run = run_validate({"launch_job": job(global_batch_size=500, micro_batch_size=2)})
    assert run.rc != 0
    assert "a2-node01: launch_job is refused before any change" in run.text
    assert ("launch_job.global_batch_size (500) is not divisible by launch_job.micro_batch_size (2) x ranks "
            "(2 nodes in npu_nodes x 8 per node: ascend_npus_per_node 8) (16) = 32") in run.text
    assert "pick a global batch that is a multiple of 32 (the nearest: 480 or 512)" in run.text
    assert run.changed_nodes() == []


def test_the_ranks_follow_the_devices_per_node_the_user_set(run_validate):
    # 512 divides by 2 x 8 x 1 but not by 2 x 3 x 1 = 6 ranks.
    run = run_validate({"ascend_npus_per_node": 3, "npu_driver_expected_npus": 3})
    assert run.rc != 0
    assert "x ranks (2 nodes in npu_nodes x 3 per node: ascend_npus_per_node 3) (6) = 6" in run.text
    assert "(the nearest: 510 or 516)" in run.text
    assert run.changed_nodes() == []


def test_the_presets_default_batch_sizes_are_checked_when_the_job_leaves_them_out(run_validate):
    # The debug preset's 8 sequences per step (micro batch 2) cannot spread over 16 ranks.
    small = {k: v for k, v in job(preset="debug").items() if k not in ("global_batch_size", "micro_batch_size")}
    run = run_validate({"launch_job": small})
    assert run.rc != 0
    assert "launch_job.global_batch_size (unset: preset debug's default) (8)" in run.text
    assert run.changed_nodes() == []


def test_an_unknown_preset_names_the_preset_and_the_valid_ones_only(run_validate):
    run = run_validate({"launch_job": job(preset="llama3-7b")})
    assert run.rc != 0
    assert ("unknown model preset 'llama3-7b'; choose one of: debug, llama3-8b, llama3-70b for launch_job.preset"
            in run.text)
    # Not every rule of launch_job: only what is wrong.
    assert "absolute path" not in run.text and "zero_stage" not in run.text
    assert run.changed_nodes() == []


@pytest.mark.parametrize("config,expected", [
    ({"optim": {"lr": 0}}, "launch_job.config.optim.lr must be > 0, got 0"),
    ({"train": {"precision": "fp16"}}, "launch_job.config.train.precision must be one of auto, bf16, fp32, got 'fp16'"),
    ({"train": {"micro_batch_size": 3}}, "launch_job.global_batch_size (512) is not divisible by "
                                         "launch_job.config.train.micro_batch_size (3)"),
])
def test_the_trainers_own_rules_apply_to_the_config_the_user_merges(run_validate, config, expected):
    run = run_validate({"launch_job": job(config=config)})
    assert run.rc != 0
    assert expected in run.text
    assert run.changed_nodes() == []
