"""The trainer and the collection check a job with the same rules, from one source.

payload/src/ascendops_trainer/config_rules.py is the source; plugins/module_utils/trainer_rules.py is
its generated copy (scripts/sync-trainer-rules.py). The copy must match, and the trainer's own
config loader and the launch role's validation (module_utils/launch_job.py) must refuse the same jobs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils import launch_job as lj
from ansible_collections.ascendops.cluster.plugins.module_utils import trainer_rules as rules

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "payload" / "src"))
from ascendops_trainer import config as trainer_config  # noqa: E402  (no torch: the config module is pure)

JOB_DEFAULTS = {"name": "llama3", "preset": "debug", "hf_model_dir": None, "data_path": "/d", "data_src": None,
                "steps": 1000, "global_batch_size": None, "micro_batch_size": None, "seq_len": None,
                "checkpoint_dir": "/c", "checkpoint_interval": None, "checkpoint_shared_fs": True, "run_dir": "/r",
                "zero_stage": 3, "device": "auto", "extra_env": {}, "config": {}}


def test_the_collection_copy_is_generated_from_the_trainers_rules():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "sync-trainer-rules.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    source = (ROOT / "payload/src/ascendops_trainer/config_rules.py").read_text()
    assert source in (ROOT / "plugins/module_utils/trainer_rules.py").read_text()


def test_the_check_fails_when_the_copy_differs(tmp_path):
    """The sync script's --check really compares: a copy of the repo layout with one edited rule fails."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / "payload/src/ascendops_trainer").mkdir(parents=True)
    (tmp_path / "plugins/module_utils").mkdir(parents=True)
    (tmp_path / "scripts/sync-trainer-rules.py").write_text((ROOT / "scripts/sync-trainer-rules.py").read_text())
    source = (ROOT / "payload/src/ascendops_trainer/config_rules.py").read_text()
    (tmp_path / "payload/src/ascendops_trainer/config_rules.py").write_text(source)
    for name in ("__init__.py", "config.py"):
        (tmp_path / "payload/src/ascendops_trainer" / name).write_text(
            (ROOT / "payload/src/ascendops_trainer" / name).read_text())
    target = tmp_path / "plugins/module_utils/trainer_rules.py"
    script = [sys.executable, str(tmp_path / "scripts/sync-trainer-rules.py")]
    assert subprocess.run(script, capture_output=True, check=False).returncode == 0
    assert subprocess.run(script + ["--check"], capture_output=True, check=False).returncode == 0
    target.write_text(target.read_text().replace('"debug", "llama3-8b"', '"debug", "llama3-7b"'))
    assert subprocess.run(script + ["--check"], capture_output=True, check=False).returncode == 1


def test_the_collection_knows_every_key_of_the_trainers_config():
    assert frozenset(trainer_config.field_types()) == rules.TRAINER_KEYS


def test_the_trainer_uses_the_shared_rules():
    assert trainer_config.config_rules.MODEL_PRESETS == rules.MODEL_PRESETS
    assert trainer_config.PRESET_JOB_DEFAULTS == rules.PRESET_JOB_DEFAULTS


# Trainer overrides (what `--section.key` or the job file give) and the launch_job that renders them.
CASES = [
    ({"model.preset": "llama3-7b"}, {"preset": "llama3-7b"}),
    ({"train.steps": "0"}, {"steps": 0}),
    ({"parallel.device": "gpu"}, {"device": "gpu"}),
    ({"data.seq_len": "1"}, {"seq_len": 1}),
    ({"train.global_batch_size": "10", "train.micro_batch_size": "4"},
     {"global_batch_size": 10, "micro_batch_size": 4}),
    ({"checkpoint.interval": "0"}, {"checkpoint_interval": 0}),
    ({"optim.lr": "0"}, {"config": {"optim": {"lr": 0.0}}}),
    ({"optim.lr": "0.1", "optim.min_lr": "1"}, {"config": {"optim": {"lr": 0.1, "min_lr": 1.0}}}),
    ({"train.precision": "fp16"}, {"config": {"train": {"precision": "fp16"}}}),
    ({"model.attn_implementation": "flash"}, {"config": {"model": {"attn_implementation": "flash"}}}),
    ({"metrics.log_interval": "0"}, {"config": {"metrics": {"log_interval": 0}}}),
    ({"bench.mode": "fast"}, {"config": {"bench": {"mode": "fast"}}}),
    ({"train.grad_accum_dtype": "fp16"}, {"config": {"train": {"grad_accum_dtype": "fp16"}}}),
    ({"checkpoint.keep": "0"}, {"config": {"checkpoint": {"keep": 0}}}),
    ({"optim.lrr": "1"}, {"config": {"optim": {"lrr": 1}}}),
    ({"sched.warmup": "1"}, {"config": {"sched": {"warmup": 1}}}),
    # Accepted by both.
    ({"model.preset": "llama3-70b"}, {"preset": "llama3-70b"}),
    ({"train.global_batch_size": "12", "train.micro_batch_size": "3"},
     {"global_batch_size": 12, "micro_batch_size": 3}),
    ({"optim.lr": "1e-4", "optim.min_lr": "1e-5"}, {"config": {"optim": {"lr": 1e-4, "min_lr": 1e-5}}}),
]


@pytest.mark.parametrize("overrides,launch_job", CASES, ids=[str(c[0]) for c in CASES])
def test_the_trainer_and_validate_refuse_the_same_jobs_with_the_same_rule(overrides, launch_job):
    try:
        trainer_config.build_config(overrides)
        trainer_error = None
    except trainer_config.ConfigError as exc:
        trainer_error = str(exc)
    found = lj.job_problems(launch_job, JOB_DEFAULTS, nodes=1, devices_per_node=1)
    if trainer_error is None:
        assert found == []
        return
    assert len(found) == 1, found
    # The same rule, named after what each user wrote: the trainer's key or launch_job's.
    key = next(iter(overrides)) if len(overrides) == 1 else None
    if key:
        assert key in trainer_error
    strip = [("launch_job.config.", ""), ("launch_job.hf_model_dir", "model.hf_dir")] + [
        (f"launch_job.{k}", v) for k, v in sorted(lj.JOB_KEYS.items(), key=lambda kv: -len(kv[0]))]
    controller = found[0]
    for a, b in strip:
        controller = controller.replace(a, b)
    assert controller == trainer_error


@pytest.mark.parametrize("global_batch", [8, 12, 24, 30, 64, 100, 512])
@pytest.mark.parametrize("micro", [1, 2, 3])
@pytest.mark.parametrize("nodes,devices", [(1, 1), (1, 8), (2, 8), (3, 2), (4, 16)])
def test_the_batch_rule_agrees_with_the_trainers_data_parallel_check(global_batch, micro, nodes, devices):
    cfg = trainer_config.build_config({"train.global_batch_size": str(global_batch), "train.micro_batch_size": "1"})
    cfg.train.micro_batch_size = micro
    try:
        trainer_config.grad_accum_steps(cfg, nodes * devices)
        trainer_ok = True
    except trainer_config.ConfigError:
        trainer_ok = False
    found = lj.job_problems({"global_batch_size": global_batch, "micro_batch_size": micro}, JOB_DEFAULTS,
                            nodes=nodes, devices_per_node=devices)
    assert (found == []) == trainer_ok, found
    assert trainer_ok == (global_batch % (micro * nodes * devices) == 0)


def test_the_nearest_valid_global_batches_are_multiples_around_the_value():
    assert rules.nearest_multiples(500, 32) == [480, 512]
    assert rules.nearest_multiples(8, 32) == [32]
    assert rules.nearest_multiples(64, 32) == [64]
    msg = rules.batch_problem(500, 2, 16, ranks_text="ranks")
    assert "(500) is not divisible by train.micro_batch_size (2) x ranks (16) = 32" in msg
    assert "the nearest: 480 or 512" in msg
    # 96 = 16 ranks x 6: micro batch sizes that divide are offered too.
    assert "or a train.micro_batch_size of 1, 2, 3, 6" in rules.batch_problem(96, 4, 16)
    assert rules.batch_problem(512, 2, 16) is None
