#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ascend_collect
short_description: Collect one NPU node's support bundle (vendor tool outputs, logs, versions), secrets redacted
version_added: "0.1.0"
description:
  - Runs what the vendor's support asks for on one node, C(npu-smi info), C(hccn_tool) link, health, net-detect address,
    statistics and address of every device NIC, the training unit's journal and state, the kernel
    log and C(msnpureport) where the driver ships it, and copies the version records, the job's
    files and the driver's and CANN's log directories into one C(tar.gz) (mode 0600).
  - Values of keys that name a secret (C(*TOKEN*), C(*PASSWORD*), C(*SECRET*), C(*KEY*) ...),
    C(Authorization) headers and passwords in URLs are replaced by C(***) in every text file.
  - A command that fails or is not installed is recorded in the bundle's C(index.json), not fatal.
  - Returns a short C(triage) record (npu-smi, device NIC states, the last journal and kernel lines,
    the trainer's status file) that the C(ascendops.cluster.triage) filter reads across nodes.
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
attributes:
  check_mode:
    support: full
    details: In check mode it runs the read-only commands and returns C(triage), but writes no bundle.
  diff_mode:
    support: none
options:
  bundle:
    description:
      - Path of the C(tar.gz) to write on the node, 0600 from its creation.
      - Its directory is created 0700; an existing one must be a real directory (not a symbolic link) of the
        module's user, else the module fails naming it (another user made it first).
    type: path
    required: true
  install_path:
    description: Install path of the Ascend software (C(driver/tools/hccn_tool), C(msnpureport)).
    type: path
    default: /usr/local/Ascend
  npu_smi:
    description: The npu-smi command.
    type: str
    default: npu-smi
  hccn_tool:
    description: Path of hccn_tool (default C(<install_path>/driver/tools/hccn_tool)).
    type: path
  service:
    description: The training job's systemd unit.
    type: str
    default: ascendops-train
  status_file:
    description: The trainer's per-node status file, read for triage when it exists.
    type: path
  files:
    description: Files (glob patterns) copied into the bundle (versions, rank table, job files).
    type: list
    elements: str
    default: []
  log_dirs:
    description: Directories (glob patterns) copied into the bundle, newest files first (driver and CANN logs).
    type: list
    elements: str
    default: []
  extra_commands:
    description: More commands to record, as C(name) to C(argv) list.
    type: dict
    default: {}
  journal_lines:
    description: Lines of the unit's journal and of the kernel log recorded.
    type: int
    default: 5000
  since:
    description:
      - Only journal and kernel-log entries from this time on (C(journalctl --since) syntax, such as
        C(-2h), C(2026-12-01 03:00:00) or C(@1764558000)); all kept entries (up to I(journal_lines)) when unset.
    type: str
  triage_lines:
    description: Last lines of the journal and the kernel log returned in C(triage).
    type: int
    default: 400
  max_file_bytes:
    description: A file larger than this is left out (listed in C(index.json)).
    type: int
    default: 20971520
  max_total_bytes:
    description: The bundle's content stops growing here; older log files are left out first.
    type: int
    default: 209715200
  msnpureport_timeout_s:
    description: Time limit of C(msnpureport).
    type: int
    default: 120
  redact_values:
    description:
      - Secret values replaced by C(***) wherever they appear in the bundle and in C(triage) (the job's
        C(extra_env) values, the registry password), besides the redaction by key and by shape.
      - Values shorter than 6 characters or plain numbers are left to the redaction by key (a C(1) or C(INFO)
        would mask every such word of the logs); pass only such values, as Ansible masks every value of this
        option in the module's result too.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Support bundle of every node
  ascendops.cluster.ascend_collect:
    bundle: /var/tmp/ascendops-collect/{{ inventory_hostname }}.tar.gz
    status_file: /var/lib/ascendops/status/llama3-8b-run1.json
    files: [/usr/local/Ascend/driver/version.info, /etc/ascendops/rank_table.json]
    log_dirs: [/var/log/npu/slog, /home/HwHiAiUser/ascend/log]
  register: collected
"""

RETURN = r"""
bundle:
  description: Path of the bundle on the node (none in check mode).
  returned: always
  type: str
bytes:
  description: Size of the bundle.
  returned: always
  type: int
index:
  description: Commands run (name, argv, rc, seconds), files copied, files left out and why.
  returned: always
  type: dict
triage:
  description:
    - C(npu_smi_info), C(hccn) (per device C(link), C(net_health), C(netdetect) outputs), C(journal) and C(kernel)
      (last lines, ISO timestamps), C(status) (the status file), C(unit_state) (C(ActiveState/SubState)).
  returned: always
  type: dict
"""

import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_collect import CollectError, Collector  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.hccn_tool import discover_devices  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.vendor_command import vendor_runner  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            bundle=dict(type="path", required=True),
            install_path=dict(type="path", default="/usr/local/Ascend"),
            npu_smi=dict(type="str", default="npu-smi"),
            hccn_tool=dict(type="path"),
            service=dict(type="str", default="ascendops-train"),
            status_file=dict(type="path"),
            files=dict(type="list", elements="str", default=[]),
            log_dirs=dict(type="list", elements="str", default=[]),
            extra_commands=dict(type="dict", default={}),
            journal_lines=dict(type="int", default=5000),
            since=dict(type="str"),
            triage_lines=dict(type="int", default=400),
            max_file_bytes=dict(type="int", default=20 * 1024 * 1024),
            max_total_bytes=dict(type="int", default=200 * 1024 * 1024),
            msnpureport_timeout_s=dict(type="int", default=120),
            redact_values=dict(type="list", elements="str", default=[], no_log=True),
        ),
        supports_check_mode=True,
    )
    params = dict(module.params)
    params["hccn_tool"] = params["hccn_tool"] or os.path.join(params["install_path"], "driver", "tools", "hccn_tool")

    collector = Collector(vendor_runner(module), params, discover_devices())
    try:
        result = collector.collect(params["bundle"], check_mode=module.check_mode)
    except CollectError as e:
        module.fail_json(msg=str(e))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
