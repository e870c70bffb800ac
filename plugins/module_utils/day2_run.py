# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the day-2 playbooks (upgrade.yml, add_node.yml, remove_node.yml) hand to the planners and the
stage roles. Pure data, no I/O: the planners are ``upgrade_plan`` and ``scale_plan``.

- ``settings_release``: a target made of the role version settings (no release manifest): the
  planner's release shape, with no trainer image to check or plan (no release name for its label).
- ``role_vars``: the stage roles' version variables that install a set of component versions.
- ``node_health``: the planner's health facts of one node from ``npu_info`` and ``hccn_info``;
  ``nics_ready``: whether its device NICs are up and healthy (a wait's condition).
- ``node_list``: ``-e nodes=a,b`` (or a YAML list) as a list, with the names the inventory lacks.
"""

from __future__ import annotations

from ansible_collections.ascendops.cluster.plugins.module_utils.hccn_tool import health_ok

# The stage roles' variables of each component (roles/*/defaults/main.yml).
ROLE_VARS = {
    "driver": "npu_driver_version",
    "firmware": "npu_driver_firmware_version",
    "cann_toolkit": "cann_version",
    "docker_runtime": "container_runtime_ascend_runtime_version",
}
SETTINGS_NAME = "role-settings"


class Day2Error(ValueError):
    """A setting the user wrote that the operation cannot use; the message names it."""


def settings_release(versions, name=SETTINGS_NAME):
    """A release-shaped target from ``{driver, firmware, cann_toolkit, docker_runtime}`` (the role
    settings). Its image carries no CANN, torch_npu or trainer, so the release checks have nothing to
    say about it; the playbook leaves the image alone (``image`` is not planned, see ``not_planned``)."""
    host = {}
    for key in ("driver", "firmware", "cann_toolkit", "docker_runtime"):
        value = (versions or {}).get(key)
        if value in (None, ""):
            raise Day2Error(f"{ROLE_VARS[key]} is empty: give -e target_release=<name> or set {ROLE_VARS[key]}")
        if "{{" in str(value) or "{%" in str(value):
            raise Day2Error(f"{ROLE_VARS[key]} is the template {value!r} (a role default read from its file), not a "
                            f"version: give -e target_release=<name>, or set {ROLE_VARS[key]} in the inventory")
        host[key] = str(value).strip()
    host["cann_kernels"] = host["cann_toolkit"]
    host["mcu"] = None
    return {"name": name, "description": "the role version settings", "server_model": None, "host": host,
            "cann_python": {}, "image": {"trainer": False, "cann": None, "torch_npu": None},
            "table": None, "file": None, "settings": True}


def role_vars(versions):
    """``{component: version}`` -> the role variables that install them (components without a role
    variable, and versions that are None, are left out; the kernels follow ``cann_version``)."""
    out = {}
    for component, var in ROLE_VARS.items():
        value = (versions or {}).get(component)
        if value not in (None, ""):
            value = str(value)
            # The runtime's install record says `version=v5.0.0`; its package and the role setting have no `v`
            # (molecule/upgrade: the rollback looked for Ascend-docker-runtime_v5.0.0_linux-x86_64.run).
            if component == "docker_runtime" and value[:1] in ("v", "V") and value[1:2].isdigit():
                value = value[1:]
            out[var] = value
    return out


def _nic_problems(devices, expected_devices=None):
    """What keeps a node's device NICs from carrying a job: no NIC read, a link not UP, a net health
    (``hccn_tool -net_health -g``, when read) other than ``Success`` (``Init`` until address, netmask and
    net-detect address are set, ``Fault`` while the net-detect address does not answer; ``Init`` passes
    on a port read with no net-detect address, which has nothing to probe), fewer NICs than
    ``expected_devices``. The rank table refuses the same devices (``rank_table`` filter)."""
    problems = []
    if not devices:
        problems.append("no device NIC could be read (hccn_tool)")
    down = [str(d.get("device_id")) for d in devices or [] if str(d.get("link", "")).upper() != "UP"]
    if down:
        problems.append(f"device NIC link not UP on device {', '.join(down)}")
    sick = [f"{d.get('device_id')} ({d.get('health')})" for d in devices or []
            if str(d.get("link", "")).upper() == "UP" and "health" in d
            and not health_ok(d.get("health"), d.get("netdetect", "unknown"))]
    if sick:
        problems.append(f"device network health not Success on device {', '.join(sick)}")
    if expected_devices is not None and devices and len(devices) < int(expected_devices):
        problems.append(f"{len(devices)} device NICs read, {expected_devices} expected")
    return problems


def nics_ready(devices, expected_devices=None):
    """True when every device NIC is up with net health ``Success`` (and as many as expected): what a
    wait after a reboot polls for (the driver brings the NICs back from ``/etc/hccn.conf``; a link and
    its net-detect answer take a while)."""
    return not _nic_problems(devices, expected_devices)


def node_health(npu, devices, expected_devices=None):
    """The planner's health facts from one node's ``npu_info`` result and ``hccn_info`` devices:
    ``{reachable, npu_health_ok, links_up, detail}``. ``detail`` names what is wrong (NPU ids and
    their health, device ids whose link is not UP or whose net health is not Success, a count short
    of ``expected_devices``)."""
    npu = npu or {}
    problems = []
    available = bool((npu.get("npu_smi") or {}).get("available"))
    unhealthy = list(npu.get("unhealthy") or [])
    if not available:
        problems.append("npu-smi does not answer")
    for entry in unhealthy:
        problems.append(f"NPU {entry.get('npu_id')} {entry.get('health')}")
    health_ok = available and not unhealthy and bool(npu.get("healthy", not unhealthy))
    nic_problems = _nic_problems(devices, expected_devices)
    problems.extend(nic_problems)
    return {"reachable": True, "npu_health_ok": health_ok, "links_up": not nic_problems, "detail": problems}


def node_list(value, known=None, what="nodes"):
    """``a,b`` or ``[a, b]`` -> ``{nodes, unknown, problem}``: the names in order (blanks dropped),
    those not in ``known`` (the inventory), and a message when the list is empty or names a node twice."""
    if value is None:
        items = []
    elif isinstance(value, str):
        items = [part.strip() for part in value.split(",")]
    elif isinstance(value, (list, tuple)):
        items = [str(part).strip() for part in value]
    else:
        items = [str(value).strip()]
    items = [i for i in items if i]
    problem = None
    if not items:
        problem = f"-e {what}=<names> is required (comma-separated inventory names)"
    twice = sorted({i for i in items if items.count(i) > 1})
    if twice:
        problem = f"{what} names {', '.join(twice)} more than once"
    unknown = [i for i in items if known is not None and i not in known]
    return {"nodes": list(dict.fromkeys(items)), "unknown": unknown, "problem": problem}


RESUME_KEY = "checkpoint.resume_universal"


def _flat(config):
    out = {}
    for section, value in (config or {}).items():
        if isinstance(value, dict):
            out.update({f"{section}.{k}": v for k, v in value.items()})
        else:
            out[str(section)] = value
    return out


def resume_config_problem(config, known, job_config=None):
    """A message when the job cannot resume its ZeRO checkpoint at another world size; None when it can.

    The trainer does that through DeepSpeed's universal checkpoint when its ``checkpoint.resume_universal``
    is ``auto`` (its default) or ``always``. ``config``: ``scale_resume_config``, trainer settings merged
    into ``launch_job.config`` for the restart (default none); ``known``: ``trainer_rules.TRAINER_KEYS``;
    ``job_config``: the job's own ``launch_job.config``."""
    if RESUME_KEY not in known:
        return (f"the trainer has no {RESUME_KEY} (its universal-checkpoint resume): it cannot load its ZeRO "
                "checkpoint at another world size. Keep the world size (swap in a spare: -e swap=true) or use a "
                "trainer that has it")
    if config is not None and not isinstance(config, dict):
        return f"scale_resume_config must be a mapping of trainer settings, got {config!r}"
    extra = [k for k in _flat(config) if k not in known]
    if extra:
        return f"scale_resume_config names {', '.join(extra)}, which the trainer does not have"
    mode, where = "auto", "the trainer's default"
    for name, source in (("launch_job.config", job_config), ("scale_resume_config", config)):
        value = _flat(source if isinstance(source, dict) else {}).get(RESUME_KEY)
        if value is not None:
            mode, where = str(value), f"{name}.{RESUME_KEY}"
    if mode == "never":
        return (f"{where} is never: the job would refuse its checkpoint at the new world size. Set "
                f"scale_resume_config: {{checkpoint: {{resume_universal: auto}}}} for this restart, or keep the "
                "world size (swap in a spare: -e swap=true)")
    return None


def checkpoint_locality_problem(plan, job=None, shared_storage_type="none", dead=()):
    """A message when the job's checkpoints are on each node's own disk and ``plan`` (``scale_plan.plan_scale``)
    changes its nodes; None otherwise. ZeRO saves one shard per rank where that rank runs: a new node (added,
    or a spare swapped in) has none, a removed node keeps its own, so no world size resumes from them (the
    trainer would refuse only after the job was stopped). ``job``: ``launch_job``; ``shared_storage_type``:
    the shared_storage stage's (not none: the launch stage keeps the checkpoints there, shared, unless
    ``launch_job.checkpoint_shared_fs`` says otherwise); ``dead``: nodes that do not answer."""
    job = job if isinstance(job, dict) else {}
    shared_default = str(shared_storage_type or "none") != "none"
    shared = job.get("checkpoint_shared_fs")
    shared = shared_default if shared is None else str(shared).lower() in ("true", "yes", "1", "on")
    new = [n for n in plan.get("nodes", []) if n in plan.get("added", []) or n in plan.get("swapped", {}).values()]
    gone = list(plan.get("removed", []))
    if shared or not (new or gone):
        return None
    where = job.get("checkpoint_dir") or ("under shared_storage_path" if shared_default else
                                          "/var/lib/ascendops/checkpoints, the default")
    setting = ("launch_job.checkpoint_shared_fs is false" if job.get("checkpoint_shared_fs") is not None
               else "shared_storage_type is none")
    lost = [n for n in gone if n in set(dead or ())]
    what = "; ".join(filter(None, [
        f"{', '.join(new)} would start without a checkpoint shard" if new else "",
        f"the shards of {', '.join(gone)} stay on {'it' if len(gone) == 1 else 'them'}" if gone else "",
        f"{', '.join(lost)} does not answer, so {'its' if len(lost) == 1 else 'their'} shards are lost"
        if lost else ""]))
    return (f"the job's checkpoints are on each node's own disk (launch_job.checkpoint_dir {where}; {setting}): "
            f"{what}, so the job cannot resume after this change. Put the job's checkpoints on shared storage "
            "(shared_storage_type nfs, lustre or existing, or launch_job.checkpoint_shared_fs: true where "
            "checkpoint_dir is already one file system on every node) before changing its nodes, or gather "
            "every node's shards of the last checkpoint into one directory, export it (ascendops-train export "
            "--checkpoint-dir <that directory> --out <hf dir>) and start a new job from it (launch_job.hf_model_dir)")


def scale_plan_text(plan, operation, job=None):
    """A scale plan (``scale_plan.plan_scale``) as text lines: what changes, the new rank order, the steps.
    ``job``: ``scale_plan.job_restart``'s; when the run leaves the job stopped, the conversion and the start
    are marked as waiting for the user's start."""
    lines = [f"{operation}: job of {len(plan['nodes'])} node(s), world size {plan['world_size_before']} -> "
             f"{plan['world_size']}"]
    if plan["refused"]:
        lines.append(f"REFUSED: {len(plan['refused'])} check(s) failed; nothing will change:")
        lines.extend(f"  {r['node']}: {r['check']}: {r['msg']}" for r in plan["refused"])
        return lines
    if plan["added"]:
        lines.append(f"Added: {', '.join(plan['added'])}")
    if plan["removed"]:
        lines.append(f"Removed (nothing runs on them): {', '.join(plan['removed'])}")
    for old, new in plan["swapped"].items():
        lines.append(f"Swapped: {old} -> spare {new} (takes its place)")
    per_node = plan["world_size"] // max(len(plan["nodes"]), 1)
    lines.append(f"Job nodes: {', '.join(plan['nodes'])} ({per_node} ranks each, numbered server by server in "
                 "ascending address order: the rank table's rule)")
    for i, step in enumerate(plan["steps"], 1):
        what = {k: v for k, v in step.items() if k != "step" and v not in ([], None)}
        detail = ", ".join(f"{k} {', '.join(v) if isinstance(v, list) else v}" for k, v in what.items())
        later = (" - not in this run: when the job is started (it stays stopped)"
                 if job and not job.get("start", True) and step["step"] in ("convert_checkpoint", "start_job") else "")
        lines.append(f"Step {i}: {step['step']}" + (f" ({detail})" if detail else "") + later)
    return lines


__all__ = ["Day2Error", "ROLE_VARS", "settings_release", "role_vars", "node_health", "node_list",
           "RESUME_KEY", "resume_config_problem", "checkpoint_locality_problem", "scale_plan_text"]
