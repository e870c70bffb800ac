"""SIMULATION ONLY - not Huawei software. The simulated hardware description.

``/etc/ascend-sim/hardware.json`` (stand-in only), e.g.
``{"npu_count": 2, "model": "910B1", "hbm_mb": 65536, "nic_interface": null}``. A missing file or a
missing key means the defaults below. ``factory_firmware`` (optional) is the firmware the NPUs run
before any firmware package was installed.
"""

import json
import os

from . import paths

MODELS = ("910B1", "910B2", "910B3", "910B4")
HBM_MB = {"910B1": 65536, "910B2": 65536, "910B3": 65536, "910B4": 32768}
MAX_NPUS = 16
DEFAULTS = {
    "npu_count": 2,
    "model": "910B1",
    "hbm_mb": 65536,
    "nic_interface": None,
    "factory_firmware": "7.1.0.3.220",
}

# PCIe bus ids of the eight NPUs of an Atlas 800T A2 (NPU 0..7).
_BUS = ("C1", "C2", "81", "82", "01", "02", "41", "42", "C3", "C4", "83", "84", "03", "04", "43", "44")


class HardwareError(Exception):
    pass


def bus_id(npu: int) -> str:
    return f"0000:{_BUS[npu % len(_BUS)]}:00.0"


def validate(hw: dict) -> dict:
    count = hw.get("npu_count")
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_NPUS:
        raise HardwareError(f"npu_count must be an integer 1..{MAX_NPUS}, got {count!r}")
    if hw.get("model") not in MODELS:
        raise HardwareError(f"model must be one of {', '.join(MODELS)}, got {hw.get('model')!r}")
    hbm = hw.get("hbm_mb")
    if not isinstance(hbm, int) or hbm <= 0:
        raise HardwareError(f"hbm_mb must be a positive integer, got {hbm!r}")
    nic = hw.get("nic_interface")
    if nic is not None and (not isinstance(nic, str) or not nic or "/" in nic or " " in nic):
        raise HardwareError(f"nic_interface must be an interface name or null, got {nic!r}")
    return hw


def load() -> dict:
    hw = dict(DEFAULTS)
    path = paths.host_path(paths.HARDWARE_JSON)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict):
            raise HardwareError(f"{paths.HARDWARE_JSON}: not a JSON object")
        hw.update(data)
        if "hbm_mb" not in data and hw["model"] in HBM_MB:
            hw["hbm_mb"] = HBM_MB[hw["model"]]
    return validate(hw)


def save(hw: dict) -> None:
    validate(hw)
    path = paths.host_path(paths.HARDWARE_JSON)
    paths.ensure_parent(path)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(hw, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
