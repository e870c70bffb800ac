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


def test_settings_release_refuses_a_templated_role_default():
    with pytest.raises(d.Day2Error, match="npu_driver_version is the template .* give -e target_release"):
        d.settings_release(dict(SETTINGS, driver="{{ ascend_release_manifest.host.driver }}"))


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


def test_resume_config_problem():
    known = {"checkpoint.resume", "checkpoint.resume_universal"}
    assert d.resume_config_problem(None, known) is None
    assert d.resume_config_problem({"checkpoint": {"resume_universal": "always"}}, known) is None
    lacking = d.resume_config_problem(None, {"checkpoint.resume"})
    assert "the trainer has no checkpoint.resume_universal" in lacking and "swap=true" in lacking
    assert "names checkpoint.bogus, which the trainer does not have" in d.resume_config_problem(
        {"checkpoint": {"bogus": 1}}, known)
    never = d.resume_config_problem(None, known, {"checkpoint": {"resume_universal": "never"}})
    assert never.startswith("launch_job.config.checkpoint.resume_universal is never")
    # scale_resume_config wins over the job's own setting for this restart.
    assert d.resume_config_problem({"checkpoint": {"resume_universal": "auto"}}, known,
                                   {"checkpoint": {"resume_universal": "never"}}) is None


def test_the_default_is_refused_exactly_while_the_trainer_lacks_the_setting():
    from ansible_collections.ascendops.cluster.plugins.module_utils.trainer_rules import TRAINER_KEYS

    assert (d.resume_config_problem(None, TRAINER_KEYS) is None) == (d.RESUME_KEY in TRAINER_KEYS)


def test_scale_plan_text_lists_the_change_and_the_steps():
    from ansible_collections.ascendops.cluster.plugins.module_utils.scale_plan import plan_scale

    lines = d.scale_plan_text(plan_scale(["a", "b", "c"], remove=["b"], spares=["s"], swap=True, dead=["b"],
                                         devices_per_node=8), "Remove b")
    assert lines[0] == "Remove b: job of 3 node(s), world size 24 -> 24"
    assert "Swapped: b -> spare s (takes its place)" in lines
    assert lines[lines.index("Swapped: b -> spare s (takes its place)") + 1].startswith("Job nodes: a, s, c (8 ranks")
    assert "Step 4: check_shared_storage (nodes s, with a, c)" in lines
    assert lines[-1] == "Step 6: start_job (nodes a, s, c, world_size 24, resume checkpoint)"
    refused = d.scale_plan_text(plan_scale(["a"], remove=["a"]), "Remove a")
    assert refused[1].startswith("REFUSED:") and "no node would be left in the job" in refused[-1]


def test_scale_plan_text_marks_the_conversion_and_the_start_of_a_job_left_stopped():
    from ansible_collections.ascendops.cluster.plugins.module_utils.scale_plan import plan_scale

    plan = plan_scale(["a", "b"], add=["c"], devices_per_node=8)
    later = " - not in this run: when the job is started (it stays stopped)"
    stays = d.scale_plan_text(plan, "Add c", {"start": False})
    assert stays[-1] == "Step 7: start_job (nodes a, b, c, world_size 24, resume universal)" + later
    assert stays[-2].startswith("Step 6: convert_checkpoint") and stays[-2].endswith(later)
    assert sum(later in line for line in stays) == 2
    assert not any(later in line for line in d.scale_plan_text(plan, "Add c", {"start": True}))


def test_role_vars_drop_the_v_the_runtime_install_record_carries():
    """npu_info reads the runtime's install record (`version=v5.0.0`): the rollback to those versions must
    ask the container_runtime role for 5.0.0 (the package is Ascend-docker-runtime_5.0.0_...)."""
    assert d.role_vars({"docker_runtime": "v5.0.0", "cann_toolkit": "8.0.RC3"}) == {
        "container_runtime_ascend_runtime_version": "5.0.0", "cann_version": "8.0.RC3"}
    assert d.role_vars({"docker_runtime": "6.0.0"}) == {"container_runtime_ascend_runtime_version": "6.0.0"}


def test_a_link_up_whose_net_health_is_not_success_is_not_ready():
    # After a reboot the driver brings the NICs back from /etc/hccn.conf: the link comes up before the
    # net-detect address answers (hccn_tool -net_health -g: Init, then Fault until it answers).
    npu = {"npu_smi": {"available": True}, "healthy": True, "unhealthy": []}
    devices = [{"device_id": 0, "link": "UP", "health": "Success"}, {"device_id": 1, "link": "UP", "health": "Fault"},
               {"device_id": 2, "link": "DOWN", "health": "Fault"}, {"device_id": 3, "link": "UP", "health": "Init"}]
    health = d.node_health(npu, devices, 4)
    assert health["npu_health_ok"] is True and health["links_up"] is False
    assert health["detail"] == ["device NIC link not UP on device 2",
                                "device network health not Success on device 1 (Fault), 3 (Init)"]
    assert d.nics_ready(devices, 4) is False
    ready = [{"device_id": i, "link": "UP", "health": "Success"} for i in range(4)]
    assert d.nics_ready(ready, 4) is True
    assert d.nics_ready(ready[:3], 4) is False and d.nics_ready([], 4) is False
    assert d.node_health(npu, ready, 4) == {"reachable": True, "npu_health_ok": True, "links_up": True, "detail": []}


def test_net_health_init_is_ready_only_on_a_port_without_a_netdetect_address():
    # a flat L2 fabric: no net-detect address configured, the port stays Init (nothing to probe)
    flat = [{"device_id": i, "link": "UP", "health": "Init", "netdetect": None} for i in range(2)]
    assert d.nics_ready(flat, 2) is True
    probing = [dict(flat[0], netdetect="29.1.0.1"), flat[1]]
    assert d.nics_ready(probing, 2) is False
    assert d.nics_ready([dict(flat[0], health="Fault"), flat[1]], 2) is False


def test_checkpoint_locality_problem_refuses_node_local_checkpoints_for_any_change_of_nodes():
    from ansible_collections.ascendops.cluster.plugins.module_utils.scale_plan import plan_scale

    add = plan_scale(["node1", "node2"], add=["node3"], devices_per_node=8)
    local = {"checkpoint_dir": "/data/llama3/checkpoints"}
    msg = d.checkpoint_locality_problem(add, local, "none")
    assert "launch_job.checkpoint_dir /data/llama3/checkpoints; shared_storage_type is none" in msg
    assert "node3 would start without a checkpoint shard" in msg
    assert "shared_storage_type nfs, lustre or existing" in msg and "ascendops-train export" in msg
    # A spare swapped in at the same world size has no shards either; a dead removed node's are lost.
    swap = plan_scale(["node1", "node2"], remove=["node2"], spares=["spare1"], swap=True, dead=["node2"])
    msg = d.checkpoint_locality_problem(swap, {"checkpoint_shared_fs": False}, "nfs", dead=["node2"])
    assert "launch_job.checkpoint_shared_fs is false" in msg
    assert "spare1 would start without a checkpoint shard; the shards of node2 stay on it" in msg
    assert "node2 does not answer, so its shards are lost" in msg
    shrink = plan_scale(["node1", "node2", "node3"], remove=["node3"])
    assert "the shards of node3 stay on it" in d.checkpoint_locality_problem(shrink, None, "none")


def test_checkpoint_locality_problem_passes_shared_checkpoints_and_an_unchanged_job():
    from ansible_collections.ascendops.cluster.plugins.module_utils.scale_plan import plan_scale

    add = plan_scale(["node1", "node2"], add=["node3"])
    assert d.checkpoint_locality_problem(add, {}, "existing") is None  # the shared storage stage's default
    assert d.checkpoint_locality_problem(add, {"checkpoint_shared_fs": True}, "none") is None
    assert d.checkpoint_locality_problem(add, {"checkpoint_shared_fs": "true"}, "none") is None
    assert d.checkpoint_locality_problem(plan_scale(["node1", "node2"]), {}, "none") is None
