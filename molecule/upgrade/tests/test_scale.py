"""upgrade scenario verifier, its side_effect (adding and removing nodes after the upgrade): node3 added
to the job of node1 and node2 (it resumed at 6 ranks from the 4-rank checkpoint through the trainer's
universal checkpoint, with its optimizer state; every node's rank table had 3 servers), then node2
killed and removed (nothing ran on it; the job resumed on node1 and node3 at 4 ranks from a 6-rank
checkpoint, 2 servers in their rank tables)."""

import json
import os
import pathlib
import re
import subprocess

import pytest

EPHEMERAL = pathlib.Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", ""))
STATUS = "/var/lib/ascendops/status/debug-llama.json"
RUN_RECORD = "/var/lib/ascendops/run/config.json"
CHECKPOINTS = "/mnt/ascendops/debug-llama/checkpoints"


def saved(name):
    return json.loads((EPHEMERAL / name).read_text())


def log(name):
    return (EPHEMERAL / f"run-{name}.log").read_text()


def dead_node(node):
    return node.endswith("-upgrade-node2")


def main_node(node):
    return node.endswith("-upgrade-node1")


@pytest.fixture()
def alive(node):
    if dead_node(node):
        pytest.skip("node2 is dead (killed, removed): nothing runs on it, test_the_dead_node_was_left_alone")
    return node


def test_every_node_had_three_servers_in_its_rank_table_after_the_add(node):
    added = saved(f"added-{node}.json")
    assert len(added["rank_table"]["server_list"]) == 3
    assert added["status"]["state"] == "running"


def test_the_add_resumed_at_six_ranks_through_the_universal_checkpoint(node):
    if not main_node(node):
        pytest.skip("the run record is written on the main rank's node")
    resumed = saved(f"added-{node}.json")["run"]["resumed"]
    assert resumed["world_size"] == 6 and resumed["checkpoint_world_size"] == 4
    assert resumed["universal"] and resumed["loaded"] == resumed["tag"] + "_universal"


def test_the_add_check_run_changed_nothing():
    out = log("add-check")
    assert "rc=0" in out
    recap = out.split("PLAY RECAP")[-1]
    assert re.findall(r"changed=(\d+)", recap) and set(re.findall(r"changed=(\d+)", recap)) == {"0"}


def test_the_dead_node_was_left_alone(node):
    if not dead_node(node):
        pytest.skip("only node2 was killed")
    state = subprocess.run(["podman", "inspect", "--format", "{{.State.Status}} {{.State.StartedAt}}", node],
                           check=True, capture_output=True, text=True).stdout.strip()
    # Still down, never started again since the kill.
    assert state == (EPHEMERAL / "dead-state.txt").read_text().strip()
    for name in ("remove-unconfirmed", "remove"):
        out = log(name)
        assert f"[{node}]" not in out and f"-> {node}]" not in out
        assert not re.search(rf"(?m)^{re.escape(node)}\s+:", out.split("PLAY RECAP")[-1])


def test_the_rank_table_names_the_two_nodes_left(host, alive):
    table = json.loads(host.file("/etc/ascendops/rank_table.json").content_string)
    assert len(table["server_list"]) == 2
    assert sum(len(s["device"]) for s in table["server_list"]) == 4


def test_the_job_trains_on_after_the_removal(host, alive):
    status = json.loads(host.file(STATUS).content_string)
    removed = saved(f"removed-{alive}.json")["status"]
    assert status["state"] == "running"
    assert status["step"] >= removed["step"]
    assert host.service("ascendops-train").is_running


def test_the_removal_resumed_at_four_ranks_from_the_six_rank_checkpoint(host, alive):
    if not main_node(alive):
        pytest.skip("the run record is written on the main rank's node")
    run = json.loads(host.file(RUN_RECORD).content_string)["run"]
    assert run["world_size"] == 4
    assert run["resumed"]["checkpoint_world_size"] == 6 and run["resumed"]["universal"]
    journal = host.check_output("journalctl -u ascendops-train -o cat --no-pager")
    assert "resumed at world size 6 from a checkpoint of world size 4 (universal)" in journal
    assert "resumed at world size 4 from a checkpoint of world size 6 (universal)" in journal


def test_the_optimizer_state_came_through_the_universal_checkpoint(host, alive):
    # The universal copy is pruned with the checkpoint it was made from (checkpoint.keep): its conversion
    # and the ZeRO-3 load of its optimizer state (each parameter group's own state) are in the journal.
    if not main_node(alive):
        pytest.skip("the conversion and the load are logged on the main rank's node")
    journal = host.check_output("journalctl -u ascendops-train -o cat --no-pager")
    resumed = r"resumed at world size \d+ from a checkpoint of world size \d+ \(universal\): (step_\d+)_universal"
    tags = re.findall(resumed, journal)
    assert len(tags) == 2, journal[-3000:]
    for tag in tags:
        assert f"converted to the universal checkpoint {CHECKPOINTS}/{tag}_universal" in journal
    loads = re.findall(r"ZeRO-3 universal load repaired .*state \d+ step: own tensor", journal)
    assert len(loads) == 2, journal[-3000:]
