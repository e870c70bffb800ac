"""Every role's settings checks, for every host in one task on the controller (issue 45 item 2).

playbooks/validate.yml renders each role's settings checks (vars/main.yml __<role>_settings_failure) for every
host in the cluster_settings task, where each was an assert on every host: a failing setting on one host of
several is refused naming that host, with the message the role's own check gives (a role run alone still
checks its host with that assert, tasks/validate_settings.yml); each failing host's first failing check is
reported and every failing host is listed; inventories whose settings pass reach the next stage.
"""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.slow

QOS = ("a2-node02: roce_rdma_dscp=10 / roce_rdma_priority=4 differ from ascend_rdma_dscp=33 / "
       "ascend_rdma_priority=4, from which the launch stage sets HCCL_RDMA_TC and HCCL_RDMA_SL.")
SYSCTL = ("refused before any change: preflight_sysctl_file is the system directory /etc itself, which the "
          "collection would own, change or mount over")
TIMEOUT = "invalid launch settings: launch_rank_table_version 1.0 or 1.2 (is 1.0)"


def _role_alone(role):
    """The role's own tasks/validate.yml on every node (a stage run alone): its settings checks on each host."""
    return [{"name": f"Validation of the {role} stage", "hosts": "npu_nodes", "gather_facts": False,
             "any_errors_fatal": True, "tasks": [{"name": f"Validate | {role}", "ansible.builtin.include_role": {
                 "name": f"ascendops.cluster.{role}", "tasks_from": "validate"}}]}]


def _refused_hosts(text):
    """The hosts named at the start of a refusal line ("<host>: ...")."""
    return sorted(set(re.findall(r"(a2-node0\d): (?:refused|invalid|roce_rdma|launch_job)", text)))


def test_a_failing_setting_on_one_host_of_several_names_that_host_only(run_validate):
    run = run_validate(host_vars={"a2-node02": {"roce_rdma_dscp": 10}})
    assert run.rc != 0
    assert QOS in run.text
    assert "Set ascend_rdma_dscp and ascend_rdma_priority instead (for the whole cluster)" in run.text
    assert _refused_hosts(run.text) == ["a2-node02"]
    # One task on the controller refused it, before any role's per-host task ran.
    assert "Check on every host at once what the user set" in run.text
    assert "TASK [ascendops.cluster.roce" not in run.out
    assert run.changed_nodes() == []


def test_the_role_run_alone_refuses_the_same_host_with_the_same_message(run_validate):
    run = run_validate(host_vars={"a2-node02": {"roce_rdma_dscp": 10}}, validation=_role_alone("roce"))
    assert run.rc != 0
    assert QOS in run.text
    assert _refused_hosts(run.text) == ["a2-node02"]
    assert run.changed_nodes() == []


def test_every_failing_host_is_listed_each_with_its_first_failing_check(run_validate):
    # a2-node02 fails preflight's check and roce's: preflight's comes first in stage order, as when each role's
    # check was a task of its own. a2-node01 fails launch's, the last role's.
    run = run_validate(host_vars={"a2-node01": {"launch_hccl_connect_timeout": 5},
                                  "a2-node02": {"preflight_sysctl_file": "/etc", "roce_rdma_dscp": 10}})
    assert run.rc != 0
    assert f"a2-node01: {TIMEOUT}" in run.text
    assert f"a2-node02: {SYSCTL}" in run.text
    assert "roce_rdma_dscp=10" not in run.text
    assert _refused_hosts(run.text) == ["a2-node01", "a2-node02"]
    assert run.changed_nodes() == []


def test_the_same_refusals_in_check_mode(run_validate):
    run = run_validate(host_vars={"a2-node02": {"roce_rdma_dscp": 10}}, extra_args=["--check"])
    assert run.rc != 0
    assert QOS in run.text
    assert run.changed_nodes() == []


def test_host_varying_settings_that_pass_reach_the_next_stage(run_validate):
    # Different, valid values on each host: each host's checks pass in its own context.
    run = run_validate(host_vars={
        "a2-node01": {"launch_hccl_connect_timeout": 600, "preflight_sysctl_file": "/etc/sysctl.d/90-ascend-a.conf"},
        "a2-node02": {"launch_hccl_connect_timeout": 900, "ascend_stage_dir": "/var/tmp/stage"}})
    assert run.rc == 0, run.out
    assert run.changed_nodes() == ["a2-node01", "a2-node02"]


def test_a_launch_poll_interval_below_one_second_is_refused(run_validate):
    # A 0 s interval would divide the waits' timeouts by zero at the start of the job, after every change.
    run = run_validate(host_vars={"a2-node01": {"launch_poll_interval_s": 0}})
    assert run.rc != 0
    assert "launch_stop_timeout_s and launch_poll_interval_s >= 1 (is 0)" in run.text
    assert _refused_hosts(run.text) == ["a2-node01"]
    assert run.changed_nodes() == []
