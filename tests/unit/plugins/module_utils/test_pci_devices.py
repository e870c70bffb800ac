"""NPUs counted on the PCI bus before any driver (module_utils/pci_devices.py): by device id, not class.

A Kunpeng 920 host shows its HiSilicon ZIP (0xa250), SEC (0xa255) and HPRE (0xa258) engines as Huawei
functions of class 0x1200 (processing accelerator), the NPUs' class (issue 43 item 6); Huawei's guides
count 910B NPUs by device id d802."""

from __future__ import annotations

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.pci_devices import (
    NPU_DEVICE_IDS,
    PciReadError,
    normalize_id,
    npu_functions,
)


def sysfs(root, functions):
    """functions: {bus_id: (vendor, device, class)}."""
    for bus, (vendor, device, cls) in functions.items():
        d = root / bus
        d.mkdir(parents=True)
        for name, value in (("vendor", vendor), ("device", device), ("class", cls)):
            if value is not None:
                (d / name).write_text(value + "\n")
    return str(root)


KUNPENG_ENGINES = {
    "0000:75:00.0": ("0x19e5", "0xa250", "0x120000"),  # ZIP
    "0000:76:00.0": ("0x19e5", "0xa255", "0x100000"),  # SEC
    "0000:79:00.0": ("0x19e5", "0xa258", "0x100000"),  # HPRE
    "0000:b5:00.0": ("0x19e5", "0xa250", "0x120000"),  # ZIP of the second socket
    "0000:7d:00.0": ("0x19e5", "0xa222", "0x020000"),  # on-board NIC
    "0000:01:00.0": ("0x1000", "0x0097", "0x010700"),  # a RAID card of another vendor
}


def npus(n, device="0xd802"):
    return {f"0000:{0xc1 + i:02x}:00.0": ("0x19e5", device, "0x120000") for i in range(n)}


def test_kunpeng_zip_engines_are_not_counted_as_npus(tmp_path):
    root = sysfs(tmp_path / "devices", {**npus(7), **KUNPENG_ENGINES})  # one NPU of eight missing
    found = npu_functions(root)
    assert len(found["npus"]) == 7  # counting class 0x1200 would say 9 and hide the missing NPU
    assert {f["model"] for f in found["npus"]} == {"910B"}
    assert {f["bus_id"] for f in found["other_huawei"]} == {"0000:75:00.0", "0000:76:00.0", "0000:79:00.0",
                                                            "0000:b5:00.0", "0000:7d:00.0"}


@pytest.mark.parametrize("device,model", [("0xd802", "910B"), ("0xd803", "Atlas A3 (910_93)"), ("0xd500", "310P")])
def test_each_model_by_its_device_id(tmp_path, device, model):
    root = sysfs(tmp_path / "devices", {**npus(4, device), **KUNPENG_ENGINES})
    found = npu_functions(root)
    assert [f["model"] for f in found["npus"]] == [model] * 4


def test_another_vendor_with_an_npu_device_id_is_not_an_npu(tmp_path):
    root = sysfs(tmp_path / "devices", {"0000:02:00.0": ("0x8086", "0xd802", "0x120000"), **npus(1)})
    assert [f["bus_id"] for f in npu_functions(root)["npus"]] == ["0000:c1:00.0"]


def test_site_device_ids_replace_the_default_and_are_normalized(tmp_path):
    root = sysfs(tmp_path / "devices", {**npus(2), "0000:d0:00.0": ("0x19e5", "0xd806", "0x120000")})
    assert [f["bus_id"] for f in npu_functions(root, ["D806"])["npus"]] == ["0000:d0:00.0"]
    assert normalize_id("d802") == normalize_id("0xD802") == "0xd802"
    assert normalize_id("zz") is None and normalize_id("0x12345") is None
    with pytest.raises(ValueError, match="'class' is not a PCI device id"):
        npu_functions(root, ["class"])
    assert set(NPU_DEVICE_IDS) == {"0xd802", "0xd803", "0xd500"}


def test_functions_without_files_and_an_unreadable_directory(tmp_path):
    root = sysfs(tmp_path / "devices", {"0000:c1:00.0": ("0x19e5", None, "0x120000"), **npus(1)})
    (tmp_path / "devices" / "stray-file").write_text("x")
    assert len(npu_functions(root)["npus"]) == 1
    with pytest.raises(PciReadError, match="cannot list"):
        npu_functions(str(tmp_path / "absent"))
