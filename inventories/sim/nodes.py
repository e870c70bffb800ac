#!/usr/bin/env python3
# Copyright (C) 2026 ascendops contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SIMULATION ONLY: the simulated cluster's nodes, as an Ansible inventory script.

`sim/cluster.sh up --nodes N` writes the cluster it brought up to `.cache/sim/inventory.json`
(git ignores it; `$SIM_STATE` moves it); this script hands that to Ansible, or the default
two-node cluster when none was brought up yet. Nothing tracked is rewritten.
"""

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT = {
    "npu_nodes": {"hosts": ["node1", "node2"]},
    "_meta": {"hostvars": {"node1": {"ansible_host": "10.89.10.11"}, "node2": {"ansible_host": "10.89.10.12"}}},
}


def inventory() -> dict:
    path = Path(os.environ.get("SIM_STATE") or REPO / ".cache" / "sim") / "inventory.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    return DEFAULT


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--host":
        print(json.dumps(inventory()["_meta"]["hostvars"].get(sys.argv[2], {}) if len(sys.argv) > 2 else {}))
    else:
        print(json.dumps(inventory(), indent=2))
