"""The slurm role never takes over a Slurm or slurmdbd configuration it did not write: its validate_checks read
slurm.conf (slurm_manage) and slurmdbd.conf (slurm_accounting) on the node and refuse a file without the
collection's marker, naming the file and the setting, never printing the content (slurmdbd.conf holds a
password). Run on this machine as a local node, the files in tmp_path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MARKER = "# Ansible managed: written by the slurm role of ascendops.cluster (slurm_manage: true)\n"


def run_checks(tmp_path, slurm_conf=None, dbd_conf=None):
    for name, text in (("slurm.conf", slurm_conf), ("slurmdbd.conf", dbd_conf)):
        if text is not None:
            (tmp_path / name).write_text(text)
    (tmp_path / "inv.yml").write_text(yaml.safe_dump({"all": {"children": {"npu_nodes": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}))
    (tmp_path / "pb.yml").write_text(yaml.safe_dump([{
        "name": "Slurm's read-only checks on a local node", "hosts": "npu_nodes", "gather_facts": False,
        "tasks": [{"name": "Slurm | validate_checks", "ansible.builtin.include_role": {
            "name": "ascendops.cluster.slurm", "tasks_from": "validate_checks", "apply": {"tags": ["validate_nodes"]}},
            "tags": ["validate_nodes"],
            "vars": {"launch_scheduler": "slurm", "slurm_manage": True, "slurm_accounting": True,
                     "__slurm_conf_file": str(tmp_path / "slurm.conf"),
                     "__slurm_dbd_conf_file": str(tmp_path / "slurmdbd.conf")}}]}], sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "inv.yml"),
                           str(tmp_path / "pb.yml"), "--tags", "validate_nodes"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def test_no_files_yet_and_the_collections_own_files_pass(tmp_path):
    assert run_checks(tmp_path)[0] == 0
    rc, out = run_checks(tmp_path, MARKER + "ClusterName=x\n", MARKER + "StoragePass=Secret0123456789\n")
    assert rc == 0, out


def test_a_foreign_slurmdbd_conf_is_refused_without_its_content(tmp_path):
    rc, out = run_checks(tmp_path, MARKER + "ClusterName=x\n", "StoragePass=Secret0123456789\n")
    assert rc != 0
    assert f"localhost: {tmp_path}/slurmdbd.conf exists and was not written by ascendops" in out
    assert "slurm_accounting=true would overwrite the site's slurmdbd configuration" in out
    assert "slurm.conf exists" not in out and "Secret0123456789" not in out


def test_both_foreign_files_are_named(tmp_path):
    rc, out = run_checks(tmp_path, "ClusterName=site\n", "StoragePass=Secret0123456789\n")
    assert rc != 0
    assert f"{tmp_path}/slurm.conf exists and was not written by ascendops" in out
    assert "slurm_manage=true would overwrite the site's Slurm configuration" in out
    assert f"{tmp_path}/slurmdbd.conf exists" in out and "Secret0123456789" not in out
