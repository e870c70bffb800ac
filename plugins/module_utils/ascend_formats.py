# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the text formats of the Huawei Ascend vendor tools and files.

Each vendor tool or format is understood in one file of ``plugins/module_utils``:

* here: key=value records (``version.info``, ``/etc/ascend_install.info``,
  ``ascend_toolkit_install.info``) and CANN's ``version.cfg`` (``<component>_running_version=[...]``)
* ``hccn_tool.py``: ``hccn_tool`` outputs and ``/etc/hccn.conf``
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
    """The release a parsed version/install record names, or None: its ``package_version`` where it has one
    (a 26.0 driver's version.info: ``Version=`` is then a component's version, ``package_version=`` the
    package's), else ``Version``/``version``."""
    value = get_key(data, "package_version")
    if value is not None and str(value).strip():
        return str(value).strip()
    value = get_key(data, "version")
    if value is None or not str(value).strip():
        return None
    return str(value).strip()


# --------------------------------------------------------------------------------------------
# version.cfg: CANN's per-component version list (older layouts and images without the install record)
# --------------------------------------------------------------------------------------------

# ``toolkit_running_version=[7.6.0.1.220:8.0.0]`` (component build : CANN release; CANN 8.0,
# /usr/local/Ascend/ascend-toolkit/latest/version.cfg), ``runtime_running_version=[1.83.T8.0.B128:CANN-1.83]``
# (older CANN, as HCCL's own reader documents it), ``[9.9]`` (a release alone).
_CFG_LINE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9_]*)\s*=\s*(?P<value>.*)$")
_CFG_ENTRY = re.compile(r"^\[(?P<build>[^\[\]:]*)(?::(?P<release>[^\[\]]*))?\]$")
# The components whose release names the installed CANN, in the order they are trusted.
VERSION_CFG_COMPONENTS = ("toolkit", "runtime", "compiler", "opp", "hccl")


class RecordError(ValueError):
    """A vendor version record whose line cannot be read (the message names the file and the line)."""


def parse_version_cfg(text, source="version.cfg"):
    """Parse CANN's ``version.cfg`` into ``{key: {"build": str, "release": str|None}}`` (file order kept).

    Comment lines (``# version: 1.0``) and blank lines are skipped. Every other line must be
    ``<key>=[<build>:<release>]`` or ``<key>=[<release>]``; a ``CANN-`` prefix of the release is
    dropped (``CANN-1.83`` -> ``1.83``). Raises RecordError naming ``source`` and the first line
    of any other form."""
    result = OrderedDict()
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _CFG_LINE.match(line)
        entry = _CFG_ENTRY.match(m.group("value").strip()) if m else None
        if not entry:
            raise RecordError(f"{source}: cannot read the line {line!r} (expected <component>_running_version="
                              "[<build>:<release>] as CANN writes it)")
        build = entry.group("build").strip()
        release = entry.group("release")
        if release is None:
            build, release = None, build
        release = release.strip()
        if release[:5].upper() == "CANN-":
            release = release[5:]
        result[m.group("key")] = {"build": build or None, "release": release or None}
    return result


def version_cfg_release(entries, source="version.cfg"):
    """The CANN release a parsed ``version.cfg`` names: the first of VERSION_CFG_COMPONENTS with a
    ``<component>_running_version`` entry. Raises RecordError when none has one."""
    for component in VERSION_CFG_COMPONENTS:
        entry = entries.get(f"{component}_running_version")
        if entry and entry["release"]:
            return entry["release"]
    raise RecordError(f"{source}: no release in any of "
                      + ", ".join(f"{c}_running_version" for c in VERSION_CFG_COMPONENTS)
                      + f" (keys found: {', '.join(entries) or 'none'})")


def parse_version_record(text, source, component=None):
    """A version record in either form, as a key=value mapping ``info_version`` reads.

    ``version.info``'s form (``Version=``/``package_version=`` lines) is returned as parsed; otherwise
    the text is read as ``version.cfg`` (``<component>_running_version=[<build>:<release>]``) and the
    release of ``component`` (else of VERSION_CFG_COMPONENTS) becomes ``version``. RecordError names
    ``source`` and the line neither form reads."""
    record = parse_key_value(text)
    if info_version(record) and not any(str(v).startswith("[") for v in record.values()):
        return record
    entries = parse_version_cfg(text, source)
    own = (entries.get(f"{component}_running_version") or {}).get("release") if component else None
    out = OrderedDict(version=own or version_cfg_release(entries, source))
    out.update((k, v["release"]) for k, v in entries.items())
    return out
