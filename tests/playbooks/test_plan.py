"""playbooks/plan.yml: one play on localhost over the npu_nodes hosts (no task per node), each node's part of the
plan rendered in the node's own context, and a bad setting refused naming the node."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAN = [{"name": "Plan", "ansible.builtin.import_playbook": str(ROOT / "playbooks" / "plan.yml")}]


def test_the_sample_plan_runs_on_the_controller_alone(run_validate):
    run = run_validate(validation=PLAN, skip_nodes=False)
    assert run.rc == 0, run.out
    assert "a2-node01 NPU 0: 10.20.0.10/16 gateway 10.20.0.1" in run.text
    assert "a2-node02 NPU 7: 10.20.0.27/16 gateway 10.20.0.1" in run.text
    plan_part = run.out.split("PLAY [Stand-in")[0]
    assert "ok: [localhost]" in plan_part and "[a2-node0" not in plan_part


def test_a_nodes_settings_are_rendered_in_its_own_context(run_validate):
    # ascend_devices_per_node is a role default (ascend's, from ascend_npus_per_node): the node's own value
    # refers to it, as a task on the node would see it
    run = run_validate(validation=PLAN, skip_nodes=False,
                       host_vars={"a2-node02": {"roce_address_offset": "{{ ascend_devices_per_node | int * 5 }}"}})
    assert run.rc == 0, run.out
    assert "a2-node02 NPU 0: 10.20.0.40/16 gateway 10.20.0.1" in run.text
    assert "a2-node02 NPU 7: 10.20.0.47/16" in run.text and "a2-node01 NPU 0: 10.20.0.10/16" in run.text


def test_a_bad_setting_is_refused_naming_the_node_and_the_fix(run_validate):
    run = run_validate(validation=PLAN, skip_nodes=False, host_vars={"a2-node02": {"roce_tls": "maybe"}})
    assert run.rc != 0
    assert "a2-node02: refused before any change: the settings of ascendops.cluster.roce" in run.text
    assert "roce_tls" in run.text and "set these variables as roles/roce/meta/argument_specs.yml describes" in run.text
    assert "a2-node01: refused" not in run.text
    assert run.changed_nodes() == []
