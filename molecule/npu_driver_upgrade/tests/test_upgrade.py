"""Upgrade: firmware before driver, reboot handled, new versions running."""

import os
import pathlib

from ascend_verify import CURRENT, PREVIOUS, events, installs, key_values, npu_table


def test_install_order(host):
    assert installs(host) == [
        ("driver", PREVIOUS["driver"], "full"),
        ("firmware", PREVIOUS["firmware"], "full"),
        ("firmware", CURRENT["firmware"], "upgrade"),
        ("driver", CURRENT["driver"], "upgrade"),
    ]


def test_rebooted_after_upgrade(host):
    log = events(host)
    last_install = max(i for i, e in enumerate(log) if e.startswith("install "))
    assert any(e.startswith("boot") for e in log[last_install:]), log


def test_new_versions_installed_and_running(host, expected_npus):
    assert key_values(host, "/usr/local/Ascend/driver/version.info")["Version"] == CURRENT["driver"]
    assert key_values(host, "/usr/local/Ascend/firmware/version.info")["Version"] == CURRENT["firmware"]
    version, npus = npu_table(host)
    assert version == CURRENT["driver"]
    assert len(npus) == expected_npus and all(n["health"] == "OK" for n in npus)
    fw = host.run("/usr/local/Ascend/driver/tools/upgrade-tool --device_index -1 --component -1 --version")
    assert fw.rc == 0
    assert f"Get component version({CURRENT['firmware']}) succeed for deviceId(0)" in fw.stdout
    assert PREVIOUS["firmware"] not in fw.stdout


def test_runtime_user_took_a_free_id_beside_the_admin(host):
    """uid/gid 1000 belong to the first admin (prepare): HwHiAiUser got free ids and owns the devices."""
    admin = host.user("admin1000")
    assert admin.uid == 1000 and admin.gid == 1000
    user = host.user("HwHiAiUser")
    assert user.exists and user.uid != 1000 and user.gid != 1000
    assert host.group("HwHiAiUser").gid == user.gid
    dev = host.file("/dev/davinci_manager")
    assert dev.user == "HwHiAiUser" and dev.group == "HwHiAiUser"


def test_upgrade_kept_install_records(host):
    info = key_values(host, "/etc/ascend_install.info")
    assert info["UserName"] == "HwHiAiUser"
    assert info["Driver_Install_Path_Param"] == "/usr/local/Ascend"


def test_mirror_downloads_once_and_reruns_reuse_the_staged_copy(host):
    log = pathlib.Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "mirror.log").read_text().splitlines()
    gets = [line.split()[1] for line in log if line.startswith("GET ") and line.endswith(" 200")]
    driver = f"/Ascend-hdk-910b-npu-driver_{CURRENT['driver']}_linux-{host.system_info.arch}.run"
    firmware = f"/Ascend-hdk-910b-npu-firmware_{CURRENT['firmware']}.run"
    # converge and the idempotence run both read the manifest; each package is fetched once.
    assert gets.count("/SHA256SUMS") >= 2, gets
    assert gets.count(driver) == 1 and gets.count(firmware) == 1, gets
