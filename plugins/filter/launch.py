# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the launch stage: the job's container specification (one spec renders the systemd
unit and the collective pre-flight's command), its environment, the runtime user, the restart plan
from every node's job state, HCCL/CANN error codes explained, the collective pre-flight verdict,
hccl_test rows and the NPU process table. The logic lives in module_utils (job_container,
job_state); these are thin wrappers."""

from __future__ import annotations

from ansible_collections.ascendops.cluster.plugins.module_utils import job_container as jc
from ansible_collections.ascendops.cluster.plugins.module_utils import job_state as js
from ansible_collections.ascendops.cluster.plugins.module_utils.hccl_test import parse_hccl_test, summarize_hccl_test
from ansible_collections.ascendops.cluster.plugins.module_utils.npu_smi import parse_npu_smi_processes

HCCL_ERRORS = js.HCCL_ERRORS
hccl_errors = js.hccl_errors
log_excerpt = js.log_excerpt


def _spec(data):
    try:
        return jc.ContainerSpec.from_dict(data)
    except (jc.ContainerSpecError, TypeError, KeyError) as exc:
        raise ValueError(f"job container: {exc}") from exc


def job_container_spec(settings):
    """The job's container specification (a dict) from the launch role's settings:
    {engine, name, image, npu_ids, control_devices, driver_mounts (present ones), job_dir, job,
    status_dir, env_file, user (container_user()), ulimits, labels, stop_timeout, extra_args,
    command ({nnodes, node_rank, nproc, master_addr, master_port, config_file, grace_s})}."""
    try:
        s = dict(settings)
        user = s.get("user") or {}
        env = {"HOME": "/tmp"} if user.get("user") else {}
        c = s["command"]
        spec = jc.ContainerSpec(
            engine=s["engine"], name=s["name"], image=s["image"],
            command=jc.job_command(c["nnodes"], c["node_rank"], c["nproc"], c["master_addr"], c["master_port"],
                                   c["config_file"], grace_s=c.get("grace_s")),
            devices=[f"/dev/davinci{i}" for i in s["npu_ids"]] + list(s.get("control_devices") or []),
            mounts=jc.job_mounts(s.get("driver_mounts"), s["job_dir"], s["job"], s.get("status_dir")),
            env_file=s.get("env_file"), env=env, network=s.get("network", "host"), ipc=s.get("ipc", "host"),
            user=user.get("user"), cap_add=user.get("cap_add") or [], ulimits=s.get("ulimits"),
            labels=s.get("labels"), stop_timeout=s.get("stop_timeout"), extra_args=s.get("extra_args"))
    except (jc.ContainerSpecError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"job container: {exc}") from exc
    return spec.to_dict()


def container_extra_args_problems(args, name="launch_container_extra_args"):
    """Messages for the options of ``args`` outside the allow-list of job_container.EXTRA_ARGS (or with a
    value its rule refuses), each naming the option and its index in ``name``; [] when all are accepted."""
    return jc.extra_args_problems(args, name)


def job_container_argv(spec, name=None, command=None, extra_mounts=None, labels=None, rm=True):
    """``<engine> run ...`` (argv list) of the spec, optionally as another container (name), with
    another command or more mounts: the collective pre-flight's container is the job's."""
    changes = {}
    if name:
        changes["name"] = name
    if command:
        changes["command"] = command
    if extra_mounts:
        changes["extra_mounts"] = extra_mounts
    if labels is not None:
        changes["labels"] = labels
    try:
        return _spec(spec).replace(**changes).argv(rm=rm)
    except jc.ContainerSpecError as exc:
        raise ValueError(f"job container: {exc}") from exc


def job_container_unit(spec, description, stop_grace_s, restart_sec=20, start_limit_burst=5,
                       start_limit_interval_s=3600, comments=()):
    """The systemd unit (text) that runs the spec."""
    try:
        return _spec(spec).unit(description, stop_grace_s, restart_sec=restart_sec,
                                start_limit_burst=start_limit_burst, start_limit_interval_s=start_limit_interval_s,
                                comments=comments)
    except jc.ContainerSpecError as exc:
        raise ValueError(f"job container: {exc}") from exc


def job_container_command(spec, module, module_args=()):
    """The spec's torchrun command with another trainer module (e.g. collective), without the launcher."""
    c = list(_spec(spec).command)
    if c[:2] == ["ascendops-train", "launch"]:
        c = ["torchrun"] + c[c.index("--") + 1:]
    cut = c.index("-m")
    return c[:cut] + ["-m", "ascendops_trainer", module] + [str(a) for a in module_args]


def job_container_security(user=None, cap_add=()):
    """The least-privilege flags of every job container (container_runtime's verify uses them)."""
    return jc.security_args(user, cap_add)


def container_user(device_stats, user_name=None, uid=None, gid=None):
    """Who the job runs as (see module_utils/job_container.container_user). ``device_stats``: the
    results of an Ansible stat loop over the device nodes, or [{path, uid, gid, mode}]."""
    stats = []
    for item in device_stats or []:
        st = item.get("stat", item) if isinstance(item, dict) else {}
        if st.get("exists", True):
            stats.append({"path": st.get("path", item.get("item")), "uid": st.get("uid"), "gid": st.get("gid"),
                          "mode": st.get("mode", "0")})
    return jc.container_user(stats, user_name, uid, gid)


def job_env(base, extra_env=None):
    try:
        return jc.job_env(base, extra_env)
    except jc.ContainerSpecError as exc:
        raise ValueError(str(exc)) from exc


def env_file_text(env, header=()):
    return jc.env_file_text(env, header)


def interface_of_address(facts, address):
    return jc.interface_of_address(facts, address)


def path_is(stat, kind="file", mode=None, checksum=None, uid=0, gid=0):
    """Whether a path as module path_info read it (one entry of its ``stats``; follow false) is already
    what a write would make it: a regular file (``kind`` file) or a directory (``kind`` directory) with
    this owner, group and mode and, for a file, this content checksum (sha1, as copy reports it). None
    or a missing path is not right. The launch stage writes a file or directory only where this is false."""
    if not isinstance(stat, dict) or not stat.get("exists"):
        return False
    if not stat.get("isdir" if kind == "directory" else "isreg"):
        return False
    if uid is not None and stat.get("uid") != int(uid):
        return False
    if gid is not None and stat.get("gid") != int(gid):
        return False
    if mode is not None and stat.get("mode") != str(mode):
        return False
    return kind == "directory" or checksum is None or stat.get("checksum") == checksum


def launch_plan(infos, changed_data=None, restart_failed=False, start_stopped=False):
    """The restart plan from every node's ascend_job_info result: {host: job} (or {host: result with
    .job}). See module_utils/job_state.restart_plan."""
    nodes = {h: (v.get("job", v) if isinstance(v, dict) else v) for h, v in (infos or {}).items()}
    return js.restart_plan(nodes, changed_data or {}, bool(restart_failed), bool(start_stopped))


def collective_verdict(report, min_bandwidth_gbs=0.0, min_size_bytes=0):
    """Verdict on a collective pre-flight report (ascendops-train collective): {ok, message,
    failed_nodes, slow_sizes, slowest_node, best_bandwidth_gbs}. Sizes at or above ``min_size_bytes``
    must reach ``min_bandwidth_gbs`` (algorithm bandwidth); every check must have passed."""
    results = report.get("results") or []
    failed = list(report.get("failed_nodes") or [])
    slow = [r for r in results
            if r["size_bytes"] >= int(min_size_bytes) and r["alg_bandwidth_gbs"] < float(min_bandwidth_gbs)]
    slowest = report.get("slowest_node")
    best = max((r["alg_bandwidth_gbs"] for r in results), default=0.0)
    problems = []
    if not results:
        problems.append("the report has no results")
    if failed:
        problems.append(f"all-reduce gave wrong values on node(s) {', '.join(failed)}")
    if slow:
        sizes = ", ".join(f"{r['size_bytes']} B: {r['alg_bandwidth_gbs']} GB/s" for r in slow)
        problems.append(f"bandwidth under the floor of {min_bandwidth_gbs} GB/s ({sizes}); slowest node: {slowest}")
    message = "; ".join(problems) if problems else (
        f"all-reduce over {report.get('world_size')} ranks ({report.get('backend')}) passed, best "
        f"{best} GB/s, slowest node {slowest}")
    return {"ok": not problems, "message": message, "failed_nodes": failed,
            "slow_sizes": [r["size_bytes"] for r in slow], "slowest_node": slowest, "best_bandwidth_gbs": best}


def key_value_lines(text):
    """``KEY=value`` lines (``systemctl show``, an environment file) into a dict; the first ``=`` splits,
    comments and other lines are skipped."""
    result = {}
    for line in str(text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        result[key.strip()] = value
    return result


def hccl_test_results(text):
    """Rows of CANN's hccl_test output (see module_utils/hccl_test.py)."""
    return parse_hccl_test(text)


def hccl_test_verdict(rows, min_bandwidth_gbs=0.0, min_size_bytes=0):
    return summarize_hccl_test(rows, min_bandwidth_gbs, min_size_bytes)


def npu_processes(text):
    """Processes holding NPUs, from ``npu-smi info`` output ([] when every NPU is free)."""
    return parse_npu_smi_processes(text)


class FilterModule:
    """Launch stage filters."""

    def filters(self):
        return {"hccl_errors": hccl_errors, "collective_verdict": collective_verdict,
                "key_value_lines": key_value_lines, "log_excerpt": log_excerpt,
                "hccl_test_results": hccl_test_results, "hccl_test_verdict": hccl_test_verdict,
                "npu_processes": npu_processes, "job_container_spec": job_container_spec,
                "job_container_argv": job_container_argv, "job_container_unit": job_container_unit,
                "job_container_command": job_container_command, "job_container_security": job_container_security,
                "container_user": container_user, "job_env": job_env, "env_file_text": env_file_text,
                "interface_of_address": interface_of_address,
                "launch_plan": launch_plan, "path_is": path_is,
                "container_extra_args_problems": container_extra_args_problems}
