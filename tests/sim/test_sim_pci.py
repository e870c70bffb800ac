"""The simulated NPUs on the simulated PCI view (SIMULATION ONLY code under test)."""


def _pci(node) -> dict:
    root = node.p("/var/lib/ascend-sim/pci/devices")
    return {d.name: {f.name: f.read_text().strip() for f in d.iterdir()} for d in sorted(root.iterdir())}


def test_hardware_writes_one_pci_function_per_npu(node):
    r = node.sim("hardware", "--npus", "8")
    assert r.returncode == 0, r.stderr
    view = _pci(node)
    npus = {bus: d for bus, d in view.items() if d["device"] == "0xd802"}
    assert len(npus) == 8
    assert "0000:c1:00.0" in npus
    assert all(d == {"vendor": "0x19e5", "device": "0xd802", "class": "0x120000"} for d in npus.values())
    # the Kunpeng host's ZIP engines, in the NPUs' vendor and class, are there too: only the device id tells
    engines = {bus: d for bus, d in view.items() if bus not in npus}
    assert engines == {bus: {"vendor": "0x19e5", "device": "0xa250", "class": "0x120000"}
                       for bus in ("0000:75:00.0", "0000:b5:00.0")}


def test_the_collection_counts_the_simulated_npus_not_the_engines(node):
    from ansible_collections.ascendops.cluster.plugins.module_utils.pci_devices import npu_functions

    assert node.sim("hardware", "--npus", "8").returncode == 0
    found = npu_functions(str(node.p("/var/lib/ascend-sim/pci/devices")))
    assert len(found["npus"]) == 8 and len(found["other_huawei"]) == 2


def test_pci_view_follows_the_hardware_and_needs_no_driver(node):
    assert node.sim("hardware", "--npus", "4").returncode == 0
    assert node.sim("hardware", "--npus", "2").returncode == 0
    assert len([d for d in _pci(node).values() if d["device"] == "0xd802"]) == 2
    r = node.sim("boot")
    assert r.returncode == 0, r.stderr
    assert not node.p("/usr/local/Ascend/driver/version.info").exists()
    assert len([d for d in _pci(node).values() if d["device"] == "0xd802"]) == 2
