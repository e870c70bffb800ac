# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the launch stage: training progress from the trainer's log, HCCL/CANN error codes
explained, the collective pre-flight verdict, hccl_test rows and the NPU process table."""

from __future__ import annotations

import re

from ansible_collections.ascendops.cluster.plugins.module_utils.hccl_test import parse_hccl_test, summarize_hccl_test
from ansible_collections.ascendops.cluster.plugins.module_utils.npu_smi import parse_npu_smi_processes

# What a code usually means and what to do about it. Matched in log text as a whole word.
HCCL_ERRORS = {
    "EI0006": ("HCCL socket timeout: a rank did not reach HCCL init (or the device network) within "
               "HCCL_CONNECT_TIMEOUT",
               "check that every node started the job, that device NICs ping each other (roce stage), "
               "and raise HCCL_CONNECT_TIMEOUT for large clusters"),
    "EI0002": ("HCCL notify wait timeout: a rank stopped taking part in a collective",
               "look for the rank that died or hung first; raise HCCL_EXEC_TIMEOUT for long steps"),
    "EI0008": ("CANN versions differ between the nodes",
               "install the same CANN version everywhere (cann stage)"),
    "EI0014": ("invalid rank table (RANK_TABLE_FILE): content or path wrong",
               "regenerate the rank table with the launch stage; check RANK_TABLE_FILE inside the container"),
    "EJ0001": ("HCCP init failed: a previous training process still holds the devices",
               "stop leftover training processes (npu-smi info process table) and start again"),
    "-8005": ("dcmi initialize failed: the NPU driver is not running",
              "check the driver (npu-smi info; reboot pending after an install?) and the /dev/davinci* devices"),
    "-8020": ("the device is used by another process",
              "stop the other process holding the NPU (npu-smi info process table)"),
}
_CODE_RE = re.compile(r"(?<![\w-])(E[IJ]\d{4}|-80(?:05|20))(?!\w)")
_STEP_RE = re.compile(r"\bstep (?P<step>\d+)/(?P<total>\d+) \| loss (?P<loss>[-+0-9.eE]+|n/a)\b"
                      r"(?:.*?\btok/s/dev (?P<tps>[0-9,.]+|n/a))?")
_RESUME_RE = re.compile(r"resumed from (?P<tag>\S+): step (?P<step>\d+)")
_SAVE_RE = re.compile(r"saved checkpoint (?P<tag>\S+)")
# torch prints a rank's uncaught exception with a "[rank3]: " prefix on every line.
_RANK_PREFIX_RE = re.compile(r"^\s*\[(?:rank|default)\d+\]:\s?")


def hccl_errors(text):
    """Known HCCL/CANN error codes in ``text``, in order of first appearance:
    [{code, meaning, fix, line}] (line = the first log line holding the code)."""
    found = {}
    for line in str(text or "").splitlines():
        for code in _CODE_RE.findall(line):
            if code in HCCL_ERRORS and code not in found:
                meaning, fix = HCCL_ERRORS[code]
                found[code] = {"code": code, "meaning": meaning, "fix": fix, "line": line.strip()[:300]}
    return list(found.values())


def _num(value):
    if value in (None, "n/a"):
        return None
    return float(value.replace(",", ""))


def train_progress(text):
    """Progress in a trainer log: the last ``step N/T | loss L | ... | tok/s/dev X`` line, the last
    checkpoint saved and the last resume. {step, total_steps, loss, tokens_per_s_per_device,
    first_loss, steps_logged, last_checkpoint, resumed_from, resumed_step}; step None when no step
    was logged."""
    result = {"step": None, "total_steps": None, "loss": None, "tokens_per_s_per_device": None, "first_loss": None,
              "steps_logged": 0, "last_checkpoint": None, "resumed_from": None, "resumed_step": None}
    for line in str(text or "").splitlines():
        m = _STEP_RE.search(line)
        if m:
            loss = _num(m.group("loss"))
            result.update(step=int(m.group("step")), total_steps=int(m.group("total")), loss=loss,
                          tokens_per_s_per_device=_num(m.group("tps")), steps_logged=result["steps_logged"] + 1)
            if result["first_loss"] is None:
                result["first_loss"] = loss
            continue
        m = _SAVE_RE.search(line)
        if m:
            result["last_checkpoint"] = m.group("tag")
            continue
        m = _RESUME_RE.search(line)
        if m:
            result["resumed_from"], result["resumed_step"] = m.group("tag"), int(m.group("step"))
    return result


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


def _fmt(value, spec):
    return "n/a" if value is None else format(value, spec)


def node_status_line(status):
    """One line per node for the status report, from the launch role's per-node status dict
    {node, state, node_rank, nproc, restarts, started, progress (train_progress), errors}."""
    p = status.get("progress") or {}
    head = (f"{status.get('node')}: {status.get('state')}, node_rank {status.get('node_rank')} "
            f"({status.get('nproc')} ranks), restarts {status.get('restarts')}, started {status.get('started') or '-'}")
    if p.get("step") is not None:
        body = (f"step {p['step']}/{p.get('total_steps')}, loss {_fmt(p.get('loss'), '.4f')} "
                f"(first {_fmt(p.get('first_loss'), '.4f')}), "
                f"{_fmt(p.get('tokens_per_s_per_device'), ',.0f')} tokens/s per device")
    else:
        body = "no step logged yet"
    tail = f", last checkpoint {p.get('last_checkpoint') or 'none'}"
    if p.get("resumed_from"):
        tail += f", resumed from {p['resumed_from']}"
    if status.get("errors"):
        tail += "; errors: " + ", ".join(e["code"] for e in status["errors"])
    return f"{head}; {body}{tail}"


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
        return {"hccl_errors": hccl_errors, "train_progress": train_progress,
                "collective_verdict": collective_verdict, "key_value_lines": key_value_lines,
                "node_status_line": node_status_line, "log_excerpt": log_excerpt,
                "hccl_test_results": hccl_test_results,
                "hccl_test_verdict": hccl_test_verdict, "npu_processes": npu_processes}
