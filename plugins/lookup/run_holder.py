# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: run_holder
version_added: "0.1.0"
short_description: This run as the run lock names it (controller, ansible-playbook PID, playbook)
description:
  - Read on the controller. The run's ID is the controller's host name with the PID and start time of
    the outermost C(ansible-playbook) process (the same for every task and host of one run, another
    for any other run, also one that reuses the PID).
  - C(alive) lists the run IDs of every live C(ansible-playbook) process on this controller, so a node's
    lock left by a run of this controller that is gone is known stale (module
    M(ascendops.cluster.ascend_run_lock)).
options: {}
"""

EXAMPLES = r"""
- name: Run lock | Take this run's lock
  ascendops.cluster.ascend_run_lock:
    holder: "{{ lookup('ascendops.cluster.run_holder') }}"
"""

RETURN = r"""
_raw:
  description: One dict - run_id, controller, pid, playbook, started (UTC), alive (list of run IDs).
  type: list
  elements: dict
"""

import socket  # noqa: E402

from ansible.plugins.lookup import LookupBase  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.run_lock import controller_holder  # noqa: E402


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        return [controller_holder(socket.gethostname())]
