# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the Ascend packages record what is installed, and how to read it back.

Paths (``P`` = install path, default ``/usr/local/Ascend``):

* driver: ``P/driver/version.info`` (``Version=``; ``package_version=`` wins where both are present)
* firmware: ``P/firmware/version.info`` (``Version=``)
* driver and firmware of older layouts and images without ``version.info``: ``P/<kind>/version.cfg``,
  read in either record form (ascend_formats.parse_version_record; its layout there is assumed, see
  docs/sim-contract.md)
* toolkit: ``P/ascend-toolkit/latest/<arch>-linux/ascend_toolkit_install.info`` (``version=``);
  ``latest`` is a link (into ``P/cann-<ver>`` from CANN 9): it is resolved, never hard-coded
* kernels: ``P/ascend-toolkit/latest/opp_kernel/version.info`` (``Version=``)
* docker_runtime: ``P/Ascend-Docker-Runtime/ascend_docker_runtime_install.info`` (``version=v6.0.0``,
  with a ``v`` prefix; the vendor's run_main.sh ``save_install_args``); there is no ``version.info``

Driver and firmware installed under another path are found through the
``Driver_Install_Path_Param``/``Firmware_Install_Path_Param`` keys of ``/etc/ascend_install.info``.
"""

from __future__ import annotations

import glob
import os
import platform

from ansible_collections.ascendops.cluster.plugins.module_utils import cann_info
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_formats import (
    get_key,
    info_version,
    parse_version_record,
    read_key_value_file,
)

DEFAULT_INSTALL_PATH = "/usr/local/Ascend"
DEFAULT_INSTALL_INFO = "/etc/ascend_install.info"

_INFO_PATH_KEYS = {
    "driver": "Driver_Install_Path_Param",
    "firmware": "Firmware_Install_Path_Param",
}


def machine_arch():
    """``uname -m`` normalised to the names used in Ascend packages."""
    arch = platform.machine().lower()
    return {"arm64": "aarch64", "amd64": "x86_64"}.get(arch, arch)


def toolkit_latest(install_path):
    """(link path, resolved directory or None) of ``<install_path>/ascend-toolkit/latest``."""
    link = os.path.join(install_path, "ascend-toolkit", "latest")
    if not os.path.exists(link):
        return link, None
    return link, os.path.realpath(link)


def _toolkit_info_file(latest_dir, arch=None):
    arches = []
    for a in (arch, machine_arch()):
        if a and a not in arches:
            arches.append(a)
    for a in arches:
        candidate = os.path.join(latest_dir, f"{a}-linux", "ascend_toolkit_install.info")
        if os.path.isfile(candidate):
            return candidate
    found = sorted(glob.glob(os.path.join(latest_dir, "*-linux", "ascend_toolkit_install.info")))
    return found[0] if found else None


def record_file(kind, install_path, arch=None):
    """The file holding the installed version of ``kind`` under ``install_path`` (may not exist)."""
    if kind in ("driver", "firmware"):
        return os.path.join(install_path, kind, "version.info")
    if kind == "docker_runtime":
        return os.path.join(install_path, "Ascend-Docker-Runtime", "ascend_docker_runtime_install.info")
    link, latest = toolkit_latest(install_path)
    base = latest or link
    if kind == "kernels":
        return os.path.join(base, "opp_kernel", "version.info")
    if kind == "toolkit":
        found = _toolkit_info_file(base, arch) if latest else None
        return found or os.path.join(base, "%s-linux" % (arch or machine_arch()), "ascend_toolkit_install.info")
    raise ValueError(f"unknown Ascend package kind {kind!r}")


def _read_version_cfg(path, kind):
    """The parsed ``version.cfg`` of ``kind`` (driver, firmware), None when there is none."""
    try:
        with open(path, errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    return parse_version_record(text, path, kind)


def read_installed(kind, install_path=DEFAULT_INSTALL_PATH, install_info=None, arch=None):
    """What is installed for ``kind``.

    Returns ``{"installed": bool, "version": str|None, "file": path read|None,
    "install_path": str, "info": dict}``; ``install_info`` is the parsed
    ``/etc/ascend_install.info`` (dict) used to find driver/firmware installed elsewhere.
    For the toolkit ``path`` is also set: the resolved ``latest`` directory.
    """
    paths = [install_path]
    alt = get_key(install_info or {}, _INFO_PATH_KEYS[kind]) if kind in _INFO_PATH_KEYS else None
    if alt and os.path.normpath(alt) != os.path.normpath(install_path):
        paths.append(alt)
    result = {"installed": False, "version": None, "file": None, "install_path": install_path, "info": {}}
    if kind in ("toolkit", "kernels"):
        # CANN: the active toolkit behind the latest link, its kernels by version_dir (cann_info)
        active = cann_info.active_toolkit(install_path, arch)
        rec = active if kind == "toolkit" else active["kernels"]
        result.update(installed=bool(active["installed"] and (kind == "toolkit" or rec["installed"])),
                      version=rec["version"], file=rec["file"], info=dict(rec.get("info") or {}))
        if kind == "toolkit":
            result["path"] = active["path"]
        return result
    if kind == "toolkit":
        result["path"] = None
    for base in paths:
        path = record_file(kind, base, arch)
        info = read_key_value_file(path)
        if info is None and kind in ("driver", "firmware"):
            path = os.path.join(base, kind, "version.cfg")
            info = _read_version_cfg(path, kind)
        if info is None:
            continue
        result.update(installed=True, version=info_version(info), file=path,
                      install_path=base, info=dict(info))
        if kind == "toolkit":
            result["path"] = toolkit_latest(base)[1]
        break
    return result
