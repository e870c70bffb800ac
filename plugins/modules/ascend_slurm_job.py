#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ascend_slurm_job
short_description: Read, submit or cancel the training job in Slurm
version_added: "0.2.0"
description:
  - The launch stage's face to Slurm (C(launch_scheduler=slurm)); runs on the submit host, a node with
    Slurm's client tools and the cluster's munge key.
  - C(action=info) reads the job's entries in the queue (C(squeue), only those whose comment carries the
    collection's marker C(ascendops:<job>:<fingerprint>)), the last submission (C(scontrol show job)),
    and with O(nodes) whether Slurm can run the job there (every node known, in the partition, with
    enough C(npu) GRES and a state that takes jobs) and the controller's C(KillWait) and C(Epilog).
  - C(action=submit) submits the batch script with C(sbatch --parsable) unless a job with the same
    fingerprint is already queued or running.
  - C(action=cancel) cancels the given jobs with C(scancel) (SIGTERM to every task, which stops the
    trainer after its final checkpoint; Slurm kills after C(KillWait)) and waits until they have left
    the queue.
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
attributes:
  check_mode:
    support: full
    details: C(info) reads; C(submit) and C(cancel) say what they would do and do nothing.
  diff_mode:
    support: none
options:
  action:
    description: What to do - read (C(info)), submit the batch script (C(submit)), or cancel jobs and wait (C(cancel)).
    type: str
    choices: [info, submit, cancel]
    default: info
  name:
    description: >-
      The job's name in Slurm (C(--job-name)); empty - the queue is not read (C(action=info) checks O(nodes)
      only).
    type: str
    default: ""
  job_id:
    description: The last submission's job id (C(action=info) reads it with C(scontrol show job)).
    type: str
    default: ""
  nodes:
    description: The nodes the job runs on (C(action=info) checks Slurm can run it there).
    type: list
    elements: str
    default: []
  npus_per_node:
    description: NPUs the job takes on each node (the C(npu) GRES each node must have).
    type: int
    default: 8
  partition:
    description: The job's partition (empty - the default partition).
    type: str
    default: ""
  script:
    description: The batch script on the submit host (C(action=submit)).
    type: path
  fingerprint:
    description: The job's fingerprint in the script's comment (C(action=submit) does not submit twice).
    type: str
    default: ""
  cancel:
    description: Job ids to cancel (C(action=cancel)).
    type: list
    elements: str
    default: []
  timeout_s:
    description: How long C(action=cancel) waits for the jobs to leave the queue.
    type: int
    default: 900
  node:
    description: The submit host's name, for messages.
    type: str
    default: ""
notes:
  - Slurm 21.08 (Ubuntu 22.04) and 22.05 (Debian 12) print the fields read here alike.
"""

EXAMPLES = r"""
- name: The job in Slurm
  ascendops.cluster.ascend_slurm_job:
    name: llama3
    job_id: "12"
    nodes: [node1, node2]
    npus_per_node: 8
  register: slurm

- name: Submit it
  ascendops.cluster.ascend_slurm_job:
    action: submit
    name: llama3
    script: /etc/ascendops/slurm-batch.sh
    fingerprint: 0123456789abcdef0123456789abcdef01234567
"""

RETURN = r"""
queue:
  description: The job's entries in the queue - job_id, name, state, code, reason, nodes, user, comment, fingerprint.
  returned: always
  type: list
  elements: dict
active:
  description: The ids of the job's entries that hold or wait for nodes (queued, running, requeued, ending).
  returned: action=info
  type: list
  elements: str
last:
  description: With O(job_id) (C(info)), or the cancelled jobs (C(cancelled)) - job_id, state, code, reason, nodes,
    restarts, exit_code, run_time, comment, batch_host, source (C(scontrol), or C(sacct) once slurmctld has
    forgotten the job after MinJobAge and Slurm keeps job records); null when Slurm no longer knows the job.
  returned: when read
  type: raw
problems:
  description: With O(nodes) - [{node, problem}] that keep Slurm from running the job there.
  returned: action=info with nodes
  type: list
  elements: dict
config:
  description: >-
    With O(nodes) - KillWait, Epilog, JobRequeue, SLURM_VERSION, ClusterName, MinJobAge,
    UnkillableStepTimeout, AccountingStorageType.
  returned: action=info with nodes
  type: dict
kill_wait_s:
  description: KillWait in seconds.
  returned: action=info with nodes
  type: int
job_id:
  description: The submitted job's id (null in check mode).
  returned: action=submit
  type: str
cancelled:
  description: The jobs cancelled.
  returned: action=cancel
  type: list
  elements: str
waited_s:
  description: Seconds until the cancelled jobs left the queue.
  returned: action=cancel
  type: float
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.slurm import SlurmJob  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            action=dict(type="str", choices=["info", "submit", "cancel"], default="info"),
            name=dict(type="str", default=""),
            job_id=dict(type="str", default=""),
            nodes=dict(type="list", elements="str", default=[]),
            npus_per_node=dict(type="int", default=8),
            partition=dict(type="str", default=""),
            script=dict(type="path"),
            fingerprint=dict(type="str", default=""),
            cancel=dict(type="list", elements="str", default=[]),
            timeout_s=dict(type="int", default=900),
            node=dict(type="str", default=""),
        ),
        required_if=[("action", "submit", ["name", "script", "fingerprint"]), ("action", "cancel", ["name"])],
        supports_check_mode=True,
    )
    SlurmJob(module).run()


if __name__ == "__main__":
    main()
