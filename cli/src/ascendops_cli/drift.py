"""`ascendops drift`: what would `site.yml` change, per host and stage, without changing anything.

It runs the playbooks in check mode with diffs (`--check --diff`, always: no option turns check mode
off) through ansible-runner, reads the job events and reports every task that would change something:
host, stage, task, resource and a short before/after. Exit codes follow `terraform plan
-detailed-exitcode`: 0 converged, 2 drift found, 1 error (unreachable host, failed task, bad
inventory or playbook), the error named.

A stage that cannot be checked on a host in check mode (the npu_driver stage would install the driver
there first, and the stage needs the driver's tools) says so in one line, "<host>: <stage> not checkable in
--check: <why>"; the report lists it under the host as not checkable, neither a change nor an error,
and it counts as drift (exit 2): the host is not known to be converged.

The report is built from the event stream alone (DriftReport.from_events), so it is tested on
recorded events without a cluster.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from .stages import STAGES, StageMap

EXIT_CONVERGED, EXIT_ERROR, EXIT_DRIFT = 0, 1, 2
SCHEMA_VERSION = 1
# Lines of a before/after diff kept per change (the whole diff is in ansible-runner's artifacts).
DIFF_LINES = 12
# A before/after longer than this is reported as "content differs", not line by line.
BIG_FILE_LINES = 400
# Result keys that name the resource a task acts on, most specific first.
_RESOURCE_KEYS = ("dest", "path", "name", "key", "device", "unit", "pkg", "src", "image")
_CENSORED = "censored"
# The line a stage prints where it cannot be checked in --check (roles/roce/tasks/main.yml, playbooks/launch.yml,
# playbooks/collective.yml): "<host>: <stage> not checkable in --check: <why>".
NOT_CHECKABLE_MARK = " not checkable in --check: "


@dataclass
class Change:
    """One task that would change one resource on one host."""

    host: str
    stage: str
    task: str
    action: str
    resource: str | None = None
    diff: list[str] = field(default_factory=list)  # short unified before/after lines ("-", "+", " ")
    hidden: bool = False  # no_log: the result is censored, only the fact of a change is reported


@dataclass
class Failure:
    """A host that could not be judged: unreachable, a failed task, or the run itself failed."""

    host: str | None
    stage: str | None
    task: str | None
    kind: str  # unreachable | failed | run
    message: str


@dataclass
class NotCheckable:
    """A stage that could not be checked on a host in check mode, and why (its own line)."""

    host: str
    stage: str
    reason: str


@dataclass
class DriftReport:
    inventory: str
    limit: str | None
    stages: list[str]
    hosts: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    not_checkable: list[NotCheckable] = field(default_factory=list)
    duration_s: float | None = None

    # ---- building from ansible-runner events

    @classmethod
    def from_events(cls, events: Iterable[dict[str, Any]], stage_map: StageMap, *, inventory: str,
                    limit: str | None = None, stages: list[str] | None = None, rc: int = 0,
                    stdout_tail: str = "") -> DriftReport:
        report = cls(inventory=inventory, limit=limit, stages=list(stages or STAGES))
        hosts: dict[str, None] = {}
        for ev in events:
            kind = ev.get("event", "")
            data = ev.get("event_data") or {}
            host = data.get("host")
            if host and kind.startswith("runner_on_") and host != "localhost":
                hosts.setdefault(host, None)
            if kind == "playbook_on_stats":
                for section in ("ok", "changed", "failures", "dark", "skipped", "processed"):
                    for h in data.get(section) or {}:
                        if h != "localhost":
                            hosts.setdefault(h, None)
                continue
            if kind not in ("runner_on_ok", "runner_on_failed", "runner_on_unreachable"):
                continue
            stage = stage_map.stage_of(data.get("play"), data.get("task_path"), data.get("role"))
            res = data.get("res") or {}
            task = data.get("task") or "?"
            if kind == "runner_on_unreachable":
                report.failures.append(Failure(host, stage, task, "unreachable", _message(res)))
            elif kind == "runner_on_failed":
                if data.get("ignore_errors"):
                    continue
                report.failures.append(Failure(host, stage, task, "failed", _message(res)))
            elif stage in report.stages:
                report.changes.extend(_changes(host, stage, task, data.get("task_action") or "", res))
                reason = _not_checkable_reason(res)
                if reason and not any(n.host == host and n.stage == stage for n in report.not_checkable):
                    report.not_checkable.append(NotCheckable(host, stage, reason))
        if rc != 0 and not report.failures:
            # The run failed before any task did (syntax, inventory, a refused --limit ...): name it.
            report.failures.append(Failure(None, None, None, "run",
                                           f"ansible-playbook exited {rc}: {_last_lines(stdout_tail)}"))
        report.hosts = sorted(hosts)
        return report

    # ---- verdict and output

    @property
    def exit_code(self) -> int:
        if self.failures:
            return EXIT_ERROR
        return EXIT_DRIFT if self.changes or self.not_checkable else EXIT_CONVERGED

    @property
    def status(self) -> str:
        return {EXIT_CONVERGED: "converged", EXIT_DRIFT: "drift", EXIT_ERROR: "error"}[self.exit_code]

    def by_host(self) -> dict[str, dict[str, list[Change]]]:
        out: dict[str, dict[str, list[Change]]] = {h: {} for h in self.hosts}
        for c in self.changes:
            out.setdefault(c.host, {}).setdefault(c.stage, []).append(c)
        order = {s: i for i, s in enumerate(STAGES)}
        return {h: dict(sorted(st.items(), key=lambda kv: order.get(kv[0], len(order))))
                for h, st in sorted(out.items())}

    def not_checkable_by_host(self) -> dict[str, dict[str, str]]:
        """host -> stage -> why, stages in site.yml order."""
        order = {s: i for i, s in enumerate(STAGES)}
        out: dict[str, dict[str, str]] = {}
        for n in sorted(self.not_checkable, key=lambda n: (n.host, order.get(n.stage, len(order)))):
            out.setdefault(n.host, {})[n.stage] = n.reason
        return out

    def to_json(self) -> dict[str, Any]:
        """The documented schema (README, 'Drift report'): one object, hosts by name, stages in site.yml order."""
        hosts = {}
        unchecked = self.not_checkable_by_host()
        for host, stages in self.by_host().items():
            hosts[host] = {
                "status": "error" if any(f.host == host for f in self.failures) else
                          ("drift" if stages else "not_checkable" if unchecked.get(host) else "converged"),
                "changes": sum(len(v) for v in stages.values()),
                "stages": {s: [_change_json(c) for c in cs] for s, cs in stages.items()},
                "not_checkable": unchecked.get(host, {}),
            }
        return {
            "schema": SCHEMA_VERSION,
            "status": self.status,
            "exit_code": self.exit_code,
            "inventory": self.inventory,
            "limit": self.limit,
            "stages": self.stages,
            "duration_s": None if self.duration_s is None else round(self.duration_s, 1),
            "summary": {"hosts": len(self.hosts), "hosts_drifted": sum(1 for h in hosts.values() if h["changes"]),
                        "changes": len(self.changes), "not_checkable": len(self.not_checkable),
                        "errors": len(self.failures)},
            "hosts": hosts,
            "errors": [asdict(f) for f in self.failures],
        }

    def render(self) -> str:
        lines = []
        by_host = self.by_host()
        took = f", {self.duration_s:.0f} s" if self.duration_s is not None else ""
        drifted = sum(1 for st in by_host.values() if st)
        unchecked_note = (f", {len(self.not_checkable)} stage(s) not checkable on "
                          f"{len({n.host for n in self.not_checkable})} host(s)" if self.not_checkable else "")
        lines.append(f"ascendops drift: {self.status}: {len(self.changes)} change(s) on {drifted} of "
                     f"{len(by_host)} host(s){unchecked_note} ({self.inventory}"
                     f"{', limit ' + self.limit if self.limit else ''}{took})")
        unchecked = self.not_checkable_by_host()
        order = {s: i for i, s in enumerate(STAGES)}
        for host, stages in by_host.items():
            mine = unchecked.get(host, {})
            if not stages and not mine:
                lines.append(f"{host}: converged")
                continue
            lines.append(f"{host}:")
            for stage in sorted({*stages, *mine}, key=lambda s: order.get(s, len(order))):
                if stage in mine and stage not in stages:
                    lines.append(f"  {stage}: not checkable: {mine[stage]}")
                    continue
                lines.append(f"  {stage}:" + (f" (the rest not checkable: {mine[stage]})" if stage in mine else ""))
                for c in stages[stage]:
                    lines.append(f"    ~ {c.task}" + (f"  [{c.resource}]" if c.resource else ""))
                    if c.hidden:
                        lines.append("        (no_log: before/after hidden)")
                    lines.extend(f"        {d}" for d in c.diff)
        for f in self.failures:
            where = " / ".join(x for x in (f.host, f.stage, f.task) if x)
            lines.append(f"ERROR ({f.kind}) {where}: {f.message}" if where else f"ERROR ({f.kind}): {f.message}")
        return "\n".join(lines)


def _not_checkable_reason(res: dict[str, Any]) -> str | None:
    """The why of a stage's "not checkable in --check" line (a debug task's msg), else None."""
    msg = res.get("msg")
    if not isinstance(msg, str) or NOT_CHECKABLE_MARK not in msg:
        return None
    return " ".join(msg.split(NOT_CHECKABLE_MARK, 1)[1].split())


def _change_json(c: Change) -> dict[str, Any]:
    return {"task": c.task, "action": c.action, "resource": c.resource, "diff": c.diff, "hidden": c.hidden}


def _changes(host: str, stage: str, task: str, action: str, res: dict[str, Any]) -> list[Change]:
    """The changes one task result stands for: one per changed loop item, else one."""
    if _CENSORED in res:
        return [Change(host, stage, task, action, hidden=True)] if res.get("changed") else []
    if isinstance(res.get("results"), list):
        out = []
        for item in res["results"]:
            if isinstance(item, dict) and item.get("changed"):
                out.extend(_one(host, stage, task, action, item, label=_item_label(item)))
        return out
    return _one(host, stage, task, action, res) if res.get("changed") else []


def _one(host, stage, task, action, res, label=None) -> list[Change]:
    if _CENSORED in res:
        return [Change(host, stage, task, action, resource=label, hidden=True)]
    args = (res.get("invocation") or {}).get("module_args") or {}  # check mode often returns no dest/path
    resource = label or next((str(src[k]) for src in (res, args) for k in _RESOURCE_KEYS
                              if isinstance(src.get(k), (str, int)) and src.get(k) != ""), None)
    return [Change(host, stage, task, action, resource=resource, diff=summarize_diff(res.get("diff")))]


def _item_label(item: dict[str, Any]) -> str | None:
    label = item.get("_ansible_item_label", item.get("item"))
    if label is None:
        return None
    return label if isinstance(label, str) else json.dumps(label, sort_keys=True, default=str)[:120]


def summarize_diff(diff: Any, limit: int = DIFF_LINES) -> list[str]:
    """A short before/after from a module's `diff` (a dict or a list of dicts with before/after,
    strings or structures, or a `prepared` text): changed lines only, at most `limit`."""
    if not diff:
        return []
    parts = diff if isinstance(diff, list) else [diff]
    out: list[str] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        if part.get("prepared"):
            out.extend(ln for ln in str(part["prepared"]).splitlines()
                       if ln[:1] in "+-" and not ln.startswith(("+++", "---")))
            continue
        if "before" not in part and "after" not in part:
            continue
        before, after = _comparable(_text(part.get("before")), _text(part.get("after")))
        if before == after:
            continue
        header = part.get("after_header") or part.get("before_header")
        if header and len(parts) > 1:
            out.append(f"@ {header}")
        nb, na = before.count("\n") + 1, after.count("\n") + 1
        if max(nb, na) > BIG_FILE_LINES:  # a package or an archive: its lines say nothing
            out.append(f"~ content differs ({nb} lines before, {na} after)")
            continue
        out.extend(_line_diff(before, after))
    if len(out) > limit:
        out = out[:limit] + [f"... {len(out) - limit} more line(s)"]
    return out


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, indent=1, sort_keys=True, default=str)
    return str(value)


def _comparable(before: str, after: str) -> tuple[str, str]:
    """Two JSON documents (daemon.json, a rank table) re-rendered alike, so that only changed values
    show, not a file's own indentation; other texts as they are."""
    try:
        b, a = json.loads(before), json.loads(after)
    except ValueError:
        return before, after
    if not isinstance(b, (dict, list)) or not isinstance(a, (dict, list)):
        return before, after
    return (json.dumps(b, indent=1, sort_keys=True), json.dumps(a, indent=1, sort_keys=True))


def _line_diff(before: str, after: str) -> list[str]:
    import difflib

    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return [ln for ln in lines if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


def _message(res: dict[str, Any]) -> str:
    if _CENSORED in res:
        return "(output hidden by no_log)"
    if isinstance(res.get("results"), list):  # a loop: the failed items' own messages
        failed = [r for r in res["results"] if isinstance(r, dict) and r.get("failed")]
        if failed:
            return " ; ".join(f"[{_item_label(r)}] {_message(r)}" for r in failed)[:1200]
    msg = res.get("msg") or res.get("stderr") or res.get("module_stderr") or res.get("stdout") or ""
    if isinstance(msg, (list, dict)):
        msg = json.dumps(msg, default=str)
    return " ".join(str(msg).split())[:600] or "(no message)"


def _last_lines(text: str, n: int = 6) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[-n:]) or "(no output)"


# ---- running it

def find_project_dir(start: str | None = None) -> str:
    """The clone to run from: ASCENDOPS_PROJECT_DIR, else the first directory up from `start` (the
    working directory) holding playbooks/site.yml, else the clone this package is installed from."""
    env = os.environ.get("ASCENDOPS_PROJECT_DIR")
    if env:
        return os.path.abspath(env)
    here = os.path.abspath(start or os.getcwd())
    while True:
        if os.path.isfile(os.path.join(here, "playbooks", "site.yml")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    # cli/src/ascendops_cli/drift.py in a clone (editable install)
    return os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def extra_vars_args(values: Iterable[str]) -> list[str]:
    """ansible-playbook's `-e` arguments for the command's -e values, each judged first by Ansible's own readers
    (as ansible-playbook's load_extra_vars reads it: parse_kv for KEY=VALUE, its DataLoader for a YAML/JSON
    mapping, @FILE), so a value it would refuse only after the run started, or take silently without it being
    a variable (a word without `=`: `_raw_params`), is refused here, named. The values are passed on as
    given, except that a relative @FILE becomes absolute: ansible-playbook runs in the project directory,
    the user meant the file from where they typed the command."""
    from ansible.errors import AnsibleError
    from ansible.parsing.dataloader import DataLoader
    from ansible.parsing.splitter import parse_kv

    args: list[str] = []
    for value in values:
        if not value:
            continue  # ansible-playbook skips it as well
        if value.startswith("@"):
            path = os.path.abspath(value[1:])
            if not os.path.isfile(path):
                raise ValueError(f"-e {value!r}: {path} is not a file")
            value = "@" + path  # its content is read by ansible-playbook
        elif value[0] in "/.":
            raise ValueError(f"-e {value!r}: a file of variables is given as @FILE")
        else:
            try:
                data = DataLoader().load(value) if value[0] in "[{" else parse_kv(value)
            except AnsibleError as e:
                raise ValueError(f"-e {value!r}: {str(e).splitlines()[0]}") from None
            if not isinstance(data, dict):
                raise ValueError(f"-e {value!r}: not a mapping of variables (YAML/JSON)")
            if "_raw_params" in data:
                raise ValueError(f"-e {value!r}: {data['_raw_params']!r} is not KEY=VALUE "
                                 "(extra variables: KEY=VALUE ..., a YAML/JSON mapping or @FILE)")
        args += ["-e", value]
    return args


def run_drift(inventory: str, *, project_dir: str, limit: str | None = None, stages: list[str] | None = None,
              extra_vars: list[str] | None = None, keep_artifacts: str | None = None,
              verbose: bool = False) -> DriftReport:
    """Run the playbooks in check mode with diffs through ansible-runner and build the report.

    ``extra_vars``: each value of the command's ``-e``, handed to ansible-playbook's own ``-e`` unchanged
    (ansible-runner's cmdline), so KEY=VALUE with quoting, YAML/JSON and @file read exactly as there; a
    value Ansible would not read as variables is refused first, named (extra_vars_args)."""
    import ansible_runner

    extra_args = extra_vars_args(extra_vars or ())

    smap = StageMap.load(project_dir)
    chosen = list(stages or STAGES)
    if set(chosen) >= set(STAGES):
        playbooks = [os.path.join(project_dir, "playbooks", "site.yml")]
    else:
        playbooks = smap.playbooks_for(chosen)
    private = keep_artifacts or tempfile.mkdtemp(prefix="ascendops-drift-")
    os.makedirs(private, exist_ok=True)
    wrapper = os.path.join(private, "drift.yml")
    with open(wrapper, "w", encoding="utf-8") as f:  # one playbook importing the chosen ones, by absolute path
        f.write("---\n" + "".join(f"- ansible.builtin.import_playbook: {json.dumps(p)}\n" for p in playbooks))
    env = {
        # ansible-playbook from the same virtualenv as this command, even when it is not activated
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
        "ANSIBLE_CONFIG": os.environ.get("ANSIBLE_CONFIG", os.path.join(project_dir, "ansible.cfg")),
        "ANSIBLE_FORCE_COLOR": "0",
        # ansible-runner gives ansible-playbook a terminal: without this its errors in the report carry colour codes
        "ANSIBLE_NOCOLOR": "1",
    }
    started = time.monotonic()
    try:
        r = ansible_runner.run(
            private_data_dir=private, project_dir=project_dir, playbook=wrapper,
            inventory=os.path.abspath(inventory), limit=limit,
            # always --check --diff: drift never changes a node
            cmdline=shlex.join(["--check", "--diff", *extra_args]),
            envvars=env, quiet=not verbose, suppress_env_files=True,
        )
        events = list(r.events)
        stdout = r.stdout.read() if r.stdout else ""
        report = DriftReport.from_events(events, smap, inventory=inventory, limit=limit, stages=chosen,
                                         rc=r.rc if r.rc is not None else 1, stdout_tail=stdout[-4000:])
    finally:
        if not keep_artifacts:
            shutil.rmtree(private, ignore_errors=True)
    report.duration_s = time.monotonic() - started
    return report
