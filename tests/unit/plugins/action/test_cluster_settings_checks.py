"""cluster_settings action, its checks: each host's first failing settings check, every failing host listed."""

import pytest
from ansible.errors import AnsibleError


@pytest.fixture(autouse=True)
def action_module(monkeypatch):
    """The action class, imported here (importing controller code marks the process as the controller: the mark is
    put back after each test, as tests/unit/plugins/action/test_packages_check.py explains)."""
    from ansible.module_utils import _internal

    monkeypatch.setattr(_internal, "is_controller", _internal.is_controller)
    from ansible_collections.ascendops.cluster.plugins.action import cluster_settings

    return cluster_settings.ActionModule


class _Templar:
    """Renders a context value as it is; a value 'BOOM' fails as an undefined variable would."""

    def template(self, value):
        if value == "BOOM":
            raise AnsibleError("'x' is undefined")
        return value


def _contexts(**hosts):
    return {host: (context, _Templar(), False) for host, context in hosts.items()}


CHECKS = ["__a_settings_failure", "__b_settings_failure"]


def test_hosts_whose_checks_all_pass_give_no_refusal(action_module):
    ok = {"__a_settings_failure": "", "__b_settings_failure": "  "}
    assert action_module._check(_contexts(n1=ok, n2=dict(ok)), CHECKS) == []


def test_a_failing_check_on_one_host_of_several_names_that_host_only(action_module):
    ok = {"__a_settings_failure": "", "__b_settings_failure": ""}
    bad = {"__a_settings_failure": "", "__b_settings_failure": "n2: b_x must be 1..7 (is 9)."}
    assert action_module._check(_contexts(n1=ok, n2=bad, n3=dict(ok)), CHECKS) == ["n2: b_x must be 1..7 (is 9)."]


def test_each_failing_host_reports_its_first_failing_check_in_the_order_given(action_module):
    both = {"__a_settings_failure": "n1: a_path is /.", "__b_settings_failure": "n1: b_x is 9."}
    second = {"__a_settings_failure": "", "__b_settings_failure": "n3: b_x is 0."}
    ok = {"__a_settings_failure": "", "__b_settings_failure": ""}
    msgs = action_module._check(_contexts(n1=both, n2=ok, n3=second), CHECKS)
    assert msgs == ["n1: a_path is /.", "n3: b_x is 0."]


def test_a_check_that_cannot_be_rendered_or_is_missing_is_a_refusal_naming_the_host(action_module):
    msgs = action_module._check(_contexts(n1={"__a_settings_failure": "BOOM", "__b_settings_failure": ""},
                                          n2={"__a_settings_failure": ""}), CHECKS)
    assert msgs[0].startswith("n1: __a_settings_failure cannot be rendered: ")
    assert msgs[1] == "n2: the check __b_settings_failure is not defined (its role is not in context_roles)"
