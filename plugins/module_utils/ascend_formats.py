# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the text formats of the Huawei Ascend vendor tools and files.

Each vendor tool or format is understood in one file of ``plugins/module_utils``:

* here: key=value records (``version.info``, ``/etc/ascend_install.info``,
  ``ascend_toolkit_install.info``), and ``hccn_tool`` outputs and ``/etc/hccn.conf``
* ``npu_smi.py``: ``npu-smi info`` (by column headers), ``npu-smi info -l``, dcmi error strings
* ``upgrade_tool.py``: ``upgrade-tool ... --version`` and the rule for "firmware X runs"
* ``run_package.py``: ``.run`` package file names, ``--check`` output, installer verdict
* ``ascend_version.py``: version strings; ``ascend_install.py``: where install records live

Only the standard library is used; the code runs on target hosts with Python 3.8+.
"""

from __future__ import annotations

import re
from collections import OrderedDict

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
# hccn_tool
# --------------------------------------------------------------------------------------------

HCCN_SUCCESS = "Cmd executed successfully!"
HCCN_BUSY = "hccn_tool is busy, please try again"

_HCCN_PATTERNS = [
    ("ipaddr", re.compile(r"^\s*ipaddr\s*:\s*(\S+)", re.IGNORECASE | re.MULTILINE)),
    ("netmask", re.compile(r"^\s*netmask\s*:\s*(\S+)", re.IGNORECASE | re.MULTILINE)),
    ("link_status", re.compile(r"^\s*link status\s*:\s*(\S+)", re.IGNORECASE | re.MULTILINE)),
    ("net_health", re.compile(r"^\s*net health status\s*:\s*(\S+)", re.IGNORECASE | re.MULTILINE)),
    ("netdetect", re.compile(r"^\s*netdetect address\s*:\s*(\S+)", re.IGNORECASE | re.MULTILINE)),
    ("gateway", re.compile(r"^\s*default gateway\s*:\s*([^,\s]+)", re.IGNORECASE | re.MULTILINE)),
    ("iface", re.compile(r"Iface\s*:\s*(\S+)", re.IGNORECASE)),
]
_SPEED_RE = re.compile(r"^\s*Speed\s*:\s*(\d+)\s*([KMGT]?b/s)?", re.IGNORECASE | re.MULTILINE)
_TLS_SWITCH_RE = re.compile(r"tls switch\[(\d+)\]", re.IGNORECASE)
_TLS_PRESET_RE = re.compile(r"tls preconfigured\[(\d+)\]", re.IGNORECASE)
_DEV_ID_RE = re.compile(r"dev_id\s*:\s*(\d+)", re.IGNORECASE)
_PING_RE = re.compile(
    r"(\d+)\s+packets?\s+transmitted,\s*(\d+)\s+(?:packets?\s+)?received,\s*([\d.]+)%\s+packet loss",
    re.IGNORECASE)
_SPEED_FACTOR = {"kb/s": 0.001, "mb/s": 1, "gb/s": 1000, "tb/s": 1000000, "b/s": 0.000001}


def parse_hccn_output(text):
    """Parse the output of any ``hccn_tool -i N ... -g`` (or set) call.

    Returns a dict with the fields found, from: ``ipaddr, netmask, link_status, net_health,
    netdetect, gateway, iface, speed_mbps, dev_id, tls_switch, tls_enabled, tls_preconfigured,
    ping_transmitted, ping_received, ping_loss_pct``; always ``success`` (the set confirmation
    line was printed) and ``busy`` (hccn_tool asked to retry).
    """
    text = text or ""
    out = {"success": HCCN_SUCCESS.lower() in text.lower(), "busy": "is busy" in text.lower()}
    for key, pattern in _HCCN_PATTERNS:
        m = pattern.search(text)
        if m:
            out[key] = m.group(1).strip().rstrip(",")
    m = _SPEED_RE.search(text)
    if m:
        value = int(m.group(1))
        unit = (m.group(2) or "Mb/s").lower()
        speed = value * _SPEED_FACTOR.get(unit, 1)
        out["speed_mbps"] = int(speed) if float(speed).is_integer() else speed
    m = _TLS_SWITCH_RE.search(text)
    if m:
        out["tls_switch"] = int(m.group(1))
        out["tls_enabled"] = m.group(1) == "1"
    m = _TLS_PRESET_RE.search(text)
    if m:
        out["tls_preconfigured"] = int(m.group(1))
    m = _DEV_ID_RE.search(text)
    if m:
        out["dev_id"] = int(m.group(1))
    m = _PING_RE.search(text)
    if m:
        out["ping_transmitted"] = int(m.group(1))
        out["ping_received"] = int(m.group(2))
        out["ping_loss_pct"] = float(m.group(3))
    return out


_HCCN_CONF_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*?)_(\d+)$")


def parse_hccn_conf(text):
    """Parse ``/etc/hccn.conf`` into ``{device_index: OrderedDict(key -> value)}``.

    ``address_0=29.1.137.205`` becomes ``{0: {"address": "29.1.137.205"}}``. Comments, blanks and
    keys without a trailing ``_<index>`` are skipped. Devices are returned in ascending index
    order, keys in file order.
    """
    devices = {}
    for key, value in parse_key_value(text).items():
        m = _HCCN_CONF_RE.match(key)
        if not m:
            continue
        devices.setdefault(int(m.group(2)), OrderedDict())[m.group(1)] = value
    return OrderedDict((idx, devices[idx]) for idx in sorted(devices))


def render_hccn_conf(devices):
    """Render ``{device_index: {key: value}}`` as hccn.conf text (devices ascending, keys in order).

    ``parse_hccn_conf(render_hccn_conf(d)) == d`` for any such mapping.
    """
    lines = []
    for idx in sorted(devices, key=int):
        for key, value in devices[idx].items():
            lines.append("{}_{}={}\n".format(key, int(idx), "" if value is None else value))
    return "".join(lines)
