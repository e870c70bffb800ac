# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host pattern of every stage after the NPU driver, in one place (playbooks/site.yml)."""

from __future__ import annotations

# roles/npu_driver/tasks/reboot.yml puts the hosts it leaves waiting for a reboot (npu_driver_reboot: never)
# in this group; the later stages take no part on them.
REBOOT_PENDING = "npu_nodes_reboot_pending"


def stage_hosts(groups, base="npu_nodes"):
    """`base` less the hosts waiting for a reboot: the group is named only when it exists (Ansible warns
    about a pattern naming an unknown group), so a stage playbook run alone targets `base`. Not
    npu_nodes_ready (the hosts that do not wait): when EVERY host waits it does not exist at all, and a
    pattern built on it could not tell "nobody is ready" from "the driver stage did not run"."""
    return f"{base}:!{REBOOT_PENDING}" if REBOOT_PENDING in (groups or {}) else base


class FilterModule:
    """Stage host patterns."""

    def filters(self):
        return {"stage_hosts": stage_hosts}
