# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the output of the vendor's ``npu-smi`` tool.

* ``npu-smi info``: the summary table, parsed by its two column-header rows (never by fixed
  positions), so every documented layout reads the same way:

  - 910B (Atlas 800T A2): one NPU row (``NPU Name | Health | Power(W) Temp(C) Hugepages``) and
    one chip row (``Chip | Bus-Id | AICore(%) Memory-Usage(MB) HBM-Usage(MB)``) per NPU;
  - Atlas A3: chip header ``Chip Phy-ID``; each NPU id appears once per chip (two chips per
    NPU, each with its own NPU row whose power may be ``-``);
  - 310P: chip header ``Chip Device``, no HBM column, ``NA`` values, several chip rows after one
    NPU row;
  - npu-smi 26.x: a wider table (more columns are kept under their snake_cased header);
  - a redacted Bus-Id (``xxxx:xx:xx.x``, ``***``) is a value like any other.

  The process table below (``NPU Chip | Process id | ...``, four or five columns) ends the
  parse. A row that fits neither header row is an error naming the line: it is never counted as
  an NPU.
* ``npu-smi info -l``: ``Total Count`` and one block per NPU.
* dcmi error strings (``dcmi module initialize failed. ret is -8005``).

Only the standard library is used; the code runs on target hosts with Python 3.8+.
"""

from __future__ import annotations

import re
from collections import OrderedDict

NPU_SMI_ERRORS = {
    -8005: "dcmi module initialize failed: the NPU driver is not loaded or its device nodes are "
           "missing (typically: driver installed but the node not rebooted since)",
    -8020: "the device is in use by another process",
}
# health words from best to worst; anything else counts as worse than OK
HEALTH_ORDER = ("OK", "Warning", "Alarm", "Critical")

_NPU_SMI_ERR_RE = re.compile(r"ret\s+is\s+(-?\d+)", re.IGNORECASE)
_NPU_SMI_VERSION_RE = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)", re.IGNORECASE)
_TOKEN_RE = re.compile(r"\S+\s*/\s*\S+|\S+")
_INT_RE = re.compile(r"^\d+$")
_HEALTH_RE = re.compile(r"^[A-Za-z][A-Za-z_-]*$")
_REDACTED_RE = re.compile(r"^[xX*]+$")
_EMPTY_VALUES = ("", "-", "NA", "N/A", "--")

# column header (lower case) -> key; "pair" headers hold "used / total"
_COLUMN_KEYS = {
    "npu": "npu_id",
    "name": "name",
    "health": "health",
    "power(w)": "power_w",
    "temp(c)": "temp_c",
    "hugepages-usage(page)": ("hugepages_used", "hugepages_total"),
    "chip": "chip_id",
    "phy-id": "phy_id",
    "device": "device_id",
    "bus-id": "bus_id",
    "aicore(%)": "aicore_pct",
    "memory-usage(mb)": ("memory_used_mb", "memory_total_mb"),
    "hbm-usage(mb)": ("hbm_used_mb", "hbm_total_mb"),
}
_INT_KEYS = ("npu_id", "chip_id", "phy_id", "device_id")
_TEXT_KEYS = ("name", "health", "bus_id")


class NpuSmiFormatError(ValueError):
    """The text is not an ``npu-smi info`` table of a known layout."""


def parse_npu_smi_error(text):
    """Recognise an npu-smi/dcmi failure in ``text``.

    Returns None when there is none, else a dict ``{code, line, meaning}`` (code is an int or
    None when the line carries no ``ret is N``).
    """
    if not text:
        return None
    for raw in text.splitlines():
        line = raw.strip()
        low = line.lower()
        m = _NPU_SMI_ERR_RE.search(line)
        if m and ("dcmi" in low or "fail" in low or "error" in low or "used" in low):
            code = int(m.group(1))
            return {"code": code, "line": line, "meaning": NPU_SMI_ERRORS.get(code)}
        if "dcmi module initialize failed" in low:
            return {"code": None, "line": line, "meaning": NPU_SMI_ERRORS[-8005]}
    return None


def snake(header):
    return re.sub(r"[^0-9a-z]+", "_", header.lower()).strip("_")


def _number(value):
    value = value.strip()
    if value in _EMPTY_VALUES:
        return None
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value


def _cells(line):
    """Split a ``| a | b |`` table line into cell strings (not stripped)."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|"):
        body = body[:-1]
    return body.split("|")


def _tokens_with_pos(cell):
    return [(m.start(), m.group(0)) for m in _TOKEN_RE.finditer(cell)]


def _header_layout(line):
    """Column headers of a header line: list per cell of [(start, header)]."""
    return [list(_tokens_with_pos(cell)) for cell in _cells(line)]


def _assign(layout_cell, cell):
    """Map the values in a data cell onto the headers of the same cell.

    Equal counts are zipped in order; otherwise each value goes to the header whose start column
    is nearest at or before it.
    """
    headers = [h for _start, h in layout_cell]
    values = _tokens_with_pos(cell)
    if not headers:
        return []
    if len(values) == len(headers):
        return list(zip(headers, [v for _pos, v in values]))
    out = []
    starts = [p for p, _header in layout_cell]
    for pos, val in values:
        idx = 0
        for i, start in enumerate(starts):
            if start <= pos + 1:
                idx = i
        out.append((headers[idx], val))
    return out


def _store(record, header, value):
    key = _COLUMN_KEYS.get(header.lower())
    if isinstance(key, tuple):
        parts = [p.strip() for p in value.split("/", 1)]
        record[key[0]] = _number(parts[0])
        record[key[1]] = _number(parts[1]) if len(parts) > 1 else None
        return
    if key is None:
        key = snake(header)
    if key in _TEXT_KEYS:
        record[key] = None if value.strip() in _EMPTY_VALUES else value.strip()
    else:
        record[key] = _number(value)


def _fill(record, layout, cells):
    for layout_cell, cell in zip(layout, cells):
        for header, _start in [(h, s) for s, h in layout_cell]:
            key = _COLUMN_KEYS.get(header.lower(), snake(header))
            for k in (key if isinstance(key, tuple) else (key,)):
                record.setdefault(k, None)
        for header, value in _assign(layout_cell, cell):
            _store(record, header, value)


def _is_table_line(line):
    return line.strip().startswith("|")


def _is_separator(line):
    s = line.strip()
    return s.startswith("+") and len(s) > 1 and set(s) <= set("+-=")


def _is_process_section(line):
    low = line.lower()
    return ("process id" in low or "process name" in low or "no running processes" in low
            or "process memory" in low)


def _first_cell_tokens(cells):
    return cells[0].split() if cells else []


def _health_word(cells, header_a):
    """Whether the row's cell under ``Health`` holds a health word (``OK``, ``Warning``, ``Alarm``,
    ``Critical``, ...): a chip row has its Bus-Id there (``0000:C1:00.0``, or a redaction)."""
    for i, layout in enumerate(header_a):
        if any(h.lower() == "health" for _pos, h in layout) and i < len(cells):
            value = cells[i].split()
            return (len(value) == 1 and _HEALTH_RE.match(value[0]) is not None
                    and value[0] not in _EMPTY_VALUES and not _REDACTED_RE.match(value[0]))
    return False


def _fits_npu_row(cells, header_a):
    """An NPU row: as many cells as the header, ``<npu id> <name>`` in the first cell and one
    value in the Health cell. A name of digits only (``310``) is a name when the Health cell holds
    a health word, never a chip id."""
    if len(cells) != len(header_a):
        return False
    first = _first_cell_tokens(cells)
    if len(first) != len(header_a[0]) or not first or not _INT_RE.match(first[0]):
        return False
    if len(first) > 1 and _INT_RE.match(first[1]) and not _health_word(cells, header_a):
        return False
    return len(cells) < 2 or len(cells[1].split()) == 1


def _fits_chip_row(cells, header_b, header_a=None):
    """A chip row: as many cells as the header, only ids (integers, or ``-``) in the first cell,
    as many as the first cell has headers (``Chip`` [``Phy-ID`` | ``Device``]), and no health
    word where the NPU row has its Health (an NPU named ``310`` looks like ``<chip> <device>``)."""
    if header_b is None or len(cells) != len(header_b):
        return False
    if header_a is not None and _health_word(cells, header_a):
        return False
    first = _first_cell_tokens(cells)
    if len(first) != len(header_b[0]) or not first or not _INT_RE.match(first[0]):
        return False
    return all(_INT_RE.match(t) or t in _EMPTY_VALUES for t in first)


def _worst_health(values):
    worst = None
    for value in values:
        rank = HEALTH_ORDER.index(value) if value in HEALTH_ORDER else len(HEALTH_ORDER)
        if worst is None or rank > worst[0]:
            worst = (rank, value)
    return worst[1] if worst else None


def _find_headers(lines, result):
    """(header_a, header_b or None, index of the first line after the headers)."""
    for i, line in enumerate(lines):
        m = _NPU_SMI_VERSION_RE.search(line)
        if m and result["npu_smi_version"] is None:
            result["npu_smi_version"] = m.group(1)
            result["driver_version"] = m.group(2)
        if not _is_table_line(line):
            continue
        first = _first_cell_tokens(_cells(line))
        if first and first[0].lower() == "npu" and "health" in line.lower():
            header_a = _header_layout(line)
            j = i + 1
            while j < len(lines) and not _is_table_line(lines[j]) and not _is_separator(lines[j]):
                j += 1
            if j < len(lines) and _is_table_line(lines[j]):
                second = _first_cell_tokens(_cells(lines[j]))
                if second and second[0].lower() == "chip":
                    return header_a, _header_layout(lines[j]), j + 1
            return header_a, None, i + 1
    raise NpuSmiFormatError("no npu-smi info table header (a row 'NPU Name | Health | ...') found")


def _header_text(layout):
    return " | ".join(" ".join(h for _s, h in cell) for cell in layout)


def parse_npu_smi_info(text):
    """Parse the output of ``npu-smi info``.

    Returns a dict:

    * ``npu_smi_version``: the tool version from the header line (or None)
    * ``driver_version``: the ``Version:`` of the header line, i.e. the running driver (or None)
    * ``chips``: one dict per chip row, in table order, with the values of its NPU row and its
      chip row: ``npu_id, name, health, power_w, temp_c, hugepages_used, hugepages_total,
      chip_id, bus_id, aicore_pct, memory_used_mb, memory_total_mb, hbm_used_mb, hbm_total_mb``
      (``phy_id`` on A3, ``device_id`` on 310P; other columns under a snake_case key) and
      ``phy_id`` always: the Phy-ID column, else the Device column, else the NPU id where each NPU
      has one chip (910B), else None. ``-``/``NA`` values are None.
    * ``npus``: one dict per distinct NPU id, in order: the values of its first chip, ``health``
      the worst health of its chips, ``chip_count`` and ``phy_ids``.

    Raises NpuSmiFormatError (a ValueError) when there is no table header, or when a table row
    fits neither header row (the message names the line).
    """
    result = {"npu_smi_version": None, "driver_version": None, "npus": [], "chips": []}
    if not text or not text.strip():
        raise NpuSmiFormatError("empty npu-smi output")
    lines = text.splitlines()
    header_a, header_b, start = _find_headers(lines, result)

    chips = []
    current = None
    current_used = False
    for line in lines[start:]:
        if _is_separator(line) or not line.strip():
            continue
        if not _is_table_line(line):
            if chips or current is not None:
                break
            continue
        if _is_process_section(line):
            break
        cells = _cells(line)
        if not "".join(cells).strip():
            continue
        if _fits_chip_row(cells, header_b, header_a):
            if current is None:
                raise NpuSmiFormatError(f"npu-smi info: chip row before any NPU row: {line.strip()!r}")
            record = OrderedDict(current)
            _fill(record, header_b, cells)
            chips.append(record)
            current_used = True
        elif _fits_npu_row(cells, header_a):
            if current is not None and not current_used:
                chips.append(_chipless(current))
            current = OrderedDict()
            _fill(current, header_a, cells)
            current_used = False
            if header_b is None:
                chips.append(_chipless(current))
                current_used = True
        else:
            expected = "'" + _header_text(header_a) + "'"
            if header_b is not None:
                expected += " or '" + _header_text(header_b) + "'"
            raise NpuSmiFormatError(
                f"npu-smi info: a table row fits no known layout (expected {expected}): {line.strip()!r}")
    if current is not None and not current_used:
        chips.append(_chipless(current))

    per_npu = OrderedDict()
    for chip in chips:
        per_npu.setdefault(chip.get("npu_id"), []).append(chip)
    for group in per_npu.values():
        for chip in group:
            if chip.get("phy_id") is None:
                if chip.get("device_id") is not None:
                    chip["phy_id"] = chip["device_id"]
                elif len(group) == 1 and "phy-id" not in _headers_lower(header_b):
                    chip["phy_id"] = chip.get("npu_id")
            chip.setdefault("phy_id", None)
    result["chips"] = [dict(c) for c in chips]
    for group in per_npu.values():
        npu = dict(group[0])
        npu["health"] = _worst_health([c.get("health") for c in group])
        npu["chip_count"] = len(group)
        npu["phy_ids"] = [c.get("phy_id") for c in group]
        result["npus"].append(npu)
    return result


def _headers_lower(layout):
    return [h.lower() for cell in (layout or []) for _s, h in cell]


def _chipless(npu_record):
    """An NPU row without a chip row (a one-row layout, or a chip row missing)."""
    record = OrderedDict(npu_record)
    record.setdefault("chip_id", None)
    return record


def parse_npu_smi_info_version(text):
    """(npu_smi_version, driver_version) from the header line of ``npu-smi info``, or (None, None)."""
    m = _NPU_SMI_VERSION_RE.search(text or "")
    if not m:
        return None, None
    return m.group(1), m.group(2)


def parse_npu_smi_list(text):
    """Parse ``npu-smi info -l``: ``{"total_count": int|None, "npus": [{npu_id, chip_count, ...}]}``.

    Keys of each block are snake_cased (``Product Name`` -> ``product_name``); integers are
    converted.
    """
    result = {"total_count": None, "npus": []}
    current = None
    for raw in (text or "").splitlines():
        if ":" not in raw:
            continue
        key, value = raw.split(":", 1)
        key = snake(key)
        value = value.strip()
        if not key:
            continue
        num = _number(value) if value else None
        value = num if isinstance(num, int) else (value or None)
        if key == "total_count":
            result["total_count"] = value
            continue
        if key == "npu_id":
            current = OrderedDict()
            result["npus"].append(current)
        if current is not None:
            current[key] = value
    result["npus"] = [dict(n) for n in result["npus"]]
    return result


def parse_npu_smi_processes(text):
    """Processes holding NPUs, from the process table below ``npu-smi info``'s NPU table.

    Rows look like ``| 0       0    | 123456   | python3   | 3200 |`` under the header
    ``| NPU  Chip | Process id | Process name | Process memory(MB) |`` (npu-smi 26.x adds a
    ``Process id in container`` column, found by its header); ``No running processes found in NPU N``
    rows mean none. Returns ``[{npu_id, chip_id, pid, name, memory_mb}]`` (empty when the NPUs are
    free). Raises ValueError when the text has no process table at all.
    """
    rows, layout = [], None
    for line in (text or "").splitlines():
        if not _is_table_line(line):
            continue
        cells = [c.strip() for c in _cells(line)]
        low = [c.lower() for c in cells]
        if any(c.startswith("process id") for c in low) and layout is None:
            layout = low
            continue
        if layout is None or "no running processes" in " ".join(low):
            continue
        first = cells[0].split()
        if len(first) < 1 or not all(t.isdigit() for t in first) or len(cells) < 3:
            continue
        named = dict(zip(layout, cells))
        pid = named.get("process id", cells[1]).split()[0] if named.get("process id", cells[1]) else ""
        if not pid.isdigit():
            raise ValueError(f"npu-smi process row without a process id: {line.strip()!r}")
        mem = named.get("process memory(mb)")
        rows.append({"npu_id": int(first[0]), "chip_id": int(first[1]) if len(first) > 1 else None,
                     "pid": int(pid), "name": named.get("process name", cells[2]),
                     "memory_mb": _number(mem) if mem else None})
    if layout is None:
        raise ValueError("no npu-smi process table (| NPU Chip | Process id | ...) found")
    return rows


_SPOD_RE = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?)\s*:\s*(\S+)\s*$")
_SPOD_KEYS = {"sdid": "super_device_id", "super pod size": "super_pod_size", "super pod id": "super_pod_id",
              "server index": "server_index"}


def parse_npu_smi_spod_info(text):
    """``npu-smi info -t spod-info -i <id> -c <chip>`` (Atlas A3) ->
    ``{"super_device_id", "super_pod_size", "super_pod_id", "server_index"}`` (strings, as printed).

    The lines are ``SDID : 16777216``, ``Super Pod Size : 384``, ``Super Pod ID : 0``,
    ``Server Index : 4``; ``SDID`` is the super_device_id of the rank table (the HCCL guide). Other
    ``key : value`` lines are ignored; a missing SDID is an error naming the first line read.
    """
    out = {}
    lines = [ln for ln in (text or "").splitlines() if ln.strip()]
    for line in lines:
        m = _SPOD_RE.match(line)
        if m and m.group(1).strip().lower() in _SPOD_KEYS:
            out[_SPOD_KEYS[m.group(1).strip().lower()]] = m.group(2)
    if "super_device_id" not in out or not out["super_device_id"].isdigit():
        shown = lines[0].strip() if lines else "(no output)"
        raise NpuSmiFormatError(f"npu-smi info -t spod-info: no SDID line (first line {shown!r})")
    return out


# ------------------------------------------------------------------ -t usages / -t common

_KV_RE = re.compile(r"^\s*([^:]*?[^\s:])\s*:\s*(.*?)\s*$")
_MCU_NAMES = ("mcu",)
# printed key (lower case) -> normalised key; several spellings per value across models/versions
_USAGE_KEYS = {
    "aicore usage rate(%)": "aicore_pct",
    "ai core usage rate(%)": "aicore_pct",
    "aivector usage rate(%)": "aivector_pct",
    "vectorcore usage rate(%)": "aivector_pct",
    "aicpu usage rate(%)": "aicpu_pct",
    "ctrlcpu usage rate(%)": "ctrlcpu_pct",
    "hbm capacity(mb)": "hbm_capacity_mb",
    "hbm usage rate(%)": "hbm_usage_pct",
    "hbm bandwidth usage rate(%)": "hbm_bandwidth_pct",
    "ddr capacity(mb)": "ddr_capacity_mb",
    "ddr usage rate(%)": "ddr_usage_pct",
    "memory usage rate(%)": "ddr_usage_pct",
    "ddr bandwidth usage rate(%)": "ddr_bandwidth_pct",
    "ddr hugepages total(page)": "hugepages_total",
    "ddr hugepages usage rate(%)": "hugepages_usage_pct",
    "aicore freq(mhz)": "aicore_freq_mhz",
    "aicore curfreq(mhz)": "aicore_cur_freq_mhz",
    "aicore count": "aicore_count",
    "temperature(c)": "temperature_c",
    "npu real-time power(w)": "power_w",
    "power(w)": "power_w",
    "npu utilization(%)": "npu_util_pct",
}


def _kv_lines(text, what):
    """(line, key, value) for every non-blank line; a line that is not ``Key : Value`` is an error
    naming it."""
    out = []
    for raw in (text or "").splitlines():
        if not raw.strip():
            continue
        m = _KV_RE.match(raw)
        if not m:
            raise NpuSmiFormatError(f"npu-smi info -t {what}: a line is not 'Key : Value': {raw.strip()!r}")
        out.append((raw.strip(), m.group(1), m.group(2)))
    return out


def _chip_record(chip_id, pairs):
    values = OrderedDict()
    record = OrderedDict([("chip_id", chip_id)])
    for key, value in pairs:
        values[key] = value
        norm = _USAGE_KEYS.get(key.lower())
        if norm is not None and norm not in record:
            record[norm] = _number(value) if value else None
    record["values"] = dict(values)
    return record


def _int_value(line, key, value, what):
    if not _INT_RE.match(value):
        raise NpuSmiFormatError(f"npu-smi info -t {what}: {key} is not a number: {line!r}")
    return int(value)


def parse_npu_smi_chip_values(text, what="usages"):
    """Parse ``npu-smi info -t usages -i <id>`` or ``npu-smi info -t common -i <id>``.

    Both print ``Key : Value`` lines (any indentation, any padding): a head (``NPU ID``, and
    ``Chip Count`` where printed), then one block per chip. The blocks are found by structure:

    * ``-t usages`` ends each chip's block with its ``Chip ID : N`` line (910, 910B, 310P: values
      first, then the id);
    * ``-t common`` starts each block with ``Chip ID : N`` and may end with a ``Chip Name : mcu``
      block (the board's MCU: its temperature and, on 310P, the card's power);
    * an output with no ``Chip ID`` at all is one chip, id 0 (the vendor's example for one card).

    Returns ``{"npu_id", "chip_count", "chips": [...], "mcu": {...} or None}``; each chip holds
    ``chip_id``, the normalised values it printed (``aicore_pct``, ``hbm_capacity_mb``,
    ``hbm_usage_pct``, ``ddr_capacity_mb``, ``ddr_usage_pct`` (``DDR`` or ``Memory Usage Rate``),
    ``aicpu_pct``, ``ctrlcpu_pct``, ``aivector_pct``, ``hbm_bandwidth_pct``, ``ddr_bandwidth_pct``,
    ``temperature_c``, ``power_w``, ``aicore_freq_mhz``, ``aicore_cur_freq_mhz``, ``aicore_count``
    ...; a key the model does not print is absent) and ``values`` (every line as printed).
    ``NA``/``-`` values are None.

    Raises NpuSmiFormatError (a ValueError) naming the line for a line that is not
    ``Key : Value``, an ``NPU ID``/``Chip ID`` that is not a number, values after the last
    ``Chip ID`` of a usages layout, or an output with no ``NPU ID``.
    """
    lines = _kv_lines(text, what)
    if not lines:
        raise NpuSmiFormatError(f"npu-smi info -t {what}: empty output")
    result = {"npu_id": None, "chip_count": None, "chips": [], "mcu": None}
    body = []
    for line, key, value in lines:
        low = key.lower()
        if low == "npu id" and result["npu_id"] is None and not body:
            result["npu_id"] = _int_value(line, key, value, what)
        elif low == "chip count" and result["chip_count"] is None and not body:
            result["chip_count"] = _int_value(line, key, value, what)
        else:
            body.append((line, key, value))
    if result["npu_id"] is None:
        raise NpuSmiFormatError(f"npu-smi info -t {what}: no 'NPU ID : N' line (first line {lines[0][0]!r})")

    chip_lines = [i for i, (_l, k, _v) in enumerate(body) if k.lower() == "chip id"]
    leading = bool(chip_lines) and chip_lines[0] == 0
    chips, mcu = [], None
    current_id, pairs, in_mcu = (0 if not chip_lines else None), [], False
    for line, key, value in body:
        low = key.lower()
        if low == "chip name" and value.strip().lower() in _MCU_NAMES:
            if pairs or (leading and current_id is not None):
                chips.append(_chip_record(current_id if current_id is not None else 0, pairs))
            current_id, pairs, in_mcu = None, [], True
            continue
        if low == "chip id" and not in_mcu:
            chip_id = _int_value(line, key, value, what)
            if leading:
                if current_id is not None:
                    chips.append(_chip_record(current_id, pairs))
                current_id, pairs = chip_id, []
            else:
                chips.append(_chip_record(chip_id, pairs))
                pairs = []
            continue
        pairs.append((key, value))
        if in_mcu:
            continue
        if not leading and chip_lines and len(chips) == len(chip_lines):
            raise NpuSmiFormatError(
                f"npu-smi info -t {what}: a value after the last 'Chip ID' line belongs to no chip: {line!r}")
    if in_mcu:
        mcu = _chip_record(None, pairs)
        del mcu["chip_id"]
    elif current_id is not None:
        chips.append(_chip_record(current_id, pairs))
    result["chips"] = [dict(c) for c in chips]
    result["mcu"] = dict(mcu) if mcu is not None else None
    return result


# ------------------------------------------------------------------ -t health / -t ecc
# Both as MindCluster Ascend FaultDiag's user guide shows them ("Collecting Logs Before Training and
# Inference", Ascend/mind-cluster docs/.../faultdiag/user_guide.md): ``key : value`` lines, read by
# field name.
#   npu-smi info -i 0 -c 0 -t health     Health Status : OK / Error Code : NA / Error Information : NA
#   npu-smi info -i 0 -t ecc             NPU ID : 0 / Chip Count : 1 / DDR ... / HBM Single Bit Error
#                                        Count : 0 / ... / HBM Double Bit Isolated Pages Count : 0 /
#                                        Chip ID : 0 (one block per chip)

def _key_values(text):
    """``[(key, value)]`` of the ``key : value`` lines (keys as printed, stripped)."""
    out = []
    for line in (text or "").splitlines():
        m = _KV_RE.match(line)
        if m and m.group(1):
            out.append((m.group(1), m.group(2)))
    return out


def _first_line(text):
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[0] if lines else "(no output)"


def parse_npu_smi_health(text):
    """``npu-smi info -t health -i <npu> [-c <chip>]`` -> ``{"health", "error_code", "error_info"}``:
    ``health`` as printed (``OK``, ``Warning``, ``Alarm``, ``Critical``), the error fields None where
    ``NA``. Some versions print ``Health`` instead of ``Health Status``. No health line is an error
    showing the first line and the output."""
    fields = {k.lower(): v for k, v in _key_values(text)}
    health = fields.get("health status", fields.get("health"))
    if not health or not _HEALTH_RE.match(health):
        raise NpuSmiFormatError(f"npu-smi info -t health: no 'Health Status : <word>' line (first line "
                                f"{_first_line(text)!r}); output: {(text or '').strip()[:600]!r}")

    def _na(value):
        return None if value in (None, "") or value.upper() == "NA" else value

    return {"health": health, "error_code": _na(fields.get("error code")),
            "error_info": _na(fields.get("error information"))}


_ECC_KEYS = {
    "hbm single bit error count": "hbm_single_bit_errors",
    "hbm double bit error count": "hbm_double_bit_errors",
    "hbm single bit aggregate total err cnt": "hbm_single_bit_total",
    "hbm double bit aggregate total err cnt": "hbm_double_bit_total",
    "hbm single bit isolated pages count": "hbm_single_bit_isolated_pages",
    "hbm double bit isolated pages count": "hbm_double_bit_isolated_pages",
    "ddr single bit error count": "ddr_single_bit_errors",
    "ddr double bit error count": "ddr_double_bit_errors",
    "ddr single bit isolated pages count": "ddr_single_bit_isolated_pages",
    "ddr double bit isolated pages count": "ddr_double_bit_isolated_pages",
}


def parse_npu_smi_ecc(text):
    """``npu-smi info -t ecc -i <npu>`` -> one dict per chip: ``chip_id`` and the counts of _ECC_KEYS
    that the output has (ints). The chip's counts come before its ``Chip ID`` line. A count that is no
    number, or an output without any HBM count, is an error naming the line."""
    chips, current = [], {}
    for key, value in _key_values(text):
        name = key.lower()
        if name == "chip id":
            current["chip_id"] = int(value) if value.isdigit() else value
            chips.append(current)
            current = {}
        elif name in _ECC_KEYS:
            if not value.isdigit():
                raise NpuSmiFormatError(f"npu-smi info -t ecc: could not read the line {key + ' : ' + value!r} "
                                        "(expected a count)")
            current[_ECC_KEYS[name]] = int(value)
    if current:
        chips.append(dict(current, chip_id=None))
    if not any(k.startswith("hbm_") for c in chips for k in c):
        raise NpuSmiFormatError(f"npu-smi info -t ecc: no HBM error count line (first line {_first_line(text)!r}); "
                                f"output: {(text or '').strip()[:600]!r}")
    return chips


def ecc_problems(chips, max_isolated_pages=0, max_single_bit=-1):
    """What in ``parse_npu_smi_ecc``'s chips makes an NPU unfit to train: any HBM double-bit (uncorrectable)
    error, more isolated HBM pages (single- and double-bit together) than ``max_isolated_pages``, more
    single-bit errors than ``max_single_bit`` (a negative limit: not judged). One sentence per finding."""
    out = []
    for chip in chips:
        where = f"chip {chip.get('chip_id')}"
        if chip.get("hbm_double_bit_errors"):
            out.append(f"{where}: {chip['hbm_double_bit_errors']} HBM double-bit (uncorrectable) ECC errors")
        pages = sum(chip.get(k) or 0 for k in ("hbm_single_bit_isolated_pages", "hbm_double_bit_isolated_pages"))
        if max_isolated_pages >= 0 and pages > max_isolated_pages:
            single_pages = chip.get("hbm_single_bit_isolated_pages") or 0
            double_pages = chip.get("hbm_double_bit_isolated_pages") or 0
            out.append(f"{where}: {pages} HBM pages isolated (single-bit {single_pages}, double-bit {double_pages}; "
                       f"more than {max_isolated_pages})")
        single = chip.get("hbm_single_bit_errors")
        if single is not None and max_single_bit >= 0 and single > max_single_bit:
            out.append(f"{where}: {single} HBM single-bit ECC errors (more than {max_single_bit})")
    return out
