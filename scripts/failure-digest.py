#!/usr/bin/env python3
"""A few lines that say why a `make test` step failed.

CI keeps only the end of the output, so scripts/test-all.sh prints this digest for every failed step
after its summary, and scripts/molecule-all.sh for a scenario's first failed run.

What failed comes from JUnit XML, the tools' own reports: Ansible's `ansible.builtin.junit` callback
(molecule-all.sh enables it for every scenario: one file per ansible-playbook run, nested runs
included, under the scenario's JUNIT_OUTPUT_DIR) and pytest's `--junitxml` (test-all.sh). A failed
or erroring test case becomes one line: the playbook, `[host] play: task` and the task's message.

Hand-written, and only because no tool reports it in a file:
- molecule's own messages in the step's log: which scenario and action failed ("Executed: Failed"),
  which selects the XML files of the failed scenarios (a scenario that passes provokes refusals on
  purpose), and its idempotence and return-code errors;
- the tools that write no JUnit: ansible-core's `[ERROR]:` lines when no JUnit file names a failed
  task (a playbook that never started: a syntax error writes no XML), ansible-test sanity's
  `ERROR: path:line:col:` findings;
- a loop's result: the callback reports only "One or more items failed"; the first failed item's
  message is read from the result the callback stores beside it;
- without any of these, the last lines of the log.

Usage: failure-digest.py STEP LOG [--junit DIR]... [--max-lines N]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# molecule prints ansible-playbook's output inside a box: "  │ " before each line.
BOX = re.compile(r"^\s*\u2502 ?")
MOLECULE_ACTION = re.compile(r"^INFO\s+(\S+) \S+ (\w+): Executing")
MOLECULE_FAILED = re.compile(r"^ERROR\s+(\S+) \S+ (\w+): Executed: Failed")
WIDTH = 300
LOOP_MESSAGE = "One or more items failed"


def clip(line):
    line = " ".join(str(line).split())
    return line if len(line) <= WIDTH else line[: WIDTH - 3] + "..."


def is_log_failure_line(line, with_ansible_errors):
    """Failures no JUnit file records: ansible-test sanity's "ERROR: path:line:col: ..." findings,
    molecule's idempotence and return-code errors, and ansible-core's [ERROR] lines when no JUnit file
    names a failed task (a playbook that never ran; ansible-core also prints one for every failed task,
    ignored and rescued ones included, which the JUnit file tells apart)."""
    return (
        re.match(r"^ERROR: \S+:\d+:\d+: ", line) is not None
        or (with_ansible_errors and line.startswith("[ERROR]: "))
        or re.match(r"^(ERROR|CRITICAL)\s+(Idempotence|Ansible return code)", line) is not None
    )


def _loop_item_message(output):
    """The first failed item's message of a loop result (the callback's dump of the task result)."""
    try:
        result = json.loads(output or "")
    except ValueError:
        return None
    for item in result.get("results", []) if isinstance(result, dict) else []:
        if isinstance(item, dict) and item.get("failed"):
            label = item.get("_ansible_item_label", item.get("item"))
            return f"(item={label}) {item.get('msg', '')}".strip()
    return None


def junit_failures(path):
    """(where, what) of each failed or erroring test case of one JUnit file, in the file's order."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        return [(str(path), f"unreadable JUnit file ({exc})")]
    suites = [root] if root.tag == "testsuite" else root.iter("testsuite")
    found = []
    for suite in suites:
        for case in suite.iter("testcase"):
            for bad in [*case.findall("failure"), *case.findall("error")]:
                text = (bad.text or "").strip()
                message = bad.get("message") or (text.splitlines()[0] if text else bad.tag)
                if message == LOOP_MESSAGE:
                    message = _loop_item_message(bad.text) or message
                name = case.get("name", "")
                # Ansible: the playbook (suite) and "[host] play: task"; pytest: the test's class and name
                where = (f"playbook {suite.get('name')}" if name.startswith("[")
                         else case.get("classname") or suite.get("name"))
                found.append((where, f"{name}: {message}" if name else message))
    return found


def _junit_files(dirs, scenarios, failed):
    """The XML files under dirs, oldest first (a run's own file is written when it ends, after those of
    the runs it nested). A file in a folder named after a molecule scenario that did not fail is left out."""
    files = []
    for d in dirs:
        for f in Path(d).rglob("*.xml"):
            scenario = f.parent.name
            if failed and scenario in scenarios and scenario not in failed:
                continue
            files.append(f)
    return sorted(files, key=lambda f: (f.stat().st_mtime, str(f)))


def digest(lines, limit, junit_dirs=()):
    """The lines to print: where it failed (molecule's scenario and action), then what failed."""
    lines = [BOX.sub("", ANSI.sub("", line)) for line in lines]
    scenarios = {m.group(1) for m in map(MOLECULE_ACTION.match, lines) if m}
    failed = {}
    for m in map(MOLECULE_FAILED.match, lines):
        if m:
            failed[m.group(1)] = m.group(2)
    found = []
    for name, action in failed.items():
        found.append(f"molecule scenario {name}, action {action}")
    reported = []
    for f in _junit_files(junit_dirs, scenarios, failed):
        reported.extend(junit_failures(f))
    # The last four: a run stops at its failure, and the failures before it were expected (a rescue, a
    # refusal a scenario provokes on purpose, a nested run that must fail).
    for where, what in reported[-4:]:
        found.extend([where, what])
    found.extend(line for line in lines if is_log_failure_line(line, not reported))
    out, seen = [], set()
    for text in found:
        if text and text not in seen:
            seen.add(text)
            out.append(clip(text))
    if not out:
        tail = [clip(line) for line in lines if line.strip()][-3:]
        out = ["no failure found in a JUnit file or the log; the log ends:"] + tail
    return out[:limit]


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("step")
    p.add_argument("log")
    p.add_argument("--junit", action="append", default=[], help="a folder of JUnit XML files (searched recursively)")
    p.add_argument("--max-lines", type=int, default=8)
    a = p.parse_args(argv[1:])
    try:
        with open(a.log, encoding="utf-8", errors="replace") as handle:
            lines = [line.rstrip("\n") for line in handle]
    except OSError as exc:
        print(f"{a.step}: no log ({exc})")
        lines = []
    for line in digest(lines, a.max_lines, [d for d in a.junit if Path(d).is_dir()]):
        print(f"{a.step}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
