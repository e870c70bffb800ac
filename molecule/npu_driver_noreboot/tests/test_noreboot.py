"""npu_driver_reboot: never: installed but not running, no reboot, the host marked as waiting."""

import json

from ascend_verify import CURRENT, events, installs, key_values


def test_installed_but_not_rebooted(host):
    assert installs(host) == [("driver", CURRENT["driver"], "full"), ("firmware", CURRENT["firmware"], "full")]
    log = events(host)
    first_install = min(i for i, e in enumerate(log) if e.startswith("install "))
    assert not [e for e in log[first_install:] if e.startswith("boot")], log
    assert key_values(host, "/usr/local/Ascend/driver/version.info")["Version"] == CURRENT["driver"]


def test_driver_runs_but_new_firmware_waits_for_the_reboot(host):
    # A fresh driver install whose devices start takes effect at once (real installers print
    # "The new version takes effect immediately."); new firmware runs only after a reboot.
    smi = host.run("npu-smi info")
    assert smi.rc == 0, smi.stdout + smi.stderr
    fw = host.run("/usr/local/Ascend/driver/tools/upgrade-tool --device_index -1 --component -1 --version")
    assert fw.rc == 0, fw.stdout + fw.stderr
    assert CURRENT["firmware"] not in fw.stdout


def test_role_marked_the_host_as_waiting(host):
    assert json.loads(host.file("/root/npu-driver-pending.json").content_string) == {"needs_reboot": True}
