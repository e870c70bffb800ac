"""`--check` on a node without its NPU driver: the npu_driver stage reports the install, and each later stage
that needs the driver's tools says once per host that it is not checkable there, without failing the run.

The real playbooks (npu_driver.yml, roce.yml, collective.yml, launch.yml, recap.yml) and the real task files
that decide (roles/npu_driver/tasks/reboot.yml and vars/main.yml, roles/roce/tasks/main.yml) run on two nodes
reached with the local connection. What needs a node's hardware is a stand-in in a throw-away copy of the
collection: the driver stage's read of the node (npu_info) and its package module; roce's device NICs and
check, which fail as the hccn module does on a host without hccn_tool; launch and the collective pre-flight,
which fail as the rank table's read does when any node of the cluster has no driver.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .day2 import ROOT, Run, run_playbook

pytestmark = pytest.mark.slow

TARGET = "25.2.0"
MISSING = "{{ inventory_hostname }}: /usr/local/Ascend/driver/tools/hccn_tool (roce_hccn_tool) is missing: " \
          "the NPU driver is not installed."
# The node as npu_info reads it: none, an older driver that runs, the asked driver installed but not running.
NO_DRIVER = {"driver": {"installed": False, "version": None}, "firmware": {"installed": True, "version": "7.7.0"},
             "npu_smi": {"available": False, "error": "npu-smi: not found"}, "reboot_required": False}
OLD_DRIVER = {"driver": {"installed": True, "version": "24.1.rc1"}, "firmware": {"installed": True, "version": "7.7.0"},
              "npu_smi": {"available": True, "error": None}, "reboot_required": False}
NOT_RUNNING = {"driver": {"installed": True, "version": TARGET}, "firmware": {"installed": True, "version": "7.7.0"},
               "npu_smi": {"available": False, "error": "dcmi module initialize failed. ret is -8005"},
               "reboot_required": True}

NPU_DRIVER_MAIN = [
    {"name": "NPU driver stand-in | The node as npu_info reads it (validate_checks.yml)",
     "ansible.builtin.set_fact": {"__npu_driver_before": "{{ test_nodes[inventory_hostname] }}"}},
    # ascend_package in check mode: changed, the diff of versions, reboot_required when it would install
    {"name": "NPU driver | Install or upgrade each package",
     "ansible.builtin.copy": {"content": "driver {{ npu_driver_version }}\n",
                              "dest": "{{ test_dir }}/{{ inventory_hostname }}-driver", "mode": "0644"},
     "register": "__npu_driver_installed", "when": "not __npu_driver_up_to_date | bool"},
    {"name": "NPU driver stand-in | What the package module reports",
     "ansible.builtin.set_fact": {"npu_driver_actions": [
         {"component": "driver", "action": "install", "version_before": "{{ __npu_driver_before.driver.version }}",
          "version_after": "{{ npu_driver_version }}", "reboot_required": "{{ ansible_check_mode }}",
          "reboot_reasons": []}]},
     "when": "not __npu_driver_up_to_date | bool"},
    {"name": "NPU driver | Reboot the hosts that need it (the real decision)",
     "ansible.builtin.import_tasks": "reboot.yml"},
]
REBOOT_NOW = [{"name": "NPU driver stand-in | Reboot", "ansible.builtin.debug": {"msg": "would reboot"}}]


def hccn_standin(what):
    return [{"name": f"RoCE stand-in | {what} with hccn_tool", "ansible.builtin.fail": {"msg": MISSING},
             "when": "not test_nodes[inventory_hostname].driver.installed"},
            {"name": f"RoCE stand-in | {what} read", "ansible.builtin.debug": {
                "msg": "{{ inventory_hostname }}: " + what + " checked"}}]


def cluster_standin(what, tags):
    """The rank table reads every node's device addresses: one node without the driver fails it everywhere."""
    return [{"name": f"Launch stand-in | {what}", "tags": tags, "ansible.builtin.assert": {
        "that": "ansible_play_hosts_all | map('extract', test_nodes) | map(attribute='driver')"
                " | rejectattr('installed') | list | length == 0",
        "fail_msg": "rank table: hccn_tool is missing on a node: the NPU driver is not installed",
        "success_msg": "{{ inventory_hostname }}: " + what + " checked"}}]


def collection(tmp_path):
    top = tmp_path / "collections" / "ansible_collections" / "ascendops" / "cluster"
    top.mkdir(parents=True)
    for name in ("meta", "plugins"):
        (top / name).symlink_to(ROOT / name)
    files = {
        "npu_driver/tasks/main.yml": NPU_DRIVER_MAIN,
        "npu_driver/tasks/reboot_now.yml": REBOOT_NOW,
        "roce/tasks/devices.yml": hccn_standin("device NICs"),
        "roce/tasks/check.yml": hccn_standin("links and ping matrix"),
        "roce/tasks/host.yml": [{"name": "RoCE stand-in | Host side", "ansible.builtin.debug": {
            "msg": "{{ inventory_hostname }}: host side checked"}}],
        # the tags of the real role's phases that read the device addresses (roles/launch/tasks/main.yml)
        "launch/tasks/main.yml": cluster_standin("launch", ["launch", "launch_rank_table"]),
        "launch/tasks/collective.yml": cluster_standin("collective pre-flight", ["collective"]),
    }
    for rel, tasks in files.items():
        (top / "roles" / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / "roles" / rel).write_text(yaml.safe_dump(tasks, sort_keys=False))
    for rel in ("npu_driver/tasks/reboot.yml", "npu_driver/vars", "roce/tasks/main.yml",
                "ascend/tasks/driver_pending.yml", "ascend/tasks/driver_pending_read.yml"):
        (top / "roles" / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / "roles" / rel).symlink_to(ROOT / "roles" / rel)
    return tmp_path / "collections"


def vendor_tools(tmp_path, nodes):
    """Each node's install path as npu_info reads it (driver/version.info where test_nodes has the driver), and an
    npu-smi stand-in on PATH that prints a 910B node's table: what a stage run by tag reads (driver_pending_read.yml)
    when the npu_driver stage did not run. Returns the inventory's host variables."""
    hostvars = {}
    for host, node in nodes.items():
        install = tmp_path / f"{host}-Ascend"
        install.mkdir()
        if node["driver"]["installed"]:
            (install / "driver").mkdir()
            (install / "driver" / "version.info").write_text(f"Version={node['driver']['version']}\n")
        hostvars[host] = {"ascend_install_path": str(install)}
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fixture = ROOT / "tests" / "unit" / "plugins" / "fixtures" / "npu_smi_info_910b_8npu.txt"
    (bin_dir / "npu-smi").write_text(f"#!/bin/sh\ncat '{fixture}'\n")
    (bin_dir / "npu-smi").chmod(0o755)
    return hostvars


def run_stages(tmp_path, nodes, check, tags=None):
    collections = collection(tmp_path)
    inv = tmp_path / "hosts.yml"
    inv.write_text(yaml.safe_dump({"all": {"children": {"npu_nodes": {"hosts": vendor_tools(tmp_path, nodes)}}}}))
    (tmp_path / "state").mkdir()
    (tmp_path / "vars.yml").write_text(yaml.safe_dump({
        "test_nodes": nodes, "test_dir": str(tmp_path / "state"), "ascend_run_lock_path": str(tmp_path / "run.lock"),
        "npu_driver_version": TARGET, "npu_driver_firmware_version": "7.7.0", "npu_driver_install_firmware": False,
        "npu_driver_reboot": "auto", "__ascend_validated": True, "__roce_plan_hosts": sorted(nodes),
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}))
    site = tmp_path / "site.yml"
    site.write_text(yaml.safe_dump([{"ansible.builtin.import_playbook": str(ROOT / "playbooks" / p)} for p in (
        "npu_driver.yml", "roce.yml", "collective.yml", "launch.yml", "recap.yml")]))
    playbook_bin = Path(sys.executable).parent / "ansible-playbook"
    if not playbook_bin.exists():
        playbook_bin = Path(shutil.which("ansible-playbook") or "ansible-playbook")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_RETRY_FILES_ENABLED="0", PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    cmd = [str(playbook_bin), str(site), "-i", str(inv), "-e", f"@{tmp_path / 'vars.yml'}", "--diff"]
    if check:
        cmd.append("--check")
    if tags:
        cmd += ["--tags", tags]
    return Run(subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False))


def recap(run):
    """host -> {ok: N, changed: N, failed: N, ...} of the PLAY RECAP."""
    out = {}
    for line in run.out.splitlines():
        parts = line.split()
        if len(parts) > 3 and parts[1] == ":" and any(p.startswith("failed=") for p in parts):
            out[parts[0]] = {k: int(v) for k, v in (p.split("=") for p in parts[2:] if "=" in p)}
    return out


def test_check_on_a_node_without_its_driver_reports_the_install_and_later_stages_not_checkable(tmp_path):
    # node2 runs an older driver: its tools work until the reboot, so it is checked as always.
    run = run_stages(tmp_path, {"node1": NO_DRIVER, "node2": OLD_DRIVER}, check=True)
    assert run.rc == 0, run.out
    counts = recap(run)
    assert counts["node1"]["failed"] == 0 and counts["node2"]["failed"] == 0, run.out
    # the driver stage's change, with the diff of versions, and nothing written
    assert counts["node1"]["changed"] >= 1 and "+driver 25.2.0" in run.out
    assert not any((tmp_path / "state").iterdir())
    why = ("the NPU driver is not installed yet (the npu_driver stage above installs 25.2.0); "
           "run without --check, or install the driver first")
    assert f"node1: roce not checkable in --check: {why}" in run.text
    assert f"node1: collective pre-flight not checkable in --check: {why}" in run.text
    assert f"node1: launch not checkable in --check: {why}" in run.text
    # launch and the pre-flight span the cluster: node2 says why it is not checked either
    for stage in ("collective pre-flight", "launch"):
        assert (f"node2: {stage} not checkable in --check: it spans every node, and node1 has no running NPU "
                "driver yet") in run.text
    # one line per host and stage
    assert run.text.count("node1: roce not checkable") == 1 and run.text.count("node1: launch not checkable") == 1
    # roce on node2 is checked; the host side on both; nothing read hccn_tool where it is missing
    assert "node2: roce not checkable" not in run.text
    assert "node2: device NICs checked" in run.text and "node2: links and ping matrix checked" in run.text
    assert "node1: device NICs checked" not in run.text
    assert "node1: host side checked" in run.text and "node2: host side checked" in run.text
    assert "is missing" not in run.text
    assert "check mode: node1 had no running NPU driver yet" in run.text


def test_check_on_a_node_whose_driver_is_installed_but_not_running_names_the_reboot(tmp_path):
    run = run_stages(tmp_path, {"node1": NOT_RUNNING}, check=True)
    assert run.rc == 0, run.out
    assert recap(run)["node1"]["failed"] == 0
    assert ("node1: roce not checkable in --check: the NPU driver 25.2.0 is installed but does not run (npu-smi: dcmi "
            "module initialize failed. ret is -8005) (the npu_driver stage above reboots the host); run without "
            "--check, or install the driver and reboot first") in run.text
    assert "is missing" not in run.text


def test_check_on_converged_nodes_checks_every_stage(tmp_path):
    running = dict(OLD_DRIVER, driver={"installed": True, "version": TARGET})
    run = run_stages(tmp_path, {"node1": running, "node2": running}, check=True)
    assert run.rc == 0, run.out
    assert "not checkable in --check:" not in run.text and "had no running NPU driver yet" not in run.text
    for host in ("node1", "node2"):
        assert f"{host}: device NICs checked" in run.text and f"{host}: launch checked" in run.text
        assert f"{host}: collective pre-flight checked" in run.text
        assert recap(run)[host]["changed"] == 0


def test_a_normal_run_still_fails_where_the_driver_is_missing_after_the_driver_stage(tmp_path):
    """Outside check mode the driver stage installs first; a node still without it fails in roce as before."""
    run = run_stages(tmp_path, {"node1": NO_DRIVER, "node2": OLD_DRIVER}, check=False)
    assert run.rc != 0
    assert "node1: /usr/local/Ascend/driver/tools/hccn_tool (roce_hccn_tool) is missing" in run.text
    assert "not checkable in --check:" not in run.text
    assert recap(run)["node1"]["failed"] == 1


# A stage run by tag (or its playbook alone): the npu_driver stage's decision did not run, so the stage reads the
# node itself (the real npu_info, on the stand-in install paths and npu-smi) and decides the same.
RAN_BY_TAG = ("the NPU driver is not installed yet (the npu_driver stage installs it; it did not run in this --check); "
              "run the npu_driver stage first (playbooks/npu_driver.yml), or check the whole site.yml")
RUNNING = dict(OLD_DRIVER, driver={"installed": True, "version": TARGET})


def test_check_of_the_roce_stage_alone_on_a_node_without_its_driver_says_not_checkable(tmp_path):
    run = run_stages(tmp_path, {"node1": NO_DRIVER, "node2": RUNNING}, check=True, tags="roce")
    assert run.rc == 0, run.out
    counts = recap(run)
    assert counts["node1"]["failed"] == 0 and counts["node2"]["failed"] == 0, run.out
    assert f"node1: roce not checkable in --check: {RAN_BY_TAG}" in run.text
    assert run.text.count("node1: roce not checkable") == 1
    # the driver stage did not run; node2, whose driver runs, is checked as always
    assert "+driver 25.2.0" not in run.text and "would reboot" not in run.text
    assert "node2: roce not checkable" not in run.text
    assert "node2: device NICs checked" in run.text and "node2: links and ping matrix checked" in run.text
    assert "node1: device NICs checked" not in run.text and "node1: host side checked" in run.text
    assert "is missing" not in run.text
    assert "check mode: node1 had no running NPU driver yet" in run.text


def test_the_roce_stage_alone_without_check_still_fails_naming_hccn_tool(tmp_path):
    run = run_stages(tmp_path, {"node1": NO_DRIVER, "node2": RUNNING}, check=False, tags="roce")
    assert run.rc != 0
    assert "node1: /usr/local/Ascend/driver/tools/hccn_tool (roce_hccn_tool) is missing" in run.text
    assert "not checkable in --check:" not in run.text
    assert recap(run)["node1"]["failed"] == 1


def test_check_of_launch_alone_on_a_cluster_with_a_node_without_its_driver_says_not_checkable(tmp_path):
    run = run_stages(tmp_path, {"node1": NO_DRIVER, "node2": RUNNING}, check=True, tags="launch")
    assert run.rc == 0, run.out
    assert f"node1: launch not checkable in --check: {RAN_BY_TAG}" in run.text
    assert ("node2: launch not checkable in --check: it spans every node, and node1 has no running NPU driver yet"
            in run.text)
    assert "rank table: hccn_tool is missing" not in run.text and "roce not checkable" not in run.text


def test_check_of_launch_alone_on_converged_nodes_checks_it(tmp_path):
    run = run_stages(tmp_path, {"node1": RUNNING, "node2": RUNNING}, check=True, tags="launch")
    assert run.rc == 0, run.out
    assert "not checkable in --check:" not in run.text
    assert "node1: launch checked" in run.text and "node2: launch checked" in run.text


def test_check_of_add_node_on_a_bare_new_node_says_not_checkable(tmp_path, monkeypatch):
    """add_node.yml --check ends with the plan; each new node is read (the real npu_info on its stand-in install path
    and npu-smi): the bare one is named not checkable, the one whose driver runs is not, and the run passes."""
    from ansible_collections.ascendops.cluster.plugins.module_utils.trainer_rules import TRAINER_KEYS
    if "checkpoint.resume_universal" not in TRAINER_KEYS:
        pytest.skip("the trainer has no universal-checkpoint resume: add_node refuses a new world size")
    nodes = {"a2-node03": NO_DRIVER, "a2-node04": RUNNING}
    hostvars = vendor_tools(tmp_path, nodes)
    for offset, host in enumerate(nodes, start=3):
        hostvars[host].update(ansible_host=f"192.0.2.1{offset}", roce_address_offset=offset * 10)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    job = yaml.safe_load((ROOT / "inventories/sample/group_vars/all/job.yml").read_text())["launch_job"]
    job = dict(job, checkpoint_shared_fs=True, global_batch_size=64, micro_batch_size=2)
    probe = {"scale_reachable": True, "scale_job_servers": ["192.0.2.11", "192.0.2.12"], "scale_job_running": True}
    run = run_playbook(tmp_path, "add_node.yml", {h: dict(probe) for h in ("a2-node01", "a2-node02", *nodes)},
                       {"nodes": "a2-node03,a2-node04", "launch_job": job}, check=True,
                       inventory_hosts={"npu_nodes": hostvars})
    assert run.rc == 0, run.out
    assert ("a2-node03: add_node device NICs, reachability, collective pre-flight and launch not checkable in --check: "
            "the NPU driver is not installed yet (the npu_driver stage installs it; it did not run in this --check); "
            "add_node.yml without --check installs it in its prepare step, before those steps") in run.text
    assert run.text.count("a2-node03: add_node device NICs") == 1
    assert "a2-node04: add_node" not in run.text
    # only the new nodes are read
    read = run.out[run.out.index("TASK [ascendops.cluster.ascend : Ascend | Read whether the NPU driver is installed"):]
    read = read[:read.index("TASK [", 1)]
    assert "ok: [a2-node03]" in read and "ok: [a2-node04]" in read
    assert "skipping: [a2-node01]" in read and "ok: [a2-node01]" not in read
    assert "Check mode: the plan above was printed and nothing changed" in run.text
    assert set(run.recap_changed().values()) == {0}, run.out
