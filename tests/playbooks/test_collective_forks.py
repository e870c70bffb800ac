"""roles/launch/tasks/collective_run.yml on more nodes than Ansible's forks: the all-reduce needs every rank
at once, and a task runs on `forks` hosts at a time. On the controller, with the real task file, three local
"nodes" and `-f 1`, and a stand-in all-reduce that, like a real one, ends only when every rank has joined
(a barrier in a shared directory; rank 0 then writes the report) and gives up after its timeout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .day2 import ROOT, Run

pytestmark = pytest.mark.slow

# The stand-in: joins the barrier, waits for the others (or its timeout: exit 3, nothing measured), and on
# rank 0 writes a report of the shape `ascendops-train collective` writes.
ALL_REDUCE = """
import json, os, sys, time
barrier, world, rank, report, timeout = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
open(os.path.join(barrier, str(rank)), "w").close()
end = time.monotonic() + timeout
while len(os.listdir(barrier)) < world:
    if time.monotonic() > end:
        print(f"rank {rank}: timed out waiting for {world - len(os.listdir(barrier))} ranks", file=sys.stderr)
        sys.exit(3)
    time.sleep(0.2)
if rank == 0:
    with open(report, "w") as f:
        json.dump({"world_size": world, "backend": "stand-in", "slowest_node": "node1", "failed_nodes": [],
                   "results": [{"size_bytes": 1048576, "time_us": 10.0, "alg_bandwidth_gbs": 50.0,
                                "check_result": "success"}]}, f)
print(f"rank {rank}: all-reduce done")
"""

NODES = ("node1", "node2", "node3")


def run_collective(tmp_path, timeout_s=20, argv=None):
    """Runs the task file on NODES with -f 1; ``argv``: {node: the command that node runs instead}."""
    top = tmp_path / "collections" / "ansible_collections" / "ascendops" / "cluster"
    tasks = top / "roles" / "launch" / "tasks"
    tasks.mkdir(parents=True)
    for name in ("meta", "plugins"):
        (top / name).symlink_to(ROOT / name)
    (tasks / "collective_run.yml").symlink_to(ROOT / "roles" / "launch" / "tasks" / "collective_run.yml")
    script = tmp_path / "all_reduce.py"
    script.write_text(ALL_REDUCE)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    hosts = {}
    for rank, node in enumerate(NODES):
        node_dir = tmp_path / node
        node_dir.mkdir()
        hosts[node] = {
            "__launch_node_rank": rank, "__launch_collective_dir": str(node_dir),
            "__launch_collective_fingerprint_file": str(node_dir / ".collective-fingerprint"),
            "__launch_collective_argv": (argv or {}).get(node) or [
                sys.executable, str(script), str(barrier), str(len(NODES)), str(rank), str(node_dir / "report.json"),
                str(timeout_s)]}
    inventory = {"all": {"children": {"npu_nodes": {"hosts": hosts}}, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    play = [{"name": "Collective", "hosts": "npu_nodes", "gather_facts": False, "any_errors_fatal": True, "tasks": [
        {"name": "Collective | Run the pre-flight", "ansible.builtin.include_role": {
            "name": "ascendops.cluster.launch", "tasks_from": "collective_run"}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    (tmp_path / "vars.yml").write_text(yaml.safe_dump({
        "launch_collective_timeout_s": timeout_s, "launch_poll_interval_s": 1,
        "launch_collective_min_bandwidth_gbs": 1.0, "launch_collective_min_size_bytes": 0,
        "launch_report_dir": str(tmp_path / "reports"),
        "launch_baseline": False, "launch_log_lines": 5, "__launch_collective_fingerprint": "fp",
        "launch_collective_hccl_test": str(tmp_path / "no-hccl_test")}))
    playbook_bin = Path(sys.executable).parent / "ansible-playbook"
    if not playbook_bin.exists():
        playbook_bin = Path(shutil.which("ansible-playbook") or "ansible-playbook")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"), ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_ASYNC_DIR=str(tmp_path / "async"))
    cmd = [str(playbook_bin), str(tmp_path / "play.yml"), "-i", str(tmp_path / "hosts.yml"),
           "-e", f"@{tmp_path / 'vars.yml'}", "--forks", "1"]
    return Run(subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False))


def test_the_all_reduce_runs_on_every_node_at_once_with_fewer_forks_than_nodes(tmp_path):
    run = run_collective(tmp_path)
    assert run.rc == 0, run.out
    assert "all-reduce over 3 ranks (stand-in) passed" in run.text
    # every rank joined and ended; the report reached the controller; the pass is remembered on every node
    assert sorted(p.name for p in (tmp_path / "barrier").iterdir()) == ["0", "1", "2"]
    assert json.loads((tmp_path / "reports" / "collective.json").read_text())["world_size"] == 3
    for node in NODES:
        assert (tmp_path / node / ".collective-fingerprint").read_text() == "fp\n"
    assert "timed out" not in run.out
    # Ansible's async job records of the all-reduce are removed once read
    assert not [p for p in (tmp_path / "async").rglob("*") if p.is_file()]


def test_a_rank_that_never_joins_fails_the_pre_flight_naming_the_exit_and_its_error(tmp_path):
    # node3 never joins: the others wait for it until their timeout, measure nothing, try once more, fail
    run = run_collective(tmp_path, timeout_s=2, argv={"node3": ["true"]})
    assert run.rc != 0
    assert "trying once more" in run.text
    assert "node1: collective pre-flight failed: the report has no results" in run.text
    assert "rank 0: timed out waiting for 1 ranks" in run.text
    assert not (tmp_path / "node1" / ".collective-fingerprint").exists()


# A stand-in systemctl for roles/launch/tasks/unit_stop.yml: each "node" is a unit of its own (train-<node>); a
# unit stops (its ranks' final checkpoint, a collective) only once every unit was told to stop. A blocking
# `stop` waits for that like the real one waits for the unit (and gives up after 10 s, as a timeout would).
SYSTEMCTL = """#!/usr/bin/env python3
import os, sys, time
state, world = os.environ["FAKE_SYSTEMD_DIR"], int(os.environ["FAKE_SYSTEMD_WORLD"])
args = [a.strip("'") for a in sys.argv[1:]]
no_block = "--no-block" in args
args = [a for a in args if a != "--no-block"]
def requested():
    return len([n for n in os.listdir(state) if n.endswith(".stop")])
def active(unit):
    if not os.path.exists(os.path.join(state, unit + ".stop")):
        return "active"
    return "inactive" if requested() >= world else "deactivating"
with open(os.path.join(state, "calls.log"), "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
cmd = args[0] if args else ""
if cmd == "daemon-reload":
    sys.exit(0)
unit = args[1].removesuffix(".service") if len(args) > 1 else ""
if cmd == "show" and "--value" in args:
    print(active(unit))
elif cmd == "show":
    enabled = "disabled" if os.path.exists(os.path.join(state, unit + ".disabled")) else "enabled"
    print(f"Id={unit}.service\\nLoadState=loaded\\nActiveState={active(unit)}\\nSubState=running\\nUnitFileState={enabled}")
elif cmd == "is-enabled":
    disabled = os.path.exists(os.path.join(state, unit + ".disabled"))
    print("disabled" if disabled else "enabled")
    sys.exit(1 if disabled else 0)
elif cmd == "disable":
    open(os.path.join(state, unit + ".disabled"), "w").close()
elif cmd == "stop":
    open(os.path.join(state, unit + ".stop"), "w").close()
    end = time.monotonic() + 10
    while not no_block and active(unit) != "inactive":
        if time.monotonic() > end:
            print(f"Job for {unit}.service timed out.", file=sys.stderr)
            sys.exit(1)
        time.sleep(0.2)
else:
    print(f"fake systemctl: {sys.argv[1:]}", file=sys.stderr)
    sys.exit(2)
"""


def test_the_job_stops_on_every_node_together_with_fewer_forks_than_nodes(tmp_path):
    top = tmp_path / "collections" / "ansible_collections" / "ascendops" / "cluster"
    tasks = top / "roles" / "launch" / "tasks"
    tasks.mkdir(parents=True)
    for name in ("meta", "plugins"):
        (top / name).symlink_to(ROOT / name)
    (tasks / "unit_stop.yml").symlink_to(ROOT / "roles" / "launch" / "tasks" / "unit_stop.yml")
    bin_dir, state = tmp_path / "bin", tmp_path / "systemd"
    bin_dir.mkdir()
    state.mkdir()
    (bin_dir / "systemctl").write_text(SYSTEMCTL)
    (bin_dir / "systemctl").chmod(0o755)
    hosts = {node: {"launch_service_name": f"train-{node}"} for node in NODES}
    inventory = {"all": {"children": {"npu_nodes": {"hosts": hosts}}, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    play = [{"name": "Stop", "hosts": "npu_nodes", "gather_facts": False, "tasks": [
        {"name": "Stop | Stop the job", "ansible.builtin.include_role": {
            "name": "ascendops.cluster.launch", "tasks_from": "unit_stop"},
         "vars": {"__launch_unit_disable": True, "launch_stop_timeout_s": 10}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"), ANSIBLE_CACHE_PLUGIN="memory",
               FAKE_SYSTEMD_DIR=str(state), FAKE_SYSTEMD_WORLD=str(len(NODES)),
               PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), str(tmp_path / "play.yml"),
           "-i", str(tmp_path / "hosts.yml"), "--forks", "1"]
    run = Run(subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False))
    assert run.rc == 0, run.out
    assert "timed out" not in run.out
    assert sorted(p.name for p in state.iterdir() if p.suffix in (".stop", ".disabled")) == sorted(
        [f"train-{n}.stop" for n in NODES] + [f"train-{n}.disabled" for n in NODES])
    calls = (state / "calls.log").read_text()
    # every stop was asked without blocking, and each node waited until its unit was inactive
    stops = [line for line in calls.splitlines() if "stop" in line.split()]
    assert sorted(stops) == [f"--no-block stop train-{n}" for n in NODES], calls
    assert run.recap_changed() == {n: 1 for n in NODES}
