# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the day-2 playbooks (upgrade.yml, add_node.yml, remove_node.yml): thin wrappers of
module_utils/upgrade_plan.py, scale_plan.py and day2_run.py."""

from __future__ import annotations

from ansible_collections.ascendops.cluster.plugins.module_utils import day2_run as _d
from ansible_collections.ascendops.cluster.plugins.module_utils import scale_plan as _s
from ansible_collections.ascendops.cluster.plugins.module_utils import trainer_rules as _rules
from ansible_collections.ascendops.cluster.plugins.module_utils import upgrade_plan as _u


def upgrade_plan(nodes, installed, health, release, upgrade_batch_size=1, max_fail_percentage=0, previous=None):
    """The upgrade plan (``upgrade_plan.plan_upgrade``). A target made of the role settings
    (``upgrade_settings_release``) plans no image: nodes' image versions are taken as at the target."""
    installed = {k: dict(v) if isinstance(v, dict) else v for k, v in (installed or {}).items()}
    if release.get("settings"):
        for versions in installed.values():
            if isinstance(versions, dict):
                versions["image"] = release["name"]
    plan = _u.plan_upgrade(nodes, installed, health, release, upgrade_batch_size, max_fail_percentage,
                           previous=previous)
    if release.get("settings"):
        plan["not_planned"].append("image (no release manifest names it: give -e target_release)")
    return plan


def upgrade_plan_text(plan):
    """The plan as text lines (``upgrade_plan.render_text``), one list item per line."""
    return _u.render_text(plan).splitlines()


def _restart_setting(value):
    """A playbook's restart override (-e x=true comes as a string): None when not set."""
    if isinstance(value, str):
        return None if value.strip() == "" else value.strip().lower() in ("1", "true", "yes", "on")
    return value


def upgrade_job(nodes, expected=None, restart=None, start_command=None):
    """How the upgrade finds the job and whether it starts it at the end (``upgrade_plan.job_before``)."""
    return _u.job_before(nodes, expected, _restart_setting(restart), start_command)


def upgrade_found_text(plan, job):
    """The plan's ``Found: ...`` line (``upgrade_plan.found_text``)."""
    return _u.found_text(plan, job)


def upgrade_batch_verdict(plan, index, failed):
    """What to do after the gates of batch ``index`` (0-based) with ``failed`` ``{node: check}``."""
    return _u.batch_verdict(plan, int(index), failed or {})


def upgrade_gate(health, installed, expected, node):
    """One node's gates after its batch's install (``upgrade_plan.gate``): ``{failed, not_read, rows}``."""
    return _u.gate(node, health, installed, expected)


def upgrade_settings_release(versions):
    """A release-shaped target from the role version settings (``day2_run.settings_release``)."""
    return _d.settings_release(versions)


def day2_role_vars(versions):
    """The stage roles' version variables for ``{component: version}`` (``day2_run.role_vars``)."""
    return _d.role_vars(versions)


def day2_node_health(npu, devices, expected_devices=None):
    """Health facts of a node from npu_info and hccn_info (``day2_run.node_health``)."""
    return _d.node_health(npu, devices, expected_devices)


def day2_nics_ready(devices, expected_devices=None):
    """hccn_info devices all up with net health Success (or Init on a port without a net-detect address), as
    many as expected (``day2_run.nics_ready``)."""
    return _d.nics_ready(devices, expected_devices)


def day2_node_list(value, known=None, what="nodes"):
    """``-e nodes=a,b`` as ``{nodes, unknown, problem}`` (``day2_run.node_list``)."""
    return _d.node_list(value, known, what)


def scale_plan(current, add=(), remove=(), spares=(), swap=False, dead=(), devices_per_node=8,
               global_batch_size=None, micro_batch_size=None):
    """The add/remove/swap plan (``scale_plan.plan_scale``)."""
    return _s.plan_scale(current, add, remove, spares, bool(swap), dead, devices_per_node, global_batch_size,
                         micro_batch_size)


def scale_plan_text(plan, operation, job=None):
    """A scale plan as text lines (``day2_run.scale_plan_text``); ``job``: ``scale_resume``'s ``job``."""
    return _d.scale_plan_text(plan, operation, job)


def scale_resume(plan, found, before, addresses=None, devices_per_node=8, stop_by=None, command="", restart=None,
                 start_command=None):
    """Where an interrupted add/remove stands and what is left (``scale_plan.resume_state``), with its
    printed lines (``lines``: ``Found: ...``, ``Job: ...`` and the command that finishes it). ``restart``:
    the playbook's ``scale_restart_job`` (None or '' when not set); ``start_command``: how to start a job
    the run leaves stopped."""
    resume = _s.resume_state(plan, found, before, addresses, devices_per_node, stop_by, _restart_setting(restart),
                             start_command)
    resume["lines"] = _s.resume_text(resume, command)
    return resume


def day2_checkpoint_problem(plan, job=None, shared_storage_type="none", dead=()):
    """A message when node-local checkpoints cannot follow the plan (``day2_run.checkpoint_locality_problem``)."""
    return _d.checkpoint_locality_problem(plan, job, shared_storage_type, dead)


def day2_resume_problem(config, job_config=None):
    """A message when the job cannot resume at another world size (``day2_run.resume_config_problem``)."""
    return _d.resume_config_problem(config, _rules.TRAINER_KEYS, job_config)


class FilterModule:
    """Day-2 operation filters."""

    def filters(self):
        return {"upgrade_plan": upgrade_plan, "upgrade_plan_text": upgrade_plan_text,
                "upgrade_batch_verdict": upgrade_batch_verdict, "upgrade_gate": upgrade_gate,
                "upgrade_settings_release": upgrade_settings_release,
                "upgrade_job": upgrade_job, "upgrade_found_text": upgrade_found_text,
                "day2_role_vars": day2_role_vars, "day2_node_health": day2_node_health,
                "day2_nics_ready": day2_nics_ready,
                "day2_node_list": day2_node_list, "scale_plan": scale_plan, "scale_plan_text": scale_plan_text,
                "scale_resume": scale_resume,
                "day2_resume_problem": day2_resume_problem,
                "day2_checkpoint_problem": day2_checkpoint_problem}
