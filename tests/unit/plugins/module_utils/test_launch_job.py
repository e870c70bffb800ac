"""The launch role's own rules of launch_job (module_utils/launch_job.py): one message per problem,
each naming the key the user wrote, its value and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible_collections.ascendops.cluster.plugins.module_utils.launch_job import job_problems, trainer_values

ROOT = Path(__file__).resolve().parents[4]
DEFAULTS = yaml.safe_load((ROOT / "roles/launch/vars/main.yml").read_text())["__launch_job_defaults"]
OK = {"preset": "llama3-8b", "global_batch_size": 512, "micro_batch_size": 1}


def problems(nodes=2, devices=8, **job):
    return job_problems({**OK, **job}, DEFAULTS, nodes, devices, "ascend_npus_per_node 8")


def test_a_valid_job_has_no_problems():
    assert problems() == []
    assert problems(hf_model_dir="/models/llama", preset="mine") == []


@pytest.mark.parametrize("job,expected", [
    ({"stpes": 3}, "launch_job.stpes is not a job setting (did you mean launch_job.steps?)"),
    ({"data_path": "data"}, "launch_job.data_path must be an absolute path on the nodes, got 'data'"),
    ({"run_dir": None}, "launch_job.run_dir must be an absolute path on the nodes, got None"),
    ({"hf_model_dir": "models/x"}, "launch_job.hf_model_dir must be an absolute path on the nodes, got 'models/x'"),
    ({"name": "my job"}, "launch_job.name must be letters, digits, '.', '_' or '-' (a unit and file name), got 'my"),
    ({"zero_stage": "auto"}, "launch_job.zero_stage must be 0, 1, 2 or 3 (DeepSpeed ZeRO stage), got 'auto'"),
    ({"extra_env": {"A-B": "1"}}, "launch_job.extra_env.A-B is not a shell-style variable name"),
    ({"extra_env": {"A": "1\n2"}}, "launch_job.extra_env.A must be one line without control characters (holds a "
                                   "newline"),
    ({"extra_env": ["A=1"]}, "launch_job.extra_env must be a mapping of environment variables, got ['A=1']"),
    ({"config": {"train": 5}}, "launch_job.config.train must be a mapping of train settings, got 5"),
    ({"config": "lr=1"}, "launch_job.config must be a mapping of trainer config sections"),
    ({"config": {"optim": {"lrr": 1}}}, "unknown config key 'launch_job.config.optim.lrr'; did you mean "
                                        "'launch_job.config.optim.lr'?"),
    ({"config": {"stpes": 1}}, "unknown config key 'launch_job.config.stpes'"),
    ({"config": {"run_dir": "/x", "train": {"seed": 1}}}, None),
    ({"steps": "ten"}, "launch_job.steps must be an integer, got 'ten'"),
    ({"device": "gpu"}, "launch_job.device must be one of auto, npu, cuda, cpu, got 'gpu'"),
])
def test_each_problem_names_the_key_and_value(job, expected):
    found = problems(**job)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(expected), found


def test_not_a_mapping():
    assert job_problems(["x"], DEFAULTS) == ["launch_job must be a mapping of job settings, got list ['x']"]


def test_the_ranks_and_where_they_come_from_are_named():
    found = problems(nodes=3, devices=8, global_batch_size=512, micro_batch_size=1)
    assert found == [
        "launch_job.global_batch_size (512) is not divisible by launch_job.micro_batch_size (1) x ranks (3 nodes in "
        "npu_nodes x 8 per node: ascend_npus_per_node 8) (24) = 24; pick a global batch that is a multiple of 24 "
        "(the nearest: 504 or 528) (global = micro x data-parallel ranks x gradient-accumulation steps)"]


def test_unset_batch_sizes_come_from_the_preset_and_say_so():
    values, names = trainer_values({**DEFAULTS, "preset": "debug"})
    assert values["train.global_batch_size"] == 8 and values["train.micro_batch_size"] == 2
    assert names["train.global_batch_size"] == "launch_job.global_batch_size (unset: preset debug's default)"
    assert job_problems({}, DEFAULTS, 2, 2) == []  # 8 = 2 x 2 ranks x 2
    assert "preset debug's default" in job_problems({}, DEFAULTS, 2, 8)[0]


def test_config_wins_over_the_jobs_keys_like_the_rendered_file():
    values, names = trainer_values({**DEFAULTS, **OK, "config": {"train": {"global_batch_size": 96}}})
    assert values["train.global_batch_size"] == 96
    assert names["train.global_batch_size"] == "launch_job.config.train.global_batch_size"


@pytest.mark.parametrize("key, value, expected", [
    ("checkpoint_dir", "/home", "launch_job.checkpoint_dir is the system directory /home itself"),
    ("data_path", "/var/lib/", "launch_job.data_path is the system directory /var/lib itself"),
    ("run_dir", "/tmp", "launch_job.run_dir is the system directory /tmp itself"),
    ("hf_model_dir", "/", "launch_job.hf_model_dir is / : name a directory of its own"),
    ("checkpoint_dir", "/data/../etc", "launch_job.checkpoint_dir must not have '..' components"),
])
def test_the_jobs_directories_are_never_the_systems(key, value, expected):
    # data_path is chowned to root, checkpoint and run directories to the job's user, all mounted into its
    # container: a system directory there would be taken over.
    found = problems(**{key: value})
    assert any(expected in p for p in found), found


@pytest.mark.parametrize("key, value", [("checkpoint_dir", "/home/ai/ckpt"), ("data_path", "/var/lib/ascendops/d"),
                                        ("run_dir", "/tmp/run1"), ("hf_model_dir", "/mnt/models/llama")])
def test_directories_below_the_systems_pass(key, value):
    assert problems(**{key: value}) == []


@pytest.mark.parametrize("value, what", [("tok\rX", "a carriage return at character 4"),
                                         ("a\x00", "a NUL at character 2"), ("\x1b]0;x", "an escape at character 1")])
def test_an_env_value_with_any_control_character_is_refused_without_showing_it(value, what):
    found = problems(extra_env={"TOKEN": value})
    assert found == [f"launch_job.extra_env.TOKEN must be one line without control characters (holds {what})"]
