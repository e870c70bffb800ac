#!/usr/bin/env python3
"""Write plugins/module_utils/trainer_rules.py from the trainer's payload/src/ascendops_trainer/config_rules.py.

The trainer's configuration rules have one source, the payload; the collection (whose artifact
cannot import the trainer's package) carries this generated copy, plus the list of the trainer's
config keys read from its dataclasses (TRAINER_KEYS). Edit config_rules.py or config.py, then run
    scripts/sync-trainer-rules.py          # rewrite the copy
    scripts/sync-trainer-rules.py --check  # exit 1 when the copy differs (pytest runs this check)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "payload" / "src" / "ascendops_trainer" / "config_rules.py"
TARGET = ROOT / "plugins" / "module_utils" / "trainer_rules.py"
HEADER = (
    "# Copyright: (c) 2026, ascendops engineering\n"
    "# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)\n"
    "# GENERATED from payload/src/ascendops_trainer/config_rules.py by scripts/sync-trainer-rules.py: edit\n"
    "# that file and run the script (tests/unit/plugins/module_utils/test_trainer_rules.py checks both agree).\n"
)


def trainer_keys() -> list[str]:
    """Every settable key of the trainer's configuration, from its dataclasses (config.py imports no torch)."""
    sys.path.insert(0, str(SOURCE.parent.parent))
    try:
        from ascendops_trainer.config import field_types
    finally:
        sys.path.pop(0)
    return sorted(field_types())


def expected() -> str:
    keys = "".join(f'    "{k}",\n' for k in trainer_keys())
    return (HEADER + SOURCE.read_text()
            + "\n\n# GENERATED from the trainer's config dataclasses (config.field_types()): every key a job may set.\n"
            + "TRAINER_KEYS = frozenset((\n" + keys + "))\n")


def main(argv: list[str]) -> int:
    want = expected()
    have = TARGET.read_text() if TARGET.exists() else ""
    if "--check" in argv:
        if have != want:
            print(f"{TARGET.relative_to(ROOT)} differs from {SOURCE.relative_to(ROOT)}: "
                  "run scripts/sync-trainer-rules.py", file=sys.stderr)
            return 1
        return 0
    if have != want:
        TARGET.write_text(want)
        print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
