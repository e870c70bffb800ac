# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings check of every host of a play in one pass (the action ascendops.cluster.cluster_settings).

What each host's inventory sets for a role is checked against the role's argument spec (entry point main)
and for control characters. Hosts that set the same values share one check: on a cluster whose settings
come from group_vars, the argument-spec validation runs once for the cluster plus once for each distinct
set of host-varying values, not once per host. Each refusal is still written per host (host, variable,
fix), in the words of the per-host check it replaces (ansible.builtin.validate_argument_spec's errors and
the control character check of module_utils/setting_checks.py).
"""

from __future__ import annotations

import json

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.ascendops.cluster.plugins.module_utils import setting_checks as sc

# A refusal names at most this many further hosts with the same problem (the count of the rest follows).
SAME_ON_MAX = 20


def _key(values):
    """A hashable key of a host's {name: value} (equal values, equal key)."""
    return json.dumps(values, sort_keys=True, default=repr)


def _same_on(hosts):
    if not hosts:
        return ""
    shown = ", ".join(hosts[:SAME_ON_MAX])
    more = f" and {len(hosts) - SAME_ON_MAX} more hosts" if len(hosts) > SAME_ON_MAX else ""
    return f" The same on {shown}{more}."


def group_hosts(host_values):
    """{host: values} -> [(values, [hosts])], in the order of the hosts' first appearance."""
    groups = {}
    for host, values in host_values.items():
        key = _key(values)
        if key not in groups:
            groups[key] = (values, [])
        groups[key][1].append(host)
    return list(groups.values())


def spec_problems(spec, host_values):
    """Argument-spec errors of the values each host set for a role: ``spec`` is the role's options (main),
    ``host_values`` {host: {name: value}} (only what the host set). One validation per distinct set of values.
    Returns [{"hosts": [...], "errors": [...]}], one per failing set."""
    out = []
    for values, hosts in group_hosts(host_values):
        if not values:
            continue
        own = {name: spec[name] for name in values if name in spec}
        result = ArgumentSpecValidator(own).validate(dict(values), validate_role_argument_spec=True)
        if result.error_messages:
            out.append({"hosts": hosts, "errors": list(result.error_messages)})
    return out


def text_problems(host_values, skip=()):
    """Control characters in any string each host set ({host: {name: value}}, at any depth; ``skip`` the
    dotted names left out). One scan per distinct set of values. Returns [{"hosts", "problems"}]."""
    out = []
    for values, hosts in group_hosts(host_values):
        found = sc.settings_control_char_problems(dict(values), skip)
        if found:
            out.append({"hosts": hosts, "problems": found})
    return out


def settings_problems(specs, host_values, skip=()):
    """Every refusal of the settings check: ``specs`` {role: options}, ``host_values`` {host: {role: {name:
    value}}} (what each host set of each role's options). The argument-spec errors role by role first, then the
    control characters of everything each host set (over every role at once). Each message names its first host
    (and the others with the same values), the variables and the fix. Returns the messages, in that order."""
    problems = []
    for role, spec in specs.items():
        per_role = {host: roles.get(role, {}) for host, roles in host_values.items()}
        for p in spec_problems(spec, per_role):
            host, errors, same = p["hosts"][0], "; ".join(p["errors"]), _same_on(p["hosts"][1:])
            problems.append(f"{host}: refused before any change: the settings of ascendops.cluster.{role}: "
                            f"Validation of arguments failed: {errors}. Fix: set these variables as "
                            f"roles/{role}/meta/argument_specs.yml describes.{same}")
    merged = {}
    for host, roles in host_values.items():
        merged[host] = {}
        for role in specs:
            merged[host].update(roles.get(role, {}))
    for p in text_problems(merged, skip):
        host, found, same = p["hosts"][0], "; ".join(p["problems"]), _same_on(p["hosts"][1:])
        problems.append(f"{host}: refused before any change: {found}. These values reach a systemd unit, an "
                        "environment file or a command line, where a newline or another control character would "
                        "start a line of its own: write each on one line, without control characters (a tab is "
                        f"fine).{same}")
    return problems
