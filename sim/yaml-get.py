#!/usr/bin/env python3
# Copyright (C) 2026 ascendops contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SIMULATION ONLY: print values of a YAML file (a release manifest) for shell scripts, one per line.

  usage: sim/yaml-get.py FILE KEY [KEY...]     KEY: a dotted path (host.driver, image.reference)

Fails (exit 1) naming the file and the key when a key is missing or not a scalar. Needs PyYAML (the
project's virtualenv: make puts it on PATH).
"""

import sys

import yaml


def get(data, dotted):
    value = data
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(dotted)
        value = value[part]
    if isinstance(value, (dict, list)) or value is None:
        raise KeyError(dotted)
    return str(value)


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    path = argv[1]
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    for key in argv[2:]:
        try:
            print(get(data, key))
        except KeyError:
            print(f"{path}: {key}: missing, or not a single value", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
