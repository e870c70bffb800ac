"""ZeRO-3 gathers the trainer's models per decoder layer (model.gather_per_layer) and still trains them
exactly as plain PyTorch does: 2 ranks, every parameter partitioned, gradient accumulation, one layer
recomputed, packed documents (native model), clipping; the native model and transformers' Llama. The runs
are _zero3_layer_worker.py, in processes of their own."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _trainer_helpers import TESTS, one_rank_env, run_worker

WORKER = str(TESTS / "_zero3_layer_worker.py")
# fp32, the same arithmetic summed in another order across ranks and buckets. Adam divides by the root of the
# second moment, so the rounding of near-zero gradient elements shows in the weights: up to 1.9e-5 measured
# (with DeepSpeed's per-module hooks as well). A gradient missed or counted twice moves a weight by about the
# learning rate (1e-2); a gradient scaled as a whole (summed, not averaged, over ranks) shows in the norms,
# which Adam's update would hide.
TOL = 5e-5
NORM_RTOL = 1e-5


@pytest.fixture(scope="module")
def result() -> dict:
    res = run_worker(WORKER, 2)
    assert res["world_size"] == 2
    return res


@pytest.mark.parametrize("implementation,layer", [("native", "Block"), ("transformers", "LlamaDecoderLayer")])
def test_zero3_units_are_the_decoder_layers(result, implementation, layer):
    run = result["runs"][implementation]
    assert run["units"] == [layer] * run["layers"] and run["units_are_the_layers"], run["units"]


@pytest.mark.parametrize("implementation,per_layer", [("native", 6), ("transformers", 9)])
def test_zero3_per_layer_trains_as_plain_pytorch(result, implementation, per_layer):
    """per_layer: the layer's weights (native: fused qkv and gate/up) and its two norms; plus the embedding,
    the final norm and the lm head, every one compared."""
    run = result["runs"][implementation]
    assert len(run["diff"]) == per_layer * run["layers"] + 3, sorted(run["diff"])
    off = {n: d for n, d in run["diff"].items() if not d <= TOL}
    assert not off, off
    still = [n for n, moved in run["moved"].items() if not moved]
    assert not still, still
    assert all(loss == loss for loss in run["losses"])  # finite: NaN != NaN
    assert run["grad_norms"] == pytest.approx(run["reference_grad_norms"], rel=NORM_RTOL)
    assert min(run["reference_grad_norms"]) > 0.5  # the clipping at 0.5 took part in every step


RESTORE_SCRIPT = r"""
import torch, torch.distributed as dist
dist.init_process_group("gloo")
stock = torch.nn.functional.linear
from ascendops_trainer.bench import restore_stock_linear
from ascendops_trainer.config import build_config
from ascendops_trainer.model import build_hf_config, build_model
cfg = build_config({"model.implementation": "native"})
build_model(cfg.model, build_hf_config(cfg.model, "cpu"), torch.float32,
            {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}}, device=torch.device("cpu"))
print("AFTER_ZERO3", torch.nn.functional.linear is stock)
restore_stock_linear()
print("RESTORED", torch.nn.functional.linear is stock)
"""


def test_bench_torch_stack_gets_torch_s_linear_back(tmp_path):
    """A ZeRO-3 model leaves DeepSpeed's F.linear in place process-wide; the bench's PyTorch stack (a later
    round in the same process) puts torch's own back."""
    env = one_rank_env()
    proc = subprocess.run([sys.executable, "-c", RESTORE_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "AFTER_ZERO3 False" in proc.stdout and "RESTORED True" in proc.stdout, proc.stdout


RESUME_SCRIPT = r"""
import sys, torch, torch.distributed as dist
dist.init_process_group("gloo")
import ascendops_trainer.model as model_module
from ascendops_trainer.engine import build_engine
from ascendops_trainer.model import build_hf_config, build_model
sys.path.insert(0, sys.argv[2])
from _zero3_layer_worker import data, full_weights, job_config, train_steps, zero3_config

cfg = job_config(1, "native")
hf = build_hf_config(cfg.model, "cpu")
ds = zero3_config(cfg, 1)
batches = data(1, hf.vocab_size, True)

def engine(per_layer):
    saved = model_module.gather_per_layer
    if not per_layer:  # the trainer before per-layer gathering: DeepSpeed's hooks on every module
        model_module.gather_per_layer = lambda model, layer_class: []
    try:
        torch.manual_seed(0)
        return build_engine(build_model(cfg.model, hf, torch.float32, ds, device=torch.device("cpu")), cfg, ds)
    finally:
        model_module.gather_per_layer = saved

before = engine(False)
train_steps(before, batches[:2], 0)
before.save_checkpoint(sys.argv[1], tag="step2")
train_steps(before, batches[2:], 0)
want = full_weights(before.module)
before.destroy()
after = engine(True)
after.load_checkpoint(sys.argv[1], tag="step2")
train_steps(after, batches[2:], 0)
got = full_weights(after.module)
print("MAXDIFF", max((got[n] - want[n]).abs().max().item() for n in want), len(want))
"""


def test_checkpoint_of_per_module_zero3_resumes_per_layer(tmp_path):
    """A ZeRO-3 checkpoint written before per-layer gathering (DeepSpeed's hooks on every module) resumes
    with it and goes on as the old run did: the partitions and the optimizer's flat groups are the same."""
    env = one_rank_env()
    proc = subprocess.run([sys.executable, "-c", RESUME_SCRIPT, str(tmp_path / "ckpt"), str(TESTS)], env=env,
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("MAXDIFF "))
    diff, count = line.split()[1:]
    assert int(count) == 6 * 2 + 3 and float(diff) <= TOL, line
