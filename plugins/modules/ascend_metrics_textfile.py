#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ascend_metrics_textfile
short_description: Write the training job's and the NPUs' metrics for node_exporter's textfile collector
version_added: "0.1.0"
description:
  - Renders, in the Prometheus text exposition format, the training job's metrics from the trainer's
    per-node status file (step, steps, loss, tokens per second per device, MFU, last checkpoint step and
    time, the time of the last status update, the state) and the NPUs' metrics read like
    M(ascendops.cluster.npu_usage_info) does (up, AI Core, AI CPU and control CPU usage, HBM used and
    total, temperature, power), and writes them to O(directory)/O(name), the directory node_exporter's
    textfile collector reads (C(--collector.textfile.directory); the prometheus-community node_exporter
    role uses C(/var/lib/node_exporter/textfile_collector)).
  - Metric names start with C(ascend_); labels C(node), C(job), and C(npu) on NPU metrics. The README
    ("Prometheus metrics") lists them.
  - Writes a temporary file in the same directory and renames it (node_exporter never reads half a
    file); changed only when the content (or the mode) differs. Times are exported as Unix timestamps,
    not ages, so the file changes only when something happened.
  - A missing status file leaves the training metrics out; NPUs that cannot be read are C(ascend_npu_up 0).
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  directory:
    description: The textfile collector directory; it must exist.
    type: path
    default: /var/lib/node_exporter/textfile_collector
  name:
    description: The file name in O(directory); node_exporter reads only names ending in C(.prom).
    type: str
    default: ascendops.prom
  mode:
    description: The file's mode (node_exporter must be able to read it).
    type: str
    default: "0644"
  node:
    description: The C(node) label.
    type: str
    required: true
  job:
    description: The C(job) label; default the C(job) of the status file, else empty.
    type: str
    default: ""
  status_file:
    description: The trainer's status file (C(ASCENDOPS_STATUS_FILE), schema 1).
    type: path
  checkpoint_dir:
    description: The job's checkpoint directory; the last checkpoint's time is its tag directory's modification time.
    type: path
  npu:
    description: Also read and write the NPU metrics.
    type: bool
    default: true
  npu_smi:
    description: Path of the C(npu-smi) binary (default as for M(ascendops.cluster.npu_usage_info)).
    type: path
seealso:
  - module: ascendops.cluster.npu_usage_info
  - name: node_exporter textfile collector
    description: How node_exporter reads C(*.prom) files.
    link: https://github.com/prometheus/node_exporter#textfile-collector
"""

EXAMPLES = r"""
- name: Training and NPU metrics for Prometheus
  ascendops.cluster.ascend_metrics_textfile:
    node: "{{ inventory_hostname }}"
    job: llama3-8b
    status_file: /var/lib/ascendops/status/llama3-8b.json
    checkpoint_dir: /var/lib/ascendops/checkpoints
"""

RETURN = r"""
path:
  description: The file written (or that would be written).
  returned: always
  type: str
  sample: /var/lib/node_exporter/textfile_collector/ascendops.prom
metrics:
  description: Number of metric families in the file.
  returned: always
  type: int
  sample: 16
status_file_read:
  description: The trainer's status file was read.
  returned: always
  type: bool
npu_error:
  description: Why no NPU could be read (null when they were, or when O(npu) is false).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_metrics import MetricsTextfile  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            directory=dict(type="path", default="/var/lib/node_exporter/textfile_collector"),
            name=dict(type="str", default="ascendops.prom"),
            mode=dict(type="str", default="0644"),
            node=dict(type="str", required=True),
            job=dict(type="str", default=""),
            status_file=dict(type="path"),
            checkpoint_dir=dict(type="path"),
            npu=dict(type="bool", default=True),
            npu_smi=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    MetricsTextfile(module).run()


if __name__ == "__main__":
    main()
