"""The launch role follows the shared_storage role: same default path, derived job paths."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]


def load(role, kind):
    return yaml.safe_load((ROOT / "roles" / role / kind / "main.yml").read_text())


def test_launch_falls_back_to_the_shared_storage_roles_default_path():
    path = load("shared_storage", "defaults")["shared_storage_path"]
    derived = load("launch", "defaults")["launch_shared_storage_path"]
    assert f"shared_storage_path | default('{path}')" in derived
    assert "(shared_storage_type | default('none')) == 'none'" in derived
    assert load("shared_storage", "defaults")["shared_storage_type"] == "none"


def test_job_paths_and_shared_mode_follow_the_shared_job_directory():
    job = load("launch", "vars")["__launch_job_defaults"]
    assert "__launch_shared_job_dir ~ '/data'" in job["data_path"]
    assert "__launch_shared_job_dir ~ '/checkpoints'" in job["checkpoint_dir"]
    assert job["checkpoint_shared_fs"] == "{{ __launch_shared_job_dir | length > 0 }}"
