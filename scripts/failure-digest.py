#!/usr/bin/env python3
"""A few lines that say why a `make test` step failed, read from the step's log.

CI keeps only the end of the output, so scripts/test-all.sh prints this digest for every failed step
after its summary: the molecule scenario and action that failed, the task and its error, pytest's
FAILED lines, an idempotence report. Usage: failure-digest.py STEP LOG [MAX_LINES]
"""

import re
import sys

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# molecule 25 prints ansible-playbook's output inside a box: "  │ " before each line.
BOX = re.compile(r"^\s*\u2502 ?")
MOLECULE_ACTION = re.compile(r"^INFO\s+(\S+) \S+ (\w+): Executing")
MOLECULE_FAILED = re.compile(r"^ERROR\s+(\S+) \S+ \w+: Executed: Failed")
WIDTH = 300


def clip(line):
    line = " ".join(line.split())
    return line if len(line) <= WIDTH else line[: WIDTH - 3] + "..."


def is_failure_line(line):
    """pytest's FAILED/ERROR and assertion lines, ansible-core's [ERROR], ansible-test sanity's
    "ERROR: path:line:col: ..." findings, molecule's idempotence and return-code errors."""
    return (
        re.match(r"^ERROR: \S+:\d+:\d+: ", line) is not None
        or re.match(r"^(FAILED|ERROR) \S+\.py", line) is not None
        or line.startswith("[ERROR]: ")
        or re.match(r"^E\s{3}\S", line) is not None
        or re.match(r"^(ERROR|CRITICAL)\s+(Idempotence|Ansible return code)", line) is not None
        or (line.startswith("* [") and "] => " in line)
    )


def digest(lines, limit):
    """The lines to print: where it failed, the task, then what failed."""
    lines = [BOX.sub("", ANSI.sub("", line)) for line in lines]
    found = []
    scenario = action = task = None
    for i, line in enumerate(lines):
        m = MOLECULE_ACTION.match(line)
        if m:
            scenario = m.group(1)
            action = f"molecule scenario {m.group(1)}, action {m.group(2)}"
        elif line.startswith(("TASK [", "RUNNING HANDLER [")):
            task = line.rstrip(" *")
        elif line.startswith(("fatal: [", "failed: [")):
            # A failure the play expects is followed by "...ignoring".
            if not any("...ignoring" in later for later in lines[i + 1:i + 4]):
                # The YAML result format puts the message on the lines after "=>".
                msg = next((later.strip() for later in lines[i + 1:i + 12] if later.strip().startswith("msg:")), "")
                found.append((scenario, action, task, f"{line} {msg}".strip()))
        elif is_failure_line(line):
            found.append((scenario, action, None, line))
    # In a log of several molecule scenarios, only those that failed: the others' failures were expected
    # (a refusal a scenario provokes on purpose).
    failed = {m.group(1) for m in map(MOLECULE_FAILED.match, lines) if m}
    if failed:
        found = [entry for entry in found if entry[0] in failed]
    found = [entry[1:] for entry in found]
    out = []
    seen = set()
    # The last four failures: a run stops at its failure, and the failures before it were expected
    # (a rescue, a refusal a scenario provokes on purpose).
    for where, what, line in found[-4:]:
        for text in (where, what, line):
            if text and text not in seen:
                seen.add(text)
                out.append(clip(text))
    if not out:
        tail = [clip(line) for line in lines if line.strip()][-3:]
        out = ["no failure line found; the log ends:"] + tail
    return out[:limit]


def main(argv):
    step, path = argv[1], argv[2]
    limit = int(argv[3]) if len(argv) > 3 else 8
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = [line.rstrip("\n") for line in handle]
    except OSError as exc:
        print(f"{step}: no log ({exc})")
        return 0
    for line in digest(lines, limit):
        print(f"{step}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
