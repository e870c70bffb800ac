# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The training job's life on a node and across the cluster.

Inputs per node: the systemd unit's properties (``systemctl show``), the status file the trainer
writes (``ASCENDOPS_STATUS_FILE``, schema 1: state, step, steps, loss, tokens/s per device, last
checkpoint, exit code, reason), the user's intent the tool records (``stop.yml``: stopped), whether
the container exists, and whether the job description changed since it was started.

``node_verdict()`` names the node's state: running, starting, restarting (systemd retries a crash),
stopping, completed, stopped (by the user, through stop.yml), failed (start limit hit, or a
do-not-retry exit: 2 configuration, 3 rank table, 4 non-finite loss), drift (stopped or disabled
outside the tool, the container vanished), new (never started here). ``restart_plan()`` decides for
the cluster: a completed or user-stopped job is left alone; drift and a changed job start every node
together; a failed job is reported and restarted only when it changed or the user asks.
"""

from __future__ import annotations

import re

from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_errors import ERROR_CODES, find_codes

EXIT_CODES = {
    0: "completed",
    1: "crashed (a retry makes sense)",
    2: "configuration error",
    3: "rank table error",
    4: "non-finite loss or gradient norm",
    143: "stopped on SIGTERM after saving",
}
DO_NOT_RETRY = (2, 3, 4)
STATES = ("new", "starting", "running", "restarting", "stopping", "completed", "stopped", "failed", "drift")
# States in which systemd runs (or is about to run) the job: left alone.
ALIVE = ("starting", "running", "restarting", "stopping")

# What a code usually means and what to do about it: one table for every reader (ascend_errors.py).
HCCL_ERRORS = {code: (entry[1], entry[2]) for code, entry in ERROR_CODES.items()}
# torch prints a rank's uncaught exception with a "[rank3]: " prefix on every line.
_RANK_PREFIX_RE = re.compile(r"^\s*\[(?:rank|default)\d+\]:\s?")


def hccl_errors(text):
    """Known HCCL/CANN error codes in ``text``, in order of first appearance:
    [{code, meaning, fix, line}] (line = the first log line holding the code)."""
    found = {}
    for line in str(text or "").splitlines():
        for code in find_codes(line):
            if code not in found:
                meaning, fix = HCCL_ERRORS[code]
                found[code] = {"code": code, "meaning": meaning, "fix": fix, "line": line.strip()[:300]}
    return list(found.values())


def log_excerpt(text, lines=30, error_lines=40):
    """What a person needs from a failed job's log: the first error (a Python traceback up to its
    exception line; torchrun's own summary blocks are skipped, they only name the failed rank) and
    then the last ``lines`` lines, without repeating lines that are in both. A list of lines."""
    all_lines = str(text or "").splitlines()
    tail_start = max(len(all_lines) - int(lines), 0)
    first_error = []
    for i, line in enumerate(all_lines[:tail_start]):
        if _RANK_PREFIX_RE.sub("", line, count=1).lstrip().startswith("Traceback (most recent call last)"):
            block = [line]
            for nxt in all_lines[i + 1:tail_start]:
                block.append(nxt)
                # the exception line: not indented (after a "[rankN]: " prefix), after the indented frames
                body = _RANK_PREFIX_RE.sub("", nxt, count=1)
                if body and not body[0].isspace() and ":" in body:
                    break
            if any("torch/distributed/run.py" in b or "launcher/api.py" in b for b in block):
                continue  # torchrun's own failure report: the rank's error comes before it
            first_error = block[: int(error_lines)]
            if len(block) > int(error_lines):
                first_error += [f"... ({len(block) - int(error_lines)} more lines)", block[-1]]
            break
    if first_error:
        return first_error + ["..."] + all_lines[tail_start:]
    return all_lines[tail_start:]


def exit_meaning(code):
    try:
        code = int(code)
    except (TypeError, ValueError):
        return "unknown"
    return EXIT_CODES.get(code, f"exit {code}")


def _int(value, default=0):
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return default


def _status_for(status, job):
    """The status file's content when it is this job's (schema 1), else None."""
    if not isinstance(status, dict) or status.get("schema") != 1:
        return None
    if status.get("job") not in (None, job):
        return None
    return status


def node_verdict(unit, status=None, intent=None, job=None, container=None, started_fingerprint=None,
                 fingerprint=None, now_monotonic_s=None, container_grace_s=120):
    """The job's state on one node.

    unit: ``systemctl show`` properties (LoadState, ActiveState, SubState, Result, ExecMainStatus,
    ExecMainStartTimestampMonotonic, ActiveEnterTimestampMonotonic, NRestarts, UnitFileState).
    status: the trainer's status file (dict) or None. intent: the tool's record ({job, intent:
    stopped, at}) or None. container: the container's state (running, exited, ...) or None when it
    does not exist. started_fingerprint / fingerprint: of the job last started here / as configured
    now. now_monotonic_s: the node's CLOCK_MONOTONIC (systemd's monotonic timestamps), to tell a
    container still being created from one that vanished.

    Returns {state, reason, changed, enabled, exit_code, restarts, stopped_by_user, since_s}.
    """
    unit = unit or {}
    status = _status_for(status, job)
    stopped_by_user = bool(isinstance(intent, dict) and intent.get("intent") == "stopped"
                           and intent.get("job") in (None, job))
    active = unit.get("ActiveState", "")
    sub = unit.get("SubState", "")
    result = unit.get("Result", "")
    ran = _int(unit.get("ExecMainStartTimestampMonotonic")) > 0
    code = _int(unit.get("ExecMainStatus"), None) if ran else None
    restarts = _int(unit.get("NRestarts"))
    enabled = unit.get("UnitFileState", "") in ("enabled", "enabled-runtime", "static", "alias")
    changed = bool(fingerprint) and fingerprint != (started_fingerprint or "")
    out = {"changed": changed, "enabled": enabled, "exit_code": code, "restarts": restarts,
           "stopped_by_user": stopped_by_user, "unit_state": f"{active}/{sub}".strip("/")}
    if status and status.get("exit_code") is not None and code is None:
        out["exit_code"] = _int(status.get("exit_code"), None)
    reason_tail = f": {status['reason']}" if status and status.get("reason") else ""

    def verdict(state, reason, enable_only=False):
        return dict(out, state=state, reason=reason, enable_only=enable_only)

    if unit.get("LoadState") not in (None, "", "loaded"):
        if stopped_by_user:
            return verdict("stopped", "stopped by stop.yml (the unit is not installed)")
        if not started_fingerprint:
            return verdict("new", "not started on this node yet")
        return verdict("drift", f"the unit is {unit.get('LoadState')} (removed outside ascendops)")
    if active in ("active", "reloading"):
        if container is None and now_monotonic_s is not None:
            since = (float(now_monotonic_s) - _int(unit.get("ActiveEnterTimestampMonotonic")) / 1e6)
            if since > container_grace_s:
                return verdict("drift", f"the unit runs but its container is gone (for {since:.0f} s)")
        if not enabled and not stopped_by_user:
            return verdict("drift", "running, but the unit was disabled outside ascendops (it would not start at boot)",
                           enable_only=True)
        return verdict("running", "running" + (f" after {restarts} restart(s)" if restarts else ""))
    if active == "activating":
        if sub == "auto-restart":
            return verdict("restarting", f"systemd restarts it after a failure ({restarts} restart(s) so far)"
                           f"{reason_tail}")
        return verdict("starting", "starting")
    if active == "deactivating":
        return verdict("stopping", "stopping (final checkpoint)")
    if active == "failed":
        if result == "start-limit-hit":
            return verdict("failed", f"restarted {restarts} time(s) and hit the start limit{reason_tail}")
        if code in DO_NOT_RETRY:
            return verdict("failed", f"exit {code} ({exit_meaning(code)}), not retried{reason_tail}")
        if restarts:
            # systemd reports the last exit's result when its start limit stops the restarts
            return verdict("failed", f"restarted {restarts} time(s) and hit the start limit; last exit {code} "
                           f"({exit_meaning(code)}){reason_tail}")
        return verdict("failed", f"{result or 'failed'}, exit {code} ({exit_meaning(code)}){reason_tail}")
    # inactive: not running, and systemd does not mean to run it
    if stopped_by_user:
        return verdict("stopped", f"stopped by stop.yml{_at(intent)}")
    if ran and result == "success" and code == 0:
        return verdict("completed", _completed(status))
    if not ran and status and status.get("state") == "completed":
        return verdict("completed", _completed(status))
    if not ran and not started_fingerprint and status is None:
        return verdict("new", "not started on this node yet")
    if (ran and code == 143) or (status and status.get("state") == "stopped"):
        return verdict("drift", "stopped outside ascendops (not through stop.yml)")
    if status and status.get("state") in ("running", "starting"):
        return verdict("drift", "the container vanished (the status file says running, the unit is not)")
    if not enabled:
        return verdict("drift", "the unit was stopped and disabled outside ascendops")
    return verdict("drift", "not running (stopped outside ascendops, or the node restarted and the unit did not)")


def container_verdict(status=None, intent=None, job=None, container=None, started_fingerprint=None,
                      fingerprint=None):
    """The job's state on a node where a scheduler (Slurm: launch_scheduler=slurm) runs the job's container,
    not a systemd unit: from the container (its engine's state, None when there is none), the trainer's
    status file and the stop record. The scheduler's own view (queued, running, requeued) is the Slurm
    job's (module_utils/slurm.py); this is the node's part. Same keys as node_verdict()."""
    status = _status_for(status, job)
    stopped_by_user = bool(isinstance(intent, dict) and intent.get("intent") == "stopped"
                           and intent.get("job") in (None, job))
    changed = bool(fingerprint) and fingerprint != (started_fingerprint or "")
    code = _int(status.get("exit_code"), None) if status and status.get("exit_code") is not None else None
    out = {"changed": changed, "enabled": True, "exit_code": code, "restarts": 0,
           "stopped_by_user": stopped_by_user, "unit_state": ""}
    reason_tail = f": {status['reason']}" if status and status.get("reason") else ""

    def verdict(state, reason):
        return dict(out, state=state, reason=reason, enable_only=False)

    if container in ("running", "created", "restarting", "paused"):
        return verdict("running", f"its container is {container} (under Slurm)")
    if container == "removing":
        return verdict("stopping", "its container is being removed")
    if stopped_by_user:
        return verdict("stopped", f"stopped by stop.yml{_at(intent)}")
    state = status.get("state") if status else None
    if state == "completed":
        return verdict("completed", _completed(status))
    if state == "failed" or code in DO_NOT_RETRY:
        return verdict("failed", f"exit {code} ({exit_meaning(code)}){reason_tail}")
    if state == "stopped" or code == 143:
        return verdict("drift", "not running: stopped after its final checkpoint (scancel, the time limit or a "
                       "node failure, not stop.yml)")
    if state in ("running", "starting"):
        return verdict("drift", "not running here now (the status file says running, no container)")
    if not started_fingerprint and status is None:
        return verdict("new", "not started on this node yet")
    return verdict("drift", "not running here now")


def _at(intent):
    at = intent.get("at") if isinstance(intent, dict) else None
    return f" ({intent.get('at_text') or at})" if at else ""


def _completed(status):
    if status and status.get("steps"):
        return f"completed at step {status.get('step')}/{status.get('steps')}"
    return "completed (exit 0)"


def trained_since(status, since, job=None):
    """Whether the trainer of a start at ``since`` (epoch s) logged a step or completed."""
    status = _status_for(status, job)
    if not status or since is None:
        return False
    if float(status.get("started_at") or 0) + 5 < float(since):
        return False
    return status.get("state") == "completed" or (status.get("state") == "running" and _int(status.get("step")) > 0)


def restart_plan(nodes, changed_data=None, restart_failed=False, start_stopped=False):
    """The cluster's decision from every node's verdict ({host: node_verdict()}).

    Returns {action: start|none, reason, fail (a failed job left alone: the play reports it as an
    error), enable (hosts whose unit only needs enabling again), clear_intent (start_stopped used)}.
    """
    hosts = list(nodes)
    changed_data = changed_data or {}
    by = {}
    for h in hosts:
        by.setdefault(nodes[h]["state"], []).append(h)
    changed = [h for h in hosts if nodes[h].get("changed") or changed_data.get(h)]

    def plan(action, reason, fail=False, clear_intent=False):
        enable = [] if action == "start" else [
            h for h in hosts if not nodes[h].get("enabled") and nodes[h]["state"] not in ("stopped", "failed")]
        return {"action": action, "reason": reason, "fail": fail, "enable": enable, "clear_intent": clear_intent}

    def names(hs):
        return ", ".join(hs)

    if by.get("stopped"):
        if not start_stopped:
            more = (f"; the job changed since on {names(changed)}" if changed else "")
            return plan("none", f"stopped by stop.yml on {names(by['stopped'])}: left stopped{more} "
                        "(set launch_start_stopped=true to start it)")
        return plan("start", f"launch_start_stopped: starting the job stopped on {names(by['stopped'])}",
                    clear_intent=True)
    if changed:
        fresh = by.get("new", [])
        if set(changed) <= set(fresh):
            return plan("start", f"not started yet on {names(changed)}")
        return plan("start", f"the job changed on {names(changed)}")
    if by.get("failed"):
        detail = "; ".join(f"{h}: {nodes[h]['reason']}" for h in by["failed"])
        if restart_failed:
            return plan("start", f"launch_restart_failed: restarting the failed job ({detail})")
        return plan("none", f"the job failed ({detail}); left as it is: fix the cause and change the job, or set "
                    "launch_restart_failed=true to start it again", fail=True)
    drift = by.get("drift", []) + by.get("new", [])
    # a node only disabled while the job runs needs enabling, not a restart
    disabled_only = [h for h in by.get("drift", []) if nodes[h].get("enable_only")]
    restart_drift = [h for h in drift if h not in disabled_only]
    if restart_drift:
        detail = "; ".join(f"{h}: {nodes[h]['reason']}" for h in restart_drift)
        return plan("start", f"not running on {names(restart_drift)} ({detail})")
    if disabled_only:
        p = plan("none", f"running; the unit is enabled again on {names(disabled_only)} (disabled outside ascendops)")
        p["enable"] = disabled_only
        return p
    if by.get("stopping"):
        return plan("none", f"stopping on {names(by['stopping'])} (someone stops it): left alone, run again later")
    if len(by.get("completed", [])) == len(hosts):
        return plan("none", f"completed on every node ({nodes[hosts[0]]['reason']}): left alone")
    alive = [h for h in hosts if nodes[h]["state"] in ALIVE]
    states = ", ".join(f"{h} {nodes[h]['state']}" for h in hosts)
    if alive:
        return plan("none", f"unchanged and running ({states}): left alone")
    return plan("none", f"left alone ({states})")


def _fmt(value, spec):
    return "n/a" if value is None else format(value, spec)


def status_line(node, verdict, status=None, job=None):
    """One line per node for the reports: state and reason, then the trainer's progress."""
    status = _status_for(status, job)
    head = f"{node}: {verdict.get('state')} ({verdict.get('reason')})"
    if verdict.get("restarts"):
        head += f", restarts {verdict['restarts']}"
    if not status:
        return head + "; no status file yet"
    parts = [f"node_rank {status.get('node_rank')}"]
    if status.get("step") is not None:
        parts.append(f"step {status.get('step')}/{status.get('steps')}")
    parts.append(f"loss {_fmt(status.get('loss'), '.4f')}")
    parts.append(f"{_fmt(status.get('tokens_per_s_per_device'), ',.0f')} tokens/s per device")
    ckpt = status.get("last_checkpoint")
    at = status.get("last_checkpoint_step")
    parts.append(f"last checkpoint {ckpt or 'none'}" + (f" (step {at})" if ckpt and at else ""))
    if status.get("state") in ("failed", "stopped") and status.get("reason"):
        parts.append(f"trainer: {status.get('state')}: {status.get('reason')}")
    return head + "; " + ", ".join(parts)


UNIT_PROPERTIES = ("LoadState", "ActiveState", "SubState", "Result", "ExecMainStatus", "ExecMainCode",
                   "ExecMainStartTimestampMonotonic", "ActiveEnterTimestampMonotonic", "NRestarts",
                   "UnitFileState", "MainPID")


def parse_properties(text):
    """``KEY=value`` lines (``systemctl show``) into a dict; the first ``=`` splits."""
    out = {}
    for line in str(text or "").splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


_CONTAINER_ID_RE = re.compile(r"^[0-9a-f]{64}$")


def in_job_cgroup(cgroup_text, service, container_ids=()):
    """Whether a process's ``/proc/<pid>/cgroup`` puts it in the job unit (``<service>.service``) or in one
    of the job's containers (their full IDs: ``/docker/<id>``, ``docker-<id>.scope``, ``libpod-<id>``)."""
    ids = {str(i) for i in container_ids or () if _CONTAINER_ID_RE.match(str(i))}
    for line in str(cgroup_text or "").splitlines():
        path = line.split(":", 2)[-1]
        parts = [p for p in path.split("/") if p]
        if f"{service}.service" in parts:
            return True
        for part in parts:
            if any(i in part for i in ids):
                return True
    return False


def classify_processes(rows, environs, service, job, devices, cgroups=None, container_ids=()):
    """Split the NPU process table (``npu_smi.parse_npu_smi_processes`` rows) into this job's
    processes and others. ``cgroups``: {pid: text of /proc/<pid>/cgroup} (None when gone). A process
    is this job's only when its cgroup is the job unit's or one of the job's containers'
    (``container_ids``, as the engine gives them): an environment that names the job (anyone can set
    ASCENDOPS_JOB) makes no process the job's. ``environs`` ({pid: {VAR: value}} or None) only names
    the job of the others in reports. Others are never signalled; ``blocking`` marks those holding one
    of this job's NPUs (``devices``)."""
    ours, others = [], []
    wanted = {str(d) for d in devices or ()}
    cgroups = cgroups or {}
    for row in rows:
        cgroup = cgroups.get(row["pid"])
        if cgroup is None:
            continue  # gone since npu-smi listed it
        env = environs.get(row["pid"]) or {}
        mine = in_job_cgroup(cgroup, service, container_ids)
        entry = dict(row, job=env.get("ASCENDOPS_JOB"), service=env.get("ASCENDOPS_SERVICE"),
                     blocking=str(row.get("npu_id")) in wanted)
        (ours if mine else others).append(entry)
    return {"ours": ours, "others": others}


class JobInfo:
    """ascend_job_info: reads a node's job state (read-only) and names it."""

    def __init__(self, module):
        self.module = module
        self.p = module.params

    def _run(self, argv):
        return self.module.run_command(argv, environ_update={"LC_ALL": "C", "SYSTEMD_PAGER": "", "SYSTEMD_COLORS": "0"})

    def _read_json(self, path):
        import json
        import os

        if not path or not os.path.exists(path):
            return None
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as exc:
            self.module.warn(f"{path} cannot be read as JSON ({exc}): ignored")
            return None
        return data if isinstance(data, dict) else None

    def _read_text(self, path):
        import os

        if not path or not os.path.exists(path):
            return ""
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()

    def unit(self):
        systemctl = self.module.get_bin_path("systemctl", required=True)
        rc, out, err = self._run([systemctl, "show", self.p["service"], "--property=" + ",".join(UNIT_PROPERTIES)])
        if rc != 0:
            self.module.fail_json(msg=f"systemctl show {self.p['service']} failed (rc {rc}): {err.strip()}")
        return parse_properties(out)

    def container(self):
        engine = self.module.get_bin_path(self.p["engine"])
        if engine is None:
            return None
        rc, out, _err = self._run([engine, "inspect", "--format", "{{.State.Status}}", self.p["container"]])
        return out.strip() or "unknown" if rc == 0 else None

    def processes(self):
        from ansible_collections.ascendops.cluster.plugins.module_utils.npu_smi import parse_npu_smi_processes

        rc, out, err = self._run([self.p["npu_smi"], "info"])
        if rc != 0:
            self.module.fail_json(msg=f"npu-smi info failed (rc {rc}): {(out + err).strip()[-300:]}")
        try:
            rows = parse_npu_smi_processes(out)
        except ValueError as exc:
            self.module.fail_json(msg=f"npu-smi info: {exc}")
        environs, cgroups = {}, {}
        for row in rows:
            try:
                with open(f"/proc/{row['pid']}/cgroup", encoding="utf-8", errors="replace") as handle:
                    cgroups[row["pid"]] = handle.read()
                with open(f"/proc/{row['pid']}/environ", "rb") as handle:
                    raw = handle.read().split(b"\0")
            except OSError:
                environs[row["pid"]] = None
                continue
            env = {}
            for item in raw:
                if b"=" in item:
                    key, value = item.split(b"=", 1)
                    env[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
            environs[row["pid"]] = env
        return classify_processes(rows, environs, self.p["service"], self.p["job"], self.p["devices"],
                                  cgroups=cgroups, container_ids=self.container_ids())

    def container_ids(self):
        """Full IDs of the job's containers on the node (the job's and its collective pre-flight's)."""
        engine = self.module.get_bin_path(self.p["engine"])
        if engine is None:
            return []
        ids = []
        for name in (self.p["container"], self.p["container"] + "-collective"):
            rc, out, _err = self._run([engine, "inspect", "--type", "container", "--format", "{{.Id}}", name])
            if rc == 0:
                ids += [line.strip() for line in out.splitlines() if line.strip()]
        return ids

    def log(self):
        if self.p.get("scheduler") == "slurm":
            # the container's output (the task script removes the container when it ends: the Slurm job's
            # output file holds it then)
            engine = self.module.get_bin_path(self.p["engine"])
            if engine is None:
                return ""
            rc, out, err = self._run([engine, "logs", "--tail", "2000", self.p["container"]])
            return (out + err) if rc == 0 else ""
        journalctl = self.module.get_bin_path("journalctl")
        if journalctl is None:
            return ""
        rc, out, _err = self._run([journalctl, "--unit", self.p["service"], "--output", "cat", "--no-pager",
                                   "--lines", "2000"])
        return out if rc == 0 else ""

    def run(self):
        import time

        slurm = self.p.get("scheduler") == "slurm"
        unit = {} if slurm else self.unit()
        status = self._read_json(self.p["status_file"])
        intent = self._read_json(self.p["intent_file"])
        container = self.container()
        started = self._read_text(self.p["fingerprint_file"])
        if slurm:
            verdict = container_verdict(status=status, intent=intent, job=self.p["job"], container=container,
                                        started_fingerprint=started, fingerprint=self.p["fingerprint"])
        else:
            verdict = node_verdict(unit, status=status, intent=intent, job=self.p["job"], container=container,
                                   started_fingerprint=started, fingerprint=self.p["fingerprint"],
                                   now_monotonic_s=time.monotonic(), container_grace_s=self.p["container_grace_s"])
        mine = _status_for(status, self.p["job"])
        job = dict(verdict, unit=unit, status=mine, intent=intent, container=container,
                   trained_since=trained_since(mine, self.p["since"], self.p["job"]),
                   line=status_line(self.module.params.get("node") or "", verdict, mine, self.p["job"]),
                   excerpt=[], errors=[])
        if self.p["log_lines"] and verdict["state"] in ("failed", "restarting", "drift"):
            text = self.log()
            job["excerpt"] = log_excerpt(text, self.p["log_lines"])
            job["errors"] = hccl_errors("\n".join(text.splitlines()[-200:]))
        if self.p["processes"]:
            job["processes"] = self.processes()
        self.module.exit_json(changed=False, job=job)
