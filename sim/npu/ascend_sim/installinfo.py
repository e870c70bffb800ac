"""SIMULATION ONLY - not Huawei software. ``/etc/ascend_install.info`` and version.info helpers.

``/etc/ascend_install.info`` is ``Key=Value`` lines (``UserName``, ``UserGroup``, ``Driver_*``,
``Firmware_*``). Updates keep other lines and their order; new keys are appended.
"""

import os

from . import paths

KEY_ORDER = (
    "UserName",
    "UserGroup",
    "Driver_Install_Type",
    "Driver_Install_Path_Param",
    "Driver_Install_For_All",
    "Firmware_Install_Type",
    "Firmware_Install_Path_Param",
)


def parse_kv(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip()
    return out


def read_kv_file(real_path: str) -> dict:
    path = paths.host_path(real_path)
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8", errors="replace") as f:
        return parse_kv(f.read())


def read_install_info() -> dict:
    return read_kv_file(paths.INSTALL_INFO)


def update_install_info(updates: dict, remove_prefix: str | None = None) -> None:
    """Set ``updates`` (a value of None deletes the key); drop keys starting with ``remove_prefix``."""
    path = paths.host_path(paths.INSTALL_INFO)
    lines = []
    if os.path.isfile(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    pending = dict(updates)
    out = []
    for line in lines:
        key = line.partition("=")[0].strip() if "=" in line else None
        if key is not None and remove_prefix and key.startswith(remove_prefix) and key not in pending:
            continue
        if key is not None and key in pending:
            value = pending.pop(key)
            if value is not None:
                out.append(f"{key}={value}")
            continue
        out.append(line)
    order = {k: i for i, k in enumerate(KEY_ORDER)}
    for key in sorted(pending, key=lambda k: order.get(k, len(order))):
        if pending[key] is not None:
            out.append(f"{key}={pending[key]}")
    paths.ensure_parent(path)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + ("\n" if out else ""))
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def driver_install_path(info: dict | None = None) -> str:
    info = read_install_info() if info is None else info
    return info.get("Driver_Install_Path_Param") or paths.DEFAULT_INSTALL_PATH


def firmware_install_path(info: dict | None = None) -> str:
    info = read_install_info() if info is None else info
    return info.get("Firmware_Install_Path_Param") or driver_install_path(info)


def read_version(real_path: str) -> str | None:
    """``Version=`` of a version.info file, or None when the file is missing."""
    return read_kv_file(real_path).get("Version") or None


def installed_driver_version(install_path: str | None = None) -> str | None:
    base = install_path or driver_install_path()
    return read_version(f"{base}/driver/version.info")


def installed_firmware_version(install_path: str | None = None) -> str | None:
    base = install_path or firmware_install_path()
    return read_version(f"{base}/firmware/version.info")
