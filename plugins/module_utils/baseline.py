# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Performance baselines of a cluster: is it as fast as it was before the upgrade?

One JSON file per cluster on the controller (in the reports directory) holds, per kind of
measurement, the first measurement taken (or the one the user re-recorded) with the versions and
the world size it ran on:

- ``collective``: bus bandwidth per all-reduce message size (GB/s; bus = algorithm bandwidth x
  2(n-1)/n, comparable across world sizes) from the collective pre-flight;
- ``training``: tokens/s per device and MFU from the trainer's status files (the mean over nodes).

A measurement on one node (the NPUs' links inside the server) and one across nodes (the device
NICs) are not comparable: each topology has its own baseline (``<kind>`` across nodes,
``<kind>/single-node`` on one), so a one-node run and a later cluster run each record their own.

A later measurement is compared metric by metric: ``ok`` at or above (1 - warn) x baseline, ``warn``
below it, ``fail`` below (1 - fail) x baseline. Only a drop counts: faster is fine. Metrics the
baseline lacks (a new message size) are reported as ``new``.
"""

from __future__ import annotations

import copy
import datetime

SCHEMA_VERSION = 1
KINDS = ("collective", "training")


def collective_metrics(report):
    """{size_bytes (str): bus GB/s} of a collective pre-flight report (passed checks only)."""
    out = {}
    for row in (report or {}).get("results") or []:
        if row.get("check_result", "success") != "success" or row.get("bus_bandwidth_gbs") is None:
            continue
        out[str(int(row["size_bytes"]))] = float(row["bus_bandwidth_gbs"])
    return out


def training_metrics(statuses):
    """{tokens_per_s_per_device, mfu}: the mean over the nodes' status files that report them."""
    out = {}
    for key in ("tokens_per_s_per_device", "mfu"):
        values = [float(s[key]) for s in statuses or [] if isinstance(s, dict) and s.get(key) is not None]
        if values:
            out[key] = sum(values) / len(values)
    return out


def compare(baseline_metrics, current, warn, fail):
    """Per metric: {metric, baseline, current, ratio, verdict}; verdict ok | warn | fail | new."""
    if not 0 <= warn <= fail < 1:
        raise ValueError(f"tolerances must satisfy 0 <= warn ({warn}) <= fail ({fail}) < 1")
    rows = []
    for metric, value in current.items():
        value = float(value)
        base = (baseline_metrics or {}).get(metric)
        base = None if base is None else float(base)
        if base is None or base <= 0:
            rows.append({"metric": metric, "baseline": base, "current": value, "ratio": None, "verdict": "new"})
            continue
        ratio = value / base
        verdict = "fail" if ratio < 1 - fail else ("warn" if ratio < 1 - warn else "ok")
        rows.append({"metric": metric, "baseline": base, "current": value, "ratio": round(ratio, 4),
                     "verdict": verdict})
    return rows


def _single_node(context):
    """Whether `context` (its ``nodes``, an int or a templated string) describes a one-node measurement."""
    try:
        return int(str((context or {}).get("nodes")).strip()) == 1
    except ValueError:
        return False


def slot(kind, context):
    """The store key of `kind`'s baseline for the topology of `context`."""
    return f"{kind}/single-node" if _single_node(context) else kind


def evaluate(store, kind, current, context, warn=0.1, fail=0.3, update=False, now=None):
    """Compare `current` metrics of `kind` with the stored baseline and return (new store, result).

    The first measurement of a kind becomes its baseline; `update` re-records it (after an accepted
    change). `context` (versions, world size, nodes) is stored with the baseline and shown beside the
    comparison, so a drop can be read against what changed. result: {kind, verdict (ok | warn | fail |
    recorded), rows, baseline_context, context, changed (what in the context differs)}.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown baseline kind {kind!r} (one of {', '.join(KINDS)})")
    store = copy.deepcopy(store) if isinstance(store, dict) else {}
    store.setdefault("schema", SCHEMA_VERSION)
    entries = store.setdefault("baselines", {})
    stamp = now or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    key = slot(kind, context)
    # A one-node baseline stored under the plain kind (before the split by topology) moves to its slot.
    legacy = entries.get(kind)
    if legacy is not None and _single_node(legacy.get("context")) and f"{kind}/single-node" not in entries:
        entries[f"{kind}/single-node"] = entries.pop(kind)
    base = entries.get(key)
    if not current:
        return store, {"kind": kind, "verdict": "none", "rows": [], "context": context,
                       "baseline_context": (base or {}).get("context"), "changed": {}}
    if base is None or update:
        entries[key] = {"metrics": dict(current), "context": dict(context or {}), "recorded_at": stamp}
        return store, {"kind": kind, "verdict": "recorded", "rows": compare(current, current, warn, fail),
                       "context": context, "baseline_context": context, "changed": {}}
    rows = compare(base["metrics"], current, warn, fail)
    verdicts = {r["verdict"] for r in rows}
    verdict = "fail" if "fail" in verdicts else ("warn" if "warn" in verdicts else "ok")
    old = base.get("context") or {}
    changed = {k: {"baseline": old.get(k), "now": v} for k, v in (context or {}).items() if old.get(k) != v}
    return store, {"kind": kind, "verdict": verdict, "rows": rows, "context": context,
                   "baseline_context": old, "baseline_recorded_at": base.get("recorded_at"), "changed": changed}


def summary_lines(result):
    """Human lines of one evaluation (status.yml and the play's message)."""
    kind, verdict = result["kind"], result["verdict"]
    if verdict == "none":
        return [f"{kind}: nothing measured"]
    if verdict == "recorded":
        values = ", ".join(f"{r['metric']} {r['current']:.4g}" for r in result["rows"])
        return [f"{kind}: baseline recorded ({values})"]
    lines = [f"{kind}: {verdict} against the baseline of {result.get('baseline_recorded_at') or '?'}"]
    for r in result["rows"]:
        if r["verdict"] == "new":
            lines.append(f"  {r['metric']}: {r['current']:.4g} (no baseline)")
        else:
            lines.append(f"  {r['metric']}: {r['current']:.4g} vs {r['baseline']:.4g} ({r['ratio']:.0%}) "
                         f"{r['verdict']}")
    for key, diff in (result.get("changed") or {}).items():
        lines.append(f"  since the baseline, {key}: {diff['baseline']} -> {diff['now']}")
    return lines
