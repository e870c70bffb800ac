#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: npu_usage_info
short_description: Read the NPU utilisation of a node (AI Core, HBM, temperature, power)
version_added: "0.1.0"
description:
  - For every NPU of the node (the C(NPU ID)s of C(npu-smi info -l), or O(npu_ids)), runs
    C(npu-smi info -t usages -i <id>) and C(npu-smi info -t common -i <id>) and reports AI Core use,
    HBM used and total, temperature and power.
  - >-
    The outputs are parsed by structure (C(Key : Value) lines, chip blocks opened or closed by
    C(Chip ID)), so the layouts of 910B (Atlas 800T A2), the 32 GB Ascend 910, 310P (two chips, DDR
    only, the card's power in the mcu block) and one-chip outputs without chip lines read the same way.
    A line the parser cannot read is reported, naming the line.
  - A node without C(npu-smi), a driver that does not answer (C(-8005)) or an unknown layout is
    reported (RV(available) false, or an C(error) on the NPU) instead of failing, unless
    O(fail_on_error) is set.
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
  npu_smi:
    description:
      - Path of the C(npu-smi) binary (a bare name is looked up like the default).
      - Default is C(npu-smi) found on E(PATH), else C(/usr/local/bin/npu-smi) or C(/usr/local/sbin/npu-smi).
    type: path
  npu_ids:
    description: The NPU ids to read; default every NPU C(npu-smi info -l) lists.
    type: list
    elements: int
    default: []
  node:
    description: The node's name in RV(line).
    type: str
    default: ""
  fail_on_error:
    description: Fail when npu-smi cannot be read or one NPU cannot be read, instead of reporting it.
    type: bool
    default: false
notes:
  - npu-smi prints HBM use as a rate (C(HBM Usage Rate(%))), so RV(npus[].hbm_used_mb) is the capacity times
    that rate, good to 1 % of the capacity.
seealso:
  - module: ascendops.cluster.npu_info
  - module: ascendops.cluster.ascend_metrics_textfile
"""

EXAMPLES = r"""
- name: NPU use of every node
  ascendops.cluster.npu_usage_info:
    node: "{{ inventory_hostname }}"
  register: npu_usage

- name: One line per node
  ansible.builtin.debug:
    msg: "{{ npu_usage.line }}"

- name: No NPU hotter than 90 C
  ansible.builtin.assert:
    that: npu_usage.npus | selectattr('temperature_c', 'gt', 90) | list | length == 0
"""

RETURN = r"""
available:
  description: At least one NPU was read.
  returned: always
  type: bool
npu_smi:
  description: The npu-smi binary used (null when not found).
  returned: always
  type: str
error:
  description: Why nothing could be read (null when something was).
  returned: always
  type: str
  sample: "npu-smi info -l: dcmi module initialize failed. ret is -8005 (...)"
npus:
  description:
    - One entry per NPU. Values the model does not print are null.
    - An NPU that could not be read holds only C(npu_id) and C(error).
  returned: always
  type: list
  elements: dict
  contains:
    npu_id: {description: The NPU id (C(-i))., type: int}
    chip_count: {description: Chips of the NPU., type: int}
    ai_core_pct: {description: "AI Core usage in % (mean over the chips).", type: float}
    hbm_used_mb: {description: HBM in use (capacity x usage rate); null without HBM (310P)., type: int}
    hbm_total_mb: {description: HBM capacity; null without HBM., type: int}
    memory_kind: {description: "C(hbm), or C(ddr) on a model without HBM.", type: str}
    memory_used_mb: {description: "The used figure of RV(npus[].memory_kind).", type: int}
    memory_total_mb: {description: "The capacity of RV(npus[].memory_kind).", type: int}
    temperature_c: {description: The hottest chip's temperature., type: int}
    power_w: {description: "Power in W (sum of the chips, else the card's from the mcu block), else null.", type: float}
    aicpu_pct: {description: AI CPU usage in %., type: float}
    ctrlcpu_pct: {description: Control CPU usage in %., type: float}
    chips: {description: "Per chip, every value read (normalised keys).", type: list, elements: dict}
    error: {description: Why this NPU could not be read (null when it was)., type: str}
  sample:
    - npu_id: 0
      chip_count: 1
      ai_core_pct: 87
      hbm_used_mb: 7209
      hbm_total_mb: 65536
      memory_kind: hbm
      memory_used_mb: 7209
      memory_total_mb: 65536
      temperature_c: 63
      power_w: 298.4
      aicpu_pct: 0
      ctrlcpu_pct: 3
      chips: [{chip_id: 0, aicore_pct: 87, hbm_capacity_mb: 65536, hbm_usage_pct: 11}]
      error: null
summary:
  description: The node's figures over the NPUs read.
  returned: always
  type: dict
  sample: {count: 8, read: 8, busy: 2, ai_core_pct_mean: 21.8, ai_core_pct_max: 87, memory_kind: hbm,
           memory_used_mb: 45875, memory_total_mb: 524288, power_w: 1124.2, temperature_c_max: 63}
line:
  description: One compact line for a report.
  returned: always
  type: str
  sample: "node1: NPU 8/8 read, 2 busy, AI Core 21.8% (max 87%), HBM 44.8/512.0 GiB, 1124.2 W, max 63 C"
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.npu_usage import NpuUsage  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            npu_smi=dict(type="path"),
            npu_ids=dict(type="list", elements="int", default=[]),
            node=dict(type="str", default=""),
            fail_on_error=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    NpuUsage(module).run()


if __name__ == "__main__":
    main()
