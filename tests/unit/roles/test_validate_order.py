"""The facts are gathered before the settings are checked, in validate.yml's node play and in each role's
tasks/validate.yml: a setting may be templated from facts (molecule/cluster sets
``launch_host_ip: "{{ ansible_facts.default_ipv4.address }}"``), and the settings check renders every
setting the user set. With the check first, that scenario's converge failed on both nodes with "object of
type 'dict' has no attribute 'default_ipv4'" before any stage ran."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]


def _positions(tasks):
    """Index of the first fact gathering and of the settings check in a list of tasks."""
    gather = settings = None
    for index, task in enumerate(tasks):
        if "ansible.builtin.setup" in task and gather is None:
            gather = index
        target = task.get("ansible.builtin.import_role") or {}
        if task.get("ansible.builtin.import_tasks") == "settings_validate.yml" or \
                target.get("tasks_from") in ("settings_validate", "settings_validate_cluster"):
            settings = index
    return gather, settings


def _node_play():
    plays = yaml.safe_load((ROOT / "playbooks" / "validate.yml").read_text())
    return next(play for play in plays if play.get("hosts") == "npu_nodes")


def test_validate_playbook_gathers_facts_before_it_checks_every_roles_settings():
    gather, settings = _positions(_node_play()["tasks"])
    assert gather is not None and settings is not None
    assert gather < settings


@pytest.mark.parametrize("path", sorted(ROOT.glob("roles/*/tasks/validate.yml")), ids=lambda p: p.parts[-3])
def test_a_role_run_alone_gathers_its_facts_before_its_settings_check(path):
    gather, settings = _positions(yaml.safe_load(path.read_text()))
    assert settings is not None, f"{path}: no settings check"
    if gather is not None:
        assert gather < settings
