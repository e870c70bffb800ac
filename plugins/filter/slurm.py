# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the launch stage under Slurm (launch_scheduler=slurm): the batch script, each node's task
script (from the job's container spec, the one the systemd unit is rendered from), the epilog that
removes the job's containers, and the cluster's decision. The logic lives in module_utils/slurm.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.ascendops.cluster.plugins.module_utils import slurm as s
from ansible_collections.ascendops.cluster.plugins.module_utils.job_container import ContainerSpecError


def slurm_batch_script(settings):
    """The batch script from {job_name, nodes, npus_per_node, task_script, fingerprint, output, partition,
    account, qos, time_limit, signal_s, options, header}."""
    try:
        return s.batch_script(**settings)
    except (s.SlurmError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"slurm batch script: {exc}") from exc


def slurm_task_script(spec, stop_timeout_s, header=()):
    try:
        return s.task_script(spec, stop_timeout_s, header=header)
    except (s.SlurmError, ContainerSpecError, TypeError, KeyError) as exc:
        raise AnsibleFilterError(f"slurm task script: {exc}") from exc


def slurm_epilog_script(engine_path, header=()):
    return s.epilog_script(engine_path, header=header)


def slurm_plan(info, job_name, fingerprint, record=None, nodes=None, restart_failed=False, start_stopped=False):
    """``info``: ascend_slurm_job's state=info result (queue, last)."""
    info = info or {}
    nodes = {h: (n.get("job", n) if isinstance(n, dict) else n) for h, n in (nodes or {}).items()}
    return s.plan(info.get("queue") or [], job_name, fingerprint, record=record or None, last=info.get("last"),
                  nodes=nodes, restart_failed=bool(restart_failed), start_stopped=bool(start_stopped))


class FilterModule:
    """Slurm filters."""

    def filters(self):
        return {"slurm_batch_script": slurm_batch_script, "slurm_task_script": slurm_task_script,
                "slurm_epilog_script": slurm_epilog_script, "slurm_plan": slurm_plan}
