"""stage_hosts: every stage after the NPU driver runs on npu_nodes less the hosts waiting for a reboot, from one
rule; a play's hosts templated once (no vars file read again for every task and host), and no warning about
an unknown group when the driver stage did not run."""

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from ansible_collections.ascendops.cluster.plugins.filter.stages import stage_hosts

REPO = Path(__file__).resolve().parents[4]
LATER_STAGES = ("cann", "roce", "container_runtime", "shared_storage", "collective", "launch")


def test_the_group_is_named_only_when_it_exists():
    assert stage_hosts({"all": ["a"], "npu_nodes": ["a"]}) == "npu_nodes"
    groups = {"npu_nodes": ["a", "b"], "npu_nodes_reboot_pending": ["b"]}
    assert stage_hosts(groups) == "npu_nodes:!npu_nodes_reboot_pending"
    assert stage_hosts(groups, "new_nodes") == "new_nodes:!npu_nodes_reboot_pending"


def test_every_later_stage_takes_its_hosts_from_the_filter():
    for name in LATER_STAGES:
        plays = yaml.safe_load((REPO / "playbooks" / f"{name}.yml").read_text())
        # the run lock's plays first and last (playbooks/_run_lock.yml, _run_unlock.yml), the stage between
        imports = [p.get("ansible.builtin.import_playbook") for p in plays]
        assert imports[0] == "_run_lock.yml" and imports[-1] == "_run_unlock.yml", name
        plays = [p for p in plays if "ansible.builtin.import_playbook" not in p]
        assert [p["hosts"] for p in plays] == ["{{ groups | ascendops.cluster.stage_hosts }}"], name
        assert not any("vars_files" in p for p in plays), name


def test_a_waiting_host_takes_no_part_and_a_run_without_the_group_has_no_warning(tmp_path):
    hosts = {h: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable} for h in ("a", "b")}
    inv = tmp_path / "hosts.json"
    inv.write_text(json.dumps({"all": {"children": {"npu_nodes": {"hosts": hosts}}}}))
    stage = {"hosts": "{{ groups | ascendops.cluster.stage_hosts }}", "gather_facts": False,
             "tasks": [{"name": "Stage | Here", "ansible.builtin.debug": {"msg": "stage on {{ inventory_hostname }}"}}]}
    wait = {"hosts": "b", "gather_facts": False, "tasks": [{"name": "Driver | Waits", "ansible.builtin.group_by": {
        "key": "npu_nodes_reboot_pending"}}]}
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    bin_dir = Path(sys.executable).parent

    def run(plays):
        play = tmp_path / "play.yml"
        play.write_text(yaml.safe_dump(plays, sort_keys=False))
        proc = subprocess.run([str(bin_dir / "ansible-playbook"), str(play), "-i", str(inv)], capture_output=True,
                              text=True, env=env, cwd=REPO, timeout=120, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout + proc.stderr

    out = run([stage])
    assert "stage on a" in out and "stage on b" in out
    assert "WARNING" not in out, out
    out = run([wait, stage])
    assert "stage on a" in out and "stage on b" not in out
