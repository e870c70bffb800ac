"""Seconds per stage of a playbook run, as a user sees it (scripts/bench-rerun.sh).

`python -m ascendops_cli.timing -i INVENTORY [--check] [--rounds 3]` runs `site.yml` (with
`--check --diff` when asked) ROUNDS times and prints, per stage and in total, the median of the
rounds, with the changed count of each round: a no-op re-run must report changed=0.
The run is the plain `ansible-playbook` a user types, its output read line by line as it comes: a
stage's time runs from its first play's banner to the next stage's (the last one to PLAY RECAP), so
fact gathering and include overhead count where they happen. (Driven through ansible-runner, whose
event callback writes every task's result to a file in the controller process, the same 4-node no-op
run took a median 6.9 s longer on 2 cores, -1.8 to 8.8 s over 7 pairs taking turns, of about 30 s: a
cost of the measurement, not of the product.)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable

from .drift import find_project_dir
from .stages import StageMap

# Read from the default callback's lines, not from a standard timing callback: ansible.posix.timer gives
# the whole run's seconds and ansible.posix.profile_tasks / profile_roles the seconds of each task / role,
# but none of them the seconds of a play (a stage, with its fact gathering, includes and the time between
# tasks), and none the changed count; scripts/bench-rerun.sh and bench-scale.sh --profile add
# profile_tasks for the per-task view.
_PLAY = re.compile(r"^PLAY \[(?P<name>.*)\] \**$")
_RECAP_HOST = re.compile(r"^(?P<host>\S+)\s+:\s+ok=\d+\s+changed=(?P<changed>\d+)\s")


def read_output(timed_lines: Iterable[tuple[float, str]]) -> dict:
    """{plays: [(seconds, play name)], end: seconds of PLAY RECAP (None if none), changed: the recap's
    changed count summed over the hosts (-1 without a recap)} of the default callback's output, each
    line with the second it came at."""
    plays: list[tuple[float, str]] = []
    end = None
    changed = -1
    for t, line in timed_lines:
        line = line.rstrip("\n")
        if end is None:
            if line.startswith("PLAY RECAP"):
                end, changed = t, 0
            elif m := _PLAY.match(line):
                plays.append((t, m["name"]))
        elif m := _RECAP_HOST.match(line):
            changed += int(m["changed"])
    return {"plays": plays, "end": end, "changed": changed}


def stage_seconds(plays: list[tuple[float, str]], end: float | None, smap: StageMap) -> dict[str, float]:
    """{stage: seconds} of one run, in the order the stages ran."""
    if not plays:
        return {}
    end = end if end is not None else plays[-1][0]
    out: dict[str, float] = {}
    for (t, play), nxt in zip(plays, [p[0] for p in plays[1:]] + [end]):
        stage = smap.stage_of(play)
        out[stage] = out.get(stage, 0.0) + max(0.0, nxt - t)
    return out


def run_once(project: str, inventory: str, check: bool, limit: str | None = None) -> dict:
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), os.path.join(project, "site.yml"),
           "-i", os.path.abspath(inventory)]
    cmd += ["--limit", limit] if limit else []
    cmd += ["--check", "--diff"] if check else []
    env = dict(os.environ, ANSIBLE_CONFIG=os.environ.get("ANSIBLE_CONFIG", os.path.join(project, "ansible.cfg")),
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PYTHONUNBUFFERED="1")
    t0 = time.monotonic()
    with subprocess.Popen(cmd, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace") as proc:
        assert proc.stdout is not None
        out = read_output((time.monotonic() - t0, line) for line in proc.stdout)
        rc = proc.wait()
    wall = time.monotonic() - t0
    return {"rc": rc, "wall_s": wall, "changed": out["changed"],
            "stages": stage_seconds(out["plays"], out["end"], StageMap.load(project))}


def medians(runs: list[dict]) -> dict:
    stages: dict[str, list[float]] = {}
    for r in runs:
        for s, sec in r["stages"].items():
            stages.setdefault(s, []).append(sec)
    return {"stages": {s: statistics.median(v) for s, v in stages.items()},
            "total_s": statistics.median(r["wall_s"] for r in runs),
            "changed": [r["changed"] for r in runs], "rc": [r["rc"] for r in runs]}


def render(label: str, m: dict) -> str:
    lines = [f"{label}: median of {len(m['rc'])} run(s): {m['total_s']:.1f} s in all; changed per run "
             f"{m['changed']}; exit codes {m['rc']}"]
    lines += [f"  {s:<18} {sec:6.1f} s" for s, sec in m["stages"].items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ascendops_cli.timing", description=__doc__.split("\n\n")[0])
    p.add_argument("-i", "--inventory", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--check", action="store_true", help="time site.yml --check --diff instead")
    p.add_argument("-l", "--limit")
    p.add_argument("--json", help="write the medians and every run as JSON")
    p.add_argument("--project-dir")
    a = p.parse_args(argv)
    project = os.path.abspath(a.project_dir) if a.project_dir else find_project_dir()
    runs = [run_once(project, a.inventory, a.check, a.limit) for _ in range(a.rounds)]
    m = medians(runs)
    print(render("site.yml --check --diff" if a.check else "site.yml (no-op re-run)", m), flush=True)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"check": a.check, "medians": m, "runs": runs}, f, indent=1)
    return 0 if all(rc == 0 for rc in m["rc"]) else 1


if __name__ == "__main__":
    sys.exit(main())
