"""playbooks/upgrade.yml on the controller: the plan printed in --check with nothing changed, the batch
order, and the refusals (unhealthy or unreachable node, incompatible or unknown target), each before any
change. The nodes' versions and health come from a stand-in for the probe (day2.py)."""

from __future__ import annotations

import shutil

import pytest
import yaml

from .day2 import HEALTHY, OLD, ROOT, run_playbook

pytestmark = pytest.mark.slow

NODES = ("a2-node01", "a2-node02")


def probe(installed=None, health=None, **per_node):
    facts = {}
    for node in NODES:
        facts[node] = {"upgrade_installed": dict(OLD, **(installed or {})), "upgrade_health": dict(HEALTHY),
                       "upgrade_record": {}, "upgrade_image_id": "sha256:0ld", "upgrade_job_user_stopped": False,
                       "upgrade_job_running": True, "upgrade_job_stopped_by": None}
        facts[node].update(per_node.get(node.replace("-", "_"), {}))
    return facts


def marker_play(tmp_path):
    """A play that changes something (a marker per node) after the playbook: a refusal never reaches it."""
    markers = tmp_path / "changed"
    markers.mkdir(exist_ok=True)
    return markers, [{"name": "Stand-in for a later change", "hosts": "npu_nodes", "gather_facts": False,
                      "tasks": [{"name": "Stage | Change something", "ansible.builtin.copy": {
                          "content": "changed\n", "dest": f"{markers}/{{{{ inventory_hostname }}}}", "mode": "0644"},
                          "delegate_to": "localhost"}]}]


def test_check_prints_the_plan_in_the_vendor_order_and_changes_nothing(tmp_path):
    run = run_playbook(tmp_path, "upgrade.yml", probe(), {"target_release": "910b-cann8.2.rc1"}, check=True)
    assert run.rc == 0, run.out
    assert "Upgrade to release 910b-cann8.2.rc1 (upgrade_batch_size 1, max_fail_percentage 0)" in run.text
    # The plan begins with what the run found (as add_node.yml's and remove_node.yml's).
    found = ("Found: at 910b-cann8.2.rc1: none; not yet: a2-node01, a2-node02; the job: running on a2-node01, "
             "a2-node02: started again at the end")
    assert found in run.text and run.text.index(found) < run.text.index("Upgrade to release 910b-cann8.2.rc1")
    # One node per batch by default, in inventory order.
    assert run.text.index("Batch 1: a2-node01") < run.text.index("Batch 2: a2-node02")
    # The vendor's order on an installed host: firmware, then the driver with the one reboot, CANN, the image.
    first = run.text[run.text.index("Batch 1: a2-node01"):run.text.index("Batch 2: a2-node02")]
    order = [first.index(f"a2-node01: {step}:") for step in ("firmware", "driver", "cann", "image")]
    assert order == sorted(order), first
    assert "firmware: firmware 7.5.0.2.220 -> 7.7.0.1.231" in first
    assert "driver: driver 24.1.rc1 -> 25.0.rc1.1, reboot" in first
    assert "cann: cann_toolkit 8.0.0 -> 8.2.RC1, cann_kernels 8.0.0 -> 8.2.RC1" in first
    # The runtime is already at the release: no step for it.
    assert "a2-node01: runtime:" not in run.text
    assert "Check mode: the plan above was printed and nothing changed" in run.text
    # The later plays (stop, batches, restart) match no host in check mode; nothing changed anywhere.
    assert "Record the versions before the upgrade" in run.text
    assert set(run.recap_changed().values()) == {0}, run.out
    assert "Checkpoint and stop the job" not in run.text.split("Record the versions before the upgrade")[1][:400]


def test_batch_size_groups_the_nodes_and_resume_skips_the_upgraded_ones(tmp_path):
    run = run_playbook(tmp_path, "upgrade.yml", probe(), {"target_release": "910b-cann8.2.rc1",
                                                          "upgrade_batch_size": 2}, check=True)
    assert run.rc == 0, run.out
    assert "Batch 1: a2-node01, a2-node02" in run.text and "Batch 2" not in run.text

    # A re-run after node01 was upgraded starts at node02; node01's record keeps its rollback target.
    new = {"driver": "25.0.rc1.1", "firmware": "7.7.0.1.231", "cann_toolkit": "8.2.RC1", "cann_kernels": "8.2.RC1",
           "docker_runtime": "6.0.0", "image": "910b-cann8.2.rc1"}
    facts = probe(a2_node01={"upgrade_installed": new})
    run = run_playbook(tmp_path, "upgrade.yml", facts, {"target_release": "910b-cann8.2.rc1"}, check=True)
    assert run.rc == 0, run.out
    assert "Already at 910b-cann8.2.rc1: a2-node01" in run.text
    assert "Found: at 910b-cann8.2.rc1: a2-node01; not yet: a2-node02; the job: running" in run.text
    assert "Batch 1: a2-node02" in run.text and "Batch 2" not in run.text


@pytest.mark.parametrize("stopped_by, words", [
    ("playbooks/stop.yml", "the job: stopped by playbooks/stop.yml before this run (on a2-node01, a2-node02): stays "
                           "stopped at the end (-e upgrade_restart_job=true starts it)"),
    ("playbooks/upgrade.yml", "the job: stopped by an earlier run of playbooks/upgrade.yml (on a2-node01, a2-node02): "
                              "started again at the end"),
])
def test_the_found_line_says_who_stopped_the_job(tmp_path, stopped_by, words):
    facts = probe(**{n.replace("-", "_"): {"upgrade_job_running": False, "upgrade_job_stopped_by": stopped_by}
                     for n in NODES})
    run = run_playbook(tmp_path, "upgrade.yml", facts, {"target_release": "910b-cann8.2.rc1"}, check=True)
    assert run.rc == 0, run.out
    assert "Found: at 910b-cann8.2.rc1: none; not yet: a2-node01, a2-node02; " + words in run.text


def test_an_unhealthy_node_refuses_the_upgrade_before_any_change(tmp_path):
    markers, after = marker_play(tmp_path)
    sick = {"reachable": True, "npu_health_ok": False, "links_up": True, "detail": ["NPU 3 Alarm"]}
    run = run_playbook(tmp_path, "upgrade.yml", probe(a2_node02={"upgrade_health": sick}),
                       {"target_release": "910b-cann8.2.rc1"}, after=after)
    assert run.rc != 0
    assert "Upgrade to 910b-cann8.2.rc1 refused, nothing changed" in run.text
    assert "a2-node02: check npu_health failed" in run.text and "(NPU 3 Alarm)" in run.text
    assert "a2-node01: check" not in run.text
    assert sorted(p.name for p in markers.iterdir()) == []


def test_a_node_without_probe_facts_counts_as_unreachable(tmp_path):
    facts = probe()
    del facts["a2-node02"]
    run = run_playbook(tmp_path, "upgrade.yml", facts, {"target_release": "910b-cann8.2.rc1"}, check=True)
    assert run.rc != 0
    assert "a2-node02: check reachable failed" in run.text
    assert "a2-node02: check versions failed" in run.text


def test_an_incompatible_target_is_refused(tmp_path):
    releases = tmp_path / "releases"
    releases.mkdir()
    (releases / "_torch_npu.yml").write_text((ROOT / "releases" / "_torch_npu.yml").read_text())
    bad = yaml.safe_load((ROOT / "releases" / "910b-cann8.2.rc1.yml").read_text())
    bad["name"] = "bad-pairing"
    bad["image"]["torch"] = "2.4.0"  # torch_npu 2.6.0 is built for torch 2.6.0
    (releases / "bad-pairing.yml").write_text(yaml.safe_dump(bad))
    markers, after = marker_play(tmp_path)
    run = run_playbook(tmp_path, "upgrade.yml", probe(), {"target_release": "bad-pairing",
                                                          "upgrade_releases_dir": str(releases)}, after=after)
    assert run.rc != 0
    assert "Upgrade to bad-pairing refused, nothing changed" in run.text
    assert "torch 2.4.0 does not match torch_npu 2.6.0" in run.text
    assert sorted(p.name for p in markers.iterdir()) == []


def test_an_unknown_target_is_refused_naming_the_known_ones(tmp_path):
    run = run_playbook(tmp_path, "upgrade.yml", probe(), {"target_release": "910b-cann9"}, check=True)
    assert run.rc != 0
    assert "no release '910b-cann9'" in run.text and "910b-cann8.2.rc1" in run.text


def test_without_a_release_the_role_settings_are_the_target_and_the_image_is_left_alone(tmp_path):
    # A site that pins the role versions and names no release: the sample without its release.yml.
    inv = tmp_path / "inventory"
    shutil.copytree(ROOT / "inventories" / "sample", inv)
    (inv / "group_vars" / "all" / "release.yml").unlink()
    (inv / "group_vars" / "all" / "versions.yml").write_text(yaml.safe_dump({
        "npu_driver_version": OLD["driver"], "npu_driver_firmware_version": OLD["firmware"],
        "cann_version": OLD["cann_toolkit"], "container_runtime_ascend_runtime_version": OLD["docker_runtime"]}))
    run = run_playbook(tmp_path, "upgrade.yml", probe(), {"cann_version": "8.2.RC1"}, check=True)
    assert run.rc == 0, run.out
    assert "Upgrade to release role-settings" in run.text
    assert "a2-node01: cann: cann_toolkit 8.0.0 -> 8.2.RC1" in run.text
    assert "a2-node01: image:" not in run.text and "a2-node01: driver:" not in run.text
    assert "Not planned (left as they are): image" in run.text


def _batch_tasks():
    plays = yaml.safe_load((ROOT / "playbooks" / "upgrade.yml").read_text())
    batch = next(p for p in plays if p.get("hosts") == "upgrade_pending")
    return {t["name"]: t for t in batch["tasks"]}


def test_a_rollback_that_fails_still_stops_naming_the_node_and_the_check():
    """Found on the simulated cluster (molecule/upgrade): the NPU fault that failed the gate is still there
    after the rollback's reboot, so the driver role's health check fails inside the rollback; without a
    rescue the node failed there and the run never said which node and which check had failed."""
    tasks = _batch_tasks()
    rollback = tasks["Upgrade | Roll this node back to the versions it ran before the upgrade"]
    noted = [t for t in rollback["rescue"] if "upgrade_rollback_failed" in t.get("ansible.builtin.set_fact", {})]
    assert noted and "ansible_failed_task.name" in noted[0]["ansible.builtin.set_fact"]["upgrade_rollback_failed"]
    start = tasks["Upgrade | Start with no failed check"]["ansible.builtin.set_fact"]
    assert start["upgrade_rollback_failed"] == ""
    stop = tasks["Upgrade | Stop and say which node and which check failed"]["ansible.builtin.fail"]["msg"]
    assert "upgrade_batch_failed.items()" in stop and "upgrade_rollback_failed" in stop


def test_the_rollback_tags_the_previous_image_after_the_runtime_role_loads_the_archive():
    """The container_runtime role loads the target's image archive: tagging the old image before it ran
    would be undone by it."""
    rollback = _batch_tasks()["Upgrade | Roll this node back to the versions it ran before the upgrade"]
    steps = [t["name"] for t in rollback["block"]]
    runtime = next(i for i, n in enumerate(steps) if "Ascend Docker Runtime" in n)
    image = next(i for i, n in enumerate(steps) if "Trainer image" in n)
    assert runtime < image
