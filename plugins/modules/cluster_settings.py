#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cluster_settings
short_description: Check what the user set for roles on many hosts against the roles' argument specs, in one task
version_added: "0.1.0"
description:
  - For each host of O(hosts), takes the variables the inventory (group_vars, host_vars), C(-e), facts, C(set_fact)
    or C(include_vars) set among the options of each role's C(meta/argument_specs.yml) (entry point C(main)),
    renders them in that host's own context (its variables with the roles' defaults and vars under them), and
    checks them against the role's argument spec and for control characters (a newline would start a line of its
    own in a systemd unit, an environment file or a command line).
  - Hosts that set the same values share one validation, so a cluster configured through group_vars is checked
    once plus once per distinct set of host-varying values. Fails, naming each host, the variable and the fix,
    in the words of M(ansible.builtin.validate_argument_spec); changes nothing.
  - Returns the values of O(resolve) for every host, rendered the same way (what a task on that host would see),
    so a playbook over the whole cluster needs no task per host.
  - Once the argument specs pass, renders the checks of O(checks) for every host the same way; the first that
    renders a message is the host's refusal, and the task fails listing every failing host's message.
  - An action plugin; it runs on the controller and contacts no host. Run it with C(run_once) for a play's hosts.
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  hosts:
    description: The inventory hosts whose settings are checked.
    type: list
    elements: str
    required: true
  roles:
    description: The roles (names under O(roles_path)) whose argument specs the settings are checked against.
    type: list
    elements: str
    required: true
  context_roles:
    description: Further roles whose defaults and vars the hosts' context holds (C(ascend) and O(roles) always do).
    type: list
    elements: str
    default: []
  roles_path:
    description: The directory holding the roles.
    type: path
    required: true
  resolve:
    description: Variables whose value on each host is returned in RV(values).
    type: list
    elements: str
    default: []
  checks:
    description:
      - Variables each of which renders, in a host's context, the message of a failing settings check, or an empty
        string where the check passes (the roles' C(__<role>_settings_failure)). Checked in the order given, after
        the argument specs passed; a host's first failing check is its refusal.
    type: list
    elements: str
    default: []
  text_skip:
    description: Dotted names of settings left out of the control character check (multi-line text of its own).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Settings | Check what the user set for ascend and roce on every host, once
  ascendops.cluster.cluster_settings:
    hosts: "{{ ansible_play_batch }}"
    roles: [ascend, roce]
    roles_path: "{{ role_path | dirname }}"
    resolve: [__roce_node]
  register: settings
  run_once: true
"""

RETURN = r"""
values:
  description: "C({host: {name: value}}) for the names of O(resolve) each host's context holds."
  returned: always
  type: dict
problems:
  description: One message per refusal (per failing host for O(checks)), each naming its host, the variable and the fix.
  returned: failed
  type: list
  elements: str
"""
