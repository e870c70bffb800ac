"""SIMULATION ONLY - not Huawei software. The simulated NPUs as the PCI bus shows them.

A node container sees the host's ``/sys``, which holds no Ascend NPU. So that a check that counts
NPUs on the PCI bus before any driver is installed (vendor ``0x19e5``, class "processing
accelerator" ``0x1200xx``) has something to count, the simulator writes one directory per NPU,
shaped like ``/sys/bus/pci/devices/<bus id>/`` (files ``vendor``, ``device``, ``class``), under
``/var/lib/ascend-sim/pci/devices`` (stand-in only). The roles read whichever directory their
variable names (``npu_driver_pci_devices_path``, default ``/sys/bus/pci/devices``); the simulated
inventories point it here. Written by ``ascend-sim hardware`` and at every ``ascend-sim boot``:
the PCI view does not depend on any driver.

Next to the NPUs it writes the functions a Kunpeng 920 host shows in the same vendor and class (its
HiSilicon ZIP engines, device ``0xa250``, class ``0x120000``, one per socket; the Linux kernel's
hisi_zip driver binds that id): a count by class would take them for NPUs, a count by the NPUs'
device id (``0xd802`` on 910B, as Huawei's guides count them with ``lspci | grep d802``) does not.
"""

import os
import shutil

from . import hardware, paths

PCI_DEVICES = "/var/lib/ascend-sim/pci/devices"
VENDOR = "0x19e5"
DEVICE = {"910B1": "0xd802", "910B2": "0xd802", "910B3": "0xd802", "910B4": "0xd802"}
CLASS = "0x120000"
# The host's own accelerators in the NPUs' vendor and class (Kunpeng 920 ZIP engines, two sockets).
HOST_ENGINES = {"0000:75:00.0": "0xa250", "0000:b5:00.0": "0xa250"}


def write(hw: dict) -> list[str]:
    """Make the PCI view match ``hw`` (one entry per NPU); returns the bus ids written."""
    root = paths.host_path(PCI_DEVICES)
    if os.path.isdir(root):
        shutil.rmtree(root)
    os.makedirs(root)
    written = []
    for npu in range(hw["npu_count"]):
        bus = hardware.bus_id(npu).lower()
        dev = os.path.join(root, bus)
        os.makedirs(dev)
        for name, value in (("vendor", VENDOR), ("device", DEVICE.get(hw["model"], "0xd802")), ("class", CLASS)):
            with open(os.path.join(dev, name), "w", encoding="ascii") as f:
                f.write(value + "\n")
        written.append(bus)
    for bus, device in HOST_ENGINES.items():
        dev = os.path.join(root, bus)
        os.makedirs(dev)
        for name, value in (("vendor", VENDOR), ("device", device), ("class", CLASS)):
            with open(os.path.join(dev, name), "w", encoding="ascii") as f:
                f.write(value + "\n")
    return written
