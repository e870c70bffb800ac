"""The stages of site.yml and which stage a play or task belongs to.

The stage list is read from the project's own playbooks (playbooks/site.yml imports one playbook per
stage), so a renamed play or a new stage needs no change here. Stage names are the playbook file
names, except that the collective pre-flight belongs to the launch stage (architecture.md: "launch:
rank table, collective pre-flight, the training job").
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import yaml

# Stages a user names (site.yml order). validate and recap are plays of site.yml but change nothing.
STAGES = ("preflight", "npu_driver", "cann", "roce", "container_runtime", "shared_storage", "slurm", "launch")
# Playbooks that belong to another stage than their file name says.
_PLAYBOOK_STAGE = {"collective": "launch"}
# Plays that are not a stage a user converges.
_NOT_STAGES = ("validate", "recap")


class ProjectError(Exception):
    """The project directory does not hold the playbooks this command drives."""


@dataclass
class StageMap:
    """Play name -> stage, and the playbook file(s) of each stage, in site.yml order."""

    project_dir: str
    play_stage: dict[str, str] = field(default_factory=dict)
    stage_playbooks: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def load(cls, project_dir: str) -> StageMap:
        site = os.path.join(project_dir, "playbooks", "site.yml")
        if not os.path.isfile(site):
            raise ProjectError(f"{project_dir} has no playbooks/site.yml: run from a clone of ascendops "
                               "or pass --project-dir")
        smap = cls(project_dir)
        for entry in _load_yaml(site):
            imported = entry.get("ansible.builtin.import_playbook") or entry.get("import_playbook")
            if not imported:
                continue
            path = os.path.join(os.path.dirname(site), imported)
            stem = os.path.splitext(os.path.basename(imported))[0]
            stage = _PLAYBOOK_STAGE.get(stem, stem)
            smap.stage_playbooks.setdefault(stage, []).append(path)
            for play in _load_yaml(path):
                if isinstance(play, dict) and play.get("name"):
                    smap.play_stage[str(play["name"])] = stage
        missing = [s for s in STAGES if s not in smap.stage_playbooks]
        if missing:
            raise ProjectError(f"{site} imports no playbook for stage(s) {', '.join(missing)}")
        return smap

    def stage_of(self, play: str | None, task_path: str | None = None, role: str | None = None) -> str:
        """The stage of an event: by its play's name; else by the role or playbook its task lives in."""
        if play and play in self.play_stage:
            return self.play_stage[play]
        if role and role.split(".")[-1] in STAGES:
            return role.split(".")[-1]
        if task_path:
            parts = task_path.split(":")[0].split(os.sep)
            if "roles" in parts and parts.index("roles") + 1 < len(parts):
                name = parts[parts.index("roles") + 1]
                if name in STAGES:
                    return name
            stem = os.path.splitext(parts[-1])[0]
            stem = _PLAYBOOK_STAGE.get(stem, stem)
            if stem in STAGES or stem in _NOT_STAGES:
                return stem
        return "other"

    def playbooks_for(self, stages: list[str]) -> list[str]:
        """validate.yml first (nothing is judged on an inventory that does not validate), then each
        named stage's playbook(s) in site.yml order."""
        books = list(self.stage_playbooks.get("validate", []))
        for stage in STAGES:
            if stage in stages:
                books.extend(self.stage_playbooks[stage])
        return books


def _load_yaml(path: str) -> list:
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f) or []
    if not isinstance(data, list):
        raise ProjectError(f"{path} is not a playbook (a list of plays)")
    return data
