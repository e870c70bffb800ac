# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan of a rolling upgrade from the versions a cluster runs to a release manifest.

Pure data, no I/O: playbooks/upgrade.yml gathers the facts and carries the plan out.

Inputs: the inventory's nodes in order; per node the installed versions as ``playbooks/versions.yml``
and ``ascend_release.compare`` name them (``firmware``, ``driver``, ``cann_toolkit``, ``cann_kernels``,
``docker_runtime``, ``image`` = the release name of the trainer image's ``ascendops.release`` label);
per node the health facts (``reachable``, ``npu_health_ok``, ``links_up``); the target release (from
``ascend_release.load_release``); ``upgrade_batch_size`` (default 1) and ``max_fail_percentage``.

Order of an upgrade (vendor, ascend-facts "Order"): on an installed host the firmware first, then the
driver; both take effect after one reboot (the firmware installer: "Reboot now or after driver
installation"), so the reboot follows the last of the two. Then CANN (toolkit and kernels, one
version), the Ascend Docker Runtime, the trainer image. The MCU is not planned (the vendor's order
above does not place it); a release naming an MCU is reported under ``not_planned``.

Order of a downgrade (rollback): ASSUMED, not from a vendor document: the reverse of the upgrade
(image, runtime, CANN, then the driver, then the firmware, one reboot at the end). CANN goes back
before the driver so that no CANN ever sits on a driver older than its ``required_package_driver_version``
allows (the new driver is the one the new CANN needed; the old CANN ran on the old driver).

Resume: a node whose every component is at the release is skipped, so a re-run starts at the first node
not yet upgraded; a partly upgraded node starts at its first component not at the release. The versions
to roll back to are the ones recorded when the upgrade first started (``previous``; the playbook keeps
them), since a re-run sees a partly upgraded node's new versions.
"""

from __future__ import annotations

from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_release import (
    check_cann_driver,
    check_firmware,
    check_release,
    compare,
    expected_versions,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_version import versions_equal
from ansible_collections.ascendops.cluster.plugins.module_utils.scale_plan import job_found, job_restart

# (step, the components it installs), in the vendor's order for an upgrade.
STEPS = (
    ("firmware", ("firmware",)),
    ("driver", ("driver",)),
    ("cann", ("cann_toolkit", "cann_kernels")),
    ("runtime", ("docker_runtime",)),
    ("image", ("image",)),
)
REBOOT_STEPS = ("firmware", "driver")
# Components a release may name that no play reads on a node (the MCU: its board query is not in the
# vendor facts this project follows; README, Releases): reported "not read", never a failed gate.
NOT_READ = ("mcu",)
HEALTH_CHECKS = (
    ("reachable", "reachable", "the node does not answer (SSH)"),
    ("npu_health_ok", "npu_health", "npu-smi reports an NPU whose health is not OK"),
    ("links_up", "links_up", "a device NIC link is down (hccn_tool -link)"),
)


class PlanError(ValueError):
    """A setting the user wrote that a plan cannot be made with; the message names it."""


def _int_setting(name, value, low, high=None):
    if isinstance(value, bool):
        raise PlanError(f"{name} must be an integer, got {value!r}")
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        raise PlanError(f"{name} must be an integer, got {value!r}") from None
    if number < low or (high is not None and number > high):
        bound = f"between {low} and {high}" if high is not None else f">= {low}"
        raise PlanError(f"{name} must be {bound}, got {value!r}")
    return number


def reason(node, check, msg):
    """One reason to refuse: the node, the check that failed and a sentence naming both."""
    return {"node": node, "check": check, "msg": msg}


def _same(component, have, want):
    if component == "image":
        return have is not None and str(have).strip() == str(want).strip()
    return have not in (None, "") and versions_equal(str(have), str(want))


def refusals(nodes, installed, health, release, driver_info=None, cann_required=None):
    """Reasons not to start, each ``{node, check, msg}``; empty when the upgrade may start.

    Every node must be reachable with healthy NPUs and device-NIC links up, and report its versions.
    The release is checked with ``ascend_release.check_release``; with ``driver_info`` (the target
    driver's ``version.info``) the target firmware against its ``compatible_version_fw``; with
    ``cann_required`` (the target CANN package's ``required_package_*``) the target driver against it."""
    out = []
    for node in nodes:
        facts = (health or {}).get(node)
        if facts is None:
            out.append(reason(node, "health", f"{node}: no health facts were gathered; the upgrade needs them "
                                              "for every node of the inventory"))
        else:
            for key, check, what in HEALTH_CHECKS:
                if facts.get(key) is not True:
                    out.append(reason(node, check, f"{node}: check {check} failed: {what}; fix the node or take "
                                                   "it out of the inventory (remove_node) before upgrading"))
        if (installed or {}).get(node) is None:
            out.append(reason(node, "versions", f"{node}: no installed versions were read (versions.yml); "
                                                "the plan cannot tell what to upgrade"))
    host = release["host"]
    for found in check_release(release):
        out.append(reason(found["host"], found["rule"], found["msg"]))
    if driver_info is not None:
        for found in check_firmware(f"release {release['name']}", host["driver"], driver_info, host["firmware"]):
            out.append(reason(found["host"], found["rule"], found["msg"]))
    if cann_required is not None:
        for found in check_cann_driver(f"release {release['name']}", host["cann_toolkit"], cann_required,
                                       host["driver"]):
            out.append(reason(found["host"], found["rule"], found["msg"]))
    return out


def node_steps(node, installed, target):
    """The steps that bring one node from ``installed`` to ``target`` (``{component: version}``), in
    the vendor's order, starting at its first component not at the target. Each step:
    ``{step, packages: [{component, from, to}], reboot}``; ``reboot`` is true on the last of the
    firmware/driver steps (one reboot for both)."""
    steps = []
    for step, components in STEPS:
        packages = [{"component": c, "from": (installed or {}).get(c), "to": target[c]}
                    for c in components if target.get(c) is not None
                    and not _same(c, (installed or {}).get(c), target[c])]
        if packages:
            steps.append({"node": node, "step": step, "packages": packages, "reboot": False})
    reboots = [s for s in steps if s["step"] in REBOOT_STEPS]
    if reboots:
        reboots[-1]["reboot"] = True
    return steps


def rollback_steps(node, previous, target):
    """The steps that take a node from ``target`` back to ``previous`` (``{component: version}``, what
    it ran before the upgrade first started): every step the whole upgrade changes (including steps an
    interrupted run already did), in reverse order (ASSUMED order, see the module's docstring), each
    package back to its previous version (``action`` ``uninstall`` where there was none)."""
    out = []
    for step in reversed(node_steps(node, previous, target)):
        packages = [{"component": p["component"], "from": p["to"], "to": p["from"],
                     "action": "install" if p["from"] not in (None, "") else "uninstall"}
                    for p in step["packages"]]
        out.append({"node": node, "step": step["step"], "packages": packages, "reboot": False})
    reboots = [s for s in out if s["step"] in REBOOT_STEPS]
    if reboots:
        reboots[-1]["reboot"] = True
    return out


def plan_upgrade(nodes, installed, health, release, upgrade_batch_size=1, max_fail_percentage=0,
                 previous=None, driver_info=None, cann_required=None):
    """The whole plan as a dict (JSON-ready):

    ``release``, ``batch_size``, ``max_fail_percentage``, ``refused`` (reasons, see ``refusals``; when
    not empty nothing is to be done), ``up_to_date`` (nodes already at the release), ``batches`` (lists
    of ``{node, steps, reboot, rollback}``), ``not_planned`` (release components this plan leaves alone).
    ``previous``: ``{node: {component: version}}`` recorded when the upgrade first started; the rollback
    returns to those (default: ``installed``)."""
    size = _int_setting("upgrade_batch_size", upgrade_batch_size, 1)
    max_fail = _int_setting("max_fail_percentage", max_fail_percentage, 0, 100)
    nodes = list(nodes)
    dupes = sorted({n for n in nodes if nodes.count(n) > 1})
    if dupes:
        raise PlanError(f"the inventory lists {', '.join(dupes)} more than once")
    target = expected_versions(release)
    plan = {"release": release["name"], "batch_size": size, "max_fail_percentage": max_fail,
            "refused": refusals(nodes, installed, health, release, driver_info, cann_required),
            "up_to_date": [], "batches": [],
            "not_planned": ["mcu"] if release["host"].get("mcu") is not None else []}
    if plan["refused"]:
        return plan
    pending = []
    for node in nodes:
        steps = node_steps(node, installed[node], target)
        if not steps:
            plan["up_to_date"].append(node)
            continue
        before = dict(installed[node], **((previous or {}).get(node) or {}))
        pending.append({"node": node, "steps": steps, "reboot": any(s["reboot"] for s in steps),
                        "rollback": rollback_steps(node, before, target)})
    plan["batches"] = [pending[i:i + size] for i in range(0, len(pending), size)]
    return plan


def batch_verdict(plan, index, failed):
    """What to do after the gates of batch ``index`` (0-based) with ``failed`` nodes (``{node: check}``
    or a list of nodes): ``{batch, failed, percentage, action, rollback, msg}``.

    Like Ansible's ``max_fail_percentage`` (per batch): the run stops when the share of failed nodes in
    the batch exceeds it; then the whole batch is rolled back (``action`` ``stop``). At or under it,
    only the failed nodes are rolled back and the next batch follows (``continue``); with no failure,
    ``continue`` and no rollback. ``rollback`` lists the rollback steps per node, nodes in batch order."""
    batch = plan["batches"][index]
    names = [entry["node"] for entry in batch]
    checks = dict(failed) if isinstance(failed, dict) else {n: None for n in failed or ()}
    unknown = sorted(set(checks) - set(names))
    if unknown:
        raise PlanError(f"{', '.join(unknown)} not in batch {index + 1} ({', '.join(names)})")
    percentage = 100.0 * len(checks) / len(names)
    stop = bool(checks) and percentage > plan["max_fail_percentage"]
    back = [e for e in batch if stop or e["node"] in checks]
    what = "; ".join(f"{n} failed {c}" if c else f"{n} failed" for n, c in checks.items() if n in names)
    if stop:
        msg = (f"batch {index + 1}: {what} ({percentage:.0f}% > max_fail_percentage "
               f"{plan['max_fail_percentage']}): batch {index + 1} ({', '.join(names)}) rolled back, stopped")
    elif checks:
        msg = (f"batch {index + 1}: {what} ({percentage:.0f}% <= max_fail_percentage "
               f"{plan['max_fail_percentage']}): those nodes rolled back, continuing")
    else:
        msg = f"batch {index + 1}: every gate passed"
    return {"batch": index + 1, "failed": sorted(checks), "percentage": percentage,
            "action": "stop" if stop else "continue",
            "rollback": [{"node": e["node"], "steps": e["rollback"]} for e in back], "msg": msg}


def gate(node, health, installed, expected, not_read=NOT_READ):
    """The gates of one node after its batch's install, in order: NPU health, device-NIC links, versions.

    ``health``: the node's health facts (``day2_run.node_health``); ``installed``: ``{component: version}``
    read on the node after the install; ``expected``: ``{component: version}`` of the target (the
    components the gate reads). Returns ``{failed, not_read, rows}``: ``failed`` is ``""`` when every gate
    passed, else the first failed check with what failed (``npu_health (NPU 1 Critical)``, ``links_up
    (...)``, ``versions (driver 24.1.rc1 25.0.rc1.1, ...: component installed expected)``); ``not_read``:
    the expected components no play can read on the node (``NOT_READ``, the MCU), reported beside the
    verdict, never failing it; ``rows``: the version comparison (``ascend_release.compare``)."""
    health = health or {}
    detail = ", ".join(str(d) for d in health.get("detail") or [])
    rows = compare(node, installed or {}, expected or {}, tuple(not_read or ()))
    wrong = [r for r in rows if r["status"] in ("mismatch", "missing")]
    if health.get("npu_health_ok") is not True:
        failed = f"npu_health ({detail})"
    elif health.get("links_up") is not True:
        failed = f"links_up ({detail})"
    elif wrong:
        failed = ("versions (" + ", ".join(f"{r['component']} {r['installed']} {r['expected']}" for r in wrong)
                  + ": component installed expected)")
    else:
        failed = ""
    return {"failed": failed, "not_read": [r for r in rows if r["status"] == "not read"], "rows": rows}


def _packages_text(step):
    parts = []
    for pkg in step["packages"]:
        verb = "uninstall " if pkg.get("action") == "uninstall" else ""
        parts.append(f"{verb}{pkg['component']} {pkg['from'] or 'none'} -> {pkg['to'] or 'none'}")
    return ", ".join(parts) + (", reboot" if step["reboot"] else "")


def render_text(plan):
    """The plan as lines of text (what ``--check`` prints): which nodes, in which batch, which packages."""
    lines = [f"Upgrade to release {plan['release']} (upgrade_batch_size {plan['batch_size']}, "
             f"max_fail_percentage {plan['max_fail_percentage']})"]
    if plan["refused"]:
        lines.append(f"REFUSED: {len(plan['refused'])} check(s) failed; nothing will change:")
        lines.extend(f"  {r['node']}: {r['check']}: {r['msg']}" for r in plan["refused"])
        return "\n".join(lines)
    if plan["up_to_date"]:
        lines.append(f"Already at {plan['release']}: {', '.join(plan['up_to_date'])}")
    if not plan["batches"]:
        lines.append("Nothing to upgrade.")
    for i, batch in enumerate(plan["batches"], 1):
        lines.append(f"Batch {i}: {', '.join(e['node'] for e in batch)}")
        for entry in batch:
            for step in entry["steps"]:
                lines.append(f"  {entry['node']}: {step['step']}: {_packages_text(step)}")
    if plan["not_planned"]:
        lines.append(f"Not planned (left as they are): {', '.join(plan['not_planned'])}")
    return "\n".join(lines)


# What upgrade.yml writes in the job's stop record (launch_stop_by): a record naming anything else
# (stop.yml) is the user's stop, and the job stays stopped after the upgrade.
OWN_STOP = "playbooks/upgrade.yml"


def job_before(nodes, expected=None, restart=None, start_command=None):
    """How an upgrade run finds the job, and whether it starts it again at the end.

    ``nodes``: ``{node: {running, stopped_by, record}}`` for every node that answered: ``running`` the job's
    unit active, ``stopped_by`` the stop record's ``by`` (None: no record), ``record`` the node's
    ``previous.json`` (``{target, job_user_stopped, ...}``, or empty). A record of this upgrade (its
    ``target`` is ``expected``) says how the first run found the job (a re-run sees that run's own stop):
    ``job_user_stopped`` true keeps the user's stop, false makes a stop record there the upgrade's own
    (also a record an older upgrade.yml wrote naming stop.yml). ``restart``: ``upgrade_restart_job``
    (None when not set).

    Returns ``scale_plan.job_restart``'s dict (``state``: running, stopped_by_user, stopped_by_run or
    not_running; ``start``; ``message`` when it stays stopped)."""
    found = {}
    for node, seen in (nodes or {}).items():
        if not isinstance(seen, dict):
            continue
        by = seen.get("stopped_by") or None
        record = seen.get("record") or {}
        if expected is not None and record.get("target") == expected:
            if record.get("job_user_stopped"):
                by = by if by and by != OWN_STOP else "playbooks/stop.yml (recorded when this upgrade first started)"
            elif by:
                by = OWN_STOP
        found[node] = {"running": bool(seen.get("running")), "stopped_by": by}
    return job_restart(job_found(found, list(found), OWN_STOP), restart, variable="upgrade_restart_job",
                       start_command=start_command)


def found_text(plan, job):
    """The plan's first line: what the run found. The nodes already at the release and those not yet (none
    when the plan refuses: the refusals say why), and the job (``job_before``) with what the run does to it."""
    parts = []
    if not plan.get("refused"):
        pending = [e["node"] for batch in plan.get("batches") or () for e in batch]
        parts.append(f"at {plan['release']}: {', '.join(plan.get('up_to_date') or ()) or 'none'}")
        parts.append(f"not yet: {', '.join(pending) or 'none'}")
    words = job.get("words") or "not running (no stop record)"
    if job.get("start"):
        then = "started again at the end" if job.get("state") != "stopped_by_user" else \
            "started at the end all the same (upgrade_restart_job=true)"
    elif job.get("state") == "stopped_by_user":
        then = "stays stopped at the end (-e upgrade_restart_job=true starts it)"
    else:
        then = "left stopped at the end (upgrade_restart_job=false)"
    parts.append(f"the job: {words}: {then}")
    return "Found: " + "; ".join(parts)


__all__ = ["PlanError", "STEPS", "NOT_READ", "OWN_STOP", "refusals", "node_steps", "rollback_steps", "plan_upgrade",
           "batch_verdict", "gate", "render_text", "job_before", "found_text"]
