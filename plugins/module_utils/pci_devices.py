# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ascend NPUs on the PCI bus, before any driver: by vendor and device id, never by PCI class.

Huawei's installation guides count 910B NPUs with ``lspci | grep d802``; the Ascend driver's own PCI
table lists the NPU device ids (``0xd100`` 310, ``0xd801`` 910, ``0xd500``/``0xd501`` 310P, ``0xd802``
910B, ``0xd803`` and later). The PCI class is no guide: a Kunpeng 920 host shows its HiSilicon ZIP, SEC
and HPRE engines (vendor ``0x19e5``, class ``0x1200xx``, "processing accelerator") next to the NPUs, so
counting the class counts them too and a missing NPU goes unnoticed.

The directory read is sysfs-shaped: one directory per PCI function (``<domain>:<bus>:<dev>.<fn>``) with
``vendor``, ``device`` and ``class`` files holding ``0x``-prefixed hex values.
"""

from __future__ import annotations

import os

HUAWEI_VENDOR = "0x19e5"
# The NPU models each device id belongs to (the default of npu_driver_pci_device_ids).
# d802: Huawei's 910B guides (lspci | grep d802). d803: Atlas A3 (Ascend 910_93), in the driver's PCI
# table next to d802; which A3 function it names is not documented publicly (the setting can add
# others). d500: 310P (Atlas 300I Duo / 300V), d500/d501 in the driver's table.
NPU_DEVICE_IDS = {"0xd802": "910B", "0xd803": "Atlas A3 (910_93)", "0xd500": "310P"}


class PciReadError(Exception):
    """The PCI device directory cannot be read."""


def _read(path):
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip().lower()
    except OSError:
        return None


def normalize_id(value):
    """``d802``, ``0xD802``, ``0xd802`` -> ``0xd802``; None when it is no 16-bit hex id."""
    text = str(value or "").strip().lower()
    if text.startswith("0x"):
        text = text[2:]
    if not text or len(text) > 4 or any(c not in "0123456789abcdef" for c in text):
        return None
    return "0x" + text.rjust(4, "0")


def read_functions(root):
    """Every PCI function under ``root``: ``[{bus_id, vendor, device, class}]`` (values as the files hold
    them, lower-cased; None where a file is missing), in bus id order. Raises PciReadError when ``root``
    is not a readable directory."""
    try:
        names = sorted(os.listdir(root))
    except OSError as exc:
        raise PciReadError(f"cannot list {root}: {exc.strerror or exc}") from exc
    out = []
    for name in names:
        path = os.path.join(root, name)
        if not os.path.isdir(path):
            continue
        out.append({"bus_id": name, "vendor": _read(os.path.join(path, "vendor")),
                    "device": _read(os.path.join(path, "device")), "class": _read(os.path.join(path, "class"))})
    return out


def npu_functions(root, device_ids=None):
    """The NPU functions under ``root``.

    ``device_ids``: the device ids that are NPUs (``{id: model}`` or a list; default NPU_DEVICE_IDS).
    Returns ``{"npus": [{bus_id, device, model}], "other_huawei": [{bus_id, device, class}]}``: the Huawei
    functions whose device id is an NPU's, and the other Huawei functions (ZIP/SEC/HPRE engines, NICs,
    RAID), listed so that a report can say what was left out.
    """
    if device_ids is None:
        device_ids = NPU_DEVICE_IDS
    if not isinstance(device_ids, dict):
        device_ids = {i: NPU_DEVICE_IDS.get(normalize_id(i) or "", "NPU") for i in device_ids}
    wanted = {}
    for dev_id, model in device_ids.items():
        norm = normalize_id(dev_id)
        if norm is None:
            raise ValueError(f"{dev_id!r} is not a PCI device id (four hex digits, like 0xd802)")
        wanted[norm] = model
    npus, other = [], []
    for fn in read_functions(root):
        if normalize_id(fn["vendor"]) != HUAWEI_VENDOR:
            continue
        device = normalize_id(fn["device"])
        if device in wanted:
            npus.append({"bus_id": fn["bus_id"], "device": device, "model": wanted[device]})
        else:
            other.append({"bus_id": fn["bus_id"], "device": fn["device"], "class": fn["class"]})
    return {"npus": npus, "other_huawei": other}
