# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Log triage across the nodes of a job: which node failed first, and in which layer.

Input: per node, what `ascendops.cluster.ascend_collect` returned under `triage` (npu-smi info, each
device NIC's link and health, the job unit's journal and the kernel log with ISO timestamps, the
trainer's status file, the unit's state), or nothing for a node that could not be reached.

Signals are of two kinds: the state at collection time (an unhealthy NPU, a device port down, a
stale process holding an NPU while the job is not running: no time, but a cause), and timed log
events (error codes, a killed rank, a traceback's exception). In a collective, the rank that
reports a timeout is often only the one that waited for the rank that died, so events are
"primary" (a cause) or "secondary" (a symptom of a peer). The verdict, in order: a node that could
not be reached; a state signal (hardware, then device network, then driver); the earliest primary
event; the earliest secondary event, naming the nodes that did not report it as the likely culprit.
"""

from __future__ import annotations

import datetime
import json
import re

from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_errors import LAYERS, explain, find_codes
from ansible_collections.ascendops.cluster.plugins.module_utils.hccn_tool import (
    HccnError,
    health_ok,
    parse_link,
    parse_net_health,
    parse_netdetect,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.npu_smi import (
    NpuSmiFormatError,
    parse_npu_smi_info,
    parse_npu_smi_processes,
)

SCHEMA_VERSION = 1
# journalctl -o short-iso: "2026-12-01T03:44:01+0000 node1 docker[123]: message" (also +00:00, and
# short-iso-precise with microseconds).
_ISO_RE = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:?\d\d|Z)?)\s+\S+\s+(?P<msg>.*)$")
# A rank that died (torchrun's and the kernel's words), or the trainer's own refusals: causes.
_PRIMARY = [
    (re.compile(r"exitcode\s*:\s*-(?:9|6|7|11)\b|Signal \d+ \((?:SIGKILL|SIGSEGV|SIGABRT|SIGBUS)\)|"
                r"Signals\.SIG(?:KILL|SEGV|ABRT|BUS)"), "trainer", "a rank was killed or crashed"),
    (re.compile(r"non-finite", re.I), "trainer", "non-finite loss or gradient norm"),
    (re.compile(r"out of memory|OutOfMemoryError", re.I), "trainer", "device out of memory"),
    (re.compile(r"config error|rank table error", re.I), "trainer", "the trainer refused its configuration"),
]
# What a rank reports when a peer went away: symptoms.
_SECONDARY = re.compile(r"Connection (?:closed|reset) by peer|timed out|timeout|Broken pipe|DistNetworkError|"
                        r"DistBackendError|TCPStore|ChildFailedError", re.I)
_EXCEPTION_RE = re.compile(r"^(?:\[(?:rank|default)\d+\]:\s*)?([A-Za-z_][\w.]*(?:Error|Exception|Interrupt))\b:?(.*)$")
_KERNEL_NPU = re.compile(r"davinci|devdrv|\bnpu\b|hisi|ascend|dcmi|drv_", re.I)
_KERNEL_BAD = re.compile(r"error|fail|fault|timeout|lost|uncorrect|ecc|panic|hung", re.I)
_KERNEL_DRIVER = re.compile(r"devdrv|driver|dcmi|drv_", re.I)
_TIMELINE_MAX = 40


def _iso(ts):
    """An ISO timestamp as a sortable UTC string; None when it cannot be read."""
    if not ts:
        return None
    text = ts.replace("Z", "+00:00")
    m = re.match(r"(.*[+-])(\d\d)(\d\d)$", text)
    if m:  # +0000 -> +00:00 (short-iso)
        text = f"{m.group(1)}{m.group(2)}:{m.group(3)}"
    try:
        dt = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    return dt.astimezone(datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _event(node, time, layer, kind, line, code=None, secondary=False, source="journal"):
    return {"time": time, "node": node, "layer": layer, "kind": kind, "code": code, "secondary": secondary,
            "source": source, "line": line.strip()[:300]}


def journal_events(node, text, source="journal"):
    """Timed events in a journal (short-iso lines): codes, killed ranks, exceptions."""
    events = []
    for raw in str(text or "").splitlines():
        m = _ISO_RE.match(raw)
        time, msg = (_iso(m.group("ts")), m.group("msg")) if m else (None, raw)
        body = msg.split(": ", 1)[1] if ": " in msg and m else msg  # drop "unit[pid]: "
        for code in find_codes(body):
            info = explain(code)
            events.append(_event(node, time, info["layer"], "code", body, code, info["secondary"], source))
        for pattern, layer, kind in _PRIMARY:
            if pattern.search(body):
                events.append(_event(node, time, layer, kind, body, source=source))
                break
        exc = _EXCEPTION_RE.match(body.strip())
        if exc and not find_codes(body):
            secondary = bool(_SECONDARY.search(body))
            events.append(_event(node, time, "trainer", "exception: " + exc.group(1), body, None, secondary, source))
    return events


def kernel_events(node, text):
    """NPU errors in the kernel log: hardware, or driver when the driver names itself."""
    events = []
    for raw in str(text or "").splitlines():
        m = _ISO_RE.match(raw)
        time, msg = (_iso(m.group("ts")), m.group("msg")) if m else (None, raw)
        if _KERNEL_NPU.search(msg) and _KERNEL_BAD.search(msg):
            layer = "driver" if _KERNEL_DRIVER.search(msg) else "hardware"
            events.append(_event(node, time, layer, "kernel: NPU error", msg, source="kernel"))
    return events


def state_signals(node, data):
    """Signals from the state at collection time (no timestamp): [{layer, kind, detail}]."""
    out = []
    smi = data.get("npu_smi_info") or ""
    unit_active = (data.get("unit_state") or "").startswith("active")
    if smi.strip():
        try:
            info = parse_npu_smi_info(smi)
        except NpuSmiFormatError as e:
            codes = find_codes(smi)
            if codes:
                x = explain(codes[0])
                out.append({"layer": x["layer"], "kind": f"npu-smi {codes[0]}", "detail": x["meaning"]})
            else:
                out.append({"layer": "driver", "kind": "npu-smi unreadable", "detail": str(e)})
            info = None
        if info:
            for npu in info["npus"]:
                health = str(npu.get("health") or "").strip()
                if health and health.upper() != "OK":
                    out.append({"layer": "hardware", "kind": "NPU unhealthy",
                                "detail": f"NPU {npu.get('npu_id')}: health {health}"})
            try:
                procs = parse_npu_smi_processes(smi)
            except ValueError:
                procs = []
            if procs and not unit_active:
                held = ", ".join(f"NPU {p['npu_id']} by pid {p['pid']} ({p['name']})" for p in procs)
                out.append({"layer": "driver", "kind": "stale process holds an NPU",
                            "detail": f"the job is not running but {held} (EJ0001 on the next start)"})
    for dev, nic in sorted((data.get("hccn") or {}).items(), key=lambda kv: int(kv[0])):
        try:
            link = parse_link(nic.get("link") or "")
        except HccnError:
            link = None
        if link and link != "UP":
            out.append({"layer": "device_network", "kind": "device NIC link down", "detail": f"NPU {dev}: link {link}"})
        try:
            health = parse_net_health(nic.get("net_health") or "")
        except HccnError:
            health = None
        # Init is normal where the port has no net-detect address (nothing to probe; a bundle from before
        # the address was collected has none either): only a port that has one, or any other value, is
        # unhealthy (hccn_tool.health_ok, the RoCE stage's rule).
        try:
            netdetect = parse_netdetect(nic.get("netdetect") or "")
        except HccnError:
            netdetect = None
        if health and link == "UP" and not health_ok(health, netdetect):
            out.append({"layer": "device_network", "kind": "device NIC unhealthy",
                        "detail": f"NPU {dev}: net health {health}"
                                  + (f" (net-detect address {netdetect})" if netdetect else "")})
    status = _status(data.get("status"))
    if status.get("state") == "failed":
        out.append({"layer": "trainer", "kind": "job failed",
                    "detail": f"exit {status.get('exit_code')}: {status.get('reason') or 'no reason recorded'}"})
    return out


def _status(text):
    if isinstance(text, dict):
        return text
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


_STATE_ORDER = ("hardware", "device_network", "driver")


def triage(nodes):
    """The cluster's triage summary from {node: collected triage data, or None when unreachable}."""
    report_nodes, timeline = {}, []
    for node in sorted(nodes):
        data = nodes[node]
        if not data:
            unreachable = {"layer": "hardware", "kind": "unreachable",
                           "detail": "the node could not be reached: nothing collected"}
            report_nodes[node] = {"reachable": False, "layer": "hardware", "signals": [unreachable],
                                  "first_error": None, "codes": []}
            continue
        events = journal_events(node, data.get("journal")) + kernel_events(node, data.get("kernel"))
        signals = state_signals(node, data)
        timed = sorted((e for e in events if e["time"]), key=lambda e: e["time"])
        first = next((e for e in timed if not e["secondary"]), None) or (timed[0] if timed else None)
        if first is None and events:
            first = events[0]
        codes = []
        for e in events:
            if e["code"] and e["code"] not in [c["code"] for c in codes]:
                codes.append(explain(e["code"]))
        layer = next((s["layer"] for o in _STATE_ORDER for s in signals if s["layer"] == o), None)
        report_nodes[node] = {"reachable": True, "layer": layer or (first["layer"] if first else None),
                              "signals": signals, "first_error": first, "codes": codes}
        timeline.extend(events)
    timeline.sort(key=lambda e: (e["time"] is None, e["time"] or "", e["node"]))
    verdict = _verdict(report_nodes, timeline)
    seen = {}
    for e in timeline:
        if e["code"]:
            seen.setdefault(e["code"], {**explain(e["code"]), "nodes": []})
            if e["node"] not in seen[e["code"]]["nodes"]:
                seen[e["code"]]["nodes"].append(e["node"])
    return {"schema": SCHEMA_VERSION, "verdict": verdict, "nodes": report_nodes,
            "timeline": _first_per_node_kind(timeline)[:_TIMELINE_MAX], "codes": list(seen.values()),
            "layers": list(LAYERS)}


def _first_per_node_kind(timeline):
    """The first event of each (node, kind, code): a timeline of first errors, not every repeat."""
    seen, out = set(), []
    for e in timeline:
        key = (e["node"], e["kind"], e["code"])
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


def _verdict(nodes, timeline):
    down = [n for n, r in nodes.items() if not r["reachable"]]
    if down:
        return {"node": down[0], "nodes": down, "layer": "hardware", "basis": "state",
                "reason": f"{', '.join(down)} could not be reached (host down or its network)", "evidence": None}
    for layer in _STATE_ORDER:
        hits = [(n, s) for n, r in nodes.items() for s in r["signals"] if s["layer"] == layer]
        if hits:
            node, sig = hits[0]
            return {"node": node, "nodes": sorted({hit[0] for hit in hits}), "layer": layer, "basis": "state",
                    "reason": f"{sig['kind']}: {sig['detail']}", "evidence": None}
    primary = [e for e in timeline if not e["secondary"]]
    if primary:
        e = primary[0]
        return {"node": e["node"], "nodes": [e["node"]], "layer": e["layer"], "basis": "first error",
                "reason": _reason(e), "evidence": e["line"]}
    failed = [(n, s) for n, r in nodes.items() for s in r["signals"] if s["kind"] == "job failed"]
    if failed:
        node, sig = failed[0]
        return {"node": node, "nodes": [hit[0] for hit in failed], "layer": "trainer", "basis": "state",
                "reason": f"{sig['kind']}: {sig['detail']}", "evidence": None}
    if timeline:
        e = timeline[0]
        quiet = [n for n in nodes if n not in {x["node"] for x in timeline}]
        hint = (f"; {', '.join(quiet)} reported nothing and may be the node that went away first"
                if quiet else "")
        return {"node": quiet[0] if quiet else e["node"], "nodes": quiet or [e["node"]], "layer": e["layer"],
                "basis": "symptom", "reason": f"{e['node']} reported {_reason(e)} (a symptom of a peer){hint}",
                "evidence": e["line"]}
    return {"node": None, "nodes": [], "layer": None, "basis": "none", "reason": "no failure found", "evidence": None}


def _reason(e):
    if e["code"]:
        info = explain(e["code"])
        return f"{e['code']} {info['meaning']}"
    return e["kind"]


def render_markdown(summary, title="ascendops triage"):
    """summary.md: the verdict, the first errors in time order, each code explained, per-node signals."""
    v = summary["verdict"]
    lines = [f"# {title}", ""]
    if v["node"]:
        lines.append(f"**Failed first: {v['node']}**, layer **{v['layer']}** ({v['basis']}): {v['reason']}")
        if v.get("evidence"):
            lines += ["", f"    {v['evidence']}"]
    else:
        lines.append("No failure found in what was collected.")
    lines += ["", "## Timeline of first errors", ""]
    if summary["timeline"]:
        lines += ["| time (UTC) | node | layer | what | line |", "| --- | --- | --- | --- | --- |"]
        for e in summary["timeline"]:
            what = e["code"] or e["kind"]
            if e["secondary"]:
                what += " (symptom)"
            lines.append(f"| {e['time'] or '-'} | {e['node']} | {e['layer']} | {what} | "
                         f"{e['line'].replace('|', '/')[:160]} |")
    else:
        lines.append("(no timed errors)")
    if summary["codes"]:
        lines += ["", "## Error codes", ""]
        for c in summary["codes"]:
            lines.append(f"- **{c['code']}** ({c['layer']}, on {', '.join(c['nodes'])}): {c['meaning']}. "
                         f"Fix: {c['fix']}.")
    lines += ["", "## Nodes", ""]
    for node, r in summary["nodes"].items():
        sig = "; ".join(f"{s['kind']}: {s['detail']}" for s in r["signals"]) or "no state signal"
        first = r["first_error"]
        lines.append(f"- {node}: layer {r['layer'] or '-'}; {sig}"
                     + (f"; first error {first['time'] or '?'} {_reason(first)}" if first else ""))
    return "\n".join(lines) + "\n"
