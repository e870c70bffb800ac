"""add_node.yml / remove_node.yml run again after an interruption (issue 21: safe to re-run).

The real playbooks, their real probe (rank table, stop record, ``systemctl is-active``) and plan, on the
controller: each node of inventories/sample is reached with the local connection and has its own job
directory (``launch_job_dir``) and service name; a stand-in ``systemctl`` answers ``is-active`` from the
node's state. The stage roles are stand-ins (a collection tree beside the real one, the real plugins
linked into it): the launch role writes the rank table, the stop record and the unit's state as the
real one does and logs what it did (stop, pre-flight or pre-flight skipped because a job runs, start at
a world size); the other stages only log "prepare"; ``hccn_info`` answers every ping. What is tested is
the playbooks' own logic: what a re-run finds, which nodes it stops, and that a finished operation
changes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_collections.ascendops.cluster.plugins.module_utils.trainer_rules import TRAINER_KEYS

from .day2 import ROOT, Run

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif("checkpoint.resume_universal" not in TRAINER_KEYS,
                                 reason="the trainer has no universal-checkpoint resume: a new world size is refused")]

VENV_BIN = Path(sys.executable).parent
ADDRESSES = {"a2-node01": "192.0.2.11", "a2-node02": "192.0.2.12", "a2-node03": "192.0.2.13"}
JOB = dict(yaml.safe_load((ROOT / "inventories/sample/group_vars/all/job.yml").read_text())["launch_job"],
           checkpoint_shared_fs=True, global_batch_size=96, micro_batch_size=2)
DEVICES = 8

SYSTEMCTL = """#!/bin/sh
# Stand-in: is-active <service> from the node's state (the service is named after the node).
if [ "$1" = is-active ] && [ "$(cat "$SCALE_TEST_STATE/$2/running" 2>/dev/null)" = 1 ]; then echo active; exit 0; fi
echo inactive
exit 3
"""

HCCN_INFO = '''#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule


def main():
    spec = dict(devices=dict(type="list", elements="raw", default=[]), hccn_tool=dict(type="str"),
                ping=dict(type="list", elements="dict", default=[]), ping_count=dict(type="int"),
                read=dict(type="bool", default=True))
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    devices = [{"device_id": int(d), "address": "10.99.0.%d" % (int(d) + 1)} for d in module.params["devices"]]
    pings = [dict(p, ok=True, transmitted=3, received=3) for p in module.params["ping"]]
    module.exit_json(changed=False, devices=devices, pings=pings)


if __name__ == "__main__":
    main()
'''

EVENT = {"ansible.builtin.command": {"argv": ["sh", "-c", 'echo "$1" >> "$2"', "event", "{{ __event }}",
                                              "{{ scale_test_state }}/{{ inventory_hostname }}/events"]},
         "changed_when": True}
RANK_TABLE = {"name": "Launch stand-in | Rank table of launch_nodes", "ansible.builtin.copy": {
    "content": "{% set out = [] %}{% for n in launch_nodes %}"
               "{% set x = out.append({'server_id': hostvars[n].ansible_host}) %}{% endfor %}"
               "{{ {'server_list': out} | to_json }}",
    "dest": "{{ launch_job_dir }}/rank_table.json", "mode": "0644"}}
RUNNING = "{{ scale_test_state }}/{{ inventory_hostname }}/running"
INTENT = "{{ launch_job_dir }}/{{ launch_job.name }}.intent.json"

LAUNCH_STOP = [
    {"name": "Launch stand-in | Stop record", "ansible.builtin.copy": {
        "content": "{{ {'intent': 'stopped', 'job': launch_job.name,"
                   " 'by': launch_stop_by | default('playbooks/stop.yml')} | to_json }}",
        "dest": INTENT, "mode": "0644", "force": False}},
    {"name": "Launch stand-in | Log the stop", "vars": {"__event": "stop"}, **EVENT},
    {"name": "Launch stand-in | Stopped", "ansible.builtin.copy": {"content": "0", "dest": RUNNING, "mode": "0644"}},
]
LAUNCH_COLLECTIVE = [
    RANK_TABLE,
    {"name": "Launch stand-in | Pre-flight, skipped while a job runs (as the real one)",
     "vars": {"__event": "{% set up = [] %}{% for n in ansible_play_batch %}"
                         "{% if lookup('ansible.builtin.file', scale_test_state ~ '/' ~ n ~ '/running') == '1' %}"
                         "{% set x = up.append(n) %}{% endif %}{% endfor %}"
                         "{{ ('collective skipped: a job runs on ' ~ up | join(',')) if up else"
                         " ('collective ' ~ launch_nodes | length * 8) }}"},
     **EVENT},
]
LAUNCH_MAIN = [
    RANK_TABLE,
    # As the real restart plan (job_state.restart_plan): a stop record on any node leaves the job stopped
    # unless launch_start_stopped.
    {"name": "Launch stand-in | Left stopped (a stop record somewhere, launch_start_stopped false)",
     "ansible.builtin.set_fact": {"__stand_in_left_stopped": (
         "{{ not (launch_start_stopped | default(false) | bool) and ansible_play_batch"
         " | map('extract', hostvars, 'launch_job_dir') | map('regex_replace', '$', '/' ~ launch_job.name"
         " ~ '.intent.json') | select('file') | list | length > 0 }}")}},
    {"name": "Launch stand-in | Log that the job was left stopped", "when": "__stand_in_left_stopped | bool",
     "vars": {"__event": "left stopped {{ launch_nodes | length * 8 }}"}, **EVENT},
    {"name": "Launch stand-in | Start on every node together (or only on scale_test_interrupt_start: interrupted)",
     "when": "not __stand_in_left_stopped | bool and (scale_test_interrupt_start is not defined"
             " or inventory_hostname in scale_test_interrupt_start)",
     "block": [
         {"name": "Launch stand-in | Log the start", "vars": {"__event": "start {{ launch_nodes | length * 8 }}"},
          **EVENT},
         {"name": "Launch stand-in | Running",
          "ansible.builtin.copy": {"content": "1", "dest": RUNNING, "mode": "0644"}},
         {"name": "Launch stand-in | Stop record cleared",
          "ansible.builtin.file": {"path": INTENT, "state": "absent"}}]},
    {"name": "Launch stand-in | Interrupted", "ansible.builtin.fail": {"msg": "interrupted (test)"},
     "when": "scale_test_interrupt_start is defined"},
]
PREPARE = [{"name": "Stage stand-in | Prepare", "vars": {"__event": "prepare"}, **EVENT}]


def collection(tmp_path):
    """A collection tree with the real plugins and playbooks' roles as stand-ins."""
    top = tmp_path / "collections" / "ansible_collections" / "ascendops" / "cluster"
    (top / "plugins" / "modules").mkdir(parents=True)
    for sub in ("filter", "module_utils", "lookup", "doc_fragments"):
        (top / "plugins" / sub).symlink_to(ROOT / "plugins" / sub)
    for sub in ("meta", "releases"):
        (top / sub).symlink_to(ROOT / sub)
    (top / "plugins" / "modules" / "hccn_info.py").write_text(HCCN_INFO)
    # the real run lock (every playbook that changes nodes takes it), its file in the test's directory
    (top / "plugins" / "modules" / "ascend_run_lock.py").symlink_to(ROOT / "plugins" / "modules" / "ascend_run_lock.py")
    # the real driver read add_node.yml makes on new nodes in --check (resolved when the playbook loads)
    (top / "plugins" / "modules" / "npu_info.py").symlink_to(ROOT / "plugins" / "modules" / "npu_info.py")
    (top / "roles").mkdir()
    (top / "roles" / "ascend").symlink_to(ROOT / "roles" / "ascend")
    roles = {"launch": {"main": LAUNCH_MAIN, "stop": LAUNCH_STOP, "collective": LAUNCH_COLLECTIVE}}
    for role in ("preflight", "npu_driver", "cann", "roce", "container_runtime"):
        roles[role] = {"main": PREPARE}
    roles["shared_storage"] = {"main": [{"name": "Storage stand-in | Mount and check",
                                         "vars": {"__event": "shared storage"}, **EVENT}]}
    for role, files in roles.items():
        (top / "roles" / role / "tasks").mkdir(parents=True)
        for name, tasks in files.items():
            (top / "roles" / role / "tasks" / f"{name}.yml").write_text(yaml.safe_dump(tasks, sort_keys=False))
    return tmp_path / "collections"


class Cluster:
    """Three nodes of the sample inventory on the controller, each with its job directory and state."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.state = tmp_path / "state"
        self.collections = collection(tmp_path)
        (tmp_path / "bin").mkdir()
        (tmp_path / "bin" / "systemctl").write_text(SYSTEMCTL)
        (tmp_path / "bin" / "systemctl").chmod(0o755)
        self.inv = tmp_path / "inventory"
        shutil.copytree(ROOT / "inventories" / "sample", self.inv)
        hosts = yaml.safe_load((self.inv / "hosts.yml").read_text())
        hosts["all"]["children"]["npu_nodes"]["hosts"]["a2-node03"] = {"ansible_host": "192.0.2.13",
                                                                       "roce_address_offset": 30}
        (self.inv / "hosts.yml").write_text(yaml.safe_dump(hosts))
        (self.inv / "host_vars").mkdir()
        for node in ADDRESSES:
            (self.state / node / "etc").mkdir(parents=True)
            (self.state / node / "events").write_text("")
            (self.state / node / "running").write_text("0")
            (self.inv / "host_vars" / f"{node}.yml").write_text(yaml.safe_dump(
                {"launch_job_dir": str(self.state / node / "etc"), "launch_service_name": node}))

    def set(self, node, servers=None, running=False, stopped_by=None):
        if servers:
            (self.state / node / "etc" / "rank_table.json").write_text(
                json.dumps({"server_list": [{"server_id": ADDRESSES[s]} for s in servers]}))
        (self.state / node / "running").write_text("1" if running else "0")
        if stopped_by:
            (self.state / node / "etc" / f"{JOB['name']}.intent.json").write_text(
                json.dumps({"intent": "stopped", "job": JOB["name"], "by": stopped_by}))

    def node(self, node):
        table = self.state / node / "etc" / "rank_table.json"
        servers = [s["server_id"] for s in json.loads(table.read_text())["server_list"]] if table.exists() else []
        intent = self.state / node / "etc" / f"{JOB['name']}.intent.json"
        return {"servers": servers, "running": (self.state / node / "running").read_text() == "1",
                "stopped_by": json.loads(intent.read_text())["by"] if intent.exists() else None,
                "events": (self.state / node / "events").read_text().splitlines()}

    def clear_events(self):
        for node in ADDRESSES:
            (self.state / node / "events").write_text("")

    def run(self, playbook, **extra):
        playbook_bin = VENV_BIN / "ansible-playbook"
        if not playbook_bin.exists():
            playbook_bin = Path(shutil.which("ansible-playbook") or "ansible-playbook")
        varfile = self.tmp / "vars.yml"
        varfile.write_text(yaml.safe_dump(dict(extra, launch_job=JOB, scale_test_state=str(self.state),
                                               ascend_run_lock_path=str(self.tmp / "run.lock"),
                                               ansible_connection="local", ansible_python_interpreter=sys.executable)))
        env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(self.collections),
                   ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_CACHE_PLUGIN="memory",
                   ANSIBLE_RETRY_FILES_ENABLED="0", SCALE_TEST_STATE=str(self.state),
                   PATH=f"{self.tmp / 'bin'}{os.pathsep}{playbook_bin.parent}{os.pathsep}{os.environ.get('PATH', '')}")
        cmd = [str(playbook_bin), str(ROOT / "playbooks" / playbook), "-i", str(self.inv), "-e", f"@{varfile}"]
        return Run(subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False))


OLD = ["a2-node01", "a2-node02"]
ALL = ["a2-node01", "a2-node02", "a2-node03"]


def test_interrupted_add_node_rerun_stops_the_half_started_new_node_and_finishes(tmp_path):
    cluster = Cluster(tmp_path)
    for node in OLD:
        cluster.set(node, OLD, running=True)
    # First run, interrupted once the job started on the new node alone.
    run = cluster.run("add_node.yml", nodes="a2-node03", scale_test_interrupt_start=["a2-node03"])
    assert run.rc != 0 and "interrupted (test)" in run.text, run.out
    assert "Found: nothing done yet (a first run): every step" in run.text
    assert "Run the same command again to finish: ansible-playbook playbooks/add_node.yml -i" in run.text
    assert cluster.node("a2-node03")["running"] and cluster.node("a2-node03")["servers"] == list(ADDRESSES.values())
    for node in OLD:
        assert cluster.node(node)["events"] == ["stop", "shared storage", "collective 24"]
        assert cluster.node(node)["running"] is False
        assert cluster.node(node)["stopped_by"] == "playbooks/add_node.yml"
    assert cluster.node("a2-node03")["events"] == ["prepare"] * 5 + ["shared storage", "collective 24", "start 24"]

    # The re-run finds the half-started job, stops it on the new node too, and starts all together.
    cluster.clear_events()
    run = cluster.run("add_node.yml", nodes="a2-node03")
    assert run.rc == 0, run.out
    assert ("Found: the job was started at world size 24 on a2-node03 only (not on a2-node01, a2-node02): "
            "stopped there, then started on every node together") in run.text
    assert "Still to do: stop_job, prepare" in run.text
    for node in ALL:
        seen = cluster.node(node)
        assert seen["running"] and seen["servers"] == list(ADDRESSES.values()) and seen["stopped_by"] is None
        assert seen["events"][0] == "stop" or node == "a2-node03"
        # The pre-flight ran (the NPUs free everywhere), then one start at the new world size.
        assert seen["events"][-2:] == ["collective 24", "start 24"], (node, seen["events"])
    assert cluster.node("a2-node03")["events"] == ["stop"] + ["prepare"] * 5 + ["shared storage", "collective 24",
                                                                                "start 24"]
    assert "collective skipped" not in json.dumps([cluster.node(n)["events"] for n in ALL])

    # A third run: already done, nothing stopped, nothing changed.
    cluster.clear_events()
    run = cluster.run("add_node.yml", nodes="a2-node03")
    assert run.rc == 0, run.out
    assert ("Found: already done: the job runs on a2-node01, a2-node02, a2-node03 at world size 24 with their rank "
            "table; nothing to do") in run.text
    assert "Run the same command again" not in run.text
    assert all(cluster.node(n)["events"] == [] for n in ALL)
    assert set(run.recap_changed().values()) == {0}, run.out


def test_add_node_rerun_after_the_stop_only_resumes_after_the_stop(tmp_path):
    cluster = Cluster(tmp_path)
    for node in OLD:
        cluster.set(node, OLD, running=False, stopped_by="playbooks/add_node.yml")
    run = cluster.run("add_node.yml", nodes="a2-node03")
    assert run.rc == 0, run.out
    assert "Found: the job was stopped on a2-node01, a2-node02 by an earlier run and not started again" in run.text
    # Its own stop is not the user's: the job starts again.
    assert ("Job: stopped by an earlier run of playbooks/add_node.yml (on a2-node01, a2-node02): started at world "
            "size 24 from its checkpoint, on every node together") in run.text
    assert "Still to do: prepare" in run.text and "leave_stopped" not in run.text
    assert all(cluster.node(n)["running"] for n in ALL)
    assert cluster.node("a2-node03")["events"][-2:] == ["collective 24", "start 24"]


def test_remove_node_rerun_on_an_already_removed_node_changes_nothing(tmp_path):
    cluster = Cluster(tmp_path)
    for node in ALL:
        cluster.set(node, ALL, running=True)
    run = cluster.run("remove_node.yml", nodes="a2-node02", confirm="yes")
    assert run.rc == 0, run.out
    assert "Found: nothing done yet (a first run)" in run.text
    for node in ("a2-node01", "a2-node03"):
        seen = cluster.node(node)
        assert seen["events"] == ["stop", "collective 16", "start 16"], seen
        assert seen["servers"] == ["192.0.2.11", "192.0.2.13"] and seen["running"]
    # Nothing ran on the removed node (still "running" its old job: as a dead node, never touched).
    assert cluster.node("a2-node02")["events"] == []

    cluster.clear_events()
    run = cluster.run("remove_node.yml", nodes="a2-node02", confirm="yes")
    assert run.rc == 0, run.out
    assert ("Found: already done: the job runs on a2-node01, a2-node03 at world size 16 with their rank table; "
            "nothing to do") in run.text
    assert "Nothing changed: the job already runs on a2-node01, a2-node03 without a2-node02" in run.text
    assert "Take a2-node02 out of npu_nodes in the inventory" in run.text
    assert all(cluster.node(n)["events"] == [] for n in ALL)
    assert "TASK [Scale |" not in run.text and "TASK [ascendops.cluster.launch" not in run.text
    assert set(run.recap_changed().values()) == {0}, run.out


def test_add_node_leaves_a_job_the_user_stopped_stopped_and_sets_it_up_at_the_new_world_size(tmp_path):
    cluster = Cluster(tmp_path)
    for node in OLD:
        cluster.set(node, OLD, running=False, stopped_by="playbooks/stop.yml")
    run = cluster.run("add_node.yml", nodes="a2-node03")
    assert run.rc == 0, run.out
    assert ("Job: stopped by playbooks/stop.yml, stays stopped (rank table and unit written at world size 24; "
            "-e scale_restart_job=true starts it)") in run.text
    assert "Still to do: stop_job, prepare, check_reachability, check_shared_storage, collective, rank_table, " \
           "leave_stopped" in run.text
    assert ("The job was stopped by playbooks/stop.yml before this run: left stopped at world size 24. Start it with "
            "ansible-playbook playbooks/launch.yml -i") in run.text
    assert "-e launch_start_stopped=true (or run this playbook with -e scale_restart_job=true)." in run.text
    assert "The job (stopped) is set up on a2-node01, a2-node02, a2-node03 (world size 24)" in run.text
    for node in ALL:
        seen = cluster.node(node)
        # The rank table at the new world size everywhere, the job not started, the user's stop record kept
        # (and written on the new node, so that it does not start alone at its next boot).
        assert seen["servers"] == list(ADDRESSES.values()) and not seen["running"], (node, seen)
        assert seen["stopped_by"] == "playbooks/stop.yml", (node, seen)
        assert not any(e.startswith("start") for e in seen["events"]), (node, seen["events"])
    for node in OLD:
        # The pre-flight runs as the launch stage runs it for a stopped job (the NPUs are free).
        assert cluster.node(node)["events"] == ["stop", "shared storage", "collective 24", "left stopped 24"]
    assert cluster.node("a2-node03")["events"] == (["prepare"] * 5
                                                   + ["shared storage", "collective 24", "left stopped 24", "stop"])

    # A re-run still leaves it stopped; scale_restart_job=true starts it on every node together.
    cluster.clear_events()
    run = cluster.run("add_node.yml", nodes="a2-node03")
    assert run.rc == 0, run.out
    assert "the job was not started at world size 24: pre-flight and rank table (the job stays stopped)" in run.text
    assert not any(cluster.node(n)["running"] for n in ALL)
    cluster.clear_events()
    run = cluster.run("add_node.yml", nodes="a2-node03", scale_restart_job=True)
    assert run.rc == 0, run.out
    assert "started at world size 24 all the same (scale_restart_job=true)" in run.text
    for node in ALL:
        seen = cluster.node(node)
        assert seen["running"] and seen["stopped_by"] is None and seen["events"][-1] == "start 24", (node, seen)


def test_remove_node_leaves_a_job_the_user_stopped_stopped(tmp_path):
    cluster = Cluster(tmp_path)
    for node in ALL:
        cluster.set(node, ALL, running=False, stopped_by="playbooks/stop.yml")
    run = cluster.run("remove_node.yml", nodes="a2-node02", confirm="yes")
    assert run.rc == 0, run.out
    assert "Job: stopped by playbooks/stop.yml, stays stopped (rank table and unit written at world size 16" in run.text
    assert "The job was stopped by playbooks/stop.yml before this run: left stopped at world size 16." in run.text
    assert "-e launch_start_stopped=true once npu_nodes in the inventory is a2-node01, a2-node03" in run.text
    for node in ("a2-node01", "a2-node03"):
        seen = cluster.node(node)
        assert seen["events"] == ["stop", "collective 16", "left stopped 16"], seen
        assert seen["servers"] == ["192.0.2.11", "192.0.2.13"] and not seen["running"]
        assert seen["stopped_by"] == "playbooks/stop.yml"
    assert cluster.node("a2-node02")["events"] == []


def test_a_stop_by_another_playbook_is_the_users_too(tmp_path):
    cluster = Cluster(tmp_path)
    # One node stopped by another playbook (not this operation), the other by an interrupted add_node.yml:
    # as the launch stage, a stop record that is not this run's leaves the job stopped.
    cluster.set("a2-node01", OLD, running=False, stopped_by="playbooks/upgrade.yml")
    cluster.set("a2-node02", OLD, running=False, stopped_by="playbooks/add_node.yml")
    run = cluster.run("add_node.yml", nodes="a2-node03")
    assert run.rc == 0, run.out
    assert "Job: stopped by playbooks/upgrade.yml, stays stopped" in run.text
    assert not any(cluster.node(n)["running"] for n in ALL)
    assert cluster.node("a2-node03")["stopped_by"] == "playbooks/upgrade.yml"
