"""npu_driver_reboot: never: installed but not running, no reboot, the host marked as waiting."""

import json

from ascend_verify import CURRENT, events, installs, key_values


def test_installed_but_not_rebooted(host):
    assert installs(host) == [("driver", CURRENT["driver"], "full"), ("firmware", CURRENT["firmware"], "full")]
    log = events(host)
    first_install = min(i for i, e in enumerate(log) if e.startswith("install "))
    assert not [e for e in log[first_install:] if e.startswith("boot")], log
    assert key_values(host, "/usr/local/Ascend/driver/version.info")["Version"] == CURRENT["driver"]


def test_new_driver_not_running_yet(host):
    out = host.run("npu-smi info")
    assert out.rc != 0
    assert "dcmi module initialize failed. ret is -8005" in out.stdout + out.stderr
    assert not host.file("/dev/davinci0").exists


def test_role_marked_the_host_as_waiting(host):
    assert json.loads(host.file("/root/npu-driver-pending.json").content_string) == {"needs_reboot": True}
