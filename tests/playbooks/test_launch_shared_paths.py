"""The launch role's job paths and checkpoint mode follow the shared storage type (templated by Ansible)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

# One ansible-playbook run per case (about 5 s each on 2 cores).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def job_as_launch_sees_it(tmp_path):
    playbook_bin = Path(sys.executable).parent / "ansible-playbook"
    if not playbook_bin.exists():
        playbook_bin = Path(shutil.which("ansible-playbook") or pytest.skip("ansible-playbook is not installed"))
    out = tmp_path / "job.json"
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{
        "name": "The launch role's job", "hosts": "localhost", "gather_facts": False, "connection": "local",
        "tasks": [
            {"name": "Defaults",
             "ansible.builtin.include_vars": {"file": str(ROOT / "roles/launch/defaults/main.yml")}},
            {"name": "Vars", "ansible.builtin.include_vars": {"file": str(ROOT / "roles/launch/vars/main.yml")}},
            {"name": "Write",
             "ansible.builtin.copy": {"content": "{{ __launch_job | to_json }}", "dest": str(out), "mode": "0644"}},
        ]}], sort_keys=False))

    def run(**extra):
        env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
        cmd = [str(playbook_bin), str(play), "-e", json.dumps(extra)]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(out.read_text())

    return run


def test_without_shared_storage_local_paths_and_node_local_checkpoints(job_as_launch_sees_it):
    job = job_as_launch_sees_it()
    assert (job["data_path"], job["checkpoint_dir"], job["checkpoint_shared_fs"]) == (
        "/var/lib/ascendops/data", "/var/lib/ascendops/checkpoints", False)


def test_shared_storage_puts_the_job_under_its_path_in_shared_mode(job_as_launch_sees_it):
    job = job_as_launch_sees_it(shared_storage_type="existing")
    assert (job["data_path"], job["checkpoint_dir"], job["checkpoint_shared_fs"]) == (
        "/mnt/ascendops/llama3/data", "/mnt/ascendops/llama3/checkpoints", True)
    job = job_as_launch_sees_it(shared_storage_type="nfs", shared_storage_path="/shared/", launch_job={"name": "j1"})
    assert (job["data_path"], job["checkpoint_dir"], job["checkpoint_shared_fs"]) == (
        "/shared/j1/data", "/shared/j1/checkpoints", True)


def test_what_the_job_sets_wins(job_as_launch_sees_it):
    job = job_as_launch_sees_it(shared_storage_type="nfs",
                                launch_job={"checkpoint_shared_fs": False, "data_path": "/data/tokens"})
    assert (job["data_path"], job["checkpoint_dir"], job["checkpoint_shared_fs"]) == (
        "/data/tokens", "/mnt/ascendops/llama3/checkpoints", False)
