"""SIMULATION ONLY - not Huawei software. Simulated NPU device nodes.

``ascend-sim boot`` creates ``/dev/davinci0..N-1``, ``/dev/davinci_manager``, ``/dev/devmm_svm`` and
``/dev/hisi_hdc`` as character devices (``crw-rw----``, owner/group from ``/etc/ascend_install.info``)
when a driver is installed. The major numbers are from Linux's "local/experimental use" range
(240-254), so nothing on the host answers behind them. Where ``mknod`` is not permitted
(unprivileged unit tests, restricted containers) plain files with the same mode stand in.
"""

import os
import re
import stat

from . import accounts, hardware, paths, state

DCMI_INIT_FAILED = "dcmi module initialize failed. ret is -8005"

DEV_MODE = 0o660
_MAJOR_DAVINCI = 240
_CONTROL = {"davinci_manager": (241, 0), "devmm_svm": (242, 0), "hisi_hdc": (243, 0)}
_DAVINCI_RE = re.compile(r"^davinci\d+$")


def device_names(npu_count: int) -> list[str]:
    return [f"davinci{i}" for i in range(npu_count)] + list(_CONTROL)


def driver_initialised(st: dict | None = None) -> bool:
    """What dcmi needs: a loaded (running) driver and its control device."""
    st = state.load() if st is None else st
    return bool(st["running"].get("driver")) and os.path.exists(paths.host_path("/dev/davinci_manager"))


def open_dcmi(device: int | None = None) -> tuple[dict, dict] | None:
    """What every vendor tool does first: read the hardware and state, initialise dcmi and check the
    device id. Returns (hardware, state), or prints the tool's error and returns None."""
    hw = hardware.load()
    st = state.load()
    if not driver_initialised(st):
        print(DCMI_INIT_FAILED)
        return None
    if device is not None and device >= hw["npu_count"]:
        print(f"Device id {device} is invalid.")
        return None
    return hw, st


def _owner(install_info: dict) -> tuple[int, int]:
    uid = gid = 0
    u = accounts.user(install_info.get("UserName", "HwHiAiUser"))
    if u is not None:
        uid, gid = u
    g = accounts.group(install_info.get("UserGroup", "HwHiAiUser"))
    if g is not None:
        gid = g[0]
    return uid, gid


def _make_node(path: str, major: int, minor: int, uid: int, gid: int) -> str:
    if os.path.lexists(path):
        os.remove(path)
    kind = "char"
    try:
        os.mknod(path, DEV_MODE | stat.S_IFCHR, os.makedev(major, minor))
    except OSError:
        kind = "file"
        with open(path, "w", encoding="utf-8") as f:
            f.write("SIMULATION stand-in for an Ascend NPU device node (mknod not permitted)\n")
    os.chmod(path, DEV_MODE)
    try:
        os.chown(path, uid, gid)
    except OSError:
        if not paths.under_sim_root():
            raise
    return kind


def create(npu_count: int, install_info: dict) -> dict:
    """Create the device nodes; returns {name: "char"|"file"}."""
    dev = paths.host_path("/dev")
    os.makedirs(dev, exist_ok=True)
    uid, gid = _owner(install_info)
    remove_stale(npu_count)
    made = {}
    for i in range(npu_count):
        made[f"davinci{i}"] = _make_node(os.path.join(dev, f"davinci{i}"), _MAJOR_DAVINCI, i, uid, gid)
    for name, (major, minor) in _CONTROL.items():
        made[name] = _make_node(os.path.join(dev, name), major, minor, uid, gid)
    return made


def remove_stale(npu_count: int) -> None:
    dev = paths.host_path("/dev")
    if not os.path.isdir(dev):
        return
    for name in os.listdir(dev):
        if _DAVINCI_RE.match(name) and int(name[len("davinci"):]) >= npu_count:
            os.remove(os.path.join(dev, name))


def remove_all() -> None:
    dev = paths.host_path("/dev")
    if not os.path.isdir(dev):
        return
    for name in os.listdir(dev):
        if _DAVINCI_RE.match(name) or name in _CONTROL:
            os.remove(os.path.join(dev, name))
