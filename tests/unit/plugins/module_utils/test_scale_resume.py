"""Where an interrupted add_node.yml / remove_node.yml stands (scale_plan.resume_state): every state,
what is left to do in each, and which nodes the stop must target."""

from __future__ import annotations

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.scale_plan import (
    JOB_STATES,
    RESUME_STATES,
    RESUME_TODO,
    job_found,
    job_restart,
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
    assert r["job"]["state"] == "stopped_by_user" and r["job"]["start"] is False


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


# The job as found before the run, and whether the run starts it (job_found, job_restart): a job the user
# stopped (a stop record not written by this operation) stays stopped.
USER = "playbooks/stop.yml"


def test_a_job_the_user_stopped_stays_stopped_and_the_rest_is_done():
    r = state({"node1": seen(OLD, stopped_by=USER), "node2": seen(OLD, stopped_by=USER), "node3": seen()})
    job = r["job"]
    assert job["state"] == "stopped_by_user" and job["by"] == USER and job["nodes"] == ["node1", "node2"]
    assert job["start"] is False
    assert job["line"] == ("Job: stopped by playbooks/stop.yml, stays stopped (rank table and unit written at world "
                           "size 6; -e scale_restart_job=true starts it)")
    assert job["message"] == ("The job was stopped by playbooks/stop.yml before this run: left stopped at world "
                              "size 6. Start it with ansible-playbook playbooks/launch.yml -e "
                              "launch_start_stopped=true (or run this playbook with -e scale_restart_job=true).")
    # Every step but the start; the stop (a no-op on a stopped job) still targets the old nodes.
    assert r["todo"] == [s if s != "start_job" else "leave_stopped" for s in RESUME_TODO["first_run"]]
    assert r["stop"] == ["node1", "node2"]


def test_the_stop_of_an_interrupted_run_of_the_same_operation_is_not_the_users():
    r = state({"node1": seen(OLD, stopped_by=BY), "node2": seen(OLD, stopped_by=BY), "node3": seen()})
    assert r["job"]["state"] == "stopped_by_run" and r["job"]["start"] is True and r["job"]["message"] is None
    assert r["todo"][-1] == "start_job"
    assert r["job"]["line"].startswith("Job: stopped by an earlier run of playbooks/add_node.yml (on node1, node2): "
                                       "started at world size 6")


def test_a_user_stop_on_one_node_wins_over_the_run_own_stop_and_a_running_rank():
    # As the launch stage: a stop record on any node leaves the job stopped.
    r = state({"node1": seen(OLD, stopped_by="playbooks/upgrade.yml"), "node2": seen(OLD, True), "node3": seen()})
    assert r["job"]["state"] == "stopped_by_user" and r["job"]["by"] == "playbooks/upgrade.yml"
    assert r["job"]["nodes"] == ["node1"] and not r["job"]["start"]


def test_a_stop_record_on_a_new_node_alone_is_not_the_jobs():
    # Only the old job's nodes say how the job was; node3 (new) is not yet part of it.
    r = state({"node1": seen(OLD, True), "node2": seen(OLD, True), "node3": seen(stopped_by=USER)})
    assert r["job"]["state"] == "running" and r["job"]["start"]


def test_after_a_run_that_left_the_job_stopped_the_rerun_still_leaves_it_stopped():
    r = state({n: seen(NEW, stopped_by=USER) for n in ADDR})
    assert r["state"] == "rank_table_partial" and not r["job"]["start"]
    assert "pre-flight and rank table (the job stays stopped)" in r["words"]
    assert "leave_stopped" in r["todo"] and "start_job" not in r["todo"]


@pytest.mark.parametrize("restart, start", [(None, False), (True, True), (False, False)])
def test_scale_restart_job_overrides_for_a_user_stop(restart, start):
    job = job_restart(job_found({"n1": seen(stopped_by=USER)}, ["n1"], BY), restart, 8)
    assert job["start"] is start
    if restart:
        assert job["line"] == ("Job: stopped by playbooks/stop.yml before this run (on n1): started at world size 8 "
                               "all the same (scale_restart_job=true)")
        assert job["message"] is None


def test_scale_restart_job_false_leaves_a_running_job_stopped():
    job = job_restart(job_found({"n1": seen(running=True)}, ["n1"], BY), False, 8)
    assert job["state"] == "running" and job["start"] is False
    assert job["line"] == "Job: running on n1: left stopped (scale_restart_job=false)"
    assert job["message"] == ("scale_restart_job=false: the job was left stopped at world size 8. Start it with "
                              "ansible-playbook playbooks/launch.yml -e launch_start_stopped=true.")


def test_job_found_states_and_nodes_that_did_not_answer():
    assert job_found({}, ["n1"], BY) == {"state": "not_running", "by": None, "nodes": [],
                                         "words": "not running (no stop record)"}
    # Two users' records: both named.
    two = job_found({"n1": seen(stopped_by=USER), "n2": seen(stopped_by="ops/maint.yml")}, ["n1", "n2"], BY)
    assert two["by"] == "ops/maint.yml, playbooks/stop.yml"
    assert {job_found({"n1": seen(**kw)}, ["n1"], BY)["state"] for kw in (
        {"running": True}, {"stopped_by": USER}, {"stopped_by": BY}, {})} == set(JOB_STATES)
    # A node not probed (dead, removed) says nothing.
    assert job_found({"n1": seen(stopped_by=USER)}, ["n2"], BY)["state"] == "not_running"


def test_the_plan_lines_say_what_happens_to_the_job():
    r = state({"node1": seen(OLD, stopped_by=USER), "node2": seen(OLD, stopped_by=USER), "node3": seen()})
    lines = resume_text(r, "c")
    assert lines[0].startswith("Found: nothing done yet") and lines[1].startswith("Job: stopped by playbooks/stop.yml")
    done = state({n: seen(NEW, True) for n in ADDR})
    assert len(resume_text(done, "c")) == 1
