# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm, as the launch stage uses it: the batch script of the job, the outputs it reads
(``squeue``, ``scontrol show job -o``, ``sinfo -N``, ``scontrol show config``, ``scontrol ping``)
and the decision for the cluster (submit, leave alone, cancel and submit again).

Sources for the formats (Slurm 22.05, the version Debian 12 ships; 21.08 on Ubuntu 22.04 prints the
same): squeue(1) ``--format`` field specifiers (%i job id, %j name, %T state in long form, %r reason,
%N node list, %k comment), job state codes in squeue(1) "JOB STATE CODES"; ``scontrol show job -o``
prints one line of ``Key=Value`` pairs (scontrol(1) ``--oneliner``); sinfo(1) ``-N`` node-oriented
with %N node, %P partition (the default one marked ``*``), %G generic resources, %T state (suffixes
``*`` not responding, ``~`` powered off, ``#`` powering up, ``%`` powering down, ``$`` maintenance,
``@`` pending reboot, ``!`` pending power down, ``^`` rebooting, ``-`` planned); ``scontrol ping``
prints ``Slurmctld(primary) at <host> is UP`` per controller.

Slurm has no Ascend GRES plugin: ``Name=npu File=/dev/davinci[0-7]`` in gres.conf is a counter. It sets
no device variable for it and in 22.05 does not fence it (ConstrainDevices covers such GRES from 23.02):
the job asks for whole nodes (``--exclusive``, ``--gres=npu:<all>``) and each node's task runs the
container with that node's NPUs, as the systemd path does.
"""

from __future__ import annotations

import re
import shlex

from ansible_collections.ascendops.cluster.plugins.module_utils.job_container import WAIT_SCRIPT, ContainerSpec

# squeue's long state names (squeue(1) JOB STATE CODES) in which the job holds or waits for nodes.
ACTIVE_STATES = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_FED",
                 "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD")
# The compact codes of squeue(1) for each long name (status reports print both).
STATE_CODES = {
    "BOOT_FAIL": "BF", "CANCELLED": "CA", "COMPLETED": "CD", "CONFIGURING": "CF", "COMPLETING": "CG",
    "DEADLINE": "DL", "FAILED": "F", "NODE_FAIL": "NF", "OUT_OF_MEMORY": "OOM", "PENDING": "PD",
    "PREEMPTED": "PR", "RUNNING": "R", "RESV_DEL_HOLD": "RD", "REQUEUE_FED": "RF", "REQUEUE_HOLD": "RH",
    "REQUEUED": "RQ", "RESIZING": "RS", "REVOKED": "RV", "SIGNALING": "SI", "SPECIAL_EXIT": "SE",
    "STAGE_OUT": "SO", "STOPPED": "ST", "SUSPENDED": "S", "TIMEOUT": "TO",
}
# The marker in the job's comment: ours, and the fingerprint of the job as submitted.
COMMENT_PREFIX = "ascendops:"
# squeue's fields, in this order, separated by '|' (the comment last: it may hold '|').
SQUEUE_FORMAT = "%i|%j|%T|%r|%N|%u|%k"
SINFO_FORMAT = "%N|%P|%G|%T"
# sacct(1) --format fields for a job that has left slurmctld's memory (MinJobAge), the comment last.
SACCT_FORMAT = "JobID,JobName,State,ExitCode,NodeList,Elapsed,Comment"
# Exit codes of the trainer that a new submission does not fix (job_state.DO_NOT_RETRY).
DO_NOT_RETRY = (2, 3, 4)

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_SLURM_WORD_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")
_HOST_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
# sbatch(1) --time: minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes,
# days-hours:minutes:seconds; or UNLIMITED / INFINITE.
_TIME_RE = re.compile(r"^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2}"
                      r"|UNLIMITED|INFINITE)$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
# sbatch options a site may add (launch_slurm_sbatch_options): scheduling only. Everything that shapes the
# job (nodes, tasks, GRES, exclusivity, output, signal, requeue, user, environment, working directory, the
# script) is the collection's, and options that run other code or change who runs it are refused.
SBATCH_ALLOWED = {
    "--begin": r"[A-Za-z0-9:+-]+",
    "--constraint": r"[A-Za-z0-9_&|!()\[\]*:,.-]+",
    "--clusters": r"[A-Za-z0-9_,.-]+",
    "--dependency": r"[A-Za-z0-9_:,?+-]+",
    "--deadline": r"[A-Za-z0-9:+-]+",
    "--licenses": r"[A-Za-z0-9_:@,.-]+",
    "--mail-type": r"[A-Z_,0-9]+",
    "--mail-user": r"[A-Za-z0-9_.+@-]+",
    "--nice": r"-?\d+",
    "--priority": r"\d+|TOP",
    "--reservation": r"[A-Za-z0-9_,.-]+",
    "--time-min": _TIME_RE.pattern[1:-1],
    "--wckey": r"[A-Za-z0-9_.*-]+",
}
# Node states (sinfo %T, suffix removed) in which a node cannot take the job.
# (planned: idle, kept by the backfill scheduler for a pending job, ours included; completing: a job ends.)
_BAD_NODE_STATES = ("down", "drained", "draining", "drain", "fail", "failing", "future", "inval", "maint",
                    "unknown", "not_responding", "power_down", "powered_down", "powering_down", "reboot_issued",
                    "reboot_requested")


class SlurmError(ValueError):
    """A setting Slurm would refuse, or an output that cannot be read (the message names it)."""


def check_time_limit(value, setting="launch_slurm_time_limit"):
    text = str(value or "").strip()
    if text and not _TIME_RE.match(text):
        raise SlurmError(f"{setting}: {text!r} is not a Slurm time (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, "
                         "D-HH:MM:SS or UNLIMITED)")
    return text


def check_word(value, setting):
    text = str(value or "").strip()
    if text and not _SLURM_WORD_RE.match(text):
        raise SlurmError(f"{setting}: {text!r} is not a Slurm name (letters, digits, '_', '.', '+', '-', "
                         "at most 64)")
    return text


def check_sbatch_options(options, setting="launch_slurm_sbatch_options"):
    """The site's extra sbatch options as ['--opt=value', ...]; raises SlurmError naming the first refused."""
    out = []
    for opt in options or ():
        text = str(opt)
        if _CONTROL_RE.search(text):
            raise SlurmError(f"{setting}: {text!r} holds a control character")
        name, sep, value = text.partition("=")
        if name not in SBATCH_ALLOWED:
            raise SlurmError(
                f"{setting}: {name!r} is not an option the collection passes to sbatch (allowed, as --option=value: "
                f"{', '.join(sorted(SBATCH_ALLOWED))}); the nodes, tasks, NPUs, output, signals, requeue, user and "
                "environment of the job are the launch stage's (partition, account, QoS and time limit have their "
                "own settings)")
        if not sep or not re.fullmatch(SBATCH_ALLOWED[name], value):
            raise SlurmError(f"{setting}: {text!r}: write {name}=<value> with a value Slurm takes for it")
        out.append(text)
    return out


def fingerprint_comment(job_name, fingerprint):
    return f"{COMMENT_PREFIX}{job_name}:{fingerprint}"


def batch_script(job_name, nodes, npus_per_node, task_script, fingerprint, output, partition="", account="",
                 qos="", time_limit="", signal_s=0, options=(), shell="/bin/sh", header=()):
    """The batch script the launch stage submits: one task per node, whole nodes with all their NPUs,
    requeued on a node failure; each node's task runs ``task_script`` there (the node's container, as
    the systemd unit would). ``signal_s``: USR1 to the tasks that long before the time limit (the
    trainer's final checkpoint; 0 = none)."""
    if not _NAME_RE.match(str(job_name)):
        raise SlurmError(f"job name {job_name!r}: letters, digits, '.', '_' or '-' (at most 64)")
    nodes = [str(n) for n in nodes]
    if not nodes:
        raise SlurmError("no nodes for the job")
    for node in nodes:
        if not _HOST_RE.match(node):
            raise SlurmError(f"node {node!r} is not a name Slurm takes as a NodeName (letters, digits, '-')")
    if len(set(nodes)) != len(nodes):
        raise SlurmError(f"a node is named twice in {', '.join(nodes)}")
    npus = int(npus_per_node)
    if npus < 1:
        raise SlurmError(f"NPUs per node {npus}: at least 1")
    for path in (task_script, output, shell):
        if not str(path).startswith("/") or re.search(r"[\s\"'\\$`]", str(path)):
            raise SlurmError(f"{path!r}: an absolute path without spaces, quotes or '$'")
    if not re.fullmatch(r"[0-9a-f]{8,64}", str(fingerprint)):
        raise SlurmError(f"fingerprint {fingerprint!r}: hex digits")
    lines = ["#!/bin/sh"] + [f"# {c}" for c in header]
    sb = [
        f"--job-name={job_name}",
        f"--nodes={len(nodes)}",
        f"--nodelist={','.join(nodes)}",
        "--ntasks-per-node=1",
        "--exclusive",
        f"--gres=npu:{npus}",
        "--requeue",
        f"--output={output}",
        # a requeued run writes on after the earlier run's output instead of truncating it
        "--open-mode=append",
        f"--comment={fingerprint_comment(job_name, fingerprint)}",
    ]
    if check_word(partition, "launch_slurm_partition"):
        sb.append(f"--partition={partition}")
    if check_word(account, "launch_slurm_account"):
        sb.append(f"--account={account}")
    if check_word(qos, "launch_slurm_qos"):
        sb.append(f"--qos={qos}")
    if check_time_limit(time_limit):
        sb.append(f"--time={time_limit}")
    if int(signal_s) > 0:
        sb.append(f"--signal=USR1@{int(signal_s)}")
    sb += check_sbatch_options(options)
    lines += [f"#SBATCH {o}" for o in sb]
    # exec: srun is the batch step's process, so a cancel reaches it at once; a task that fails ends the
    # step on every node (the trainer's ranks cannot go on without it); each task runs its node's script.
    lines += ["exec srun --kill-on-bad-exit=1 --ntasks-per-node=1 --label " + f"{shell} {task_script}", ""]
    return "\n".join(lines)


def task_script(spec, stop_timeout_s, header=()):
    """The node's part of the Slurm job (``spec``: the job's ContainerSpec, the one the systemd unit is
    rendered from): starts the container detached, labelled with the Slurm job id, and follows it as
    the unit does (WAIT_SCRIPT: its output goes to the job's output, and an engine restart with
    live-restore leaves both running); answers SIGTERM (scancel, a node set down) and SIGUSR1 (the time
    limit near) with ``<engine> stop``, so the trainer gets SIGTERM and its final checkpoint; removes the
    container at the end. Exits with the container's status (0 after a stop on a signal that the
    trainer answered with its final checkpoint, 143)."""
    spec = ContainerSpec.from_dict(spec)
    stop_timeout_s = int(stop_timeout_s)
    if stop_timeout_s < 1:
        raise SlurmError(f"stop timeout {stop_timeout_s}: at least 1 s")
    q = shlex.quote
    run = spec.replace(stop_timeout=stop_timeout_s).run_args(rm=False)
    # the Slurm job's label right after 'run' (the engine reads options up to the image)
    image_at = len(run) - len(spec.command) - 1
    words = [f"{q(spec.engine_path)} run --detach", '--label "ascendops.slurm.job=${SLURM_JOB_ID:-none}"']
    i = 0
    while i < image_at:  # one option with its value per line, the image and command on the last
        if run[i].startswith("--") and i + 1 < image_at and not run[i + 1].startswith("--"):
            words.append(f"{run[i]} {q(run[i + 1])}")
            i += 2
        else:
            words.append(q(run[i]))
            i += 1
    words.append(" ".join(q(a) for a in run[image_at:]))
    lines = ["#!/bin/sh"] + [f"# {c}" for c in header] + [
        "set -u",
        f"engine={q(spec.engine_path)}",
        f"name={q(spec.name)}",
        "stopping=0 caught=0",
        # a container of an earlier allocation on this node (a requeue after a node failure) goes first
        '"$engine" rm -f "$name" >/dev/null 2>&1',
        f'stop() {{ stopping=1; caught=1; "$engine" stop --time {stop_timeout_s} "$name" >/dev/null 2>&1; }}',
        "trap stop TERM INT USR1",
        " \\\n  ".join(words) + " >/dev/null || exit 1",
        f"/bin/sh -c {q(WAIT_SCRIPT)} ascendops-wait \"$engine\" \"$name\" &",
        "pid=$!",
        # wait returns early (128 + the signal) when a trapped signal arrives: wait again for the follower's own
        # status (the shell keeps it for this wait, even when the follower has ended meanwhile)
        'caught=0; wait "$pid"; rc=$?',
        'while [ "$caught" = 1 ]; do caught=0; wait "$pid"; rc=$?; done',
        # stopped on our signal after the final checkpoint (143): a clean end of this task
        '[ "$stopping" = 1 ] && [ "$rc" = 143 ] && rc=0',
        '"$engine" rm -f "$name" >/dev/null 2>&1',
        'exit "$rc"',
        "",
    ]
    return "\n".join(lines)


def epilog_script(engine_path, header=()):
    """Slurm's Epilog on each node (as root, after every job): removes the containers the collection
    labelled with that job's id, in case a task was killed before it could stop its own. Never fails (a
    failing epilog drains the node)."""
    lines = ["#!/bin/sh"] + [f"# {c}" for c in header] + [
        f"engine={engine_path}",
        '[ -n "${SLURM_JOB_ID:-}" ] && [ -x "$engine" ] || exit 0',
        'ids=$("$engine" ps -aq --filter "label=ascendops.slurm.job=$SLURM_JOB_ID" 2>/dev/null)',
        '[ -z "$ids" ] || "$engine" rm -f $ids >/dev/null 2>&1',
        "exit 0",
        "",
    ]
    return "\n".join(lines)


def _job_rows(text, tool, fmt, id_re=r"\d+(_\d+)?"):
    """Lines of seven '|'-separated fields, a job id first and the comment (which may hold '|') last, as
    squeue's and sacct's formats here print them; each row stripped, the state (third field) cut to its first
    word (sacct's ``CANCELLED by 0``). An unreadable line is refused, named."""
    rows = []
    for line in str(text or "").splitlines():
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split("|", 6)]
        if len(parts) != 7 or not re.fullmatch(id_re, parts[0]):
            raise SlurmError(f"could not read the {tool} line {line[:200]!r} (expected {fmt} with '|')")
        parts[2] = parts[2].split()[0] if parts[2] else ""
        rows.append(parts)
    return rows


def parse_squeue(text):
    """``squeue -h -o SQUEUE_FORMAT`` -> [{job_id, name, state, code, reason, nodes, user, comment, fingerprint}]."""
    jobs = []
    for job_id, name, state, reason, nodes, user, comment in _job_rows(text, "squeue", SQUEUE_FORMAT):
        jobs.append({"job_id": job_id, "name": name, "state": state, "code": STATE_CODES.get(state, state),
                     "reason": reason, "nodes": nodes, "user": user, "comment": comment,
                     "fingerprint": comment_fingerprint(comment, name)})
    return jobs


def comment_fingerprint(comment, job_name):
    prefix = f"{COMMENT_PREFIX}{job_name}:"
    comment = str(comment or "")
    return comment[len(prefix):] if comment.startswith(prefix) else None


def parse_oneliner(text):
    """``scontrol show job -o <id>`` (one line of Key=Value pairs; a value may hold spaces) -> dict, or
    None when Slurm no longer knows the job ('Invalid job id specified')."""
    text = str(text or "").strip()
    if not text or "Invalid job id" in text:
        return None
    line = text.splitlines()[0]
    starts = [m.start(1) for m in re.finditer(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=", line)]
    if not starts or not line.startswith("JobId="):
        raise SlurmError(f"could not read the scontrol line {line[:200]!r} (expected JobId=...)")
    out = {}
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(line)
        key, value = line[start:end].strip().partition("=")[::2]
        out[key] = value
    return out


def job_summary(info):
    """What a report needs from a parsed ``scontrol show job`` (None stays None)."""
    if not info:
        return None
    state = info.get("JobState", "").split()[0]
    code = info.get("ExitCode", "0:0").partition(":")[0]
    return {"job_id": info.get("JobId", ""), "state": state, "code": STATE_CODES.get(state, state),
            "reason": info.get("Reason", ""), "nodes": info.get("NodeList", ""),
            "restarts": int(info.get("Restarts", "0") or 0), "exit_code": int(code) if code.isdigit() else None,
            "run_time": info.get("RunTime", ""), "comment": info.get("Comment", ""),
            "batch_host": info.get("BatchHost", ""), "source": "scontrol"}


def parse_sacct(text):
    """``sacct --noheader --parsable2 --allocations --format=SACCT_FORMAT`` -> [job_summary()-shaped dicts].

    sacct(1): ``--parsable2`` separates fields with ``|`` and ends a line without one; State may carry who
    cancelled (``CANCELLED by 0``); ExitCode is ``<exit>:<signal>``; a requeued job shows its last run.
    """
    jobs = []
    # job ids: 12, an array task 12_3, a heterogeneous component 12+1
    rows = _job_rows(text, "sacct", SACCT_FORMAT, r"\d+(_\d+)?(\+\d+)?")
    for job_id, _name, state, exit_code, nodes, elapsed, comment in rows:
        code = exit_code.partition(":")[0]
        jobs.append({"job_id": job_id, "state": state, "code": STATE_CODES.get(state, state), "reason": "",
                     "nodes": nodes, "restarts": None, "exit_code": int(code) if code.isdigit() else None,
                     "run_time": elapsed, "comment": comment, "batch_host": "", "source": "sacct"})
    return jobs


def parse_sinfo(text):
    """``sinfo -h -N -o SINFO_FORMAT`` -> {node: {partitions: [..], default_partition, gres: {name: count},
    state, flags}} (a node in several partitions is listed once per partition)."""
    nodes = {}
    for line in str(text or "").splitlines():
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != 4:
            raise SlurmError(f"could not read the sinfo line {line!r} (expected {SINFO_FORMAT})")
        name, partition, gres, state = (p.strip() for p in parts)
        node = nodes.setdefault(name, {"partitions": [], "default_partition": None, "gres": {}, "state": "",
                                       "flags": ""})
        if partition.endswith("*"):
            partition = partition[:-1]
            node["default_partition"] = partition
        if partition not in node["partitions"]:
            node["partitions"].append(partition)
        node["gres"] = parse_gres(gres)
        m = re.fullmatch(r"([a-z_]+(?:\+[a-z_]+)*)([*~#%$@!^\-]*)", state.lower())
        if not m:
            raise SlurmError(f"could not read the node state {state!r} in the sinfo line {line!r}")
        node["state"], node["flags"] = m.group(1), m.group(2)
    return nodes


def parse_gres(text):
    """A GRES list (``npu:8``, ``npu:910b:8(S:0-1)``, ``gpu:2,npu:8``, ``(null)``) -> {name: count}."""
    out = {}
    text = str(text or "").strip()
    if text in ("", "(null)"):
        return out
    for item in re.split(r",(?![^(]*\))", text):
        item = re.sub(r"\(.*\)$", "", item.strip())
        fields = item.split(":")
        count = fields[-1] if len(fields) > 1 and fields[-1].isdigit() else "1"
        out[fields[0]] = out.get(fields[0], 0) + int(count)
    return out


def cluster_problems(sinfo, nodes, npus_per_node, partition=""):
    """What keeps Slurm from running the job on ``nodes`` (each with ``npus_per_node`` NPUs): a node
    Slurm does not know, one outside the job's partition, too few ``npu`` GRES, or a state that takes
    no job. [{node, problem}] with the fix in words."""
    problems = []
    for node in nodes:
        entry = sinfo.get(node)
        if entry is None:
            problems.append({"node": node, "problem": "Slurm does not know this node (not in sinfo): add it to "
                             f"slurm.conf as a NodeName with Gres=npu:{int(npus_per_node)}"})
            continue
        want = partition or entry["default_partition"]
        if not want:
            problems.append({"node": node, "problem": "no partition is set (launch_slurm_partition) and the node is "
                             f"in no default partition (it is in {', '.join(entry['partitions'])})"})
        elif want not in entry["partitions"]:
            problems.append({"node": node, "problem": f"not in the partition {want} (it is in "
                             f"{', '.join(entry['partitions']) or 'none'}): set launch_slurm_partition or add it"})
        have = entry["gres"].get("npu", 0)
        if have < int(npus_per_node):
            problems.append({"node": node, "problem": f"Slurm counts {have} 'npu' GRES, the job needs "
                             f"{int(npus_per_node)}: Gres=npu:{int(npus_per_node)} in slurm.conf and "
                             f"Name=npu File=/dev/davinci[0-{int(npus_per_node) - 1}] in gres.conf"})
        states = set(entry["state"].split("+"))
        bad = sorted(states & set(_BAD_NODE_STATES))
        if bad or "*" in entry["flags"]:
            what = "+".join(bad) or entry["state"]
            problems.append({"node": node, "problem": f"state {what}{entry['flags']} (it takes no job: "
                             f"'scontrol show node {node}' names the reason; resume it with "
                             f"'scontrol update nodename={node} state=resume')"})
    return problems


def parse_config(text):
    """``scontrol show config`` -> {Key: value} (lines 'Key = value'; the header line is skipped)."""
    out = {}
    for line in str(text or "").splitlines():
        key, sep, value = line.partition(" = ")
        if sep and re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", key.strip()):
            out[key.strip()] = value.strip()
    return out


def seconds(value):
    """A duration from ``scontrol show config`` ('30 sec', '120') in seconds, None when unreadable."""
    m = re.match(r"^\s*(\d+)", str(value or ""))
    return int(m.group(1)) if m else None


def plan(queue, job_name, fingerprint, record=None, last=None, nodes=None, restart_failed=False,
         start_stopped=False):
    """The cluster's decision under Slurm.

    queue: parse_squeue() rows for the job's name; only those whose comment carries the collection's
    marker are the job's. record: {job_id, fingerprint} of the last submission (the submit host's
    record), or None. last: job_summary() of that submission when Slurm still knows it, or None.
    nodes: {host: the job on that node (ascend_job_info's ``job``: status, stopped_by_user, ...)}.

    Returns {action: none|submit|resubmit, cancel: [job ids], reason, fail, clear_intent, job}.
    """
    nodes = nodes or {}
    ours = [j for j in queue if j.get("fingerprint") is not None and j["name"] == job_name]
    active = [j for j in ours if j["state"] in ACTIVE_STATES]
    stopped = sorted(h for h, n in nodes.items() if (n or {}).get("stopped_by_user"))

    def out(action, reason, cancel=(), fail=False, clear_intent=False, job=None):
        return {"action": action, "reason": reason, "cancel": list(cancel), "fail": fail,
                "clear_intent": clear_intent, "job": job}

    if len(active) > 1:
        ids = ", ".join(j["job_id"] for j in active)
        return out("none", f"{len(active)} Slurm jobs of {job_name} are queued or running ({ids}); left alone: "
                   "cancel all but one with scancel", fail=True, job=active[0])
    if active:
        job = active[0]
        where = f" on {job['nodes']}" if job["nodes"] else ""
        why = f", {job['reason']}" if job["reason"] not in ("", "None") else ""
        if job["fingerprint"] == fingerprint:
            return out("none", f"Slurm job {job['job_id']} {job['state']} ({job['code']}{why}){where}: left alone",
                       job=job)
        if job["state"] == "COMPLETING":
            return out("none", f"Slurm job {job['job_id']} is ending (CG); the job changed since: run again when it "
                       "has left the queue", job=job)
        if stopped and not start_stopped:
            return out("none", f"stopped by stop.yml on {', '.join(stopped)}; Slurm job {job['job_id']} is still "
                       f"{job['state']}: left alone", job=job)
        return out("resubmit", f"the job changed since Slurm job {job['job_id']} ({job['state']}) was submitted: "
                   "cancelled (final checkpoint) and submitted again; it resumes from the last checkpoint",
                   cancel=[job["job_id"]], clear_intent=bool(stopped), job=job)
    if stopped:
        if not start_stopped:
            return out("none", f"stopped by stop.yml on {', '.join(stopped)}: left stopped "
                       "(set launch_start_stopped=true to submit it again)")
        return out("submit", f"launch_start_stopped: submitting the job stopped on {', '.join(stopped)}",
                   clear_intent=True)
    record = record or {}
    if not record.get("fingerprint"):
        return out("submit", "not submitted yet")
    if record["fingerprint"] != fingerprint:
        return out("submit", f"the job changed since Slurm job {record.get('job_id', '?')} was submitted")
    ended = f"Slurm job {record.get('job_id', '?')}" + (f" {last['state']} ({last['code']})" if last else "")
    statuses = {h: ((n or {}).get("status") or {}) for h, n in nodes.items()}
    if nodes and all(s.get("state") == "completed" for s in statuses.values()):
        step = next(iter(statuses.values())).get("step")
        return out("none", f"{ended}: completed on every node (step {step}): left alone")
    failed = {h: s for h, s in statuses.items()
              if s.get("state") == "failed" or _int(s.get("exit_code")) in DO_NOT_RETRY}
    if last and last["state"] in ("FAILED", "BOOT_FAIL") and not failed:
        return out("submit", f"{ended} with no trainer failure on any node (exit code {last.get('exit_code')}: a task "
                   "that could not start, or a node problem): submitting it again; it resumes from the last checkpoint")
    if last and last["state"] == "OUT_OF_MEMORY" or failed:
        detail = "; ".join(f"{h}: {s.get('reason') or 'exit ' + str(s.get('exit_code'))}" for h, s in failed.items())
        detail = detail or f"exit code {last['exit_code'] if last else '?'}"
        if restart_failed:
            return out("submit", f"launch_restart_failed: submitting the failed job again ({ended}; {detail})",
                       clear_intent=False)
        return out("none", f"{ended} failed ({detail}); left as it is: fix the cause and change the job, or set "
                   "launch_restart_failed=true to submit it again", fail=True)
    return out("submit", f"{ended} ended outside ascendops (cancelled, timed out or lost its nodes without a "
               "requeue): submitting it again; it resumes from the last checkpoint")


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class SlurmJob:
    """The module ascend_slurm_job: read the job's Slurm state, submit it, or cancel it and wait until it
    has left the queue (the final checkpoint). Runs on the submit host (a node with Slurm's client and
    the cluster's munge key)."""

    def __init__(self, module):
        self.module = module
        self.p = module.params

    def _out(self, argv):
        """stdout of a command that must succeed."""
        return self._run(argv)[1]

    def _run(self, argv, check=True):
        rc, out, err = self.module.run_command(argv, environ_update={"LC_ALL": "C", "SLURM_TIME_FORMAT": "standard"})
        if check and rc != 0:
            self.module.fail_json(msg=f"{' '.join(argv)} failed (exit {rc}): {(err or out).strip()[:500]}",
                                  rc=rc, stdout=out, stderr=err)
        return rc, out, err

    def _bin(self, name):
        path = self.module.get_bin_path(name)
        if not path:
            self.module.fail_json(msg=f"{name} is not installed on {self.p['node'] or 'the submit host'}: Slurm's "
                                  "client tools are needed there (slurm_manage: true installs them, or use a "
                                  "login node of the site's Slurm as launch_slurm_submit_host)")
        return path

    def queue(self):
        if not self.p["name"]:
            return []
        out = self._out([self._bin("squeue"), "--noheader", "--all", f"--name={self.p['name']}",
                         f"--format={SQUEUE_FORMAT}"])
        try:
            return [j for j in parse_squeue(out) if j["fingerprint"] is not None]
        except SlurmError as exc:
            self.module.fail_json(msg=str(exc))

    def show(self, job_id):
        if not job_id:
            return None
        rc, out, err = self._run([self._bin("scontrol"), "--oneliner", "show", "job", str(job_id)], check=False)
        if rc != 0:
            if "Invalid job id" in (err + out):
                return self.accounted(job_id)
            self.module.fail_json(msg=f"scontrol show job {job_id} failed (exit {rc}): {(err or out).strip()[:500]}")
        try:
            return job_summary(parse_oneliner(out))
        except SlurmError as exc:
            self.module.fail_json(msg=str(exc))

    def accounted(self, job_id):
        """The job's record in Slurm's accounting (sacct) once slurmctld has forgotten it (MinJobAge), or None
        where Slurm keeps no records (no slurmdbd: sacct says accounting storage is disabled)."""
        sacct = self.module.get_bin_path("sacct")
        if not sacct:
            return None
        rc, out, err = self._run([sacct, "--noheader", "--parsable2", "--allocations", f"--jobs={job_id}",
                                  f"--format={SACCT_FORMAT}"], check=False)
        if rc != 0:
            if "accounting storage is disabled" not in (err + out).lower():
                self.module.warn(f"sacct -j {job_id} failed (exit {rc}): {(err or out).strip()[:300]}")
            return None
        try:
            rows = [j for j in parse_sacct(out) if j["job_id"] == str(job_id)]
        except SlurmError as exc:
            self.module.fail_json(msg=str(exc))
        return rows[-1] if rows else None

    def info(self):
        queue = self.queue()
        result = {"changed": False, "queue": queue, "last": self.show(self.p["job_id"]),
                  "active": [j["job_id"] for j in queue if j["state"] in ACTIVE_STATES]}
        if self.p["nodes"]:
            out = self._out([self._bin("sinfo"), "--noheader", "--Node", f"--format={SINFO_FORMAT}"])
            conf = self._out([self._bin("scontrol"), "show", "config"])
            try:
                sinfo = parse_sinfo(out)
                config = parse_config(conf)
            except SlurmError as exc:
                self.module.fail_json(msg=str(exc))
            result["problems"] = cluster_problems(sinfo, self.p["nodes"], self.p["npus_per_node"], self.p["partition"])
            keys = ("KillWait", "Epilog", "JobRequeue", "SLURM_VERSION", "ClusterName", "MinJobAge",
                    "UnkillableStepTimeout", "AccountingStorageType")
            result["config"] = {k: config.get(k) for k in keys}
            result["kill_wait_s"] = seconds(config.get("KillWait"))
        return result

    def submit(self):
        result = {"changed": True, "queue": self.queue()}
        mine = [j for j in result["queue"] if j["state"] in ACTIVE_STATES and j["fingerprint"] == self.p["fingerprint"]]
        if mine:  # already submitted (a re-run after a lost connection): no second job
            result.update(changed=False, job_id=mine[0]["job_id"])
            return result
        if self.module.check_mode:
            result["job_id"] = None
            return result
        out = self._out([self._bin("sbatch"), "--parsable", self.p["script"]])
        job_id = out.strip().split(";")[0]
        if not re.fullmatch(r"\d+", job_id):
            self.module.fail_json(msg=f"sbatch printed {out.strip()!r}, not a job id")
        result["job_id"] = job_id
        return result

    def cancel(self):
        ids = [str(i) for i in self.p["cancel"]]
        result = {"changed": False, "cancelled": [], "waited_s": 0}
        queue = self.queue()
        live = [j["job_id"] for j in queue if j["job_id"] in ids and j["state"] in ACTIVE_STATES]
        if not live:
            return result
        result.update(changed=True, cancelled=live)
        if self.module.check_mode:
            return result
        import time
        self._run([self._bin("scancel")] + live)
        start = time.monotonic()
        while True:
            left = [j for j in self.queue() if j["job_id"] in live and j["state"] in ACTIVE_STATES]
            result["waited_s"] = round(time.monotonic() - start, 1)
            if not left:
                break
            if result["waited_s"] > self.p["timeout_s"]:
                self.module.fail_json(msg=f"Slurm job(s) {', '.join(j['job_id'] for j in left)} still "
                                      f"{', '.join(j['state'] for j in left)} {self.p['timeout_s']} s after scancel "
                                      "(the trainer's final checkpoint takes longer than KillWait allows, or a node "
                                      "does not answer): see 'scontrol show job' and the node's slurmd log", **result)
            time.sleep(2)
        result["last"] = [self.show(i) for i in live]
        return result

    def run(self):
        action = self.p["action"]
        if action == "info":
            result = self.info()
        elif action == "submit":
            result = self.submit()
        else:
            result = self.cancel()
        self.module.exit_json(**result)
