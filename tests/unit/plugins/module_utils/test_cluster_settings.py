"""cluster_settings: every host's settings checked in one pass give the refusals the per-host check gave
(ansible.builtin.validate_argument_spec and the control character check, host by host), with one validation per
distinct set of values; the action renders each host's values in that host's own context."""

from types import SimpleNamespace
from unittest import mock

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.ascendops.cluster.plugins.module_utils import cluster_settings as cs
from ansible_collections.ascendops.cluster.plugins.module_utils import setting_checks as sc

SPEC = {
    "roce_address_offset": {"type": "int"},
    "roce_gateway": {"type": "str"},
    "roce_tls": {"type": "bool"},
    "roce_ping_strategy": {"type": "str", "choices": ["auto", "full", "ring", "sample"]},
}


def _cluster():
    """Six hosts: the group's settings on each, a host-varying offset, two hosts with bad values of their own."""
    group = {"roce_gateway": "10.20.0.1", "roce_tls": False, "roce_ping_strategy": "auto"}
    hosts = {f"n{i}": dict(group, roce_address_offset=10 + 8 * i) for i in range(1, 7)}
    hosts["n3"]["roce_address_offset"] = "ten"
    hosts["n5"]["roce_ping_strategy"] = "mesh"
    hosts["n6"]["roce_gateway"] = "10.20.0.1\nExecStart=/bin/sh"
    return hosts


def _per_host_spec_errors(spec, hosts):
    """The per-host path: validate_argument_spec on each host, over the options the host set."""
    out = set()
    for host, values in hosts.items():
        own = {k: spec[k] for k in values if k in spec}
        for err in ArgumentSpecValidator(own).validate(dict(values), validate_role_argument_spec=True).error_messages:
            out.add((host, err))
    return out


def test_the_same_argument_spec_errors_as_the_per_host_check():
    hosts = _cluster()
    found = {(host, err) for p in cs.spec_problems(SPEC, hosts) for host in p["hosts"] for err in p["errors"]}
    assert found == _per_host_spec_errors(SPEC, hosts)
    assert {host for host, err in found} == {"n3", "n5"}


def test_the_same_control_character_problems_as_the_per_host_check():
    hosts = _cluster()
    found = {(host, tuple(p["problems"])) for p in cs.text_problems(hosts) for host in p["hosts"]}
    expected = {(host, tuple(sc.settings_control_char_problems(values))) for host, values in hosts.items()
                if sc.settings_control_char_problems(values)}
    assert found == expected == {("n6", ("roce_gateway holds a newline at character 10",))}


def test_hosts_with_the_same_values_share_one_validation():
    group = {"roce_gateway": "10.20.0.1", "roce_tls": True}
    hosts = {f"n{i}": dict(group) for i in range(100)}
    hosts["n7"] = dict(group, roce_address_offset=70)
    calls = []
    real = cs.ArgumentSpecValidator

    def counting(spec):
        calls.append(spec)
        return real(spec)

    with mock.patch.object(cs, "ArgumentSpecValidator", side_effect=counting):
        assert cs.spec_problems(SPEC, hosts) == []
    assert len(calls) == 2


def test_a_refusal_names_the_host_the_variable_and_the_fix_and_the_other_hosts():
    hosts = {f"n{i}": {"roce": {"roce_tls": "maybe"}} for i in range(1, 31)}
    [problem] = cs.spec_problems(SPEC, {h: v["roce"] for h, v in hosts.items()})
    assert problem["hosts"] == list(hosts)
    [msg] = cs.settings_problems({"roce": SPEC}, hosts)
    assert msg.startswith("n1: refused before any change: the settings of ascendops.cluster.roce: ")
    assert "roce_tls" in msg
    assert "set these variables as roles/roce/meta/argument_specs.yml" in msg
    assert "The same on n2, n3," in msg and "n21 and 9 more hosts." in msg
    assert "n22" not in msg


def test_settings_problems_checks_each_role_and_scans_every_value_once():
    specs = {"roce": SPEC, "launch": {"launch_image": {"type": "str"}}}
    values = {"n1": {"roce": {"roce_tls": "maybe"}, "launch": {"launch_image": "a\nb"}},
              "n2": {"roce": {"roce_tls": True}, "launch": {"launch_image": "a\nb"}}}
    msgs = cs.settings_problems(specs, values)
    assert len(msgs) == 3
    assert msgs[0].startswith("n1: refused before any change: the settings of ascendops.cluster.roce")
    # n1 and n2 set different values (roce_tls): each is named on its own
    assert msgs[1].startswith("n1: refused before any change: launch_image holds a newline at character 2. ")
    assert msgs[2].startswith("n2: refused before any change: launch_image holds a newline at character 2. ")
    values["n2"]["roce"]["roce_tls"] = "maybe"
    msgs = cs.settings_problems(specs, values)
    assert len(msgs) == 2
    assert msgs[1].endswith("(a tab is fine). The same on n2.")


def test_nothing_set_is_nothing_to_refuse():
    assert cs.settings_problems({"roce": SPEC}, {"n1": {}, "n2": {"roce": {}}}) == []


# The action: each host's variables rendered in that host's own context, with the roles' defaults under them.


@pytest.fixture
def action_module(monkeypatch):
    """Imported here (controller code marks the process as the controller; see test_packages_check.py)."""
    from ansible.module_utils import _internal

    monkeypatch.setattr(_internal, "is_controller", _internal.is_controller)
    from ansible_collections.ascendops.cluster.plugins.action import cluster_settings

    return cluster_settings.ActionModule


@pytest.fixture
def roles(tmp_path):
    def role(name, spec, defaults, role_vars=None):
        (tmp_path / name / "meta").mkdir(parents=True)
        (tmp_path / name / "defaults").mkdir()
        (tmp_path / name / "meta" / "argument_specs.yml").write_text(
            yaml.safe_dump({"argument_specs": {"main": {"options": spec}}}))
        (tmp_path / name / "defaults" / "main.yml").write_text(yaml.safe_dump(defaults))
        if role_vars:
            (tmp_path / name / "vars").mkdir()
            (tmp_path / name / "vars" / "main.yml").write_text(yaml.safe_dump(role_vars))

    role("ascend", {"ascend_devices_per_node": {"type": "int"}}, {"ascend_devices_per_node": 8})
    role("roce", SPEC, {"roce_devices_per_node": "{{ ascend_devices_per_node }}", "roce_address_offset": None},
         {"__roce_node": {"host": "{{ inventory_hostname }}", "devices": "{{ roce_devices_per_node | int }}",
                          "offset": "{{ roce_address_offset }}"}})
    return tmp_path


def _run(action_module, roles_dir, tmp_path, inventory, own=None, **args):
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    loader = DataLoader()
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inventory))
    raw = loader.load_from_file(str(path), trusted_as_template=True)
    for host, values in raw.items():
        values.update(inventory_hostname=host)
    hostvars = SimpleNamespace(raw_get=raw.get)
    action = action_module.__new__(action_module)
    action._task = SimpleNamespace(args=dict(args, roles_path=str(roles_dir), hosts=list(inventory)))
    action._loader = loader
    action._templar = Templar(loader=loader)
    with mock.patch("ansible.plugins.action.ActionBase.run", return_value={}):
        return action.run(task_vars=dict(own or {}, hostvars=hostvars))


def test_each_host_is_rendered_in_its_own_context_with_the_roles_defaults(action_module, roles, tmp_path):
    inventory = {"n1": {"roce_address_offset": 10, "roce_gateway": "{{ '10.20.0.' ~ (roce_address_offset - 9) }}"},
                 "n2": {"roce_address_offset": 18, "ascend_devices_per_node": 4}}
    result = _run(action_module, roles, tmp_path, inventory, roles=["ascend", "roce"], resolve=["__roce_node"])
    assert not result.get("failed"), result
    assert result["values"] == {"n1": {"__roce_node": {"host": "n1", "devices": 8, "offset": 10}},
                                "n2": {"__roce_node": {"host": "n2", "devices": 4, "offset": 18}}}


def test_the_action_refuses_what_the_per_host_check_refused(action_module, roles, tmp_path):
    inventory = {"n1": {"roce_address_offset": 10}, "n2": {"roce_address_offset": "{{ 'x' ~ 18 }}"},
                 "n3": {"roce_address_offset": 26, "roce_gateway": "a\rb"}}
    result = _run(action_module, roles, tmp_path, inventory, roles=["ascend", "roce"])
    assert result["failed"]
    assert result["problems"][0].startswith("n2: refused before any change: the settings of ascendops.cluster.roce: ")
    assert "roce_address_offset" in result["problems"][0]
    assert result["problems"][1].startswith("n3: refused before any change: roce_gateway holds a carriage return")
    assert len(result["problems"]) == 2


def test_the_host_the_task_runs_on_is_read_in_its_task_context(action_module, roles, tmp_path):
    # e.g. include_role vars over the inventory's value: what a role run alone checked on its host before
    inventory = {"n1": {"roce_tls": True}, "n2": {"roce_tls": True}}
    own = {"inventory_hostname": "n1", "roce_tls": "maybe"}
    result = _run(action_module, roles, tmp_path, inventory, own=own, roles=["roce"])
    assert result["failed"]
    [msg] = result["problems"]
    assert msg.startswith("n1: refused before any change: the settings of ascendops.cluster.roce: ")
    assert "n2" not in msg
