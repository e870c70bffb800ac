#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ascend_job_info
short_description: Read the training job's state on a node and name it
version_added: "0.1.0"
description:
  - Reads the job's systemd unit (C(systemctl show)), the status file the trainer writes
    (C(ASCENDOPS_STATUS_FILE), schema 1), the record of the user's intent (written by C(stop.yml)),
    whether the job's container exists, and the fingerprint of the job last started on the node.
  - Names the node's state - C(running), C(starting), C(restarting) (systemd retries a crash),
    C(stopping), C(completed), C(stopped) (by the user through C(stop.yml)), C(failed) (start limit
    hit, or a do-not-retry exit - 2 configuration, 3 rank table, 4 non-finite loss), C(drift) (stopped
    or disabled outside the tool, or the container vanished), C(new) (never started here).
  - For a failed, restarting or drifted job, the first error and last lines of its journal and the
    HCCL/CANN error codes in them.
  - Optionally the processes holding NPUs (C(npu-smi info)), split into this job's (their cgroup is the
    job unit's or one of the job's containers', O(container) and O(container)C(-collective)) and others
    (another job or user - only reported, whatever their environment says).
  - Read-only.
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
  scheduler:
    description:
      - C(systemd) - the job's unit runs its container (the unit's state counts); C(slurm) - a Slurm task runs it (no
        unit - the node's state comes from the container, the status file and the stop record; the log from the
        container).
    type: str
    choices: [systemd, slurm]
    default: systemd
  service:
    description: The job's systemd unit (without C(.service)).
    type: str
    required: true
  job:
    description: The job's name (C(ASCENDOPS_JOB); the status file and intent record name it).
    type: str
    required: true
  node:
    description: The node's name in the report line.
    type: str
    default: ""
  status_file:
    description: The trainer's status file on the node.
    type: path
  intent_file:
    description: The record of the user's intent (C({"job", "intent" - stopped, "at"})).
    type: path
  fingerprint:
    description: Fingerprint of the job as configured now; compared with O(fingerprint_file).
    type: str
    default: ""
  fingerprint_file:
    description: File holding the fingerprint of the job last started on the node.
    type: path
  engine:
    description: Container engine that runs the job.
    type: str
    choices: [docker, podman]
    default: docker
  container:
    description: The job's container name.
    type: str
    required: true
  container_grace_s:
    description: Seconds a running unit may go without its container (while the engine creates it) before that is drift.
    type: int
    default: 120
  since:
    description:
      - Start time (epoch seconds) of a (re)start.
      - RV(job.trained_since) says whether the trainer logged a step (or completed) since.
    type: float
  log_lines:
    description: Last journal lines in RV(job.excerpt) for a failed, restarting or drifted job (0 reads no journal).
    type: int
    default: 30
  processes:
    description: Also read the processes holding NPUs (C(npu-smi info)) and tell this job's from others.
    type: bool
    default: false
  devices:
    description:
      - The NPUs (device ids) of this job on the node.
      - Other jobs' processes on them are marked C(blocking) in RV(job.processes).
    type: list
    elements: str
    default: []
  npu_smi:
    description: npu-smi (a path, or a name looked up in PATH).
    type: str
    default: npu-smi
seealso:
  - module: ascendops.cluster.npu_info
"""

EXAMPLES = r"""
- name: The job's state on this node
  ascendops.cluster.ascend_job_info:
    service: ascendops-train
    job: llama3-8b-run1
    container: ascendops-train
    status_file: /var/lib/ascendops/status/llama3-8b-run1.json
    intent_file: /var/lib/ascendops/status/llama3-8b-run1.intent.json
  register: job_info

- name: Say it
  ansible.builtin.debug:
    msg: "{{ job_info.job.line }}"
"""

RETURN = r"""
job:
  description: The job on this node.
  returned: always
  type: dict
  contains:
    state:
      description: new, starting, running, restarting, stopping, completed, stopped, failed or drift.
      type: str
      sample: completed
    reason:
      description: Why, in words.
      type: str
      sample: completed at step 200/200
    changed:
      description: The job as configured differs from the one last started here (O(fingerprint)).
      type: bool
    enabled:
      description: The unit starts at boot.
      type: bool
    exit_code:
      description: The last exit status of the job's main process (or the status file's), null if none.
      type: int
    restarts:
      description: Restarts systemd made (NRestarts).
      type: int
    stopped_by_user:
      description: The intent record says stopped (stop.yml).
      type: bool
    trained_since:
      description: The trainer logged a step (or completed) since O(since).
      type: bool
    status:
      description: The status file's content (schema 1), null when there is none for this job.
      type: dict
    intent:
      description: The intent record, null when there is none.
      type: dict
    unit:
      description: The unit's properties read.
      type: dict
    container:
      description: The container's state (running, exited, ...), null when there is no such container.
      type: str
    line:
      description: One line for reports.
      type: str
    excerpt:
      description: First error and last journal lines (failed, restarting or drifted job).
      type: list
      elements: str
    errors:
      description: HCCL/CANN error codes in the journal's last lines, each with its meaning and fix.
      type: list
      elements: dict
    processes:
      description:
        - With O(processes) - C(ours) and C(others).
        - Each a list of {npu_id, chip_id, pid, name, memory_mb, job, service, blocking}.
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.job_state import JobInfo  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            service=dict(type="str", required=True),
            job=dict(type="str", required=True),
            node=dict(type="str", default=""),
            status_file=dict(type="path"),
            intent_file=dict(type="path"),
            fingerprint=dict(type="str", default=""),
            fingerprint_file=dict(type="path"),
            engine=dict(type="str", choices=["docker", "podman"], default="docker"),
            container=dict(type="str", required=True),
            container_grace_s=dict(type="int", default=120),
            since=dict(type="float"),
            log_lines=dict(type="int", default=30),
            processes=dict(type="bool", default=False),
            devices=dict(type="list", elements="str", default=[]),
            npu_smi=dict(type="str", default="npu-smi"),
            scheduler=dict(type="str", choices=["systemd", "slurm"], default="systemd"),
        ),
        supports_check_mode=True,
    )
    JobInfo(module).run()


if __name__ == "__main__":
    main()
