# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that check the launch role's job description on the controller (validate.yml): thin
wrappers of module_utils/launch_job.py, which applies the trainer's own config rules
(module_utils/trainer_rules.py, generated from the trainer's config_rules.py)."""

from __future__ import annotations

from ansible_collections.ascendops.cluster.plugins.module_utils import launch_job as lj


def launch_job_problems(launch_job, job_defaults, nodes=1, devices_per_node=1, devices_setting="devices per node"):
    """Messages for every problem of launch_job ([] when the trainer and the role accept it)."""
    return lj.job_problems(launch_job, dict(job_defaults or {}), nodes, devices_per_node, devices_setting)


class FilterModule:
    """Launch job description filters."""

    def filters(self):
        return {"launch_job_problems": launch_job_problems}
