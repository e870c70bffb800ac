"""The simulated NPUs on the simulated PCI view (SIMULATION ONLY code under test)."""


def _pci(node) -> dict:
    root = node.p("/var/lib/ascend-sim/pci/devices")
    return {d.name: {f.name: f.read_text().strip() for f in d.iterdir()} for d in sorted(root.iterdir())}


def test_hardware_writes_one_pci_function_per_npu(node):
    r = node.sim("hardware", "--npus", "8")
    assert r.returncode == 0, r.stderr
    view = _pci(node)
    assert len(view) == 8
    assert "0000:c1:00.0" in view
    assert all(d == {"vendor": "0x19e5", "device": "0xd802", "class": "0x120000"} for d in view.values())


def test_pci_view_follows_the_hardware_and_needs_no_driver(node):
    assert node.sim("hardware", "--npus", "4").returncode == 0
    assert node.sim("hardware", "--npus", "2").returncode == 0
    assert len(_pci(node)) == 2
    r = node.sim("boot")
    assert r.returncode == 0, r.stderr
    assert not node.p("/usr/local/Ascend/driver/version.info").exists()
    assert len(_pci(node)) == 2
