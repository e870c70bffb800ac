# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The firmware ``upgrade-tool`` (``<install path>/driver/tools/upgrade-tool``): its version query
output, and the one rule for "firmware X runs on this node".

``upgrade-tool --device_index -1 --component -1 --version`` wraps its output in ``{`` ... ``}`` and
prints, per device and component, a line
``Get component version(7.5.0.2.220) succeed for deviceId(0), componentType(0).`` that may be
followed by a JSON-ish line with unquoted values
``{"device_id":0, "component":nve, "version":1.83.10.1.248}``. One device has several components
(``nve``, ``xloader``, ``m3fw``, ``uefi``, ...); on some cards they carry different versions. Either
kind of line alone is understood, so are both together (a JSON-ish line after a ``Get ...`` line of
the same device and version names that component).

The rule used by every consumer (``npu_info``, and through it the driver role's verify and reboot
steps): the firmware package version is what the main components report, so a device runs the
installed package X when one of its components reports X; components with their own numbering
(``nve`` above) neither confirm nor refute it. A device where no component reports X runs
another firmware: the version most of its components report.
"""

from __future__ import annotations

import re
from collections import OrderedDict

from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_version import versions_equal

_GET_RE = re.compile(
    r"Get component version\(([^)]*)\)\s+succeed\s+for\s+deviceId\((\d+)\)\s*,\s*componentType\((\d+)\)",
    re.IGNORECASE)
_JSONISH_RE = re.compile(r"\{([^{}]*\"device_id\"[^{}]*)\}", re.IGNORECASE)
_PAIR_RE = re.compile(r"\"?([A-Za-z_][A-Za-z0-9_]*)\"?\s*:\s*(\"[^\"]*\"|[^,}\s]+)")


def _jsonish(body):
    out = {}
    for m in _PAIR_RE.finditer(body):
        value = m.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        out[m.group(1).lower()] = value
    return out


def parse_upgrade_tool_versions(text):
    """Parse ``upgrade-tool --device_index -1 --component -1 --version`` output.

    Returns a list, in output order, of ``{"device_id": int, "component_type": int|None,
    "component": str|None, "version": str}``: one entry per ``Get component version`` line (named
    by the JSON-ish line after it, when there is one) and one per JSON-ish line that follows no such
    line. Lines of other kinds (the braces, failures) are ignored.
    """
    out = []
    last_get = None
    for raw in (text or "").splitlines():
        m = _GET_RE.search(raw)
        if m:
            entry = OrderedDict(device_id=int(m.group(2)), component_type=int(m.group(3)), component=None,
                                version=m.group(1).strip())
            out.append(entry)
            last_get = entry
            raw = raw[m.end():]  # a JSON-ish part on the same line names this component
        j = _JSONISH_RE.search(raw)
        if not j:
            continue
        fields = _jsonish(j.group(1))
        try:
            device = int(fields.get("device_id", ""))
        except ValueError:
            continue
        version = fields.get("version") or None
        component = fields.get("component") or None
        if (last_get is not None and last_get["component"] is None and last_get["device_id"] == device
                and (version is None or last_get["version"] == version)):
            last_get["component"] = component
            last_get = None
            continue
        if version is None:
            continue
        ctype = fields.get("componenttype", fields.get("component_type"))
        out.append(OrderedDict(device_id=device, component_type=int(ctype) if ctype and ctype.isdigit() else None,
                               component=component, version=version))
        last_get = None
    return [dict(e) for e in out]


def device_versions(components):
    """{device_id: [versions of its components, in order]}, devices ascending."""
    per_device = {}
    for comp in components:
        per_device.setdefault(comp["device_id"], []).append(comp["version"])
    return OrderedDict((dev, per_device[dev]) for dev in sorted(per_device))


def _main_version(versions):
    counts = OrderedDict()
    for v in versions:
        counts[v] = counts.get(v, 0) + 1
    best = max(counts.values())
    return next(v for v, n in counts.items() if n == best)


def firmware_status(components, package_version):
    """Which firmware each device runs, judged against the package version ``package_version``.

    Returns ``{"devices": {device_id: running package version}, "running_versions": [distinct,
    in device order], "stale_devices": [device ids not running package_version], "active": bool}``.
    ``active`` is true when every device reported runs ``package_version`` (and at least one
    device was reported); with no package version, nothing is stale and ``active`` is false.
    """
    devices = OrderedDict()
    stale = []
    for dev, versions in device_versions(components).items():
        if package_version and any(versions_equal(package_version, v) for v in versions):
            devices[dev] = package_version
        else:
            devices[dev] = _main_version(versions)
            if package_version:
                stale.append(dev)
    running = []
    for v in devices.values():
        if v not in running:
            running.append(v)
    return {
        "devices": dict(devices),
        "running_versions": running,
        "stale_devices": stale,
        "active": bool(package_version) and bool(devices) and not stale,
    }
