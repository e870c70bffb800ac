"""Seconds per stage of a playbook run, from ansible-runner's events (scripts/bench-rerun.sh).

`python -m ascendops_cli.timing -i INVENTORY [--check] [--rounds 3]` runs `site.yml` (with
`--check --diff` when asked) ROUNDS times and prints, per stage and in total, the median of the
rounds, with the changed count of each round: a no-op re-run must report changed=0.
A stage's time runs from its first play's start to the start of the next stage's play (the last
one to the end of the run), so fact gathering and include overhead count where they happen.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

from .drift import find_project_dir
from .stages import StageMap


def _ts(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def stage_seconds(events: list[dict], smap: StageMap) -> dict[str, float]:
    """{stage: seconds} of one run, in the order the stages ran."""
    marks: list[tuple[float, str]] = []
    end = None
    for ev in events:
        created = ev.get("created")
        if not created:
            continue
        if ev.get("event") == "playbook_on_play_start":
            data = ev.get("event_data") or {}
            marks.append((_ts(created), smap.stage_of(data.get("play") or data.get("name"))))
        elif ev.get("event") == "playbook_on_stats":
            end = _ts(created)
    if not marks:
        return {}
    end = end if end is not None else marks[-1][0]
    out: dict[str, float] = {}
    for (t, stage), nxt in zip(marks, marks[1:] + [(end, None)]):
        out[stage] = out.get(stage, 0.0) + max(0.0, nxt[0] - t)
    return out


def changed_count(events: list[dict]) -> int:
    for ev in events:
        if ev.get("event") == "playbook_on_stats":
            return sum((ev.get("event_data") or {}).get("changed", {}).values())
    return -1


def run_once(project: str, inventory: str, check: bool, limit: str | None = None) -> dict:
    import ansible_runner

    private = tempfile.mkdtemp(prefix="ascendops-timing-")
    try:
        env = {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
               "ANSIBLE_CONFIG": os.environ.get("ANSIBLE_CONFIG", os.path.join(project, "ansible.cfg"))}
        t0 = time.monotonic()
        r = ansible_runner.run(private_data_dir=private, project_dir=project,
                               playbook=os.path.join(project, "site.yml"), inventory=os.path.abspath(inventory),
                               limit=limit, cmdline="--check --diff" if check else None, envvars=env, quiet=True,
                               suppress_env_files=True)
        wall = time.monotonic() - t0
        events = list(r.events)
        return {"rc": r.rc, "wall_s": wall, "changed": changed_count(events),
                "stages": stage_seconds(events, StageMap.load(project))}
    finally:
        shutil.rmtree(private, ignore_errors=True)


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
