"""meta/runtime.yml and meta/execution-environment.yml describe the collection as it is: the action group
lists every module, module_defaults through it reaches a module, the core pinned for CI satisfies
requires_ansible, and the execution environment's Python requirements name every third-party import of
the plugins."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.release import __version__ as ansible_core_version
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

REPO = Path(__file__).resolve().parents[2]
RUNTIME = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())
# import name -> distribution name, where they differ
DISTRIBUTIONS = {"yaml": "pyyaml"}


def test_action_group_lists_every_module_once():
    modules = sorted(p.stem for p in (REPO / "plugins" / "modules").glob("*.py") if not p.name.startswith("_"))
    group = RUNTIME["action_groups"]["ascendops"]
    assert len(group) == len(set(group))
    assert sorted(group) == modules


def test_the_pinned_core_satisfies_requires_ansible():
    pinned = [line.split("==", 1)[1].strip() for line in (REPO / "requirements.txt").read_text().splitlines()
              if line.startswith("ansible-core==")]
    spec = SpecifierSet(RUNTIME["requires_ansible"])
    assert pinned and pinned[0] in spec
    assert ansible_core_version in spec
    assert "2.18.0" not in spec  # only what CI proves


def _third_party_imports(folder: Path) -> dict[str, str]:
    found = {}
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("ansible", "ansible_collections", "__future__"):
                    found.setdefault(DISTRIBUTIONS.get(top, top), str(path.relative_to(REPO)))
    return found


def test_execution_environment_names_every_python_import_of_the_plugins():
    ee = yaml.safe_load((REPO / "meta" / "execution-environment.yml").read_text())
    assert ee["version"] == 3
    deps = ee["dependencies"]
    for key in ("python", "system"):  # files relative to the collection root, shipped in the artifact
        assert not os.path.isabs(deps[key]) and (REPO / deps[key]).is_file()
    listed = set()
    for line in (REPO / deps["python"]).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            listed.add(Requirement(line).name.lower())
    imports = _third_party_imports(REPO / "plugins")
    assert {name.lower() for name in imports} <= listed, imports
    # modules and module_utils run on the nodes: standard library only (module_utils imported by a module)
    assert _third_party_imports(REPO / "plugins" / "modules") == {}


@pytest.mark.slow
def test_module_defaults_through_the_action_group_reach_a_module(tmp_path):
    target = tmp_path / "present"
    target.write_text("x\n")
    play = [{
        "hosts": "localhost", "gather_facts": False,
        "module_defaults": {"group/ascendops.cluster.ascendops": {"paths": [str(target)]}},
        "tasks": [
            {"name": "path_info without paths of its own", "ascendops.cluster.path_info": {}, "register": "info"},
            {"ansible.builtin.assert": {"that": ["info.stats[0].exists", f"info.stats[0].path == '{target}'"]}},
        ],
    }]
    book = tmp_path / "play.yml"
    book.write_text(json.dumps(play))
    py = sys.executable
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    proc = subprocess.run(
        [str(Path(py).parent / "ansible-playbook"), str(book), "-i", "localhost,", "-c", "local",
         "-e", f"ansible_python_interpreter={py}"], capture_output=True, text=True, env=env, cwd=REPO,
        timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
