#!/usr/bin/env python3
# Copyright (C) 2026 ascendops contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every plugin of the collection has documentation that ansible-doc renders (a step of `make test`).

The plugins are found in the source files, not in a hand list: each module (plugins/modules/*.py),
lookup (plugins/lookup/*.py) and callback (plugins/callback/*.py), and each filter (test) name that a
plugins/filter/*.py (plugins/test/*.py) file's FilterModule.filters() (TestModule.tests()) returns, read
statically (the dict literal it returns). A filter's documentation is a plugins/filter/<name>.yml file
or DOCUMENTATION in plugins/filter/<name>.py; a doc file that names no filter is an error too.

Then `ansible-doc --json -t <type> ascendops.cluster.<name> ...` runs once per type with every name; when
that fails (ansible-doc stops at the first broken one), each name of that type runs alone, so every
plugin with a missing or broken doc is named. The collection resolves from this tree (.collections),
and a doc read from anywhere else is an error. Prints a count per type; exits 1 on any error.
  usage: scripts/check-ansible-doc.py [--root DIR]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COLLECTION = "ascendops.cluster"
# plugin type: (directory under plugins/, class and method that list the names; None: one plugin per file)
TYPES = {
    "module": ("modules", None),
    "filter": ("filter", ("FilterModule", "filters")),
    "test": ("test", ("TestModule", "tests")),
    "lookup": ("lookup", None),
    "callback": ("callback", None),
}


class DiscoveryError(ValueError):
    """A plugin file whose names cannot be read statically."""


def jinja_names(path: Path, class_name: str, method: str) -> list[str]:
    """The names that ``class_name.method()`` of a filter or test plugin file returns (a dict literal)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        raise DiscoveryError(f"{path}: not valid Python ({exc})") from None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    returns = [n for n in ast.walk(item) if isinstance(n, ast.Return)]
                    if len(returns) == 1 and isinstance(returns[0].value, ast.Dict):
                        keys = returns[0].value.keys
                        if all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in keys):
                            return [k.value for k in keys]
                    raise DiscoveryError(f"{path}: {class_name}.{method}() does not return one dict literal with "
                                         "string keys: its names cannot be read without importing it")
    raise DiscoveryError(f"{path}: no class {class_name} with a method {method}()")


def discover(root: Path) -> tuple[dict[str, dict[str, Path]], list[str]]:
    """{type: {name: file that defines it}} of every plugin under root/plugins, and the errors found."""
    found: dict[str, dict[str, Path]] = {}
    errors: list[str] = []
    for kind, (directory, jinja) in TYPES.items():
        names: dict[str, Path] = {}
        for path in sorted((root / "plugins" / directory).glob("*.py")):
            if path.name.startswith("_"):
                continue
            if jinja is None:
                names[path.stem] = path
                continue
            try:
                file_names = jinja_names(path, *jinja)
            except DiscoveryError as exc:
                errors.append(str(exc))
                continue
            for name in file_names:
                if name in names:
                    errors.append(f"{kind} {name}: returned by both {names[name].name} and {path.name}")
                names[name] = path
        found[kind] = names
    return found, errors


def has_documentation(path: Path) -> bool:
    """Whether a Python plugin file assigns DOCUMENTATION at its top level."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except SyntaxError:
        return False
    return any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "DOCUMENTATION"
                                                 for t in n.targets) for n in tree.body)


def doc_file_errors(root: Path, found: dict[str, dict[str, Path]]) -> list[str]:
    """Filters and tests without a doc file of their own, and doc files that name no plugin."""
    errors = []
    for kind, (directory, jinja) in TYPES.items():
        if jinja is None:
            continue
        folder = root / "plugins" / directory
        for name, source in sorted(found.get(kind, {}).items()):
            if (folder / f"{name}.yml").is_file() or (folder / f"{name}.yaml").is_file():
                continue
            if (folder / f"{name}.py").is_file() and has_documentation(folder / f"{name}.py"):
                continue
            errors.append(f"{kind} {name} ({source.name}): undocumented: no plugins/{directory}/{name}.yml "
                          f"and no DOCUMENTATION in plugins/{directory}/{name}.py")
        for doc in sorted(list(folder.glob("*.yml")) + list(folder.glob("*.yaml"))):
            if doc.stem not in found.get(kind, {}):
                errors.append(f"{kind} doc plugins/{directory}/{doc.name}: no {jinja[0]} returns {doc.stem!r}")
    return errors


def _ansible_doc(kind: str, names: list[str], env: dict[str, str], root: Path) -> subprocess.CompletedProcess:
    sibling = Path(sys.executable).parent / "ansible-doc"
    exe = str(sibling) if sibling.is_file() else (shutil.which("ansible-doc") or "ansible-doc")
    return subprocess.run([exe, "--json", "-t", kind] + [f"{COLLECTION}.{n}" for n in names],
                          capture_output=True, text=True, env=env, cwd=root, check=False)


def rendered_errors(kind: str, names: list[str], result: subprocess.CompletedProcess, root: Path) -> list[str]:
    """What is wrong with ansible-doc's JSON for these names (empty: every one rendered from this tree)."""
    if result.returncode != 0:
        text = (result.stderr.strip() or result.stdout.strip() or "no output").splitlines()
        return [f"{kind} {n}: ansible-doc failed (rc {result.returncode}): {' / '.join(text[-3:])}" for n in names]
    try:
        data = json.loads(result.stdout)
    except ValueError:
        return [f"{kind} {n}: ansible-doc printed no JSON: {result.stdout[:300]!r}" for n in names]
    errors = []
    for name in names:
        entry = data.get(f"{COLLECTION}.{name}") if isinstance(data, dict) else None
        doc = entry.get("doc") if isinstance(entry, dict) else None
        if not isinstance(doc, dict) or not doc.get("short_description"):
            errors.append(f"{kind} {name}: ansible-doc gives no documentation (no short_description)")
            continue
        filename = os.path.realpath(str(doc.get("filename") or ""))
        if not filename.startswith(os.path.realpath(root) + os.sep):
            errors.append(f"{kind} {name}: documented by {doc.get('filename')}, not by this tree")
    return errors


def check_rendered(root: Path, found: dict[str, dict[str, Path]]) -> list[str]:
    collections = root / ".collections"
    link = collections / "ansible_collections" / "ascendops" / "cluster"
    if not os.path.lexists(link):
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.join("..", "..", ".."))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), PYTHONWARNINGS="ignore",
               ANSIBLE_NOCOLOR="1")
    errors = []
    for kind, names in found.items():
        names = sorted(names)
        if not names:
            continue
        batch = rendered_errors(kind, names, _ansible_doc(kind, names, env, root), root)
        if batch and len(names) > 1:  # ansible-doc stops at the first failure: name every one
            batch = []
            for name in names:
                batch += rendered_errors(kind, [name], _ansible_doc(kind, [name], env, root), root)
        errors += batch
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=REPO, help="the collection's root (default: this repository)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    found, errors = discover(root)
    errors += doc_file_errors(root, found)
    errors += check_rendered(root, found)
    bad = {tuple(e.split(" ", 2)[:2]) for e in errors}
    for kind, names in found.items():
        if kind == "test" and not names:
            continue  # the collection has no test plugins
        ok = len([n for n in names if (kind, n) not in bad and (kind, n + ":") not in bad])
        print(f"{kind}: {len(names)} found, {ok} documented")
    for error in errors:
        print(f"ERROR: {error}", file=sys.stderr)
    if errors:
        print(f"{len(errors)} plugin documentation error(s)", file=sys.stderr)
        return 1
    print("every plugin has documentation that ansible-doc renders")
    return 0


if __name__ == "__main__":
    sys.exit(main())
