#!/usr/bin/env python3
# Copyright (C) 2026 ascendops contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every role's meta/argument_specs.yml mirrors its defaults/main.yml (a step of `make test`).

For each role under roles/ with a defaults/main.yml: the `main` entry point lists exactly the
variables of defaults/main.yml, each with the same default value and a type that value has.
Internal roles (name starting with "_") without an argument spec are skipped.
  usage: scripts/check-argument-specs.py [ROLES_DIR]
"""

import sys
from pathlib import Path

import yaml

TYPES = {
    "str": (str,), "path": (str,), "raw": (object,), "int": (int,), "float": (int, float),
    "bool": (bool,), "list": (list,), "dict": (dict,),
}


def check_role(role: Path) -> list[str]:
    defaults_file = role / "defaults" / "main.yml"
    spec_file = role / "meta" / "argument_specs.yml"
    if not defaults_file.is_file():
        return []
    if not spec_file.is_file():
        return [] if role.name.startswith("_") else [f"{role.name}: defaults/main.yml but no meta/argument_specs.yml"]
    defaults = yaml.safe_load(defaults_file.read_text(encoding="utf-8")) or {}
    spec = yaml.safe_load(spec_file.read_text(encoding="utf-8")) or {}
    try:
        options = spec["argument_specs"]["main"]["options"] or {}
    except (KeyError, TypeError):
        return [f"{role.name}: meta/argument_specs.yml has no argument_specs.main.options"]
    errors = []
    for name in sorted(set(defaults) - set(options)):
        errors.append(f"{role.name}: {name} is in defaults/main.yml but not in meta/argument_specs.yml")
    for name in sorted(set(options) - set(defaults)):
        errors.append(f"{role.name}: {name} is in meta/argument_specs.yml but not in defaults/main.yml")
    for name in sorted(set(options) & set(defaults)):
        opt = options[name] or {}
        value = defaults[name]
        if "default" not in opt and value is not None:  # no default in the spec means None
            errors.append(f"{role.name}: {name}: meta/argument_specs.yml gives no default "
                          f"(defaults/main.yml: {value!r})")
        elif opt.get("default") != value:
            errors.append(f"{role.name}: {name}: default {opt['default']!r} in meta/argument_specs.yml, "
                          f"{value!r} in defaults/main.yml")
        kind = opt.get("type", "str")
        allowed = TYPES.get(kind)
        if allowed is None:
            errors.append(f"{role.name}: {name}: unknown type {kind!r}")
        elif isinstance(value, str) and "{{" in value:
            pass  # a template (e.g. "{{ ascend_npus_per_node }}"): its type is known only when rendered
        elif (value is not None and not isinstance(value, allowed)) or (kind == "int" and isinstance(value, bool)):
            errors.append(f"{role.name}: {name}: type {kind} but defaults/main.yml holds "
                          f"{type(value).__name__} {value!r}")
    return errors


def main(argv: list[str]) -> int:
    roles_dir = Path(argv[0]) if argv else Path(__file__).resolve().parents[1] / "roles"
    roles = sorted(p for p in roles_dir.iterdir() if p.is_dir())
    errors = [e for role in roles for e in check_role(role)]
    for e in errors:
        print(e)
    checked = [r.name for r in roles if (r / "defaults" / "main.yml").is_file()]
    print(f"argument specs: {len(checked)} roles checked ({', '.join(checked)}), {len(errors)} mismatches")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
