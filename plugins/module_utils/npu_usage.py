# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The work of the npu_usage_info module: per NPU of a node, AI Core use, HBM used and total,
temperature and power, read from ``npu-smi info -t usages -i N`` and ``npu-smi info -t common -i N``
(the NPU ids from ``npu-smi info -l``).

``combine()`` turns the two parsed outputs of one NPU into its usage record (pure, unit-tested);
``NpuUsage`` runs the commands. Nothing is changed on the node. A node without npu-smi, a driver
that does not answer, or a layout the parser does not know is reported (``available: false`` /
a per-NPU ``error``), not a failure, unless the module is asked to fail.
"""

from __future__ import annotations

from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_node import last_line
from ansible_collections.ascendops.cluster.plugins.module_utils.npu_info import find_npu_smi
from ansible_collections.ascendops.cluster.plugins.module_utils.npu_smi import (
    NpuSmiFormatError,
    parse_npu_smi_chip_values,
    parse_npu_smi_error,
    parse_npu_smi_list,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.vendor_command import vendor_runner

_NUMERIC = (int, float)


def _num(value):
    return value if isinstance(value, _NUMERIC) and not isinstance(value, bool) else None


def _mean(values):
    values = [v for v in values if v is not None]
    return round(sum(values) / len(values), 1) if values else None


def _sum(values):
    values = [v for v in values if v is not None]
    return round(sum(values), 1) if values else None


def _used_mb(capacity, pct):
    if capacity is None or pct is None:
        return None
    return int(round(capacity * pct / 100.0))


def merge_chips(usages, common):
    """One dict per chip id: the usages values, then what only common prints (temperature, power,
    frequencies); ``values`` is left out."""
    chips = {}
    for parsed in (usages, common):
        for chip in (parsed or {}).get("chips", []):
            merged = chips.setdefault(chip["chip_id"], {"chip_id": chip["chip_id"]})
            for key, value in chip.items():
                if key != "values" and merged.get(key) is None:
                    merged[key] = value
    return [chips[k] for k in sorted(chips)]


def combine(npu_id, usages, common):
    """The usage record of one NPU from its parsed ``-t usages`` and ``-t common`` (either may be None).

    * ``ai_core_pct``: the mean of its chips' ``Aicore Usage Rate(%)``;
    * ``hbm_total_mb`` / ``hbm_used_mb``: the sum of its chips' ``HBM Capacity(MB)`` and of capacity x
      ``HBM Usage Rate(%)`` (npu-smi prints a rate, so the used figure is good to 1 % of the capacity);
      None on a model without HBM (310P), where ``memory_kind`` is ``ddr`` and ``memory_used_mb`` /
      ``memory_total_mb`` come from the DDR lines;
    * ``temperature_c``: the hottest chip; ``power_w``: the sum of its chips' ``NPU Real-time Power(W)``,
      else the card's power the mcu block prints (310P), else None;
    * ``aicpu_pct``, ``ctrlcpu_pct``: means over the chips where printed (usages only).
    """
    chips = merge_chips(usages, common)
    hbm_total = _sum([_num(c.get("hbm_capacity_mb")) for c in chips])
    hbm_used = _sum([_used_mb(_num(c.get("hbm_capacity_mb")), _num(c.get("hbm_usage_pct"))) for c in chips])
    ddr_total = _sum([_num(c.get("ddr_capacity_mb")) or None for c in chips])
    ddr_used = _sum([_used_mb(_num(c.get("ddr_capacity_mb")) or None, _num(c.get("ddr_usage_pct"))) for c in chips])
    if hbm_total:
        kind, mem_used, mem_total = "hbm", hbm_used, hbm_total
    elif ddr_total:
        kind, mem_used, mem_total = "ddr", ddr_used, ddr_total
    else:
        kind, mem_used, mem_total = None, None, None
    temps = [_num(c.get("temperature_c")) for c in chips]
    temps = [t for t in temps if t is not None]
    power = _sum([_num(c.get("power_w")) for c in chips])
    mcu = (common or {}).get("mcu") or {}
    if power is None and _num(mcu.get("power_w")) is not None:
        power = _num(mcu.get("power_w"))
    chip_count = None
    for parsed in (usages, common):
        if parsed and parsed.get("chip_count") is not None:
            chip_count = parsed["chip_count"]
            break
    return {
        "npu_id": npu_id,
        "chip_count": chip_count if chip_count is not None else (len(chips) or None),
        "ai_core_pct": _mean([_num(c.get("aicore_pct")) for c in chips]),
        "hbm_used_mb": int(hbm_used) if hbm_total else None,
        "hbm_total_mb": int(hbm_total) if hbm_total else None,
        "memory_kind": kind,
        "memory_used_mb": int(mem_used) if mem_used is not None else None,
        "memory_total_mb": int(mem_total) if mem_total is not None else None,
        "temperature_c": max(temps) if temps else None,
        "power_w": power,
        "aicpu_pct": _mean([_num(c.get("aicpu_pct")) for c in chips]),
        "ctrlcpu_pct": _mean([_num(c.get("ctrlcpu_pct")) for c in chips]),
        "chips": chips,
        "error": None,
    }


def _gib(mb):
    return f"{mb / 1024.0:.1f}"


def summary(npus):
    """The node's figures over the NPUs that were read: ``{count, read, busy, ai_core_pct_mean,
    ai_core_pct_max, hbm_used_mb, hbm_total_mb, power_w, temperature_c_max}`` (busy: AI Core > 0)."""
    read = [n for n in npus if not n.get("error")]
    cores = [n["ai_core_pct"] for n in read if n.get("ai_core_pct") is not None]
    temps = [n["temperature_c"] for n in read if n.get("temperature_c") is not None]
    return {
        "count": len(npus),
        "read": len(read),
        "busy": len([c for c in cores if c > 0]),
        "ai_core_pct_mean": _mean(cores),
        "ai_core_pct_max": max(cores) if cores else None,
        "memory_kind": next((n["memory_kind"] for n in read if n.get("memory_kind")), None),
        "memory_used_mb": _sum([n.get("memory_used_mb") for n in read]),
        "memory_total_mb": _sum([n.get("memory_total_mb") for n in read]),
        "power_w": _sum([n.get("power_w") for n in read]),
        "temperature_c_max": max(temps) if temps else None,
    }


def usage_line(node, result):
    """One compact line per node: ``node1: NPU 8/8 read, 2 busy, AI Core 22% (max 87%), HBM 30.1/512.0 GiB,
    904.1 W, max 63 C``; where npu-smi could not be read, the reason."""
    prefix = f"{node}: " if node else ""
    if not result["available"]:
        return f"{prefix}NPU usage unavailable: {result['error']}"
    s = result["summary"]
    parts = [f"NPU {s['read']}/{s['count']} read", f"{s['busy']} busy"]
    if s["ai_core_pct_mean"] is not None:
        parts.append(f"AI Core {s['ai_core_pct_mean']:g}% (max {s['ai_core_pct_max']:g}%)")
    if s["memory_total_mb"]:
        parts.append(f"{(s['memory_kind'] or 'memory').upper()} {_gib(s['memory_used_mb'] or 0)}/"
                     f"{_gib(s['memory_total_mb'])} GiB")
    if s["power_w"] is not None:
        parts.append(f"{s['power_w']:g} W")
    if s["temperature_c_max"] is not None:
        parts.append(f"max {s['temperature_c_max']:g} C")
    errors = [n for n in result["npus"] if n.get("error")]
    if errors:
        parts.append(f"NPU {errors[0]['npu_id']}: {errors[0]['error']}")
    return prefix + ", ".join(parts)


class NpuUsage:
    """One npu_usage_info run: find npu-smi, list the NPUs, read each, exit with the records."""

    def __init__(self, module):
        self.module = module
        self.run_cmd = vendor_runner(module)

    def _query(self, path, args):
        """(stdout, error) of ``npu-smi <args>``; error names the command and what went wrong."""
        cmd = [path] + args
        rc, out, err = self.run_cmd(cmd)
        dcmi = parse_npu_smi_error(f"{out}\n{err}")
        shown = "npu-smi " + " ".join(args)
        if dcmi:
            meaning = f" ({dcmi['meaning']})" if dcmi.get("meaning") else ""
            return None, f"{shown}: {dcmi['line']}{meaning}"
        if rc != 0:
            return None, f"{shown} failed (rc={rc}): {last_line(err, out) or 'no output'}"
        return out, None

    def _npu_ids(self, path):
        ids = self.module.params.get("npu_ids")
        if ids:
            return ids, None
        out, error = self._query(path, ["info", "-l"])
        if error:
            return [], error
        listed = [n.get("npu_id") for n in parse_npu_smi_list(out)["npus"]]
        if not listed or not all(isinstance(i, int) for i in listed):
            return [], f"npu-smi info -l lists no NPU ID (first line {last_line(out) or 'none'!r})"
        return listed, None

    def _read(self, path, npu_id):
        parsed = {}
        for what in ("usages", "common"):
            out, error = self._query(path, ["info", "-t", what, "-i", str(npu_id)])
            if error:
                return {"npu_id": npu_id, "error": error}
            try:
                parsed[what] = parse_npu_smi_chip_values(out, what)
            except NpuSmiFormatError as exc:
                return {"npu_id": npu_id, "error": str(exc)}
            if parsed[what]["npu_id"] != npu_id:
                return {"npu_id": npu_id, "error": f"npu-smi info -t {what} -i {npu_id} answered for NPU "
                                                   f"{parsed[what]['npu_id']}"}
        return combine(npu_id, parsed["usages"], parsed["common"])

    def gather(self):
        params = self.module.params
        result = {"available": False, "npu_smi": None, "error": None, "npus": [], "summary": summary([])}
        path, error = find_npu_smi(self.module, params["npu_smi"])
        result["npu_smi"] = path
        if error:
            result["error"] = error
            return result
        ids, error = self._npu_ids(path)
        if error:
            result["error"] = error
            return result
        result["npus"] = [self._read(path, npu_id) for npu_id in ids]
        read = [n for n in result["npus"] if not n.get("error")]
        result["available"] = bool(read)
        if not read:
            result["error"] = result["npus"][0]["error"]
        result["summary"] = summary(result["npus"])
        return result

    def run(self):
        result = self.gather()
        result["line"] = usage_line(self.module.params["node"], result)
        failed = [n for n in result["npus"] if n.get("error")]
        if self.module.params["fail_on_error"] and (not result["available"] or failed):
            reason = result["error"] if not result["available"] else failed[0]["error"]
            self.module.fail_json(msg=f"cannot read the NPU usage: {reason}", **result)
        self.module.exit_json(changed=False, **result)
