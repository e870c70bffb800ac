"""Run playbooks/validate.yml against small inventories made in tmp_path, on the controller alone.

``run_validate(tmp_path, group_vars, host_vars)`` copies inventories/sample, writes the test's
settings over it (a later group_vars file wins), then runs validate.yml followed by a stand-in for
the first stage that changes something (a play writing a marker file per node on the controller):
a refusal must name the user's setting and leave no marker.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


class Run:
    def __init__(self, proc, markers):
        self.rc = proc.returncode
        self.out = proc.stdout + proc.stderr
        # One line of text: the YAML callback folds long messages over lines.
        self.text = " ".join(self.out.split())
        self.markers = markers

    def changed_nodes(self):
        return sorted(p.name for p in self.markers.iterdir())


@pytest.fixture
def run_validate(tmp_path):
    playbook_bin = VENV_BIN / "ansible-playbook"
    if not playbook_bin.exists():
        found = shutil.which("ansible-playbook")
        if not found:
            pytest.skip("ansible-playbook is not installed")
        playbook_bin = Path(found)

    def run(group_vars=None, host_vars=None, skip_nodes=True, extra_args=(), validation=None):
        """validation: plays run instead of validate.yml (e.g. one role's validate.yml on local nodes)."""
        inv = tmp_path / "inventory"
        shutil.copytree(ROOT / "inventories" / "sample", inv)
        if group_vars:
            (inv / "group_vars" / "npu_nodes" / "zz_test.yml").write_text(yaml.safe_dump(group_vars))
        if host_vars:
            hosts = yaml.safe_load((inv / "hosts.yml").read_text())
            for host, values in host_vars.items():
                hosts["all"]["children"]["npu_nodes"]["hosts"][host].update(values)
            (inv / "hosts.yml").write_text(yaml.safe_dump(hosts))
        markers = tmp_path / "changed"
        markers.mkdir()
        wrapper = tmp_path / "site.yml"
        wrapper.write_text(yaml.safe_dump([
            *(validation or [{"name": "Validation",
                              "ansible.builtin.import_playbook": str(ROOT / "playbooks" / "validate.yml")}]),
            {"name": "Stand-in for the first stage that changes the nodes", "hosts": "npu_nodes",
             "gather_facts": False, "connection": "local",
             "tasks": [{"name": "Stage | Change something", "ansible.builtin.copy": {
                 "content": "changed\n", "dest": f"{markers}/{{{{ inventory_hostname }}}}", "mode": "0644"},
                 "delegate_to": "localhost"}]},
        ], sort_keys=False))
        env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_FORCE_COLOR="0", ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_RETRY_FILES_ENABLED="0",
                   PATH=f"{playbook_bin.parent}{os.pathsep}{os.environ.get('PATH', '')}")
        cmd = [str(playbook_bin), str(wrapper), "-i", str(inv)]
        if skip_nodes:
            cmd += ["--skip-tags", "validate_nodes"]
        cmd += list(extra_args)
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
        return Run(proc, markers)

    return run
