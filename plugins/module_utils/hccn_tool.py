# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``hccn_tool`` (the Ascend device-NIC tool) and ``/etc/hccn.conf``: parsers and a driver.

Outputs are read by their structure (vendor facts):

* ``-ip -g``          ``ipaddr:29.1.112.213`` and ``netmask:255.255.0.0`` (values empty when unset)
* ``-link -g``        ``link status: UP``
* ``-net_health -g``  ``net health status: Success``
* ``-netdetect -g``   ``netdetect address: 11.12.165.1``
* ``-gateway -g``     ``default gateway:11.12.165.1, Iface:eth0``
* ``-speed -g``       ``Speed: 100000 Mb/s``; ``Speed: Unknown!`` on a port without a link (read as None)
* ``-tls -g``         ``dev_id:4, tls switch[0](0:disable, 1:enable), ...``
* ``-ping -g address X``  ``3 packets transmitted, 3 received, 0.00% packet loss``
* ``-pfc -g``         (Huawei's CANN troubleshooting guide, PFC mismatches) a title, a row of
  priorities and a row of 0/1::

      PFC configuration:
      priority   0 1 2 3 4 5 6 7
      enabled    0 0 0 0 1 0 0 0

  also read: the older one-line form ``pfc ... 0,0,0,0,1,0,0,0``.
* ``-prio_tc -g``, ``-dscp_to_tc -g``, ``-mtu -g``: no vendor sample found (facts, third round). Read
  by their documented field names in the layouts listed at each parser; anything else is refused.
* ``-optical -g`` and ``-link_stat -g`` (MindCluster Ascend FaultDiag's user guide, "Collecting Logs
  Before Training and Inference"; the field names also in Huawei's npu-exporter, devmanager/hccn):
  ``optical info:`` then ``key : value`` lines (``present : present``/``not present``, ``Tx Power :
  4.4035 mW``, ``Rx Power : 1.0189 mW`` or per lane ``Tx Power0``..``Rx Power3``, ``RxPower Low Thres
  : 0.1445 mW``, ``Rx Los Flag : 0x0``, ...); ``[device 0]current time        : Wed Jun  7 10:08:28
  2023``, ``[device 0]link up count       : 2``, ``[device 0]link change records :`` and one
  ``[device 0]    Tue Jun  6 16:32:10 2023    LINK DOWN`` line per change.
* ``-stat -g`` (the tool's own source, hicann/driver ``src/custom/network/hccn/ascend910B/hccn_tool/tool.c``,
  ``tool_display_stat_info``; MindCluster FaultDiag's user guide prints the same): a title ``packet
  statistics:`` then one ``name:count`` line per counter (``mac_tx_mac_pause_num:0``,
  ``mac_tx_pfc_pri0_pkt_num:0`` .. ``mac_rx_pfc_pri7_pkt_num``, ``mac_rx_bad_pkt_num``,
  ``mac_rx_fcs_err_pkt_num``, ``roce_rx_err_pkt_num``, ``roce_tx_err_pkt_num``, ..., ``nic_rx_all_oct_num``),
  cumulative since the driver started or the last ``-stat -c``.
* set commands print ``Cmd executed successfully!``; a concurrent call prints
  ``hccn_tool is busy, please try again`` (retry).
* A port whose link is down answers ``-prio_tc -g`` / ``-pfc -g`` with a non-zero exit and
  ``Link status is down`` (``HccnLinkDown``): a cable, optics or switch-port fault, not the driver.

A parser that finds no line of the expected shape raises ``HccnParseError`` naming the line it
could not read and showing the raw output. Only the standard library is used (runs on target
hosts, Python 3.8+).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
import tempfile
import time
from collections import OrderedDict

from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_formats import parse_key_value
from ansible_collections.ascendops.cluster.plugins.module_utils.vendor_command import vendor_runner

DEFAULT_HCCN_TOOL = "/usr/local/Ascend/driver/tools/hccn_tool"
HCCN_SUCCESS = "Cmd executed successfully!"
HCCN_BUSY = "hccn_tool is busy, please try again"
FIELDS = ("address", "netmask", "gateway", "netdetect", "tls")
# RDMA QoS of the port: the DSCP of the job's RDMA traffic mapped to the traffic class of its
# priority (-dscp_to_tc, the class read from -prio_tc), PFC on that priority (-pfc), port MTU (-mtu)
QOS_FIELDS = ("rdma_dscp", "rdma_priority", "mtu")
# `-tls -g` on a device without preset certificates (the tool's UDA_PARAM_TLS_NO_CERT_ERR message,
# "No certificate found, please set certs firstly!"): TLS is off there, not an error
NO_CERTIFICATE = "no certificate found"
# A QoS read on a port without a link (real 910B nodes: non-zero exit and this text)
LINK_DOWN = "link status is down"
LINK_DOWN_CAUSE = "cable, optics or switch port"
# Net health values that are not a fault (Huawei's environment check: 0 RDFX_DETECT_OK, 6
# RDFX_DETECT_INIT); Init only where the port has no net-detect address to probe
HEALTH_OK = "Success"
HEALTH_INIT = "Init"


def health_ok(health, netdetect):
    """Whether a port's net health (``-net_health -g``) lets it carry a job: ``Success``, or ``Init``
    where the port has no net-detect address (nothing to probe: it stays Init on a flat L2 fabric;
    Huawei's environment check accepts RDFX_DETECT_INIT). ``Fault`` and anything else: no."""
    health = str(health or "")
    return health == HEALTH_OK or (health == HEALTH_INIT and not netdetect)


class HccnError(Exception):
    """hccn_tool failed (its own message is the exception text)."""


class HccnParseError(HccnError):
    """An output line of hccn_tool did not have the documented shape."""


class HccnLinkDown(HccnError):
    """hccn_tool refused a read because the port's link is down (``Link status is down``)."""


# --------------------------------------------------------------------------------------------
# Parsers
# --------------------------------------------------------------------------------------------

_IP = r"(\d{1,3}(?:\.\d{1,3}){3})"
_RE = {
    "ipaddr": re.compile(r"^\s*ipaddr\s*:\s*(\S*)\s*$", re.I),
    "netmask": re.compile(r"^\s*netmask\s*:\s*(\S*)\s*$", re.I),
    "link": re.compile(r"^\s*link status\s*:\s*(\w+)\s*$", re.I),
    "health": re.compile(r"^\s*net health status\s*:\s*(\w+)\s*$", re.I),
    "netdetect": re.compile(r"^\s*netdetect address\s*:\s*(\S*)\s*$", re.I),
    "gateway": re.compile(r"^\s*default gateway\s*:\s*([^,\s]*)\s*(?:,\s*Iface\s*:\s*(\S+))?\s*$", re.I),
    "speed": re.compile(r"^\s*Speed\s*:\s*(?:(\d+)\s*([KMGT]?b/s)?|(unknown)\s*!?)\s*$", re.I),
    "tls": re.compile(r"^\s*dev_id\s*:\s*(\d+)\s*,\s*tls switch\[(\d)\]", re.I),
    "dscp_tc": re.compile(
        r"^\s*(?:dscp\s*[:=\[]?\s*)?(\d{1,2})\]?\s*[,:\s]\s*(?:tc\s*[:=\[]?\s*)?(\d)\]?\s*$", re.I),
    "prio_tc": re.compile(r"^.*?\b(?:map|prio_tc)\b\s*[:=]?\s*(\d(?:\s*,\s*\d){7}|\d(?:\s+\d){7})\s*$", re.I),
    "pfc": re.compile(r"^.*?\bpfc\b[^0-9]*([01](?:\s*,\s*[01]){7})\s*$", re.I),
    "mtu": re.compile(r"^\s*mtu\s*[:=]?\s*(\d+)\s*(?:bytes?)?\s*$", re.I),
    # a row of a table: its name, then eight numbers ("priority   0 1 2 3 4 5 6 7")
    "row": re.compile(r"^\s*([A-Za-z_]+)\s*[:=]?\s*((?:\d+\s+){7}\d+)\s*$"),
    # a title line ("PFC configuration:"): words and a colon, no value
    "title": re.compile(r"^\s*[A-Za-z][A-Za-z _-]*:\s*$"),
    "ping": re.compile(
        r"^\s*(\d+)\s+packets?\s+transmitted,\s*(\d+)\s+(?:packets?\s+)?received,\s*([\d.]+)%\s+packet loss",
        re.I),
}
_SPEED_FACTOR = {"kb/s": 0.001, "mb/s": 1, "gb/s": 1000, "tb/s": 1000000, "b/s": 0.000001}


def _lines(text):
    return [line for line in (text or "").splitlines() if line.strip()]


def _raw(text, limit=600):
    """The tool's output as shown in an error (shortened past ``limit`` characters)."""
    raw = (text or "").strip()
    return raw if len(raw) <= limit else raw[:limit] + "..."


def _unreadable(text, what, expected="", line=None):
    """HccnParseError naming ``line`` (default: the first line that is not a title, or the first line)
    and showing the raw text."""
    lines = _lines(text)
    if line is None:
        line = next((x for x in lines if not _RE["title"].match(x)), lines[0] if lines else "(no output)")
    hint = f" (expected {expected})" if expected else ""
    return HccnParseError(f"hccn_tool {what}: could not read the line {line!r}{hint}; output: {_raw(text)!r}")


def _find(text, key, what):
    """The match of the first line of shape ``key``; HccnParseError naming the line otherwise."""
    for line in _lines(text):
        m = _RE[key].match(line)
        if m:
            return m
    raise _unreadable(text, what)


def _priority_table(text, names, what, high):
    """``[value of priority 0, ..., 7]`` from a table whose row ``priority`` (or ``prio``) lists the
    priorities 0..7 in some order and whose next row named one of ``names`` has a value 0..``high``
    under each; None when the output has no ``priority`` row; HccnParseError naming the row that is
    wrong (or the priority row, when no value row follows)."""
    rows = [(line, _RE["row"].match(line)) for line in _lines(text)]
    for i, (line, m) in enumerate(rows):
        if not m or m.group(1).lower() not in ("priority", "prio"):
            continue
        prios = [int(v) for v in m.group(2).split()]
        if sorted(prios) != list(range(8)):
            raise _unreadable(text, what, "the priorities 0..7", line)
        for value_line, other in rows[i + 1:]:
            if other and other.group(1).lower() in names:
                values = [int(v) for v in other.group(2).split()]
                if any(v > high for v in values):
                    raise _unreadable(text, what, f"values 0-{high} under the priorities", value_line)
                table = dict(zip(prios, values))
                return [table[p] for p in range(8)]
        raise _unreadable(text, what, f"a {names[0]!r} row after the priorities", line)
    return None


def _address(value, what):
    if not value:
        return None
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        raise HccnParseError(f"hccn_tool {what}: could not read the address {value!r}") from None


def parse_ip(text):
    """``-ip -g`` -> ``{"address": str|None, "netmask": str|None}``."""
    return {
        "address": _address(_find(text, "ipaddr", "-ip -g").group(1), "-ip -g"),
        "netmask": _address(_find(text, "netmask", "-ip -g").group(1), "-ip -g"),
    }


def parse_link(text):
    """``-link -g`` -> ``UP`` / ``DOWN`` (as printed, upper-cased)."""
    return _find(text, "link", "-link -g").group(1).upper()


def parse_net_health(text):
    """``-net_health -g`` -> ``Success``, ``Fault``, ``Init``, ... (as printed)."""
    return _find(text, "health", "-net_health -g").group(1)


def parse_netdetect(text):
    """``-netdetect -g`` -> the address or None."""
    return _address(_find(text, "netdetect", "-netdetect -g").group(1), "-netdetect -g")


def parse_gateway(text):
    """``-gateway -g`` -> ``{"gateway": str|None, "iface": str|None}``."""
    m = _find(text, "gateway", "-gateway -g")
    return {"gateway": _address(m.group(1), "-gateway -g"), "iface": m.group(2)}


def parse_speed(text):
    """``-speed -g`` -> speed in Mb/s (int when whole); None for ``Speed: Unknown!`` (a port without a
    link, as MindCluster's own hccn_tool wrapper reads it)."""
    m = _find(text, "speed", "-speed -g")
    if m.group(3):
        return None
    speed = int(m.group(1)) * _SPEED_FACTOR[(m.group(2) or "Mb/s").lower()]
    return int(speed) if float(speed).is_integer() else speed


_OPTICAL_KV = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 _()-]*?)\s*:\s*(.*?)\s*$")
_POWER = re.compile(r"^(tx|rx)[ _]?power[ _]?(\d?)$", re.I)
_POWER_VALUE = re.compile(r"^(-?\d+(?:\.\d+)?)\s*mW$", re.I)


def _power_mw(value, key, text):
    m = _POWER_VALUE.match(value or "")
    if not m:
        raise _unreadable(text, "-optical -g", "a power in mW", f"{key} : {value}")
    return float(m.group(1))


def parse_optical(text):
    """``-optical -g`` -> ``{"present": bool, "tx_power_mw": [...], "rx_power_mw": [...], "tx_power_low_mw",
    "rx_power_low_mw", "rx_los", "tx_los"}``: one power per lane (``Tx Power`` alone, or ``Tx Power0``..3),
    the module's own low thresholds (None where not printed), the LOS flags as printed. Read by field
    name; no ``present`` line, or a power that is not ``<number> mW``, is refused showing the line."""
    fields = OrderedDict()
    for line in _lines(text):
        m = _OPTICAL_KV.match(line)
        if m and m.group(2):
            fields.setdefault(m.group(1).strip().lower(), (m.group(1).strip(), m.group(2)))
    if "present" not in fields:
        raise _unreadable(text, "-optical -g", "a 'present : present' line")
    out = {"present": fields["present"][1].strip().lower() == "present", "tx_power_mw": [], "rx_power_mw": [],
           "tx_power_low_mw": None, "rx_power_low_mw": None,
           "tx_los": (fields.get("tx los flag") or (None, None))[1],
           "rx_los": (fields.get("rx los flag") or (None, None))[1]}
    for name, (key, value) in fields.items():
        power = _POWER.match(name)
        if power:
            out[f"{power.group(1).lower()}_power_mw"].append(_power_mw(value, key, text))
        elif name in ("txpower low thres", "rxpower low thres"):
            out[f"{name[:2]}_power_low_mw"] = _power_mw(value, key, text)
    return out


def optical_problems(optical):
    """Why a port's optics cannot carry a job (``parse_optical``'s result): no module, or a lane's Tx or
    Rx power under the module's own low threshold (Rx: dirty or broken fibre, far-end optics off; Tx:
    this module failing). One sentence each."""
    if not optical.get("present"):
        return ["no optical module (hccn_tool -optical -g: present is not present)"]
    out = []
    for side, what in (("rx", "receives"), ("tx", "sends")):
        low = optical.get(f"{side}_power_low_mw")
        powers = optical.get(f"{side}_power_mw") or []
        weak = [f"{p:g}" for p in powers if low is not None and p < low]
        if weak:
            out.append(f"the optical module {what} {', '.join(weak)} mW, under its low threshold {low:g} mW "
                       f"({side.upper()} power; hccn_tool -optical -g)")
    return out


_LINK_STAT_KV = re.compile(r"^\s*(?:\[dev(?:ice|id)?\s*\d+\])?\s*([a-z][a-z ]*?)\s*:\s*(.*?)\s*$", re.I)
_LINK_RECORD = re.compile(r"^\s*(?:\[dev(?:ice|id)?\s*\d+\])?\s*(\w{3}\s+\w{3}\s+\d{1,2}\s+\d{2}:\d{2}:\d{2}\s+\d{4})"
                          r"\s+LINK\s+(UP|DOWN)\s*$", re.I)
_CTIME = "%a %b %d %H:%M:%S %Y"


def _ctime(value, text, line):
    try:
        return datetime.datetime.strptime(" ".join(value.split()), _CTIME)
    except ValueError:
        raise _unreadable(text, "-link_stat -g", "a time like 'Wed Jun  7 10:08:28 2023'", line) from None


def parse_link_stat(text):
    """``-link_stat -g`` -> ``{"up_count", "down_count", "downs_ago_s": [...]}``: the counts the tool prints
    (None where it does not), and for each ``LINK DOWN`` record how many seconds before the tool's
    ``current time`` it happened. No ``link up count`` or ``current time`` line, or a record whose time
    cannot be read, is refused showing the line."""
    fields, downs = {}, []
    now = None
    for line in _lines(text):
        record = _LINK_RECORD.match(line)
        if record:
            downs.append((_ctime(record.group(1), text, line), record.group(2).upper(), line))
            continue
        m = _LINK_STAT_KV.match(line)
        if m:
            fields[m.group(1).strip().lower()] = (m.group(2), line)
    if "link up count" not in fields or "current time" not in fields:
        raise _unreadable(text, "-link_stat -g", "'link up count : N' and 'current time : ...' lines")
    now = _ctime(fields["current time"][0], text, fields["current time"][1])
    counts = {}
    for key in ("link up count", "link down count"):
        if key in fields:
            value, line = fields[key]
            if not value.isdigit():
                raise _unreadable(text, "-link_stat -g", "a count", line)
            counts[key] = int(value)
    return {"up_count": counts.get("link up count"), "down_count": counts.get("link down count"),
            "downs_ago_s": [int((now - when).total_seconds()) for when, state, _line in downs if state == "DOWN"]}


def link_flaps(link_stat, window_s):
    """How many times the link went down in the last ``window_s`` seconds (``parse_link_stat``'s result)."""
    return len([s for s in link_stat.get("downs_ago_s") or [] if 0 <= s <= window_s])


_STAT_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*:\s*(.*?)\s*$")
# a title ("packet statistics:"): words with a space between them and a colon, no value
_STAT_TITLE = re.compile(r"^\s*[A-Za-z][A-Za-z0-9_-]*(?:\s+[A-Za-z0-9_-]+)+\s*:\s*$")
# The error counters the RoCE check judges (names as hccn_tool's tool.c prints them): packets the RoCE
# engine received or sent bad, and the MAC's bad and FCS-error frames (a cable, optics or switch port)
STAT_ERROR_COUNTERS = OrderedDict([
    ("roce_rx_err_pkt_num", "bad packets received by RoCE"),
    ("roce_tx_err_pkt_num", "bad packets sent by RoCE"),
    ("mac_rx_bad_pkt_num", "bad frames received"),
    ("mac_tx_bad_pkt_num", "bad frames sent"),
    ("mac_rx_fcs_err_pkt_num", "frames received with FCS errors"),
])
_PFC_PRIORITY = re.compile(r"^mac_(?:tx|rx)_(?:pfc_pri[0-7]_pkt|mac_pause)_num$")
_PFC_TOTAL = re.compile(r"^mac_(?:tx|rx)_pfc_pkt_num$")


def parse_stat(text):
    """``-stat -g`` -> ``OrderedDict(counter name -> int)`` in the order printed. Read by structure: every
    ``name:count`` (or ``name : count``) line; title lines (``packet statistics:``) and blank lines are
    skipped. A line that is neither (a value that is not a whole number, no colon) is refused naming
    it, and so is an output without a single counter."""
    counters = OrderedDict()
    for line in _lines(text):
        if _STAT_TITLE.match(line):
            continue
        m = _STAT_LINE.match(line)
        if not m or not m.group(2).isdigit():
            raise _unreadable(text, "-stat -g", "'name:count' with a whole number", line)
        counters[m.group(1)] = int(m.group(2))
    if not counters:
        raise _unreadable(text, "-stat -g", "'name:count' lines")
    return counters


def stat_problems(stat, max_errors):
    """The error counters of one port (``parse_stat``'s result) above ``max_errors``, one sentence each
    naming the counter and its value; an output carrying none of the error counters is one too (a
    tool whose names changed must not pass unseen). Counters are cumulative since the driver started
    (or the last ``hccn_tool -i N -stat -c``): a few on a long-running node are normal."""
    present = [name for name in STAT_ERROR_COUNTERS if name in stat]
    if not present:
        return ["hccn_tool -stat -g printed none of the error counters " + ", ".join(STAT_ERROR_COUNTERS)]
    return [f"{name} is {stat[name]} ({STAT_ERROR_COUNTERS[name]}; more than {int(max_errors)}, hccn_tool "
            "-stat -g, counted since the driver started or the last -stat -c)"
            for name in present if stat[name] > int(max_errors)]


def pfc_highest(stat):
    """``(name, count)`` of the highest PFC or pause counter of one port (``parse_stat``'s result): the
    per-priority ``mac_{tx,rx}_pfc_priN_pkt_num`` and ``mac_{tx,rx}_mac_pause_num`` counters (the
    ``mac_{tx,rx}_pfc_pkt_num`` totals only where no per-priority counter is printed); None when the
    output has none."""
    names = [n for n in stat if _PFC_PRIORITY.match(n)] or [n for n in stat if _PFC_TOTAL.match(n)]
    if not names:
        return None
    best = max(names, key=lambda n: stat[n])
    return best, stat[best]


def parse_tls(text):
    """``-tls -g`` -> ``{"dev_id": int|None, "enabled": bool, "certificates": bool}``.

    ``No certificate found, please set certs firstly!`` (a device without preset certificates)
    means TLS off, not an error."""
    if NO_CERTIFICATE in (text or "").lower():
        return {"dev_id": None, "enabled": False, "certificates": False}
    m = _find(text, "tls", "-tls -g")
    return {"dev_id": int(m.group(1)), "enabled": m.group(2) == "1", "certificates": True}


def parse_dscp_to_tc(text, dscp):
    """``-dscp_to_tc -g [dscp D]`` -> the traffic class DSCP ``dscp`` maps to. Accepts
    ``dscp:33 tc:2``, ``dscp 33 tc 2`` and ``33 2`` lines (one per DSCP), skipping a header."""
    lines = _lines(text)
    for line in lines:
        m = _RE["dscp_tc"].match(line)
        if m and int(m.group(1)) == int(dscp):
            return int(m.group(2))
    shown = lines[0] if lines else "(no output)"
    raise HccnParseError(f"hccn_tool -dscp_to_tc -g: no line for dscp {dscp} (first line {shown!r}); "
                         f"output: {_raw(text)!r}")


def _eight(values, what, text, line, high):
    if any(v > high for v in values):
        raise _unreadable(text, what, f"eight values 0-{high}, priority 0..7", line)
    return values


def parse_prio_tc(text):
    """``-prio_tc -g`` -> the traffic class of each priority 0..7. No vendor sample was found: read by
    the field names ``priority`` / ``tc`` as a table (a ``priority 0 1 .. 7`` row, then a ``tc`` row, as
    ``-pfc -g`` prints its own) or as a map line (``prio_tc map 0,0,1,1,2,2,3,3``, ``map 0 0 1 1 2 2 3 3``,
    what public fault-injection scripts grep); anything else is refused, showing the output."""
    table = _priority_table(text, ("tc",), "-prio_tc -g", 7)
    if table is not None:
        return table
    for line in _lines(text):
        m = _RE["prio_tc"].match(line)
        if m:
            return _eight([int(v) for v in re.split(r"[\s,]+", m.group(1))], "-prio_tc -g", text, line, 7)
    raise _unreadable(text, "-prio_tc -g", "a 'priority 0 1 .. 7' row and a 'tc' row, or 'map t0,...,t7'")


def parse_pfc(text):
    """``-pfc -g`` -> PFC on (1) or off (0) per priority 0..7. The vendor's table (CANN troubleshooting
    guide, PFC mismatches): ``PFC configuration:`` / ``priority   0 1 2 3 4 5 6 7`` /
    ``enabled    0 0 0 0 1 0 0 0``; also the older one-line ``pfc ... 0,0,0,0,1,0,0,0``. Anything else
    is refused, showing the output."""
    table = _priority_table(text, ("enabled", "enable", "pfc"), "-pfc -g", 1)
    if table is not None:
        return table
    for line in _lines(text):
        m = _RE["pfc"].match(line)
        if m:
            return [int(v) for v in m.group(1).split(",")]
    raise _unreadable(text, "-pfc -g", "a 'priority 0 1 .. 7' row and an 'enabled' row of 0/1")


def parse_mtu(text):
    """``-mtu -g`` -> the port MTU. No vendor sample was found: read by the field name ``mtu``
    (``mtu:9000``, which public fault-injection scripts grep, ``MTU: 9000``, ``mtu = 9000``)."""
    return int(_find(text, "mtu", "-mtu -g").group(1))


def parse_ping(text):
    """``-ping -g address X`` -> ``{"transmitted", "received", "loss_pct"}`` from the summary line."""
    m = _find(text, "ping", "-ping -g")
    return {"transmitted": int(m.group(1)), "received": int(m.group(2)), "loss_pct": float(m.group(3))}


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


def merge_hccn_conf(text, devices):
    """``/etc/hccn.conf`` text with ``devices`` (``{index: {key: value}}``) merged in: every line
    the site has stays where it is (comments, other keys such as ``bitmap_N`` or ``dscp_tc``
    lines), a managed key's value is replaced in place, and keys the file lacks are appended,
    device by device. ``parse_hccn_conf`` of the result holds every wanted value."""
    wanted = {(key, int(idx)): "" if value is None else str(value)
              for idx, keys in devices.items() for key, value in keys.items()}
    seen = set()
    out = []
    for line in (text or "").splitlines():
        key, eq, _value = line.partition("=")
        m = _HCCN_CONF_RE.match(key.strip()) if eq and not line.lstrip().startswith("#") else None
        if m and (m.group(1), int(m.group(2))) in wanted:
            ident = (m.group(1), int(m.group(2)))
            if ident in seen:
                continue  # a duplicate of a managed key: the first one holds the value
            seen.add(ident)
            out.append(f"{key.strip()}={wanted[ident]}")
        else:
            out.append(line)
    for idx in sorted(devices, key=int):
        for key in devices[idx]:
            if (key, int(idx)) not in seen:
                out.append(f"{key}_{int(idx)}={wanted[(key, int(idx))]}")
    return "\n".join(out) + "\n" if out else ""


def hccn_conf_devices(ports, send_arp_status=1):
    """``{index: OrderedDict(key -> value)}`` of ``/etc/hccn.conf`` for ports (dicts with ``device`` or
    ``device_id``, ``address``, ``netmask`` and optional ``netdetect``, ``gateway``, ``tls``): address,
    netmask, net-detect and gateway (when given), ``send_arp_status`` and ``tls_enable`` (0/1, as real
    8-NPU nodes carry it)."""
    devices = OrderedDict()
    for entry in ports or []:
        try:
            idx = int(entry["device"] if entry.get("device") is not None else entry["device_id"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"port entry without a device index (device or device_id): {entry!r}") from None
        keys = OrderedDict([("address", entry["address"]), ("netmask", entry["netmask"])])
        for key in ("netdetect", "gateway"):
            if entry.get(key):
                keys[key] = entry[key]
        keys["send_arp_status"] = int(send_arp_status)
        keys["tls_enable"] = 1 if entry.get("tls") else 0
        devices[idx] = keys
    return devices


# --------------------------------------------------------------------------------------------
# The tool
# --------------------------------------------------------------------------------------------


class HccnTool:
    """Runs ``hccn_tool`` through ``run_command(argv) -> (rc, stdout, stderr)``.

    A call answered with ``hccn_tool is busy, please try again`` is retried ``retries`` times,
    ``delay`` seconds apart; any other failure raises HccnError with the tool's own message.
    """

    def __init__(self, run_command, path=DEFAULT_HCCN_TOOL, retries=10, delay=1.0, sleep=time.sleep):
        self.run_command = run_command
        self.path = path
        self.retries = retries
        self.delay = delay
        self.sleep = sleep

    def run(self, device, *args, accept=None):
        """The tool's stdout. ``accept``: a text (lower case) whose presence in the answer is a
        valid answer whatever the exit code (``-tls -g``: no certificate found)."""
        argv = [self.path, "-i", str(device)] + [str(a) for a in args]
        for attempt in range(self.retries + 1):
            rc, out, err = self.run_command(argv)
            text = "\n".join(t.strip() for t in (out, err) if t and t.strip())
            if HCCN_BUSY in text:
                if attempt < self.retries:
                    self.sleep(self.delay)
                    continue
                raise HccnError("{}: still busy after {} retries: {}".format(" ".join(argv[1:]), self.retries, text))
            if accept and accept in text.lower():
                return text
            if rc != 0:
                error = HccnLinkDown if LINK_DOWN in text.lower() else HccnError
                raise error("{} failed (rc={}): {}".format(" ".join(argv[1:]), rc, text or "no output"))
            return out
        raise AssertionError("unreachable")

    def set(self, device, *args):
        out = self.run(device, *args)
        if HCCN_SUCCESS not in out:
            raise HccnError("{}: no '{}' in the answer: {}".format(
                " ".join(str(a) for a in ("-i", device) + args), HCCN_SUCCESS, out.strip() or "no output"))

    def read_config(self, device):
        """address, netmask, gateway, netdetect, tls (bool) of one device."""
        conf = parse_ip(self.run(device, "-ip", "-g"))
        conf["gateway"] = parse_gateway(self.run(device, "-gateway", "-g"))["gateway"]
        conf["netdetect"] = parse_netdetect(self.run(device, "-netdetect", "-g"))
        conf["tls"] = parse_tls(self.run(device, "-tls", "-g", accept=NO_CERTIFICATE))["enabled"]
        return conf

    def read_qos(self, device, dscp, priority):
        """The port's RDMA QoS as it bears on (dscp, priority): the class DSCP ``dscp`` maps to,
        the class of ``priority``, PFC per priority and the port MTU. HccnLinkDown where the port's
        link is down (the tool refuses the reads)."""
        prio_tc = parse_prio_tc(self.run(device, "-prio_tc", "-g"))
        return {
            "dscp_tc": parse_dscp_to_tc(self.run(device, "-dscp_to_tc", "-g", "dscp", dscp), dscp),
            "priority_tc": prio_tc[priority],
            "pfc": parse_pfc(self.run(device, "-pfc", "-g")),
            "mtu": parse_mtu(self.run(device, "-mtu", "-g")),
        }

    def link_state(self, device, stat=False):
        """Link, net health and speed of one device, and its optics and link history (``optical``,
        ``link_stat``: parsed, or None with the reason in ``optical_error`` / ``link_stat_error``: a tool
        that refuses the read, or an output that cannot be read, is reported for the port, not raised);
        with ``stat`` also its packet statistics (``stat`` / ``stat_error``, ``-stat -g``: one more read)."""
        out = {
            "link": parse_link(self.run(device, "-link", "-g")),
            "health": parse_net_health(self.run(device, "-net_health", "-g")),
            "speed_mbps": parse_speed(self.run(device, "-speed", "-g")),
        }
        reads = [("optical", ("-optical", "-g"), parse_optical),
                 ("link_stat", ("-link_stat", "-g"), parse_link_stat)]
        if stat:
            reads.append(("stat", ("-stat", "-g"), parse_stat))
        for key, args, parse in reads:
            try:
                out[key], out[f"{key}_error"] = parse(self.run(device, *args)), None
            except HccnError as exc:
                out[key], out[f"{key}_error"] = None, str(exc)
        return out

    def status(self, device, stat=False):
        """Link, net health, speed and addresses of one device (with ``stat``: its packet statistics)."""
        out = {"device_id": str(device)}
        out.update(self.read_config(device))
        out.update(self.link_state(device, stat=stat))
        return out

    def ping(self, device, address, count=None):
        args = ["-ping", "-g", "address", address]
        if count:
            args += ["pkt", str(count)]
        return parse_ping(self.run(device, *args))


class HccnDevice:
    """Brings one device NIC to the wanted address, netmask, gateway, netdetect and TLS switch.

    ``want`` holds the fields to manage (None = leave alone). Only what differs is set:
    ``-ip -s`` (address and netmask together), ``-gateway -s``, ``-netdetect -s``, ``-tls -s``.
    """

    def __init__(self, tool, device):
        self.tool = tool
        self.device = device

    @staticmethod
    def _normalise(want):
        out = {}
        for key in FIELDS:
            value = want.get(key)
            if value is None:
                continue
            out[key] = bool(value) if key == "tls" else str(ipaddress.IPv4Address(value))
        if ("address" in out) != ("netmask" in out):
            raise HccnError("address and netmask must be given together (hccn_tool -ip -s sets both)")
        if "netmask" in out:
            try:
                ipaddress.IPv4Network("0.0.0.0/" + out["netmask"])
            except ValueError:
                raise HccnError("netmask {} is not a contiguous netmask".format(out["netmask"])) from None
        return out

    @staticmethod
    def _normalise_qos(want):
        qos = {k: want.get(k) for k in QOS_FIELDS if want.get(k) is not None}
        if ("rdma_dscp" in qos) != ("rdma_priority" in qos):
            raise HccnError("rdma_dscp and rdma_priority must be given together (the DSCP maps to the priority's "
                            "traffic class)")
        if "rdma_dscp" in qos and not 0 <= int(qos["rdma_dscp"]) <= 63:
            raise HccnError(f"rdma_dscp {qos['rdma_dscp']} is not a DSCP (0-63)")
        if "rdma_priority" in qos and not 0 <= int(qos["rdma_priority"]) <= 7:
            raise HccnError(f"rdma_priority {qos['rdma_priority']} is not a priority (0-7)")
        if "mtu" in qos and not 68 <= int(qos["mtu"]) <= 9702:
            raise HccnError(f"mtu {qos['mtu']} is out of the port's range (68-9702)")
        return {k: int(v) for k, v in qos.items()}

    def _read_qos(self, qos):
        """The QoS keys of the port; on a port whose link is down (the tool refuses QoS reads there)
        each is None and ``qos_link_down`` is True: nothing is set now, a later run sets it."""
        if not qos:
            return {}
        keys = ("rdma_dscp_tc", "rdma_priority_tc", "pfc", "mtu") if "rdma_dscp" in qos else ("mtu",)
        try:
            if "rdma_dscp" in qos:
                raw = self.tool.read_qos(self.device, qos["rdma_dscp"], qos["rdma_priority"])
                state = {"rdma_dscp_tc": raw["dscp_tc"], "rdma_priority_tc": raw["priority_tc"],
                         "pfc": raw["pfc"], "mtu": raw["mtu"]}
            else:
                state = {"mtu": parse_mtu(self.tool.run(self.device, "-mtu", "-g"))}
        except HccnLinkDown as exc:
            state = dict.fromkeys(keys)
            state.update(qos_link_down=True, qos_error=str(exc))
        return state

    @staticmethod
    def _qos_commands(qos, before):
        """Set commands for what differs: DSCP -> the priority's class, PFC on the priority, MTU.
        None on a port whose link is down (its QoS could not be read)."""
        commands = []
        if before.get("qos_link_down"):
            return commands
        if "rdma_dscp" in qos:
            if before["rdma_dscp_tc"] != before["rdma_priority_tc"]:
                commands.append(["-dscp_to_tc", "-s", "dscp", str(qos["rdma_dscp"]), "tc",
                                 str(before["rdma_priority_tc"])])
            if before["pfc"][qos["rdma_priority"]] != 1:
                pfc = list(before["pfc"])
                pfc[qos["rdma_priority"]] = 1
                commands.append(["-pfc", "-s", "priority", ",".join(str(b) for b in pfc)])
        if "mtu" in qos and before["mtu"] != qos["mtu"]:
            commands.append(["-mtu", "-s", "size", str(qos["mtu"])])
        return commands

    @staticmethod
    def _qos_after(qos, before):
        """The QoS keys of the state the settings lead to (none when no QoS is managed)."""
        after = {k: before[k] for k in QOS_STATE if k in before}
        if before.get("qos_link_down"):
            return after
        if "rdma_dscp" in qos:
            after["rdma_dscp_tc"] = before["rdma_priority_tc"]
            after["pfc"] = list(before["pfc"])
            after["pfc"][qos["rdma_priority"]] = 1
        if "mtu" in qos:
            after["mtu"] = qos["mtu"]
        return after

    def prepare(self, want):
        """Read the port and work out what differs (sets nothing):
        -> dict(wanted, qos, before, after, commands); ``after`` is the state the commands lead to."""
        wanted = self._normalise(want)
        qos = self._normalise_qos(want)
        before = self.tool.read_config(self.device)
        before.update(self._read_qos(qos))
        after = dict(before)
        after.update(wanted)
        after.update(self._qos_after(qos, before))
        commands = []
        if "address" in wanted and (before["address"], before["netmask"]) != (after["address"], after["netmask"]):
            commands.append(["-ip", "-s", "address", after["address"], "netmask", after["netmask"]])
        if "gateway" in wanted and before["gateway"] != after["gateway"]:
            commands.append(["-gateway", "-s", "gateway", after["gateway"]])
        if "netdetect" in wanted and before["netdetect"] != after["netdetect"]:
            commands.append(["-netdetect", "-s", "address", after["netdetect"]])
        if "tls" in wanted and before["tls"] != after["tls"]:
            commands.append(["-tls", "-s", "enable", "1" if after["tls"] else "0"])
        commands += self._qos_commands(qos, before)
        return {"wanted": wanted, "qos": qos, "before": before, "after": after, "commands": commands}

    def execute(self, plan):
        """Run the plan's set commands, read the port back and check it holds what was set: -> after."""
        expected = plan["after"]
        for args in plan["commands"]:
            self.tool.set(self.device, *args)
        after = self.tool.read_config(self.device)
        after.update(self._read_qos(plan["qos"]))
        check = list(plan["wanted"])
        if not expected.get("qos_link_down") and not after.get("qos_link_down"):
            check += [k for k in QOS_STATE if k in expected]
        wrong = {k: after.get(k) for k in check if after.get(k) != expected[k]}
        if wrong:
            raise HccnError(f"device {self.device}: read back {wrong} after setting "
                            f"{ {k: expected[k] for k in wrong} }")
        return after

    def apply(self, want, check_mode=False):
        """-> dict(changed, before, after, commands)."""
        plan = self.prepare(want)
        after = plan["after"]
        if plan["commands"] and not check_mode:
            after = self.execute(plan)
        return {"changed": bool(plan["commands"]), "before": plan["before"], "after": after,
                "commands": plan["commands"]}


QOS_STATE = ("rdma_dscp_tc", "rdma_priority_tc", "pfc", "mtu")


def diff_text(device, state):
    """One ``key: value`` line per field, for Ansible's before/after diff."""
    lines = []
    for key in FIELDS + QOS_STATE:
        if key not in state and key not in FIELDS:
            continue
        value = state.get(key)
        if key == "tls":
            value = "enabled" if value else "disabled"
        elif key in QOS_STATE and state.get("qos_link_down"):
            value = "(not read: link down)"
        elif key == "pfc":
            value = ",".join(str(b) for b in value)
        lines.append("{}: {}".format(key, "" if value is None else value))
    return "# device {}\n{}\n".format(device, "\n".join(lines))


# --------------------------------------------------------------------------------------------
# Module bodies (plugins/modules/hccn.py, plugins/modules/hccn_info.py)
# --------------------------------------------------------------------------------------------

DRIVER_HINT = ("is the NPU driver installed and running on this host? (run the npu_driver stage; "
               "a host waiting for its reboot cannot use hccn_tool)")
LINK_DOWN_HINT = f"the port's link is down: check its {LINK_DOWN_CAUSE} (not the driver)"


def _hint(exc):
    """What to check after hccn_tool failed: the port's cable for a link-down refusal, the driver for
    any other failure of the tool (its exit code in the message), nothing for an unreadable output."""
    if isinstance(exc, HccnLinkDown):
        return f"; {LINK_DOWN_HINT}"
    return f"; {DRIVER_HINT}" if "rc=" in str(exc) else ""


_DAVINCI_RE = re.compile(r"^davinci(\d+)$")


def _tool(module):
    p = module.params
    return HccnTool(vendor_runner(module), path=p["hccn_tool"],
                    retries=p["retries"], delay=p["delay"])


def _require_tool(module):
    """Fail when hccn_tool is not there (or not executable), with the task's own message
    (``missing_msg``, e.g. the role's refusal naming the host and the setting) where it gives one."""
    path = module.params["hccn_tool"]
    if not os.access(path, os.X_OK):
        module.fail_json(msg=module.params.get("missing_msg") or f"hccn_tool not found at {path}: {DRIVER_HINT}")


def _phy_id(phy_ids, device):
    phy = phy_ids[device] if 0 <= device < len(phy_ids) else None
    return str(device if phy in (None, "") else phy)


def hccn_ports_module(module):
    """plugins/modules/hccn.py with ``ports``: every device NIC of the node to its wanted settings in
    one call. Every port is read before any is set (a driver that does not answer changes nothing),
    only what differs is set, and only a changed port is read back; with ``status`` each port's link,
    net health and speed are read too (again after a change) and ``devices`` reports the ports the
    way hccn_info does."""
    p = module.params
    _require_tool(module)
    tool = _tool(module)
    qos = {key: p.get(key) for key in QOS_FIELDS}
    phy_ids = p.get("phy_ids") or []
    plans = []
    device = None
    try:
        for port in p["ports"]:
            device = port["device"]
            want = {key: port.get(key) for key in FIELDS}
            want.update(qos)
            nic = HccnDevice(tool, device)
            plan = nic.prepare(want)
            if p["status"]:
                plan["link_state"] = tool.link_state(device, stat=p.get("stat"))
            plans.append((nic, plan))
        for nic, plan in plans:
            device = nic.device
            if plan["commands"] and not module.check_mode:
                plan["after"] = nic.execute(plan)
                if p["status"]:
                    plan["link_state"] = tool.link_state(device, stat=p.get("stat"))
    except HccnError as exc:
        module.fail_json(msg=f"device {device}: {exc}{_hint(exc)}", device=device)
    ports = []
    devices = []
    for nic, plan in plans:
        d = nic.device
        port = {"device": d, "before": plan["before"], "after": plan["after"],
                "commands": [" ".join(["-i", str(d)] + c) for c in plan["commands"]]}
        if plan["before"].get("qos_link_down"):
            # QoS could not be read (link down): nothing of it set now, a later run sets it
            port["qos_link_down"] = True
        ports.append(port)
        if p["status"]:
            # As read from the hardware: after the changes (in check mode, as the port is).
            state = plan["before"] if module.check_mode else plan["after"]
            entry = {"device_id": str(d)}
            entry.update({k: state.get(k) for k in FIELDS})
            entry.update(plan["link_state"])
            entry["phy_id"] = _phy_id(phy_ids, d)
            if state.get("qos_link_down"):
                entry["qos_link_down"] = True
            devices.append(entry)
    out = dict(changed=any(port["commands"] for port in ports), ports=ports,
               commands=[c for port in ports for c in port["commands"]])
    if p["status"]:
        out["devices"] = devices
    diffs = [{"before": diff_text(port["device"], port["before"]),
              "after": diff_text(port["device"], port["after"]),
              "before_header": f"hccn_tool -i {port['device']}",
              "after_header": f"hccn_tool -i {port['device']}"}
             for port in ports if port["commands"]]
    if p.get("conf_file"):
        conf = hccn_conf_file(module, p["conf_file"], p["ports"], p["send_arp_status"])
        out["conf_changed"] = conf["changed"]
        out["changed"] = out["changed"] or conf["changed"]
        if conf["changed"]:
            diffs.append({"before": conf["before"], "after": conf["after"],
                          "before_header": p["conf_file"], "after_header": p["conf_file"]})
    if module._diff:
        out["diff"] = diffs
    module.exit_json(**out)


def hccn_conf_file(module, path, ports, send_arp_status):
    """Merge the ports' keys into ``path`` (every other line the site has stays; the boot and the
    vendor's recovery, ``hccn_tool -a -cfg recovery``, restore the ports from it), root-owned 0644;
    written only when its content, owner or mode differ, never in check mode."""
    try:
        with open(path, encoding="utf-8") as f:
            before = f.read()
        exists = True
    except FileNotFoundError:
        before, exists = "", False
    except OSError as exc:
        module.fail_json(msg=f"cannot read {path}: {exc}")
    try:
        after = merge_hccn_conf(before, hccn_conf_devices(ports, send_arp_status))
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    changed = after != before or not exists
    if not module.check_mode:
        if changed:
            directory = os.path.dirname(path) or "."
            fd, tmp = tempfile.mkstemp(prefix=".hccn.conf.", dir=directory)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(after)
                os.chmod(tmp, 0o644)
                module.atomic_move(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        file_args = module.load_file_common_arguments({"path": path, "owner": "root", "group": "root",
                                                       "mode": "0644"})
        changed = module.set_fs_attributes_if_different(file_args, changed)
    elif exists:
        st = os.stat(path)
        changed = changed or st.st_uid != 0 or st.st_gid != 0 or (st.st_mode & 0o7777) != 0o644
    return {"changed": changed, "before": before, "after": after}


def hccn_module(module):
    """plugins/modules/hccn.py: one device NIC to the wanted settings (check mode, diff)."""
    p = module.params
    if p.get("ports") is not None:
        hccn_ports_module(module)
        return
    _require_tool(module)
    device = p["device"]
    want = {key: p.get(key) for key in FIELDS + QOS_FIELDS}
    try:
        result = HccnDevice(_tool(module), device).apply(want, check_mode=module.check_mode)
    except HccnError as exc:
        module.fail_json(msg=f"device {device}: {exc}{_hint(exc) if isinstance(exc, HccnLinkDown) else ''}",
                         device=device)
    out = dict(changed=result["changed"], device=device, before=result["before"], after=result["after"],
               commands=[" ".join(["-i", str(device)] + c) for c in result["commands"]])
    if module._diff:
        out["diff"] = {"before": diff_text(device, result["before"]), "after": diff_text(device, result["after"]),
                       "before_header": f"hccn_tool -i {device}", "after_header": f"hccn_tool -i {device}"}
    module.exit_json(**out)


def discover_devices(dev_dir="/dev"):
    """Device indexes from the driver's ``/dev/davinciN`` nodes (one per chip / device NIC)."""
    try:
        names = os.listdir(dev_dir)
    except OSError:
        return []
    return sorted(int(m.group(1)) for m in (_DAVINCI_RE.match(n) for n in names) if m)


def hccn_info_module(module):
    """plugins/modules/hccn_info.py: status of every device NIC, and optional pings."""
    p = module.params
    _require_tool(module)
    devices = []
    if p["status"]:
        devices = p["devices"] if p["devices"] is not None else discover_devices()
        if not devices:
            module.fail_json(msg=f"no /dev/davinciN device on this host: {DRIVER_HINT}")
    tool = _tool(module)
    phy_ids = p.get("phy_ids") or []
    status = []
    try:
        for device in devices:
            entry = tool.status(device, stat=p.get("stat"))
            entry["phy_id"] = _phy_id(phy_ids, device)
            status.append(entry)
        pings = []
        for target in p["ping"]:
            address = target.get("address")
            device = target.get("device", target.get("device_id"))
            try:
                device = int(device)
            except (TypeError, ValueError):
                module.fail_json(msg=f"ping entry {target!r}: needs a device index (device or device_id)")
            if not address:
                module.fail_json(msg=f"ping entry {target!r}: needs an address")
            result = dict(target)
            try:
                result.update(tool.ping(device, address, p["ping_count"]))
            except HccnLinkDown as exc:
                # a port without a link reaches nothing: the cluster-wide report names it, not the driver
                result.update(transmitted=int(p["ping_count"] or 3), received=0, loss_pct=100.0,
                              link_down=True, error=str(exc))
            # Reachable when any reply came back: the first packet after a peer's port came back
            # (reboot, link flap) can be lost to a stale ARP entry, on real fabrics too. The loss
            # itself stays in the result (received / transmitted / loss_pct).
            result.update(device=str(device), address=address, ok=result["received"] > 0)
            pings.append(result)
    except HccnError as exc:
        module.fail_json(msg=f"{exc}{_hint(exc)}")
    module.exit_json(changed=False, devices=status, pings=pings)


class HccnTask:
    """plugins/modules/hccn.py: one device NIC to the wanted settings."""

    def __init__(self, module):
        self.module = module

    def run(self):
        hccn_module(self.module)


class HccnInfoTask:
    """plugins/modules/hccn_info.py: status of every device NIC, and optional pings."""

    def __init__(self, module):
        self.module = module

    def run(self):
        hccn_info_module(self.module)
