"""day2_run: the role-settings target, role variables, node health and the -e nodes list."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.ascendops.cluster.plugins.filter.day2 import upgrade_plan
from ansible_collections.ascendops.cluster.plugins.module_utils import day2_run as d
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_release import load_release
from ansible_collections.ascendops.cluster.plugins.module_utils.upgrade_plan import plan_upgrade

RELEASES = Path(__file__).resolve().parents[4] / "releases"
SETTINGS = {"driver": "24.1.rc1", "firmware": "7.5.0.2.220", "cann_toolkit": "8.2.RC1", "docker_runtime": "6.0.0"}
OLD = {"driver": "24.1.rc1", "firmware": "7.5.0.2.220", "cann_toolkit": "8.0.0", "cann_kernels": "8.0.0",
       "docker_runtime": "6.0.0", "image": "910b-cann8.0.0"}
HEALTHY = {"reachable": True, "npu_health_ok": True, "links_up": True}


def test_settings_release_plans_the_settings_and_no_image():
    release = d.settings_release(SETTINGS)
    assert release["host"]["cann_kernels"] == "8.2.RC1" and release["host"]["mcu"] is None
    plan = upgrade_plan(["n1"], {"n1": OLD}, {"n1": HEALTHY}, release)
    assert plan["refused"] == []
    steps = plan["batches"][0][0]["steps"]
    assert [s["step"] for s in steps] == ["cann"]
    assert any(p.startswith("image") for p in plan["not_planned"])


def test_the_planner_alone_would_plan_an_image_for_a_settings_target():
    # Why the filter sets the image: without it every node would get an image step it cannot carry out.
    plan = plan_upgrade(["n1"], {"n1": OLD}, {"n1": HEALTHY}, d.settings_release(SETTINGS))
    assert [s["step"] for s in plan["batches"][0][0]["steps"]] == ["cann", "image"]


@pytest.mark.parametrize("key", ["driver", "firmware", "cann_toolkit", "docker_runtime"])
def test_settings_release_names_the_empty_setting(key):
    with pytest.raises(d.Day2Error, match=d.ROLE_VARS[key]):
        d.settings_release(dict(SETTINGS, **{key: ""}))


def test_role_vars_from_a_release():
    release = load_release("910b-cann8.2.rc1", str(RELEASES))
    from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_release import expected_versions

    assert d.role_vars(expected_versions(release)) == {
        "npu_driver_version": "25.0.rc1.1", "npu_driver_firmware_version": "7.7.0.1.231",
        "cann_version": "8.2.RC1", "container_runtime_ascend_runtime_version": "6.0.0"}
    assert d.role_vars({"driver": None, "cann_toolkit": "8.0.0"}) == {"cann_version": "8.0.0"}


def test_node_health_names_what_is_wrong():
    npu = {"npu_smi": {"available": True}, "healthy": False, "unhealthy": [{"npu_id": 3, "health": "Alarm"}]}
    devices = [{"device_id": "0", "link": "UP"}, {"device_id": "1", "link": "DOWN"}]
    health = d.node_health(npu, devices, 2)
    assert health["npu_health_ok"] is False and health["links_up"] is False
    assert health["detail"] == ["NPU 3 Alarm", "device NIC link not UP on device 1"]
    ok = d.node_health({"npu_smi": {"available": True}, "healthy": True, "unhealthy": []},
                       [{"device_id": "0", "link": "UP"}, {"device_id": "1", "link": "UP"}], 2)
    assert ok == {"reachable": True, "npu_health_ok": True, "links_up": True, "detail": []}


def test_node_health_without_npu_smi_or_nics_or_with_too_few_nics():
    health = d.node_health({"npu_smi": {"available": False}}, [], 8)
    assert not health["npu_health_ok"] and not health["links_up"]
    assert "npu-smi does not answer" in health["detail"]
    short = d.node_health({"npu_smi": {"available": True}, "healthy": True}, [{"device_id": "0", "link": "UP"}], 8)
    assert short["npu_health_ok"] and not short["links_up"]
    assert short["detail"] == ["1 device NICs read, 8 expected"]


def test_node_list():
    assert d.node_list("a, b,,c", ["a", "b", "c"]) == {"nodes": ["a", "b", "c"], "unknown": [], "problem": None}
    assert d.node_list(["a", "x"], ["a"])["unknown"] == ["x"]
    assert "required" in d.node_list("", ["a"])["problem"]
    assert "more than once" in d.node_list("a,a", ["a"])["problem"]
