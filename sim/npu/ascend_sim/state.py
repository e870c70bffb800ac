"""SIMULATION ONLY - not Huawei software. The simulated runtime state (stand-in only).

``/var/lib/ascend-sim/state.json`` holds what real hardware keeps in its devices: the running
driver and firmware versions, per-NPU health, link, device-NIC configuration and TLS switch, the
components waiting for a reboot and the injected ``hccn_tool`` busy counter. Every read-modify-write
holds an exclusive ``flock`` on ``/var/lib/ascend-sim/state.lock``; writes are atomic (rename).
"""

import contextlib
import copy
import fcntl
import json
import os

from . import hardware, paths

HEALTH_VALUES = ("OK", "Warning", "Alarm", "Critical")
NET_KEYS = ("ipaddr", "netmask", "netdetect", "gateway")


def default_npu() -> dict:
    return {
        "health": "OK",
        "link": "up",
        "ipaddr": None,
        "netmask": None,
        "netdetect": None,
        "gateway": None,
        "tls": 1,  # the vendor default is TLS enabled
        "tls_certs": True,  # preset TLS certificates; without them `-tls -g` answers "No certificate found"
        # RDMA QoS of the port (SIMULATION ONLY defaults, assumed: docs/sim-contract.md)
        "dscp_tc": {},  # dscp -> tc; unset dscps map to tc 0
        "prio_tc": [0, 0, 1, 1, 2, 2, 3, 3],
        "pfc": [0, 0, 0, 0, 0, 0, 0, 0],
        "mtu": 1500,
    }


def default_state(hw: dict) -> dict:
    return {
        "schema": 1,
        "running": {"driver": None, "firmware": hw["factory_firmware"]},
        "pending_reboot": [],
        "boot_count": 0,
        "hccn_busy": 0,
        "npus": {str(i): default_npu() for i in range(hw["npu_count"])},
    }


def normalize(state: dict, hw: dict) -> dict:
    """Fill missing keys and match the NPU list to the hardware description."""
    base = default_state(hw)
    for key, value in base.items():
        if key not in state:
            state[key] = copy.deepcopy(value)
    for key, value in base["running"].items():
        state["running"].setdefault(key, value)
    npus = state["npus"]
    for i in range(hw["npu_count"]):
        entry = npus.setdefault(str(i), default_npu())
        for key, value in default_npu().items():
            entry.setdefault(key, value)
    for key in list(npus):
        if not key.isdigit() or int(key) >= hw["npu_count"]:
            del npus[key]
    return state


@contextlib.contextmanager
def _lock(kind: int):
    lock_path = paths.host_path(paths.STATE_LOCK)
    paths.ensure_parent(lock_path)
    with open(lock_path, "a", encoding="utf-8") as lock:
        fcntl.flock(lock, kind)
        yield


def _read(hw: dict) -> dict:
    path = paths.host_path(paths.STATE_JSON)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    else:
        data = default_state(hw)
    return normalize(data, hw)


def _write(state: dict) -> None:
    path = paths.host_path(paths.STATE_JSON)
    paths.ensure_parent(path)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(state, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def load() -> dict:
    hw = hardware.load()
    with _lock(fcntl.LOCK_SH):
        return _read(hw)


@contextlib.contextmanager
def update():
    """``with state.update() as st: ...`` - locked read-modify-write; saved when the block ends."""
    hw = hardware.load()
    with _lock(fcntl.LOCK_EX):
        st = _read(hw)
        yield st
        _write(st)


def mark_pending(component: str) -> None:
    with update() as st:
        if component not in st["pending_reboot"]:
            st["pending_reboot"].append(component)
            st["pending_reboot"].sort()
