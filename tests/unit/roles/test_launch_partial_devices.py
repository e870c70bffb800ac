"""A job on part of a node (issue 43 item 6): its container gets only those /dev/davinciN, numbered
0..n-1 inside (aclrtSetDevice takes 0..count-1), so the launch stage passes the host ids in
ASCENDOPS_HOST_DEVICES for the trainer's rank-table check and no ASCEND_RT_VISIBLE_DEVICES (whose
ids are logical: host ids 4,5 would name devices the container does not have)."""

from __future__ import annotations

from pathlib import Path

import jinja2
import yaml

REPO = Path(__file__).resolve().parents[3]


def _env_templates():
    tasks = yaml.safe_load((REPO / "roles/launch/tasks/container.yml").read_text())
    task = next(t for t in tasks if "__base" in (t.get("vars") or {}))
    return task["vars"]["__base"]


def _render(template, devices, node_devices=8):
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    return env.from_string(template).render(
        __launch_my_devices=[{"device_id": str(d)} for d in devices], __launch_node_devices=str(node_devices)).strip()


def test_partial_job_gets_host_ids_and_no_rt_mask():
    base = _env_templates()
    assert "ASCEND_RT_VISIBLE_DEVICES" not in base
    assert _render(base["ASCENDOPS_HOST_DEVICES"], ["5", "4"]) == "4,5"  # ascending: the order inside
    assert _render(base["ASCENDOPS_HOST_DEVICES"], ["10", "9"], 16) == "9,10"  # numeric, not text order
    assert _render(base["ASCENDOPS_HOST_DEVICES"], range(8)) == ""  # every NPU: nothing to say
