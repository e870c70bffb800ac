"""The trainer's optimizer against torch.optim.AdamW under DeepSpeed ZeRO 1, 2 and 3 (CPU, gloo, 1 and 2
processes): every default path matches AdamW on every parameter over 3 steps; a stand-in that behaves like
torch_npu's fused optimizers (flatten once, index by group position, the first step's gradients) does not.
The runs are _zero_optim_worker.py, in processes of their own."""

from __future__ import annotations

import pytest
from _trainer_helpers import TESTS, run_worker

WORKER = str(TESTS / "_zero_optim_worker.py")
STAGES = ("1", "2", "3")
PROVEN = ("npu_default", "cpu_default", "cuda_default", "fused_adam_off")  # what make_optimizer can return
TOL = 1e-6  # fp32: the same elementwise update; FusedAdam's kernel rounds a few ulp differently


@pytest.fixture(scope="module", params=[1, 2], ids=["1proc", "2proc"])
def runs(request) -> dict:
    res = run_worker(WORKER, request.param, timeout=300)
    assert res["world_size"] == request.param
    return res


def test_the_cases_are_the_optimizers_they_claim(runs):
    opt = runs["optimizer"]
    # NPU: torch AdamW on its multi-tensor path whatever torch_npu offers; CUDA: DeepSpeed's FusedAdam
    assert opt["npu_default"] == {"type": "AdamW", "foreach": True}
    assert opt["cpu_default"] == {"type": "AdamW", "foreach": True}
    assert opt["cuda_default"]["type"] == "FusedAdam"
    assert opt["fused_adam_off"] == {"type": "AdamW", "foreach": False}  # parallel.fused_adam=false: the loop
    assert opt["npu_fused_standin"]["type"] == "FlattenOnceAdamW"
    # two groups (decay: matrices; no decay: biases and the norm), so a mix-up of groups shows
    assert runs["groups"] == [["0.weight", "3.weight"], ["0.bias", "1.weight", "1.bias", "3.bias"]]


@pytest.mark.parametrize("case", PROVEN)
@pytest.mark.parametrize("stage", STAGES)
def test_every_optimizer_path_equals_adamw_under_zero(runs, case, stage):
    params = runs["zero"][case][stage]
    assert set(params) == set(runs["groups"][0] + runs["groups"][1])
    for name, r in params.items():
        assert r["moved"], (case, stage, name)  # trained, not left alone
        assert r["max_diff"] <= TOL, (case, stage, name, r["max_diff"])


def test_npu_fused_standin_is_adamw_without_zero(runs):
    """In a plain PyTorch loop the stand-in's update is AdamW's: what follows is ZeRO's doing, not its math."""
    for name, r in runs["plain"]["npu_fused_standin"].items():
        assert r["moved"] and r["max_diff"] <= TOL, (name, r)
    for case in PROVEN:
        assert all(r["max_diff"] <= TOL for r in runs["plain"][case].values()), case


@pytest.mark.parametrize("stage", STAGES)
def test_npu_fused_standin_diverges_under_zero(runs, stage):
    """ZeRO steps one group at a time: the flatten-once optimizer updates the first group again in place of
    the others (which never move) and from stale gradients."""
    params = runs["zero"]["npu_fused_standin"][stage]
    decay, no_decay = runs["groups"]
    assert all(not params[n]["moved"] for n in no_decay), params  # the norms and biases: never updated
    assert all(params[n]["moved"] and params[n]["max_diff"] > 1e-3 for n in decay), params  # wrong updates
