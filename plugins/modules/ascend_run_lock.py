#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ascend_run_lock
short_description: Take or release the run lock of a node (one ascendops run at a time)
version_added: "0.1.0"
description:
  - Every ascendops playbook that changes nodes takes this lock on each node first and releases it at
    its end, so two runs (C(site.yml) and C(upgrade.yml) started together, or a user's run during
    another's) never interleave engine restarts, installs and job stops.
  - The lock names its holder (run ID, controller, PID and start time of C(ansible-playbook), playbook,
    when it was taken and refreshed). A run that holds it refreshes it; another run is refused, naming
    the holder, unless the holder is gone - a run from the same controller whose process no longer
    lives (O(alive)), or a lock from another controller not refreshed for O(stale_s) seconds - and
    then it is taken over with a warning.
  - The lock file is opened without following links and changed under C(flock).
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
attributes:
  check_mode:
    support: full
    details: Says whether the lock would be taken, taken over or refused; writes nothing.
  diff_mode:
    support: full
options:
  path:
    description: The lock file on the node.
    type: path
    default: /var/lib/ascendops/run.lock
  state:
    description: C(present) takes (or refreshes) the lock, C(absent) releases it when this run holds it.
    type: str
    choices: [present, absent]
    default: present
  holder:
    description:
      - This run, as the lookup P(ascendops.cluster.run_holder#lookup) gives it - run_id, controller,
        pid, playbook, started.
    type: dict
    required: true
  alive:
    description: Run IDs of the live C(ansible-playbook) processes on this run's controller.
    type: list
    elements: str
    default: []
  stale_s:
    description: A lock from another controller not refreshed for this many seconds counts as stale.
    type: int
    default: 21600
  node:
    description: The node's inventory name, for messages.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Run lock | Take this run's lock
  ascendops.cluster.ascend_run_lock:
    holder: "{{ __run }}"
    alive: "{{ __run.alive }}"
  vars:
    __run: "{{ lookup('ascendops.cluster.run_holder') }}"
"""

RETURN = r"""
action:
  description: C(take), C(refresh) (this run held it) or C(takeover) (a stale lock).
  returned: with state present
  type: str
holder:
  description: The lock as written (state present) or as found (state absent).
  returned: always
  type: dict
previous:
  description: The lock found before, when another run's (taken over) or this run's (refreshed).
  returned: with state present
  type: dict
released:
  description: Whether this run's lock was removed.
  returned: with state absent
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.run_lock import RunLock  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default="/var/lib/ascendops/run.lock"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            holder=dict(type="dict", required=True),
            alive=dict(type="list", elements="str", default=[]),
            stale_s=dict(type="int", default=21600),
            node=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    RunLock(module).run()


if __name__ == "__main__":
    main()
