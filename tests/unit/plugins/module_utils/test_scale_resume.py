"""Where an interrupted add_node.yml / remove_node.yml stands (scale_plan.resume_state): every state,
what is left to do in each, and which nodes the stop must target."""

from __future__ import annotations

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.scale_plan import (
    RESUME_STATES,
    RESUME_TODO,
    plan_scale,
    resume_state,
    resume_text,
)

ADDR = {"node1": "10.0.0.1", "node2": "10.0.0.2", "node3": "10.0.0.3"}
OLD = ["10.0.0.1", "10.0.0.2"]
NEW = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
BY = "playbooks/add_node.yml"
ADD = plan_scale(["node1", "node2"], add=["node3"], devices_per_node=2)
BEFORE = ["node1", "node2"]


def seen(servers=(), running=False, stopped_by=None):
    return {"servers": list(servers), "running": running, "stopped_by": stopped_by}


def state(found):
    return resume_state(ADD, found, BEFORE, ADDR, devices_per_node=2, stop_by=BY)


def test_first_run_job_running_at_the_old_size_everything_to_do():
    r = state({"node1": seen(OLD, True), "node2": seen(OLD, True), "node3": seen()})
    assert r["state"] == "first_run"
    assert r["todo"] == RESUME_TODO["first_run"] and r["todo"][0] == "stop_job"
    assert r["stop"] == ["node1", "node2"]
    assert r["nodes"]["node1"] == {"rank_table": "old", "running": True, "world_size": 4, "stopped": False}
    assert r["nodes"]["node3"] == {"rank_table": "none", "running": False, "world_size": None, "stopped": False}


def test_a_job_the_user_stopped_with_stop_yml_is_a_first_run_not_an_interruption():
    r = state({"node1": seen(OLD, stopped_by="playbooks/stop.yml"), "node2": seen(OLD, stopped_by="playbooks/stop.yml"),
               "node3": seen()})
    assert r["state"] == "first_run"


def test_stopped_by_an_earlier_run_and_not_restarted():
    r = state({"node1": seen(OLD, stopped_by=BY), "node2": seen(OLD, stopped_by=BY), "node3": seen()})
    assert r["state"] == "stopped"
    assert "stop_job" not in r["todo"] and r["todo"][-1] == "start_job"
    assert "stopped on node1, node2 by an earlier run" in r["words"]
    # Stopping again is harmless: the old nodes stay the stop's targets, no new node runs anything.
    assert r["stop"] == ["node1", "node2"]


def test_rank_table_written_on_some_nodes_only():
    r = state({"node1": seen(NEW, stopped_by=BY), "node2": seen(OLD, stopped_by=BY), "node3": seen(NEW)})
    assert r["state"] == "rank_table_partial"
    assert r["nodes"]["node2"]["rank_table"] == "old"
    assert "on node1, node3, not yet on node2" in r["words"]
    assert r["todo"] == RESUME_TODO["rank_table_partial"] and "rank_table" in r["todo"]


def test_rank_table_on_every_node_but_the_job_not_started():
    r = state({n: seen(NEW, stopped_by=BY if n != "node3" else None) for n in ADDR})
    assert r["state"] == "rank_table_partial"
    assert "not yet on" not in r["words"] and "start_job" in r["todo"]


def test_job_started_on_the_new_node_only_is_stopped_there_too():
    # The interruption of the bug: the new node's ranks wait for peers; the old nodes stopped.
    r = state({"node1": seen(NEW, stopped_by=BY), "node2": seen(NEW, stopped_by=BY), "node3": seen(NEW, True)})
    assert r["state"] == "started_partial"
    assert r["stop"] == ["node1", "node2", "node3"]
    assert r["todo"][0] == "stop_job" and r["todo"][-1] == "start_job"
    assert r["nodes"]["node3"]["world_size"] == 6
    assert "started at world size 6 on node3 only (not on node1, node2)" in r["words"]


def test_job_started_on_some_old_nodes_only():
    r = state({"node1": seen(NEW, True), "node2": seen(NEW), "node3": seen(NEW)})
    assert r["state"] == "started_partial"
    assert r["stop"] == ["node1", "node2"]


def test_already_done_nothing_to_do_and_nothing_to_stop():
    r = state({n: seen(NEW, True) for n in ADDR})
    assert r["state"] == "done"
    assert r["todo"] == [] and r["stop"] == []
    assert "already done" in r["words"] and "world size 6" in r["words"]


def test_a_new_node_running_a_stale_job_of_another_world_is_stopped():
    r = state({"node1": seen(OLD, True), "node2": seen(OLD, True), "node3": seen(["10.0.0.3", "10.0.0.9"], True)})
    assert r["state"] == "first_run"
    assert r["nodes"]["node3"]["rank_table"] == "other"
    assert r["stop"] == ["node1", "node2", "node3"]


def test_remove_rerun_on_an_already_removed_node_is_done():
    plan = plan_scale(["node1", "node2", "node3"], remove=["node2"], dead=["node2"], devices_per_node=2)
    both = ["10.0.0.1", "10.0.0.3"]
    r = resume_state(plan, {"node1": seen(both, True), "node3": seen(both, True)}, ["node1", "node2", "node3"],
                     ADDR, 2, "playbooks/remove_node.yml")
    assert r["state"] == "done" and r["stop"] == []
    # Before the remove: the job at 6 ranks on the three, node2 not probed (it may be dead).
    r = resume_state(plan, {"node1": seen(NEW, True), "node3": seen(NEW, True)}, ["node1", "node2", "node3"],
                     ADDR, 2, "playbooks/remove_node.yml")
    assert r["state"] == "first_run" and r["stop"] == ["node1", "node3"]
    assert r["nodes"]["node1"]["rank_table"] == "old" and "node2" not in r["nodes"]


def test_a_job_at_the_new_size_with_a_wrong_world_is_not_done():
    # Running, with the new nodes in the table, but a rank table of another size than the plan's.
    plan = plan_scale(["node1", "node2"], add=["node3"], devices_per_node=2)
    r = resume_state(plan, {n: seen(NEW, True) for n in ADDR}, BEFORE, ADDR, devices_per_node=4, stop_by=BY)
    assert r["state"] != "done"


def test_rank_tables_named_by_node_name_without_addresses():
    r = resume_state(ADD, {n: seen(["node1", "node2", "node3"], True) for n in ADDR}, BEFORE, None, 2, BY)
    assert r["state"] == "done"


@pytest.mark.parametrize("name", RESUME_STATES)
def test_every_state_has_its_todo_and_text(name):
    assert name in RESUME_TODO
    lines = resume_text({"state": name, "words": "w", "todo": RESUME_TODO[name]}, "ansible-playbook x.yml -e nodes=n")
    assert lines[0] == "Found: w"
    assert (len(lines) == 1) is (name == "done")
    if name != "done":
        assert lines[-1] == "Interrupted? Run the same command again to finish: ansible-playbook x.yml -e nodes=n"
