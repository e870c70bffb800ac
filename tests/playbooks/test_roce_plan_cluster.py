"""roles/roce/tasks/plan_cluster.yml (playbooks/validate.yml): every node's part of the RoCE plan rendered in one
task on the controller gives the plan that validate_checks.yml's per-node fact gives (a role run alone), the
node's host NIC subnets from its facts included, each node's settings in its own context."""

from __future__ import annotations

import sys

# The controller's own network facts stand in for each node's (connection local).
PLAY = [{
    "name": "Both ways of building the plan", "hosts": "npu_nodes", "gather_facts": False, "connection": "local",
    "vars": {"ansible_python_interpreter": sys.executable},
    "tasks": [
        {"name": "Facts | The host NICs", "ansible.builtin.setup": {"gather_subset": ["network"]}},
        {"name": "RoCE | A fact on every node (validate_checks.yml)", "ansible.builtin.include_role": {
            "name": "ascendops.cluster.roce", "tasks_from": "validate_checks"}},
        {"name": "RoCE | Keep that plan", "ansible.builtin.set_fact": {"__per_node": "{{ __roce_plan }}"}},
        {"name": "RoCE | Every node's part in one task (plan_cluster.yml)", "ansible.builtin.include_role": {
            "name": "ascendops.cluster.roce", "tasks_from": "plan_cluster"}},
        {"name": "RoCE | The same plan, the host NICs in it", "run_once": True,
         "vars": {"__rendered": "{{ __roce_node_rendered['values'] }}"},
         "ansible.builtin.assert": {
             "that": [
                 "__roce_plan == __per_node",
                 "__roce_plan.errors | length == 0",
                 "__rendered['a2-node02']['__roce_node_networked']['host_networks'] | length > 0",
                 "__rendered['a2-node02']['__roce_node_networked'] == hostvars['a2-node02']['__roce_node_plan']",
                 "__rendered['a2-node01']['__roce_node_networked'] == hostvars['a2-node01']['__roce_node_plan']",
                 "__roce_plan.by_host['a2-node02'][0].address == '10.20.0.40'",
             ],
             "fail_msg": "{{ __roce_plan | to_json }} != {{ __per_node | to_json }}"}},
    ],
}]


def test_one_controller_task_gives_the_plan_of_a_fact_on_every_node(run_validate):
    # ascend_devices_per_node is a role default (ascend's): the node's own value refers to it
    run = run_validate(validation=PLAY, skip_nodes=False,
                       host_vars={"a2-node02": {"roce_address_offset": "{{ ascend_devices_per_node | int * 5 }}"}})
    assert run.rc == 0, run.out
    assert "All assertions passed" in run.text
