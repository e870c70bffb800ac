"""Fresh install: what a user checks on a node after the driver stage.

Run by sim/image/layers.sh on the node it prepares, after preflight and npu_driver converged it from
the bare node image and before it is committed as localhost/ascendops-sim-node:driver (the image
every later scenario starts from): the former npu_driver scenario's verifier.
"""

from ascend_verify import CURRENT, DEVICE_NODES, events, installs, key_values, npu_table


def test_versions_recorded(host):
    assert key_values(host, "/usr/local/Ascend/driver/version.info")["Version"] == CURRENT["driver"]
    assert key_values(host, "/usr/local/Ascend/firmware/version.info")["Version"] == CURRENT["firmware"]
    info = key_values(host, "/etc/ascend_install.info")
    assert info["UserName"] == "HwHiAiUser" and info["UserGroup"] == "HwHiAiUser"
    assert info["Driver_Install_Type"] == "full" and info["Firmware_Install_Type"] == "full"


def test_runtime_user(host):
    user = host.user("HwHiAiUser")
    assert user.exists and user.uid == 1000 and user.gid == 1000


def test_devices_present_and_owned_by_runtime_user(host, expected_npus):
    nodes = [f"/dev/davinci{i}" for i in range(expected_npus)] + DEVICE_NODES
    for path in nodes:
        f = host.file(path)
        assert f.exists, path
        assert host.run(f"test -c {path}").rc == 0, f"{path} is not a character device"
        assert f.user == "HwHiAiUser" and f.group == "HwHiAiUser", path
        assert f.mode == 0o660, f"{path} mode {oct(f.mode)}"
    assert not host.file(f"/dev/davinci{expected_npus}").exists


def test_npu_smi_healthy_with_new_driver(host, expected_npus):
    version, npus = npu_table(host)
    assert version == CURRENT["driver"]
    assert [n["npu_id"] for n in npus] == list(range(expected_npus))
    assert {n["health"] for n in npus} == {"OK"}


def test_fresh_order_driver_then_firmware_then_one_reboot(host):
    assert installs(host) == [("driver", CURRENT["driver"], "full"), ("firmware", CURRENT["firmware"], "full")]
    log = events(host)
    # the fresh driver took effect at once (no reboot for it); the one reboot is the firmware's
    assert log.index(f"load driver={CURRENT['driver']}") < log.index(
        f"install firmware {CURRENT['firmware']} mode=full rc=0")
    last_install = max(i for i, e in enumerate(log) if e.startswith("install "))
    boots_after = [e for e in log[last_install:] if e.startswith("boot")]
    assert len(boots_after) == 1, log


def test_os_prepared_for_training(host):
    for pkg in ("dkms", "gcc", "make", "pciutils", "net-tools", "chrony"):
        assert host.package(pkg).is_installed, pkg
    assert host.service("chrony").is_enabled
    assert "server 127.0.0.1 iburst" in host.file("/etc/chrony/chrony.conf").content_string
    assert "pool " not in host.file("/etc/chrony/chrony.conf").content_string
    assert host.run("sysctl -n net.core.somaxconn").stdout.strip() == "65535"
    limits = host.file("/etc/security/limits.d/90-ascendops.conf").content_string
    assert "memlock" in limits and "unlimited" in limits
