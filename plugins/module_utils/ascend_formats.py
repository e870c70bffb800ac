# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the text formats of the Huawei Ascend vendor tools and files.

Each vendor tool or format is understood in one file of ``plugins/module_utils``:

* here: key=value records (``version.info``, ``/etc/ascend_install.info``,
  ``ascend_toolkit_install.info``)
* ``hccn_tool.py``: ``hccn_tool`` outputs and ``/etc/hccn.conf``
* ``npu_smi.py``: ``npu-smi info`` (by column headers), ``npu-smi info -l``, dcmi error strings
* ``upgrade_tool.py``: ``upgrade-tool ... --version`` and the rule for "firmware X runs"
* ``run_package.py``: ``.run`` package file names, ``--check`` output, installer verdict
* ``ascend_version.py``: version strings; ``ascend_install.py``: where install records live

Only the standard library is used; the code runs on target hosts with Python 3.8+.
"""

from __future__ import annotations

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
