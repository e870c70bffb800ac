# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the text formats of the Huawei Ascend vendor tools and files.

Every plugin of the collection parses vendor output through this file, so a format is
understood in one place (``hccn_tool`` and ``/etc/hccn.conf``: ``hccn_tool.py``):

* key=value records: ``version.info``, ``/etc/ascend_install.info``, ``ascend_toolkit_install.info``
* ``npu-smi info`` (table, parsed by its column headers), ``npu-smi info -l``, npu-smi error strings
* ``upgrade-tool ... --version`` component lines
* ``.run`` package file names and installer output

Only the standard library is used; the code runs on target hosts with Python 3.8+.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict, namedtuple

# --------------------------------------------------------------------------------------------
# key=value records
# --------------------------------------------------------------------------------------------


def _unquote(value):
    if len(value) >= 2 and value[0] == value[-1] and value[0] in ("'", '"'):
        return value[1:-1]
    return value


def parse_key_value(text):
    """Parse ``key=value`` lines into an OrderedDict (file order kept).

    Blank lines, ``#``/``;`` comments and lines without ``=`` are skipped; whitespace around
    keys and values is stripped, matching surrounding quotes are removed. A repeated key keeps
    its first position and its last value.
    """
    result = OrderedDict()
    if not text:
        return result
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith(";"):
            continue
        if "=" not in line:
            continue
        key, value = line.split("=", 1)
        key = key.strip()
        if not key:
            continue
        result[key] = _unquote(value.strip())
    return result


def render_key_value(data):
    """Render a mapping as ``key=value`` lines (inverse of parse_key_value)."""
    return "".join("{}={}\n".format(k, "" if v is None else v) for k, v in data.items())


def read_key_value_file(path):
    """Parse a key=value file; None when it does not exist or cannot be read."""
    try:
        with open(path, errors="replace") as handle:
            return parse_key_value(handle.read())
    except OSError:
        return None


def get_key(data, key, default=None):
    """Case-insensitive key lookup (``Version`` in version.info, ``version`` in install.info)."""
    if not data:
        return default
    if key in data:
        return data[key]
    lower = key.lower()
    for k, v in data.items():
        if k.lower() == lower:
            return v
    return default


def info_version(data):
    """The ``Version``/``version`` value of a parsed version/install record, or None."""
    value = get_key(data, "version")
    if value is None or not str(value).strip():
        return None
    return str(value).strip()


# --------------------------------------------------------------------------------------------
# npu-smi
# --------------------------------------------------------------------------------------------

NPU_SMI_ERRORS = {
    -8005: "dcmi module initialize failed: the NPU driver is not loaded or its device nodes are "
           "missing (typically: driver installed but the node not rebooted since)",
    -8020: "the device is in use by another process",
}

_NPU_SMI_ERR_RE = re.compile(r"ret\s+is\s+(-?\d+)", re.IGNORECASE)
_NPU_SMI_VERSION_RE = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)", re.IGNORECASE)
_PCI_RE = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
_TOKEN_RE = re.compile(r"\S+\s*/\s*\S+|\S+")
_EMPTY_VALUES = ("", "-", "NA", "N/A", "--")

# column header (lower case) -> key in the NPU dict; "pair" headers hold "used / total"
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


def _snake(header):
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
        key = _snake(header)
    if key in _TEXT_KEYS:
        record[key] = None if value.strip() in _EMPTY_VALUES else value.strip()
    elif key in _INT_KEYS:
        num = _number(value)
        record[key] = num
    else:
        record[key] = _number(value)


def _is_table_line(line):
    return line.strip().startswith("|")


def _is_separator(line):
    s = line.strip()
    return s.startswith("+") and set(s) <= set("+-=")


def _is_process_section(line):
    low = line.lower()
    return ("process id" in low or "process name" in low or "no running processes" in low
            or "process memory" in low)


def parse_npu_smi_info(text):
    """Parse the output of ``npu-smi info``.

    Returns a dict:

    * ``npu_smi_version``: the tool version from the header line (or None)
    * ``driver_version``: the ``Version:`` of the header line, i.e. the running driver (or None)
    * ``npus``: one dict per chip row pair, with ``npu_id, chip_id, name, health, bus_id, power_w,
      temp_c, hugepages_used, hugepages_total, aicore_pct, memory_used_mb, memory_total_mb,
      hbm_used_mb, hbm_total_mb`` (and ``phy_id``/``device_id`` on models that print them; other
      unknown columns under a snake_case key). Missing values (``-``, ``NA``) are None.

    The columns are found from the two header rows, not by position, so 910B, A3
    (``Chip Phy-ID``) and 310P (``Chip Device``) layouts all parse. Parsing stops at the process
    table. Raises ValueError when the text has no npu-smi table header.
    """
    result = {"npu_smi_version": None, "driver_version": None, "npus": []}
    if not text:
        raise ValueError("empty npu-smi output")
    lines = text.splitlines()
    header_a = header_b = None
    i = 0
    # the version line and the two header rows
    while i < len(lines):
        line = lines[i]
        m = _NPU_SMI_VERSION_RE.search(line)
        if m and result["npu_smi_version"] is None:
            result["npu_smi_version"] = m.group(1)
            result["driver_version"] = m.group(2)
        if _is_table_line(line):
            cells = _cells(line)
            first = cells[0].split()
            if first and first[0].lower() == "npu" and "health" in line.lower():
                header_a = _header_layout(line)
                j = i + 1
                while j < len(lines) and not _is_table_line(lines[j]):
                    j += 1
                if j < len(lines):
                    second = _cells(lines[j])[0].split()
                    if second and second[0].lower() == "chip":
                        header_b = _header_layout(lines[j])
                        i = j
                i += 1
                break
        i += 1
    if header_a is None:
        raise ValueError("no npu-smi info table header (NPU ... Health) found")

    bus_cell = None
    if header_b is not None:
        for idx, cell in enumerate(header_b):
            if any(h.lower() == "bus-id" for _start, h in cell):
                bus_cell = idx

    def is_chip_line(cells, group_pos):
        """Second row of a pair: its Bus-Id cell holds a PCI address where the first row
        holds the health word; blank/NA cells fall back to the position in the group."""
        if header_b is None:
            return False
        if bus_cell is not None and bus_cell < len(cells):
            value = cells[bus_cell].strip()
            if _PCI_RE.match(value):
                return True
            if value and value not in _EMPTY_VALUES:
                return False
        return group_pos % 2 == 1

    current = None
    group_pos = 0
    for line in lines[i:]:
        if _is_separator(line):
            group_pos = 0
            continue
        if not _is_table_line(line):
            continue
        if _is_process_section(line):
            break
        cells = _cells(line)
        if not "".join(cells).strip():
            continue
        if is_chip_line(cells, group_pos):
            record = OrderedDict()
            if current is not None:
                record.update(current)
            else:
                record["npu_id"] = None
            for layout_cell, cell in zip(header_b, cells):
                for header, value in _assign(layout_cell, cell):
                    _store(record, header, value)
            record.setdefault("chip_id", None)
            result["npus"].append(dict(record))
        else:
            current = OrderedDict()
            for layout_cell, cell in zip(header_a, cells):
                for header, value in _assign(layout_cell, cell):
                    _store(current, header, value)
            if header_b is None:
                current.setdefault("chip_id", None)
                result["npus"].append(dict(current))
        group_pos += 1
    return result


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
        key = _snake(key)
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


# --------------------------------------------------------------------------------------------
# upgrade-tool
# --------------------------------------------------------------------------------------------

_COMPONENT_RE = re.compile(
    r"Get component version\(([^)]*)\)\s+succeed\s+for\s+deviceId\((\d+)\),\s*componentType\((\d+)\)",
    re.IGNORECASE)


def parse_upgrade_tool_versions(text):
    """Parse ``upgrade-tool --device_index -1 --component -1 --version`` output.

    Returns a list of ``{"device_id": int, "component_type": int, "version": str}``.
    """
    out = []
    for m in _COMPONENT_RE.finditer(text or ""):
        out.append({"device_id": int(m.group(2)), "component_type": int(m.group(3)),
                    "version": m.group(1).strip()})
    return out


# --------------------------------------------------------------------------------------------
# .run packages
# --------------------------------------------------------------------------------------------

PACKAGE_KINDS = ("driver", "firmware", "toolkit", "kernels", "docker_runtime")

PackageName = namedtuple("PackageName", ["kind", "version", "arch"])

_VER = r"(?P<version>\d[0-9A-Za-z.\-]*?)"
_ARCH = r"(?P<arch>aarch64|x86_64|arm64|amd64)"
_PACKAGE_PATTERNS = [
    ("driver", re.compile(r"^Ascend-hdk-[0-9a-z]+-npu-driver_" + _VER + r"_linux-" + _ARCH + r"\.run$", re.I)),
    ("firmware", re.compile(r"^Ascend-hdk-[0-9a-z]+-npu-firmware_" + _VER + r"\.run$", re.I)),
    ("toolkit", re.compile(r"^Ascend-cann-toolkit_" + _VER + r"_linux-" + _ARCH + r"\.run$", re.I)),
    ("kernels", re.compile(r"^Ascend-cann-kernels-[0-9a-z]+_" + _VER + r"_linux(?:-" + _ARCH + r")?\.run$", re.I)),
    ("docker_runtime", re.compile(r"^Ascend-docker-runtime_" + _VER + r"_linux-" + _ARCH + r"\.run$", re.I)),
]
_ARCH_ALIASES = {"arm64": "aarch64", "amd64": "x86_64"}


def parse_package_filename(name):
    """Map a vendor ``.run`` file name (or path) to ``PackageName(kind, version, arch)``.

    ``arch`` is None where the name carries none (firmware; kernels without an arch).
    Raises ValueError for other names.
    """
    base = os.path.basename(name or "")
    for kind, pattern in _PACKAGE_PATTERNS:
        m = pattern.match(base)
        if m:
            arch = m.groupdict().get("arch")
            if arch:
                arch = _ARCH_ALIASES.get(arch.lower(), arch.lower())
            return PackageName(kind, m.group("version"), arch)
    raise ValueError(
        f"{base!r} is not a known Ascend package file name (expected e.g. "
        "Ascend-hdk-910b-npu-driver_<ver>_linux-<arch>.run, Ascend-hdk-910b-npu-firmware_<ver>.run, "
        "Ascend-cann-toolkit_<ver>_linux-<arch>.run, Ascend-cann-kernels-910b_<ver>_linux[-<arch>].run, "
        "Ascend-docker-runtime_<ver>_linux-<arch>.run)")


# --------------------------------------------------------------------------------------------
# installer output
# --------------------------------------------------------------------------------------------

DEFAULT_INSTALL_LOG = "/var/log/ascend_seclog/ascend_install.log"

_SUCCESS_RES = {
    "driver": re.compile(r"Driver package (?:installed|upgraded) successfully", re.IGNORECASE),
    "firmware": re.compile(r"Firmware package (?:installed|upgraded) successfully", re.IGNORECASE),
}
_GENERIC_SUCCESS_RE = re.compile(
    r"\b(?:install(?:ed|ation)?|upgrade(?:d)?)\s+(?:success(?:fully)?\b|succeed(?:ed)?\b)"
    r"|\b(?:installed|upgraded)\s+successfully", re.IGNORECASE)
# "Reboot needed for installation/upgrade to take effect!", "Reboot now or after driver installation ..."
_REBOOT_RE = re.compile(r"\breboot\b.*\b(?:needed|required|now|take effect)\b|\b(?:need|needs|required) to reboot\b",
                        re.IGNORECASE)
_ERROR_RE = re.compile(r"\[ERROR\]", re.IGNORECASE)
_LOG_PATH_RE = re.compile(r"((?:/|\bvar/)[\w./-]*?\.log)\b")
PROMPT_REGEX = r"\[[yY]/[nN]\]|\([yY]/[nN]\)|\[yes/no\]"
_PROMPT_RE = re.compile(PROMPT_REGEX)

# firmware upgrades are reported with exit code 2 next to the success line
SUCCESS_RCS = {"firmware": (0, 2)}


def _installer_log_path(text):
    m = _LOG_PATH_RE.search(text or "")
    if not m:
        return None
    path = m.group(1).rstrip(".")
    if not path.startswith("/"):
        path = "/" + path
    return path


def _error_text(line):
    """An ``[ERROR]`` line as quoted: whole (``[Driver] [time] [ERROR]...``), but without a prompt
    that the installer left unanswered on the same line."""
    m = _ERROR_RE.search(line)
    if _PROMPT_RE.search(line[:m.start()]):
        return line[m.start():].strip()
    return line.strip()


def classify_installer_output(kind, rc, stdout, stderr=""):
    """Classify the result of running a vendor ``.run`` installer.

    Success: driver/toolkit/kernels/docker_runtime need rc 0 and their success line; firmware
    needs rc 0 or 2 and its success line. Returns a dict:

    * ``success`` (bool), ``success_line`` (str or None)
    * ``error``: the first line with ``[ERROR]`` (or None)
    * ``error_lines``: all ``[ERROR]`` lines
    * ``log_path``: the log file the output names (``var/log/...`` made absolute), else None
    * ``reboot_required``: the success output asks for a reboot
    * ``prompt``: the installer stopped at an interactive ``[y/n]`` question (the line), else None
    """
    text = "\n".join(t for t in (stdout or "", stderr or "") if t)
    lines = [ln.rstrip() for ln in text.splitlines()]
    error_lines = [_error_text(ln) for ln in lines if _ERROR_RE.search(ln)]
    success_re = _SUCCESS_RES.get(kind, _GENERIC_SUCCESS_RE)
    success_line = None
    for ln in lines:
        if success_re.search(ln):
            success_line = ln.strip()
            break
    ok_rcs = SUCCESS_RCS.get(kind, (0,))
    success = rc in ok_rcs and success_line is not None
    reboot = False
    if success:
        reboot = any(_REBOOT_RE.search(ln) for ln in lines if "[error]" not in ln.lower())
    prompt = None
    for ln in lines:
        m = _PROMPT_RE.search(ln)
        if m:
            prompt = ln[:m.end()].strip()
    log_path = None
    for ln in error_lines + lines:
        log_path = _installer_log_path(ln)
        if log_path:
            break
    return {
        "success": bool(success),
        "success_line": success_line,
        "error": error_lines[0] if error_lines else None,
        "error_lines": error_lines,
        "log_path": log_path,
        "reboot_required": bool(reboot),
        "prompt": prompt,
    }


def check_output_ok(rc, stdout, stderr=""):
    """True when a makeself ``--check`` run reports an intact archive."""
    text = f"{stdout or ''}\n{stderr or ''}"
    low = text.lower()
    if rc != 0:
        return False
    if "error in" in low or "corrupt" in low:
        return False
    return not _ERROR_RE.search(text)


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
