"""Each phase of a role runs alone with its tag (--tags cann_install): the validate include that opens the
role's tasks/main.yml carries the tag of every later phase, so a phase run alone is validated first (its
facts, e.g. the package checksums the staging checks against, exist). Before, `playbooks/cann.yml --tags
cann_install` stopped at the staging with "not checked against the manifest"."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
ROLES = sorted(p.parent.parent.name for p in ROOT.glob("roles/*/tasks/main.yml")
               if not p.parent.parent.name.startswith("_"))


def _tags(task):
    tags = task.get("tags") or []
    return {tags} if isinstance(tags, str) else set(tags)


def _validate_include(tasks):
    for task in tasks:
        for action in ("ansible.builtin.include_tasks", "ansible.builtin.import_tasks"):
            target = task.get(action)
            target = target.get("file") if isinstance(target, dict) else target
            if target == "validate.yml":
                return task, action
    return None, None


@pytest.mark.parametrize("role", ROLES)
def test_the_validate_include_carries_every_later_phase_tag(role):
    tasks = yaml.safe_load((ROOT / "roles" / role / "tasks" / "main.yml").read_text()) or []
    gate, action = _validate_include(tasks)
    if gate is None:
        pytest.skip(f"{role}: no validate include in tasks/main.yml")
    later = set().union(*(_tags(t) for t in tasks[tasks.index(gate) + 1:]))
    assert later, f"{role}: the phases after the validate include carry no tags"
    missing = later - _tags(gate)
    assert not missing, f"{role}: the validate include lacks the tags {sorted(missing)}"
    if action == "ansible.builtin.include_tasks":
        # A dynamic include's tasks do not inherit its tags: `apply` must carry them too.
        applied = set((gate[action].get("apply") or {}).get("tags") or [])
        assert not later - applied, f"{role}: the include's apply lacks the tags {sorted(later - applied)}"
