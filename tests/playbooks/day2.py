"""Run a day-2 playbook (upgrade.yml, add_node.yml, remove_node.yml) on the controller alone.

The nodes of inventories/sample are reached with the local connection; the plays that read the nodes
(tagged ``upgrade_probe`` / ``scale_probe``) are skipped and a stand-in play before them sets the
facts they would set (each node's versions and health), so that the plan, the refusals and ``--check``
are tested without nodes. A stand-in "change" play after the playbook writes a marker per node it
reaches on the controller: a refusal must leave none.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
OLD = {"driver": "24.1.rc1", "firmware": "7.5.0.2.220", "cann_toolkit": "8.0.0", "cann_kernels": "8.0.0",
       "docker_runtime": "6.0.0", "image": "910b-cann8.0.0"}
HEALTHY = {"reachable": True, "npu_health_ok": True, "links_up": True, "detail": []}


class Run:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.out = proc.stdout + proc.stderr
        # One line of text: the callback folds long messages over lines.
        self.text = " ".join(self.out.split())

    def recap_changed(self):
        """changed=N per host of the PLAY RECAP."""
        out = {}
        for line in self.out.splitlines():
            parts = line.split()
            if len(parts) > 3 and parts[1] == ":" and any(p.startswith("changed=") for p in parts):
                out[parts[0]] = int(next(p for p in parts if p.startswith("changed=")).split("=")[1])
        return out


def run_playbook(tmp_path, playbook, facts=None, extra_vars=None, check=False, inventory_hosts=None,
                 skip_tags=("upgrade_probe", "scale_probe"), after=None):
    """``facts``: {host: {fact: value}} the stand-in probe sets; ``inventory_hosts``: extra hosts by group
    ({group: {host: vars}}); ``after``: plays run after the playbook (e.g. a marker per node)."""
    playbook_bin = VENV_BIN / "ansible-playbook"
    if not playbook_bin.exists():
        playbook_bin = Path(shutil.which("ansible-playbook") or "ansible-playbook")
    inv = tmp_path / "inventory"
    if not inv.exists():
        shutil.copytree(ROOT / "inventories" / "sample", inv)
        hosts = yaml.safe_load((inv / "hosts.yml").read_text())
        for group, members in (inventory_hosts or {}).items():
            if group == "npu_nodes":
                hosts["all"]["children"]["npu_nodes"]["hosts"].update(members)
            else:
                hosts["all"]["children"][group] = {"hosts": members}
        (inv / "hosts.yml").write_text(yaml.safe_dump(hosts))
    plays = [{"name": "Stand-in for the probe of the nodes", "hosts": "all", "gather_facts": False,
              "connection": "local",
              "tasks": [{"name": "Probe | Facts the probe would set",
                         "ansible.builtin.set_fact": {"{{ item.key }}": "{{ item.value }}"},
                         "loop": "{{ day2_test_facts[inventory_hostname] | default({}) | dict2items }}"}]},
             {"name": "The playbook", "ansible.builtin.import_playbook": str(ROOT / "playbooks" / playbook)}]
    plays += after or []
    wrapper = tmp_path / f"run-{playbook}"
    wrapper.write_text(yaml.safe_dump(plays, sort_keys=False))
    varfile = tmp_path / "vars.yml"
    # the run lock of every "node" (the controller) in the test's directory
    extra_vars = dict({"ascend_run_lock_path": str(tmp_path / "run.lock")}, **(extra_vars or {}))
    varfile.write_text(yaml.safe_dump(dict(extra_vars, day2_test_facts=facts or {}, ansible_connection="local",
                                           ansible_python_interpreter=sys.executable)))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_RETRY_FILES_ENABLED="0",
               PATH=f"{playbook_bin.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    cmd = [str(playbook_bin), str(wrapper), "-i", str(inv), "-e", f"@{varfile}"]
    if skip_tags:
        cmd += ["--skip-tags", ",".join(skip_tags)]
    if check:
        cmd.append("--check")
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    return Run(proc)
