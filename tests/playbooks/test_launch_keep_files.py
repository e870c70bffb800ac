"""roles/launch/tasks/keep_files.yml: the job's launch files (rank table, environment, profile, pre-flight
fingerprint) are kept across a collective test over a batch of nodes: put back after it passes and after
it fails, and a file the test wrote where there was none is removed. On the controller, with the real
task file and a stand-in collective test that rewrites the files for "the batch" (and fails when told)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .day2 import ROOT, Run

pytestmark = pytest.mark.slow

COLLECTIVE = [
    {"name": "Collective stand-in | Write the files for the batch",
     "ansible.builtin.copy": {"content": "batch\n", "dest": "{{ item }}", "mode": "0644"},
     "loop": "{{ __launch_kept_paths }}"},
    {"name": "Collective stand-in | Fail when told", "ansible.builtin.fail": {"msg": "all-reduce failed (test)"},
     "when": "keep_test_fail | bool"},
]


def run_keep_files(tmp_path, fail):
    top = tmp_path / "collections" / "ansible_collections" / "ascendops" / "cluster"
    tasks = top / "roles" / "launch" / "tasks"
    tasks.mkdir(parents=True)
    (top / "meta").symlink_to(ROOT / "meta")
    (tasks / "keep_files.yml").symlink_to(ROOT / "roles" / "launch" / "tasks" / "keep_files.yml")
    (tasks / "collective.yml").write_text(yaml.safe_dump(COLLECTIVE, sort_keys=False))
    files = tmp_path / "node"
    names = ("rank_table.json", "ascendops.env", "ascendops-job.sh", ".collective-fingerprint")
    paths = [str(files / n) for n in names]
    play = [{"name": "Keep files", "hosts": "localhost", "gather_facts": False, "tasks": [{
        "name": "Keep files | Batch collective test", "block": [
            {"name": "Keep files | Run it", "ansible.builtin.include_role": {
                "name": "ascendops.cluster.launch", "tasks_from": "keep_files"}}],
        "rescue": [{"name": "Keep files | Note the failure", "ansible.builtin.debug": {
            "msg": "RESCUED {{ ansible_failed_result.msg }}"}}]}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    (tmp_path / "vars.yml").write_text(yaml.safe_dump({
        "__launch_kept_paths": paths, "__launch_keep_dir": str(tmp_path / "kept"), "keep_test_fail": fail,
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}))
    playbook_bin = Path(sys.executable).parent / "ansible-playbook"
    if not playbook_bin.exists():
        playbook_bin = Path(shutil.which("ansible-playbook") or "ansible-playbook")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"), ANSIBLE_CACHE_PLUGIN="memory")

    def run():
        cmd = [str(playbook_bin), str(tmp_path / "play.yml"), "-i", "localhost,", "-e", f"@{tmp_path / 'vars.yml'}"]
        return Run(subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False))
    return files, paths, run


@pytest.mark.parametrize("fail", [False, True])
def test_the_job_files_are_put_back_after_the_batch_test_pass_or_fail(tmp_path, fail):
    files, paths, run = run_keep_files(tmp_path, fail)
    files.mkdir()
    # The job's world: three of the files; no pre-flight fingerprint yet (a fresh node).
    for path in paths[:3]:
        Path(path).write_text(f"job {Path(path).name}\n")
    os.chmod(paths[1], 0o600)
    result = run()
    assert result.rc == 0, result.out
    assert ("RESCUED all-reduce failed (test)" in result.text) is fail
    for path in paths[:3]:
        assert Path(path).read_text() == f"job {Path(path).name}\n", result.out
    assert oct(Path(paths[1]).stat().st_mode & 0o777) == "0o600"
    # Written by the test where there was none: removed again; the copies are gone too.
    assert not Path(paths[3]).exists()
    assert not (tmp_path / "kept").exists()
