"""The rolling-upgrade planner (plugins/module_utils/upgrade_plan.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils import ascend_release as r
from ansible_collections.ascendops.cluster.plugins.module_utils import upgrade_plan as up

RELEASES = str(Path(__file__).resolve().parents[4] / "releases")
NODES = ["node1", "node2", "node3", "node4"]
OLD = r.expected_versions(r.load_release("910b-cann8.0.0", RELEASES))
TARGET_RELEASE = r.load_release("910b-cann8.2.rc1", RELEASES)
NEW = r.expected_versions(TARGET_RELEASE)
ORDER = ["firmware", "driver", "cann", "image"]  # docker_runtime is 6.0.0 in both releases


def healthy(nodes=None):
    nodes = NODES if nodes is None else nodes
    return {n: {"reachable": True, "npu_health_ok": True, "links_up": True} for n in nodes}


def old_cluster(nodes=None):
    nodes = NODES if nodes is None else nodes
    return {n: dict(OLD) for n in nodes}


def plan(installed=None, health=None, **kw):
    return up.plan_upgrade(NODES, installed or old_cluster(), health or healthy(), TARGET_RELEASE, **kw)


def batches(p):
    return [[e["node"] for e in b] for b in p["batches"]]


# ------------------------------------------------------------------------------ batches

@pytest.mark.parametrize("size, expected", [
    (1, [["node1"], ["node2"], ["node3"], ["node4"]]),
    (2, [["node1", "node2"], ["node3", "node4"]]),
    (3, [["node1", "node2", "node3"], ["node4"]]),
    (4, [NODES]),
    (9, [NODES]),
])
def test_batches_of_the_batch_size_in_inventory_order(size, expected):
    p = plan(upgrade_batch_size=size)
    assert p["refused"] == [] and p["up_to_date"] == []
    assert batches(p) == expected


def test_batch_size_defaults_to_one():
    assert batches(plan()) == [["node1"], ["node2"], ["node3"], ["node4"]]


def test_inventory_order_is_kept_not_sorted():
    order = ["node3", "node1", "node4", "node2"]
    p = up.plan_upgrade(order, old_cluster(), healthy(), TARGET_RELEASE, upgrade_batch_size=3)
    assert batches(p) == [["node3", "node1", "node4"], ["node2"]]


@pytest.mark.parametrize("setting, value", [
    ("upgrade_batch_size", 0), ("upgrade_batch_size", "two"), ("upgrade_batch_size", True),
    ("max_fail_percentage", -1), ("max_fail_percentage", 101), ("max_fail_percentage", "x"),
])
def test_bad_settings_are_refused_naming_the_setting(setting, value):
    with pytest.raises(up.PlanError, match=setting):
        plan(**{setting: value})


def test_a_node_listed_twice_is_refused():
    with pytest.raises(up.PlanError, match="node1 more than once"):
        up.plan_upgrade(["node1", "node1"], old_cluster(), healthy(), TARGET_RELEASE)


# ------------------------------------------------------------------------------ steps in the vendor's order

def test_steps_in_the_vendors_upgrade_order_with_one_reboot_after_the_driver():
    entry = plan()["batches"][0][0]
    assert [s["step"] for s in entry["steps"]] == ORDER
    assert [s["reboot"] for s in entry["steps"]] == [False, True, False, False]
    assert entry["reboot"] is True
    cann = entry["steps"][2]["packages"]
    assert [(p["component"], p["from"], p["to"]) for p in cann] == [
        ("cann_toolkit", "8.0.0", "8.2.RC1"), ("cann_kernels", "8.0.0", "8.2.RC1")]
    assert entry["steps"][0]["packages"] == [{"component": "firmware", "from": "7.5.0.2.220", "to": "7.7.0.1.231"}]


def test_a_runtime_change_is_planned_between_cann_and_image():
    installed = old_cluster()
    installed["node1"]["docker_runtime"] = "5.0.0"
    entry = plan(installed)["batches"][0][0]
    assert [s["step"] for s in entry["steps"]] == ["firmware", "driver", "cann", "runtime", "image"]


def test_no_reboot_when_neither_firmware_nor_driver_changes():
    installed = {n: dict(NEW) for n in NODES}
    installed["node2"]["cann_toolkit"] = installed["node2"]["cann_kernels"] = "8.0.0"
    p = plan(installed)
    assert p["up_to_date"] == ["node1", "node3", "node4"]
    entry = p["batches"][0][0]
    assert [s["step"] for s in entry["steps"]] == ["cann"] and entry["reboot"] is False


def test_only_the_firmware_changing_reboots_after_the_firmware():
    installed = {n: dict(NEW) for n in NODES}
    installed["node1"]["firmware"] = OLD["firmware"]
    steps = plan(installed)["batches"][0][0]["steps"]
    assert [(s["step"], s["reboot"]) for s in steps] == [("firmware", True)]


def test_versions_compare_as_versions_not_text():
    installed = {n: dict(NEW, cann_toolkit="8.2.rc1", cann_kernels="8.2.rc1") for n in NODES}
    assert plan(installed)["up_to_date"] == NODES


# ------------------------------------------------------------------------------ resume

def _upgraded_through(versions, steps_done):
    out = dict(versions)
    for step, components in up.STEPS:
        if step in steps_done:
            for c in components:
                out[c] = NEW[c]
    return out


@pytest.mark.parametrize("size", [1, 2, 3])
@pytest.mark.parametrize("nodes_done", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("steps_done", range(len(ORDER)))
def test_rerun_resumes_at_the_first_node_and_component_not_at_the_release(size, nodes_done, steps_done):
    """Interrupted after ``nodes_done`` whole nodes and ``steps_done`` steps of the next one."""
    installed = old_cluster()
    for n in NODES[:nodes_done]:
        installed[n] = dict(NEW)
    if nodes_done < len(NODES):
        installed[NODES[nodes_done]] = _upgraded_through(OLD, ORDER[:steps_done])
    p = plan(installed, upgrade_batch_size=size)
    assert p["up_to_date"] == NODES[:nodes_done]
    left = NODES[nodes_done:]
    assert batches(p) == [left[i:i + size] for i in range(0, len(left), size)]
    if left:
        first = p["batches"][0][0]
        assert first["node"] == NODES[nodes_done]
        assert [s["step"] for s in first["steps"]] == ORDER[steps_done:]
        assert first["reboot"] is (steps_done < 2)
        for entry in [e for b in p["batches"] for e in b][1:]:
            assert [s["step"] for s in entry["steps"]] == ORDER


def test_a_cluster_at_the_release_has_nothing_to_do():
    p = plan({n: dict(NEW) for n in NODES})
    assert p["batches"] == [] and p["up_to_date"] == NODES
    assert "Nothing to upgrade." in up.render_text(p)


# ------------------------------------------------------------------------------ refusals

@pytest.mark.parametrize("key, check", [("reachable", "reachable"), ("npu_health_ok", "npu_health"),
                                        ("links_up", "links_up")])
def test_an_unhealthy_node_refuses_the_start_naming_node_and_check(key, check):
    health = healthy()
    health["node3"][key] = False
    p = plan(health=health)
    assert p["batches"] == []
    assert [(x["node"], x["check"]) for x in p["refused"]] == [("node3", check)]
    assert "node3" in p["refused"][0]["msg"] and check in p["refused"][0]["msg"]
    text = up.render_text(p)
    assert "REFUSED" in text and f"node3: {check}" in text and "Batch" not in text


def test_an_unhealthy_node_already_at_the_release_still_refuses():
    installed = old_cluster()
    installed["node1"] = dict(NEW)
    health = healthy()
    health["node1"]["links_up"] = False
    assert [(x["node"], x["check"]) for x in plan(installed, health)["refused"]] == [("node1", "links_up")]


def test_missing_health_or_versions_refuse():
    health = healthy(NODES[:3])
    installed = old_cluster()
    del installed["node2"]
    p = plan(installed, health)
    assert [(x["node"], x["check"]) for x in p["refused"]] == [("node2", "versions"), ("node4", "health")]


def test_every_failing_check_is_listed():
    health = healthy()
    health["node1"]["reachable"] = False
    health["node4"].update(npu_health_ok=False, links_up=None)
    assert [(x["node"], x["check"]) for x in plan(health=health)["refused"]] == [
        ("node1", "reachable"), ("node4", "npu_health"), ("node4", "links_up")]


def test_an_incompatible_release_refuses_with_ascend_releases_rule():
    bad = copy.deepcopy(TARGET_RELEASE)
    bad["image"]["torch"] = "2.1.0"
    p = up.plan_upgrade(NODES, old_cluster(), healthy(), bad)
    assert p["batches"] == [] and p["refused"]
    assert {x["node"] for x in p["refused"]} == {"release (910b-cann8.2.rc1)"}
    assert any("torch_npu compatibility table" in x["check"] for x in p["refused"])


def test_target_firmware_outside_the_target_drivers_range_refuses():
    p = plan(driver_info={"compatible_version_fw": "[7.0.0,7.5.99]"})
    assert [x["check"] for x in p["refused"]] == ["the driver's version.info compatible_version_fw"]
    assert "7.7.0.1.231" in p["refused"][0]["msg"]
    assert plan(driver_info={"compatible_version_fw": "[7.0.0,7.99.99]"})["refused"] == []


def test_target_driver_outside_the_target_canns_range_refuses():
    p = plan(cann_required={"driver": ">=26.0.rc1"})
    assert len(p["refused"]) == 1 and "required_package_driver_version" in p["refused"][0]["check"]
    assert plan(cann_required={"driver": ">=25.0.rc1"})["refused"] == []


# ------------------------------------------------------------------------------ rollback and max_fail_percentage

def test_rollback_is_the_reverse_order_back_to_the_previous_versions():
    entry = plan()["batches"][0][0]
    back = entry["rollback"]
    assert [s["step"] for s in back] == ["image", "cann", "driver", "firmware"]
    assert [s["reboot"] for s in back] == [False, False, False, True]
    assert {p["component"]: p["to"] for s in back for p in s["packages"]} == {
        "image": OLD["image"], "cann_toolkit": "8.0.0", "cann_kernels": "8.0.0",
        "driver": OLD["driver"], "firmware": OLD["firmware"]}
    assert all(p["action"] == "install" for s in back for p in s["packages"])


def test_rollback_after_a_resume_returns_to_the_recorded_versions():
    """A re-run sees node1 on the new firmware and driver; rolling back must still take them back."""
    installed = old_cluster()
    installed["node1"] = _upgraded_through(OLD, ["firmware", "driver"])
    previous = {n: dict(OLD) for n in NODES}
    entry = plan(installed, previous=previous)["batches"][0][0]
    assert [s["step"] for s in entry["steps"]] == ["cann", "image"]
    assert [s["step"] for s in entry["rollback"]] == ["image", "cann", "driver", "firmware"]
    assert {p["component"]: p["to"] for s in entry["rollback"] for p in s["packages"]} == {
        "image": OLD["image"], "cann_toolkit": "8.0.0", "cann_kernels": "8.0.0",
        "driver": OLD["driver"], "firmware": OLD["firmware"]}
    assert entry["rollback"][-1]["reboot"] is True
    # Without the record, the versions seen now are all there is: firmware and driver stay.
    without = plan(installed)["batches"][0][0]
    assert [s["step"] for s in without["rollback"]] == ["image", "cann"]


def test_rollback_of_a_component_that_was_absent_uninstalls_it():
    installed = old_cluster()
    del installed["node1"]["image"]
    back = plan(installed)["batches"][0][0]["rollback"]
    assert back[0]["step"] == "image" and back[0]["packages"][0]["action"] == "uninstall"


@pytest.mark.parametrize("max_fail, failed, action, rolled_back", [
    (0, {}, "continue", []),
    (0, {"node1": "npu_health"}, "stop", ["node1", "node2"]),
    (50, {"node1": "npu_health"}, "continue", ["node1"]),
    (49, {"node1": "npu_health"}, "stop", ["node1", "node2"]),
    (50, {"node1": "links_up", "node2": "versions"}, "stop", ["node1", "node2"]),
    (100, {"node1": "links_up", "node2": "versions"}, "continue", ["node1", "node2"]),
])
def test_max_fail_percentage_decides_stop_and_what_rolls_back(max_fail, failed, action, rolled_back):
    p = plan(upgrade_batch_size=2, max_fail_percentage=max_fail)
    v = up.batch_verdict(p, 0, failed)
    assert v["action"] == action
    assert [x["node"] for x in v["rollback"]] == rolled_back
    for node, check in failed.items():
        assert f"{node} failed {check}" in v["msg"]


def test_a_stopped_batch_names_the_batch_and_leaves_other_batches_alone():
    p = plan(upgrade_batch_size=2)
    v = up.batch_verdict(p, 1, ["node4"])
    assert v["batch"] == 2 and v["action"] == "stop"
    assert [x["node"] for x in v["rollback"]] == ["node3", "node4"]
    assert "batch 2 (node3, node4) rolled back" in v["msg"]
    with pytest.raises(up.PlanError, match="node1 not in batch 2"):
        up.batch_verdict(p, 1, ["node1"])


# ------------------------------------------------------------------------------ rendering

def test_text_names_nodes_batches_and_packages():
    installed = old_cluster()
    installed["node1"] = dict(NEW)
    text = up.render_text(plan(installed, upgrade_batch_size=2))
    lines = text.splitlines()
    assert "upgrade_batch_size 2" in lines[0] and "910b-cann8.2.rc1" in lines[0]
    assert "Already at 910b-cann8.2.rc1: node1" in lines
    assert "Batch 1: node2, node3" in lines and "Batch 2: node4" in lines
    assert "  node2: driver: driver 24.1.rc1 -> 25.0.rc1.1, reboot" in lines
    assert "  node4: cann: cann_toolkit 8.0.0 -> 8.2.RC1, cann_kernels 8.0.0 -> 8.2.RC1" in lines
    assert lines.index("Batch 1: node2, node3") < lines.index("  node3: firmware: firmware 7.5.0.2.220 -> "
                                                              "7.7.0.1.231") < lines.index("Batch 2: node4")


def test_the_plan_is_json():
    p = plan(upgrade_batch_size=3)
    assert json.loads(json.dumps(p)) == p


def test_a_release_with_an_mcu_reports_it_not_planned():
    rel = copy.deepcopy(TARGET_RELEASE)
    rel["host"]["mcu"] = "24.2.1"
    p = up.plan_upgrade(NODES, old_cluster(), healthy(), rel)
    assert p["not_planned"] == ["mcu"]
    assert all("mcu" not in [pk["component"] for s in e["steps"] for pk in s["packages"]]
               for b in p["batches"] for e in b)
    assert "Not planned (left as they are): mcu" in up.render_text(p)


# ------------------------------------------------------------------------------ the gates of a batch

HOST_NEW = {k: v for k, v in NEW.items() if k != "image"}
GOOD = {"reachable": True, "npu_health_ok": True, "links_up": True, "detail": []}


def test_a_node_at_the_target_passes_every_gate():
    g = up.gate("node1", GOOD, dict(HOST_NEW), HOST_NEW)
    assert g["failed"] == "" and g["not_read"] == []
    assert {r["status"] for r in g["rows"]} == {"ok"}


@pytest.mark.parametrize("health, failed", [
    ({"npu_health_ok": False, "links_up": False, "detail": ["NPU 1 Critical", "device NIC link not UP on device 1"]},
     "npu_health (NPU 1 Critical, device NIC link not UP on device 1)"),
    ({"links_up": False, "detail": ["device NIC link not UP on device 3"]},
     "links_up (device NIC link not UP on device 3)"),
])
def test_health_is_judged_before_links_and_names_what_failed(health, failed):
    assert up.gate("node1", dict(GOOD, **health), dict(HOST_NEW), HOST_NEW)["failed"] == failed


def test_a_version_not_at_the_target_fails_the_versions_gate_naming_it():
    now = dict(HOST_NEW, driver=OLD["driver"])
    del now["cann_kernels"]
    g = up.gate("node1", GOOD, now, HOST_NEW)
    assert g["failed"] == (f"versions (driver {OLD['driver']} {NEW['driver']}, "
                           f"cann_kernels None {NEW['cann_kernels']}: component installed expected)")


def test_a_release_naming_an_mcu_reports_it_not_read_and_does_not_fail_the_gate():
    # The MCU has no read on the node (README, Releases): "not read", not "missing".
    expected = dict(HOST_NEW, mcu="24.2.1")
    g = up.gate("node1", GOOD, dict(HOST_NEW), expected)
    assert g["failed"] == ""
    assert g["not_read"] == [{"host": "node1", "component": "mcu", "installed": None, "expected": "24.2.1",
                              "status": "not read"}]
    # Another component still fails beside the unread MCU.
    g = up.gate("node1", GOOD, dict(HOST_NEW, firmware=OLD["firmware"]), expected)
    assert g["failed"].startswith(f"versions (firmware {OLD['firmware']} {NEW['firmware']}:")
    assert [r["component"] for r in g["not_read"]] == ["mcu"]


def test_the_gate_of_the_playbooks_filter_is_this_one():
    from ansible_collections.ascendops.cluster.plugins.filter.day2 import FilterModule

    gate = FilterModule().filters()["upgrade_gate"]
    g = gate(GOOD, dict(HOST_NEW), dict(HOST_NEW, mcu="24.2.1"), "node1")
    assert g["failed"] == "" and [r["component"] for r in g["not_read"]] == ["mcu"]


# ------------------------------------------------------------------------------ the job, the Found line

def job_seen(running=False, stopped_by=None, record=None):
    return {"running": running, "stopped_by": stopped_by, "record": record or {}}


def test_job_before_running_starts_again_at_the_end():
    job = up.job_before({n: job_seen(True) for n in ("node1", "node2")}, NEW)
    assert job["state"] == "running" and job["start"] is True and job["message"] is None


def test_job_before_stopped_by_the_user_stays_stopped_unless_upgrade_restart_job():
    nodes = {n: job_seen(stopped_by="playbooks/stop.yml") for n in ("node1", "node2")}
    start = "ansible-playbook playbooks/launch.yml -i inv -e launch_start_stopped=true"
    job = up.job_before(nodes, NEW, start_command=start)
    assert job["state"] == "stopped_by_user" and job["start"] is False
    assert job["message"] == ("The job was stopped by playbooks/stop.yml before this run: left stopped. Start it with "
                              "ansible-playbook playbooks/launch.yml -i inv -e launch_start_stopped=true (or run this "
                              "playbook with -e upgrade_restart_job=true).")
    assert up.job_before(nodes, NEW, restart=True)["start"] is True
    assert up.job_before({"node1": job_seen(True)}, NEW, restart=False)["start"] is False


def test_job_before_own_stop_of_an_earlier_upgrade_run_starts_again():
    job = up.job_before({"node1": job_seen(stopped_by=up.OWN_STOP), "node2": job_seen(stopped_by=up.OWN_STOP)}, NEW)
    assert job["state"] == "stopped_by_run" and job["start"] is True
    assert job["words"] == "stopped by an earlier run of playbooks/upgrade.yml (on node1, node2)"


def test_job_before_the_record_of_this_upgrade_says_how_its_first_run_found_the_job():
    # An older upgrade.yml named stop.yml in its own stop record: the record (job_user_stopped false) wins.
    first_run_saw_it_running = {"target": NEW, "job_user_stopped": False}
    job = up.job_before({"node1": job_seen(stopped_by="playbooks/stop.yml", record=first_run_saw_it_running)}, NEW)
    assert job["state"] == "stopped_by_run" and job["start"] is True
    # The first run found it stopped by the user: it stays stopped on a re-run, whatever the record now says.
    first_run_saw_it_stopped = {"target": NEW, "job_user_stopped": True}
    job = up.job_before({"node1": job_seen(stopped_by="playbooks/stop.yml", record=first_run_saw_it_stopped)}, NEW)
    assert job["state"] == "stopped_by_user" and job["by"] == "playbooks/stop.yml" and not job["start"]
    job = up.job_before({"node1": job_seen(record=first_run_saw_it_stopped)}, NEW)
    assert job["state"] == "stopped_by_user" and "recorded when this upgrade first started" in job["by"]
    # A record of another target says nothing about this run: the stop record alone.
    record = {"target": OLD, "job_user_stopped": False}
    job = up.job_before({"node1": job_seen(stopped_by="playbooks/stop.yml", record=record)}, NEW)
    assert job["state"] == "stopped_by_user"


def test_found_text_nodes_at_the_release_those_not_yet_and_the_job():
    installed = old_cluster()
    installed["node1"] = dict(NEW)
    running = up.job_before({n: job_seen(True) for n in NODES}, NEW)
    assert up.found_text(plan(installed), running) == (
        "Found: at 910b-cann8.2.rc1: node1; not yet: node2, node3, node4; the job: running on node1, node2, node3, "
        "node4: started again at the end")
    stopped = up.job_before({"node1": job_seen(stopped_by="playbooks/stop.yml")}, NEW)
    assert up.found_text(plan(), stopped).endswith(
        "the job: stopped by playbooks/stop.yml before this run (on node1): stays stopped at the end "
        "(-e upgrade_restart_job=true starts it)")
    assert up.found_text(plan(), up.job_before({}, NEW)).startswith("Found: at 910b-cann8.2.rc1: none; not yet: node1")
    # A refused plan: the refusals say the rest.
    refused = plan(health=dict(healthy(), node2={"reachable": False, "npu_health_ok": True, "links_up": True}))
    assert up.found_text(refused, running) == ("Found: the job: running on node1, node2, node3, node4: started again "
                                               "at the end")
