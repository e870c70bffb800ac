# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan of adding, removing or replacing nodes of a running job. Pure data, no I/O.

Rank order: the job's nodes keep their order; added nodes are appended; a removed node is dropped
(the nodes after it move up) unless a spare is swapped in, which then takes the removed node's place,
so every other node keeps its ranks and the world size stays. A dead (unreachable) node must be among
the removed ones, and no step runs on it.

Resume: with the same world size the job loads its checkpoint as saved; with another world size the
ZeRO checkpoint is converted to DeepSpeed's universal checkpoint first (``ds_to_universal``, then load
with ``load_universal``), keeping the optimizer state. The global batch size must still divide by
micro batch x data-parallel ranks: the trainer's own rule (``trainer_rules.batch_problem``).
"""

from __future__ import annotations

from ansible_collections.ascendops.cluster.plugins.module_utils import trainer_rules as rules

NAMES = {"train.global_batch_size": "launch_job.global_batch_size",
         "train.micro_batch_size": "launch_job.micro_batch_size"}


def _problem(node, check, msg):
    return {"node": node, "check": check, "msg": msg}


def plan_scale(current, add=(), remove=(), spares=(), swap=False, dead=(), devices_per_node=8,
               global_batch_size=None, micro_batch_size=None, names=None):
    """The plan as a dict: ``refused`` (``{node, check, msg}``; when not empty nothing is to be done),
    ``nodes`` (the new rank order), ``ranks`` (``{node: [first, last]}``), ``world_size_before``,
    ``world_size``, ``added``, ``removed``, ``swapped`` (``{removed: spare}``), ``universal_checkpoint``
    and ``steps`` (``[{step, ...}]`` in order).

    ``current``: the job's nodes in rank order; ``add``/``remove``: node names; ``spares``: the spare
    group in inventory order; ``swap``: replace each removed node by the next free spare; ``dead``:
    unreachable nodes; ``global_batch_size``/``micro_batch_size``: the job's (checked when both given)."""
    current, add, remove = list(current), list(add or ()), list(remove or ())
    dead, spares = set(dead or ()), list(spares or ())
    names = names or NAMES
    refused = []
    for node in sorted({n for n in add if add.count(n) > 1} | {n for n in remove if remove.count(n) > 1}):
        refused.append(_problem(node, "nodes", f"{node} is named twice in nodes"))
    for node in add:
        if node in current:
            refused.append(_problem(node, "add", f"{node} is already in the job; nothing to add"))
        if node in dead:
            refused.append(_problem(node, "reachable", f"{node} is unreachable; a node to add must answer"))
    for node in remove:
        if node not in current:
            refused.append(_problem(node, "remove", f"{node} is not in the job ({', '.join(current)})"))
    for node in sorted(dead - set(remove) - set(add)):
        if node in current:
            refused.append(_problem(node, "reachable", f"{node} is unreachable but stays in the job: remove it "
                                                       "(-e nodes=" + node + ") or bring it back first"))
    swapped = {}
    if swap:
        free = [s for s in spares if s not in current and s not in add and s not in dead]
        for node in remove:
            if not free:
                refused.append(_problem(node, "spare", f"no free reachable spare to swap in for {node} "
                                                       f"(spares: {', '.join(spares) or 'none'})"))
                continue
            swapped[node] = free.pop(0)
    order = [swapped.get(n, n) for n in current if n not in remove or n in swapped] + add
    devices = rules.number(devices_per_node, integer=True)
    if devices is None or devices < 1:
        refused.append(_problem("job", "devices_per_node", f"devices_per_node must be an integer >= 1, got "
                                                           f"{devices_per_node!r}"))
        devices = 1
    if not order:
        refused.append(_problem("job", "world_size", "no node would be left in the job"))
    world_before, world = len(current) * devices, len(order) * devices
    batch = None
    if global_batch_size is not None and micro_batch_size is not None and order:
        batch = rules.batch_problem(global_batch_size, micro_batch_size, world, names,
                                    f"data-parallel size at the new world size ({len(order)} nodes x {devices})")
        if batch:
            refused.append(_problem("job", "global_batch_size", batch))
    universal = world != world_before
    new = [n for n in order if n not in current]
    kept = [n for n in order if n in current]
    steps = [{"step": "stop_job", "nodes": [n for n in current if n not in dead], "checkpoint": True,
              "skipped_dead": sorted(dead & set(current))}]
    if new:
        steps.append({"step": "prepare", "nodes": new})
        steps.append({"step": "check_reachability", "from": new, "to": kept})
        # The new nodes mount the shared file system and are checked as one with the kept ones (they
        # read the checkpoint the others wrote); nothing to mount without shared storage.
        steps.append({"step": "check_shared_storage", "nodes": new, "with": kept})
    steps.append({"step": "rank_table", "nodes": order})
    if universal:
        steps.append({"step": "convert_checkpoint", "to": "universal", "from_world_size": world_before,
                      "to_world_size": world})
    steps.append({"step": "start_job", "nodes": order, "world_size": world,
                  "resume": "universal" if universal else "checkpoint"})
    return {"refused": refused, "nodes": order,
            "ranks": {n: [i * devices, (i + 1) * devices - 1] for i, n in enumerate(order)},
            "world_size_before": world_before, "world_size": world, "added": add,
            "removed": [n for n in remove if n in current], "swapped": swapped,
            "batch_problem": batch, "universal_checkpoint": universal,
            "steps": [] if refused else steps}


# What a run of add_node.yml / remove_node.yml finds on the nodes before it changes anything, in the
# order the operation goes through them; each state says what is still to be done.
RESUME_STATES = ("first_run", "stopped", "rank_table_partial", "started_partial", "done")
RESUME_TODO = {
    "first_run": ["stop_job", "prepare", "check_reachability", "check_shared_storage", "collective",
                  "rank_table", "start_job"],
    # The job was stopped (with its checkpoint) by an earlier run that ended before any rank table.
    "stopped": ["prepare", "check_reachability", "check_shared_storage", "collective", "rank_table",
                "start_job"],
    # The pre-flight (or the launch stage) wrote the new world's rank table on some nodes and stopped.
    "rank_table_partial": ["prepare", "check_reachability", "check_shared_storage", "collective", "rank_table",
                           "start_job"],
    # The job was started at the new world size on some nodes only: stopped there first (their ranks
    # wait for peers that never come), then all of them start together.
    "started_partial": ["stop_job", "prepare", "check_reachability", "check_shared_storage", "collective",
                        "rank_table", "start_job"],
    "done": [],
}


# How a run finds the job before it changes anything (job_found), and whether it starts the job at the
# end (job_restart). Like the launch stage (job_state.restart_plan: a stop record on any node leaves the
# job stopped), a stop the user recorded wins over a job still running on other nodes.
JOB_STATES = ("running", "stopped_by_user", "stopped_by_run", "not_running")


def job_found(found, nodes, own_by=None):
    """The job's state on ``nodes`` (the job's nodes before this run; those not in ``found`` did not
    answer), before this run changes anything.

    ``found``: ``{node: {running, stopped_by}}`` (``resume_state``'s); ``own_by``: what this operation
    writes in the stop record (``launch_stop_by``). A stop record naming anything else (``playbooks/stop.yml``,
    another playbook) is the user's: the job was stopped before this run and is not this run's to start.

    Returns ``{state, by, nodes, words}``: ``state`` one of ``JOB_STATES``; ``by`` who stopped it (the
    records' ``by``, joined when they differ; None when not stopped); ``nodes`` the nodes in that state;
    ``words`` the state in a phrase."""
    found = found or {}
    seen = [n for n in nodes or () if isinstance(found.get(n), dict)]
    records = {n: found[n].get("stopped_by") for n in seen if found[n].get("stopped_by")}
    user = [n for n in seen if n in records and records[n] != own_by]
    own = [n for n in seen if n in records and records[n] == own_by]
    running = [n for n in seen if found[n].get("running")]
    if user:
        by = ", ".join(sorted({str(records[n]) for n in user}))
        return {"state": "stopped_by_user", "by": by, "nodes": user,
                "words": f"stopped by {by} before this run (on {', '.join(user)})"}
    if running:
        return {"state": "running", "by": None, "nodes": running, "words": f"running on {', '.join(running)}"}
    if own:
        return {"state": "stopped_by_run", "by": own_by, "nodes": own,
                "words": f"stopped by an earlier run of {own_by} (on {', '.join(own)})"}
    return {"state": "not_running", "by": None, "nodes": [], "words": "not running (no stop record)"}


def job_restart(job, restart=None, world_size=None, variable="scale_restart_job", start_command=None):
    """Whether this run starts the job at the end, from ``job_found``'s ``job``: not when the user stopped
    it before this run (it stays stopped; everything else is done), unless ``restart`` (the playbook's
    ``variable``, None when not set) says otherwise either way.

    Returns ``job`` with ``start`` (bool), ``line`` (the plan's ``Job: ...`` line) and ``message`` (what
    the run says at the end when it leaves the job stopped, else None; ``start_command`` is how to start
    it then)."""
    job = dict(job or job_found({}, ()))
    user = job.get("state") == "stopped_by_user"
    start = (not user) if restart is None else bool(restart)
    at = f" at world size {world_size}" if world_size is not None else ""
    start_command = start_command or "ansible-playbook playbooks/launch.yml -e launch_start_stopped=true"
    if start and user:
        line = f"Job: {job['words']}: started{at} all the same ({variable}=true)"
    elif start:
        line = f"Job: {job['words']}: started{at} from its checkpoint, on every node together"
    elif user:
        line = (f"Job: stopped by {job['by']}, stays stopped (rank table and unit written{at}; "
                f"-e {variable}=true starts it)")
    else:
        line = f"Job: {job['words']}: left stopped ({variable}=false)"
    message = None
    if not start:
        head = (f"The job was stopped by {job['by']} before this run: left stopped{at}" if user
                else f"{variable}=false: the job was left stopped{at}")
        message = (f"{head}. Start it with {start_command}"
                   + (f" (or run this playbook with -e {variable}=true)." if user else "."))
    return dict(job, start=start, line=line, message=message)


def _names(servers, addresses):
    """A rank table's server ids (addresses) as node names where ``addresses`` ``{node: address}`` knows them."""
    by_address = {str(a): n for n, a in (addresses or {}).items()}
    return [by_address.get(str(s), str(s)) for s in servers or ()]


def resume_state(plan, found, before, addresses=None, devices_per_node=8, stop_by=None, restart=None,
                 start_command=None):
    """Where an add/remove/swap stands on the nodes, before this run changes anything.

    ``plan``: ``plan_scale``'s; ``before``: the job's nodes before the operation (the current ones);
    ``found``: ``{node: {servers, running, stopped_by}}`` for every node that answered: ``servers`` the
    server ids of the job's rank table there (empty: none), ``running`` whether the job's unit is active
    (or activating), ``stopped_by`` who recorded the stop (the launch stage's intent record; None: no
    record); ``addresses``: ``{node: address}`` (a rank table names servers by address); ``stop_by``:
    what this operation writes in that record (a stop by ``stop.yml`` is the user's, not the operation's);
    ``restart``/``start_command``: ``job_restart``'s (the playbook's ``scale_restart_job``; how to start a job
    left stopped).

    Returns ``{state, words, todo, stop, nodes, job}``: ``state`` one of ``RESUME_STATES``; ``words`` the state
    in a sentence; ``todo`` the steps left (``RESUME_TODO``); ``stop`` the nodes the stop must target (the
    old job's nodes that stay, and every node of the new job where a job is found); ``nodes`` per node
    ``{rank_table: new|old|none|other, running, world_size, stopped}`` (``world_size``: the world of the
    rank table it runs with, None when not running); ``job``: ``job_restart``'s (how the job was found on
    the old job's nodes, and whether this run starts it: not when the user had stopped it; then ``todo``
    ends with ``leave_stopped`` instead of ``start_job``)."""
    devices = rules.number(devices_per_node, integer=True) or 1
    job, before = list(plan.get("nodes") or ()), list(before or ())
    removed = set(plan.get("removed") or ())
    looked = job + [n for n in before if n not in job and n not in removed]
    nodes = {}
    for node in looked:
        seen = (found or {}).get(node)
        if not isinstance(seen, dict):
            continue
        servers = _names(seen.get("servers"), addresses)
        table = ("none" if not servers else "new" if sorted(servers) == sorted(job)
                 else "old" if sorted(servers) == sorted(before) else "other")
        running = bool(seen.get("running"))
        nodes[node] = {"rank_table": table, "running": running,
                       "world_size": len(servers) * devices if running and servers else None,
                       "stopped": bool(seen.get("stopped_by")) and seen.get("stopped_by") == stop_by}
    world = plan.get("world_size")
    at_new = [n for n in job if n in nodes and nodes[n]["running"] and nodes[n]["rank_table"] == "new"
              and nodes[n]["world_size"] == world]
    with_new_table = [n for n in job if n in nodes and nodes[n]["rank_table"] == "new"]
    kept = [n for n in before if n in job]
    new = [n for n in job if n not in before]
    if job and len(at_new) == len(job):
        state = "done"
        words = (f"already done: the job runs on {', '.join(job)} at world size {world} with their rank table; "
                 "nothing to do")
    elif at_new:
        state = "started_partial"
        rest = [n for n in job if n not in at_new]
        words = (f"the job was started at world size {world} on {', '.join(at_new)} only (not on {', '.join(rest)}): "
                 "stopped there, then started on every node together")
    elif with_new_table:
        state = "rank_table_partial"
        rest = [n for n in job if n not in with_new_table]
        words = (f"the new rank table ({len(job)} servers) is on {', '.join(with_new_table)}"
                 + (f", not yet on {', '.join(rest)}" if rest else "") + "; the job was not started at world size "
                 f"{world}: pre-flight, rank table and start")
    elif kept and not any(nodes.get(n, {}).get("running") for n in kept) and any(
            nodes.get(n, {}).get("stopped") for n in kept):
        state = "stopped"
        words = (f"the job was stopped on {', '.join(n for n in kept if nodes.get(n, {}).get('stopped'))} by an "
                 "earlier run and not started again: the steps after the stop")
    else:
        state = "first_run"
        words = "nothing done yet (a first run): every step"
    stop = [] if state == "done" else kept + [n for n in new if nodes.get(n, {}).get("running")]
    job_state = job_restart(job_found(found, kept, stop_by), restart, world, start_command=start_command)
    todo = list(RESUME_TODO[state])
    if not job_state["start"]:
        todo = ["leave_stopped" if step == "start_job" else step for step in todo]
        if state == "rank_table_partial":
            words = words.replace(": pre-flight, rank table and start",
                                  ": pre-flight and rank table (the job stays stopped)")
    return {"state": state, "words": words, "todo": todo, "stop": stop, "nodes": nodes, "job": job_state}


def resume_text(resume, command):
    """The lines a plan prints about ``resume_state``: what was found, the job (``Job: ...``: started at
    the end, or left stopped), and the command that finishes it."""
    lines = [f"Found: {resume['words']}"]
    if resume["state"] != "done" and resume.get("job"):
        lines.append(resume["job"]["line"])
    if resume["state"] != "done":
        lines.append(f"Still to do: {', '.join(resume['todo'])}")
        lines.append(f"Interrupted? Run the same command again to finish: {command}")
    return lines


__all__ = ["plan_scale", "RESUME_STATES", "RESUME_TODO", "JOB_STATES", "job_found", "job_restart", "resume_state",
           "resume_text"]
