"""The job's lifecycle on a node (node_verdict) and the cluster's restart plan (restart_plan)."""

import pytest
from ansible_collections.ascendops.cluster.plugins.filter.launch import launch_plan
from ansible_collections.ascendops.cluster.plugins.module_utils.job_state import (
    classify_processes,
    in_job_cgroup,
    node_verdict,
    parse_properties,
    restart_plan,
    status_line,
    trained_since,
)

JOB = "run1"
FP = "fp-now"


def unit(active="active", sub="running", result="success", status="0", ran=True, restarts="0", enabled="enabled",
         load="loaded", entered_us=1_000_000):
    return {"LoadState": load, "ActiveState": active, "SubState": sub, "Result": result, "ExecMainStatus": status,
            "ExecMainStartTimestampMonotonic": "5000000" if ran else "0", "NRestarts": restarts,
            "ActiveEnterTimestampMonotonic": str(entered_us), "UnitFileState": enabled}


def status(state="running", step=12, steps=40, **over):
    s = {"schema": 1, "job": JOB, "node": "node1", "node_rank": 0, "state": state, "step": step, "steps": steps,
         "loss": 3.25, "tokens_per_s_per_device": 1234.5, "mfu": None, "last_checkpoint": "step_00000010",
         "last_checkpoint_step": 10, "exit_code": None, "reason": None, "started_at": 1000.0, "updated_at": 1010.0,
         "completed_at": None, "pid": 7}
    s.update(over)
    return s


def verdict(u, st=None, intent=None, container="running", started=FP, now=None, **kw):
    return node_verdict(u, status=st, intent=intent, job=JOB, container=container, started_fingerprint=started,
                        fingerprint=FP, now_monotonic_s=now, **kw)


STOPPED_INTENT = {"schema": 1, "job": JOB, "intent": "stopped", "at": "2026-12-01T04:00:00Z"}


def test_running():
    v = verdict(unit(), status())
    assert (v["state"], v["changed"], v["enabled"]) == ("running", False, True)


def test_completed_job_exit_0_even_after_execstop_on_a_gone_container():
    v = verdict(unit("inactive", "dead", "success", "0"), status("completed", 40, completed_at=1.0), container=None)
    assert v["state"] == "completed" and v["reason"] == "completed at step 40/40"
    # after a reboot the unit has not run yet: the status file tells
    v = verdict(unit("inactive", "dead", ran=False), status("completed", 40), container=None)
    assert v["state"] == "completed"


def test_stopped_by_the_user_and_stopped_outside_the_tool():
    dead = unit("inactive", "dead", "success", "143", enabled="disabled")
    v = verdict(dead, status("stopped"), intent=STOPPED_INTENT, container=None)
    assert v["state"] == "stopped" and v["stopped_by_user"] and "2026-12-01T04:00:00Z" in v["reason"]
    v = verdict(unit("inactive", "dead", "success", "143"), status("stopped"), container=None)
    assert v["state"] == "drift" and "outside ascendops" in v["reason"]
    # another job's stop record does not count
    v = verdict(dead, status("stopped"), intent=dict(STOPPED_INTENT, job="other"), container=None)
    assert v["state"] == "drift"


def test_drift_disabled_vanished_container_and_killed_unit():
    v = verdict(unit(enabled="disabled"), status())
    assert v["state"] == "drift" and v["enable_only"]
    v = verdict(unit("inactive", "dead", "exit-code", "137"), status("running"), container=None)
    assert v["state"] == "drift" and "vanished" in v["reason"]
    v = verdict(unit(entered_us=1_000_000), status(), container=None, now=500.0)
    assert v["state"] == "drift" and "container is gone" in v["reason"]
    # a container still being created is not drift
    assert verdict(unit(entered_us=1_000_000), status(), container=None, now=30.0)["state"] == "running"
    v = verdict(unit("inactive", "dead", "success", "0", ran=False, enabled="disabled"), None, container=None)
    assert v["state"] == "drift" and "disabled" in v["reason"]


@pytest.mark.parametrize("code, words", [(4, "non-finite loss"), (2, "configuration error"), (3, "rank table")])
def test_a_do_not_retry_exit_is_failed(code, words):
    st = status("failed", exit_code=code, reason="loss is nan at step 13")
    v = verdict(unit("failed", "failed", "exit-code", str(code)), st, container=None)
    assert v["state"] == "failed" and v["exit_code"] == code
    assert f"exit {code} ({words}" in v["reason"] and "not retried: loss is nan at step 13" in v["reason"]


def test_start_limit_hit_and_restarting():
    v = verdict(unit("failed", "failed", "start-limit-hit", "1", restarts="5"), status("failed", exit_code=1),
                container=None)
    assert v["state"] == "failed" and "restarted 5 time(s) and hit the start limit" in v["reason"]
    v = verdict(unit("failed", "failed", "exit-code", "1", restarts="5"), None, container=None)
    assert v["state"] == "failed" and v["reason"] == (
        "restarted 5 time(s) and hit the start limit; last exit 1 (crashed (a retry makes sense))")
    v = verdict(unit("failed", "failed", "exit-code", "1"), None, container=None)
    assert v["reason"] == "exit-code, exit 1 (crashed (a retry makes sense))"
    v = verdict(unit("activating", "auto-restart", "exit-code", "1", restarts="2"), None, container=None)
    assert v["state"] == "restarting"


def test_new_node_and_changed_job():
    v = verdict(unit("inactive", "dead", ran=False, load="loaded"), None, container=None, started="")
    assert v["state"] == "new" and v["changed"]
    v = verdict(unit(), status(), started="fp-before")
    assert v["state"] == "running" and v["changed"]


def test_a_status_file_of_another_job_or_schema_is_ignored():
    v = verdict(unit("inactive", "dead", ran=False), status("completed", job="other"), container=None)
    assert v["state"] == "drift"
    assert verdict(unit("inactive", "dead", ran=False), dict(status("completed"), schema=2), container=None)[
        "state"] == "drift"


def nodes(*states, changed=(), enabled=True, **extra):
    out = {}
    for i, s in enumerate(states):
        out[f"node{i + 1}"] = {"state": s, "reason": f"{s} here", "changed": f"node{i + 1}" in changed,
                               "enabled": enabled, **extra}
    return out


def test_plan_leaves_a_running_or_completed_job_alone():
    p = restart_plan(nodes("running", "running"))
    assert p["action"] == "none" and not p["fail"] and p["enable"] == []
    p = restart_plan(nodes("completed", "completed"))
    assert p["action"] == "none" and p["reason"].startswith("completed on every node")
    assert restart_plan(nodes("completed", "running"))["action"] == "none"


def test_plan_starts_a_changed_or_drifted_job_on_every_node():
    p = restart_plan(nodes("completed", "completed", changed=["node2"]))
    assert p["action"] == "start" and p["reason"] == "the job changed on node2"
    p = restart_plan(nodes("running", "drift"))
    assert p["action"] == "start" and p["reason"] == "not running on node2 (node2: drift here)"
    p = restart_plan(nodes("new", "new", changed=["node1", "node2"]))
    assert p["action"] == "start" and p["reason"] == "not started yet on node1, node2"
    assert restart_plan(nodes("running", "running"), changed_data={"node1": True})["action"] == "start"


def test_plan_only_enables_a_unit_disabled_while_it_runs():
    ns = nodes("running", "drift")
    ns["node2"].update(enable_only=True, enabled=False)
    p = restart_plan(ns)
    assert p["action"] == "none" and p["enable"] == ["node2"]


def test_plan_leaves_a_stopped_job_stopped_until_asked():
    p = restart_plan(nodes("stopped", "stopped", changed=["node1"], enabled=False))
    assert p["action"] == "none" and "launch_start_stopped" in p["reason"] and "changed since on node1" in p["reason"]
    assert p["enable"] == []
    p = restart_plan(nodes("stopped", "stopped"), start_stopped=True)
    assert p["action"] == "start" and p["clear_intent"]


def test_plan_reports_a_failed_job_and_restarts_it_only_when_changed_or_asked():
    p = restart_plan(nodes("failed", "completed"))
    assert p["action"] == "none" and p["fail"] and "node1: failed here" in p["reason"]
    assert restart_plan(nodes("failed", "completed"), restart_failed=True)["action"] == "start"
    assert restart_plan(nodes("failed", "failed", changed=["node1"]))["action"] == "start"


def test_plan_filter_takes_the_registered_results():
    infos = {h: {"job": v} for h, v in nodes("running", "drift").items()}
    assert launch_plan(infos)["action"] == "start"


def test_trained_since_a_start():
    assert trained_since(status("running", 3, started_at=2000.0), 1999.0, JOB)
    assert not trained_since(status("starting", 0, started_at=2000.0), 1999.0, JOB)
    assert not trained_since(status("running", 30, started_at=1000.0), 1999.0, JOB)  # the run before
    assert trained_since(status("completed", 40, started_at=2000.0), 1999.0, JOB)
    assert not trained_since(None, 1999.0, JOB)


def test_status_line():
    v = verdict(unit(), status())
    assert status_line("node1", v, status(), JOB) == (
        "node1: running (running); node_rank 0, step 12/40, loss 3.2500, 1,234 tokens/s per device, "
        "last checkpoint step_00000010 (step 10)")
    failed = verdict(unit("failed", "failed", "exit-code", "4"), status("failed", exit_code=4, reason="nan"),
                     container=None)
    line = status_line("node2", failed, status("failed", exit_code=4, reason="nan"), JOB)
    assert line.startswith("node2: failed (exit 4 (non-finite loss or gradient norm), not retried: nan)")
    assert line.endswith("trainer: failed: nan")
    assert status_line("node3", {"state": "new", "reason": "x"}) == "node3: new (x); no status file yet"


CID = "a" * 64
OTHER_CID = "b" * 64


def test_processes_of_this_job_are_told_by_their_cgroup_not_their_environment():
    rows = [{"npu_id": 0, "pid": 10, "name": "python3"}, {"npu_id": 1, "pid": 11, "name": "python3"},
            {"npu_id": 5, "pid": 12, "name": "python3"}, {"npu_id": 0, "pid": 13, "name": "gone"},
            {"npu_id": 1, "pid": 14, "name": "python3"}, {"npu_id": 2, "pid": 15, "name": "python3"},
            {"npu_id": 3, "pid": 16, "name": "python3"}]
    environs = {10: {"ASCENDOPS_SERVICE": "ascendops-train", "ASCENDOPS_JOB": JOB},
                # a login shell of another user that exports the job's identity: not the job's
                11: {"ASCENDOPS_SERVICE": "ascendops-train", "ASCENDOPS_JOB": JOB},
                12: {}, 13: None, 14: {"ASCENDOPS_JOB": JOB}, 15: None, 16: {}}
    cgroups = {10: f"0::/system.slice/docker-{CID}.scope\n",
               11: "0::/user.slice/user-1002.slice/session-4.scope\n",
               12: f"12:devices:/docker/{OTHER_CID}\n",
               14: f"12:devices:/docker/{CID}\n11:memory:/docker/{CID}\n",
               15: "0::/system.slice/ascendops-train.service\n",
               16: "0::/system.slice/ascendops-train-other.service\n"}
    out = classify_processes(rows, environs, "ascendops-train", JOB, ["0", "1"], cgroups=cgroups,
                             container_ids=[CID, "not-an-id"])
    assert [p["pid"] for p in out["ours"]] == [10, 14, 15]
    assert [(p["pid"], p["blocking"], p["service"]) for p in out["others"]] == [
        (11, True, "ascendops-train"), (12, False, None), (16, False, None)]
    # without the container's ID (the engine did not answer) only the unit's own cgroup counts
    ours = classify_processes(rows, environs, "ascendops-train", JOB, ["0"], cgroups=cgroups)["ours"]
    assert [p["pid"] for p in ours] == [15]


def test_a_short_or_partial_id_matches_nothing():
    assert not in_job_cgroup(f"0::/system.slice/docker-{CID}.scope", "x", ["aaaa"])
    assert in_job_cgroup(f"0::/machine.slice/libpod-{CID}.scope/container", "x", [CID])
    assert not in_job_cgroup("0::/system.slice/ascendops-train.service.d", "ascendops-train")


def test_systemctl_show_properties():
    assert parse_properties("ActiveState=failed\nResult=exit-code\nX=a=b\n") == {
        "ActiveState": "failed", "Result": "exit-code", "X": "a=b"}
