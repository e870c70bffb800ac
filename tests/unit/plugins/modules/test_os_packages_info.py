"""os_packages_info: installed and missing packages from dpkg (a fake dpkg-query) or rpm."""

from __future__ import annotations

import time

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.os_packages import (
    OsPackages,
    dpkg_installed,
    parse_started,
    parse_unit_show,
    service_states,
)
from ansible_collections.ascendops.cluster.plugins.modules import os_packages_info
from ansible_collections.ascendops.cluster.tests.unit.plugins.modules.ascend_module_harness import write_script

# dpkg-query -W -f='${db:Status-Abbrev}' NAME, with the states of a real database
FAKE_DPKG_QUERY = r'''#!/usr/bin/env python3
import sys
states = {"gcc": "ii ", "make": "ii ", "dkms": "rc ", "chrony": "iU ", "held": "hi ", "broken": "iiR"}
name = sys.argv[-1]
if name not in states:
    sys.stderr.write("dpkg-query: no packages found matching %s\n" % name); sys.exit(1)
sys.stdout.write(states[name])
'''


@pytest.mark.parametrize("status,installed", [
    ("ii ", True), ("hi ", True), ("rc ", False), ("un ", False), ("iU ", False), ("iiR", False), ("", False),
])
def test_dpkg_status_abbrev(status, installed):
    assert dpkg_installed(status) is installed


def test_module_reports_installed_and_missing_in_order(run_module, tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    write_script(bindir / "dpkg-query", FAKE_DPKG_QUERY)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    result = run_module(os_packages_info.main, {"names": ["gcc", "dkms", "make", "chrony", "held", "broken",
                                                          "nosuch", "gcc"]}, check_mode=True)
    assert not result.get("failed") and result["changed"] is False, result
    assert result["manager"] == "dpkg"
    assert result["installed"] == ["gcc", "make", "held"]
    assert result["missing"] == ["dkms", "chrony", "broken", "nosuch"]


def test_rpm_installed_by_exit_code():
    calls = []

    def run(argv):
        calls.append(argv)
        return (0, "kernel-devel-5.10.0-1.oe2203.aarch64\n", "") if argv[-1].startswith("kernel-devel") else (
            1, "package dkms is not installed\n", "")

    state = OsPackages(run, "rpm").state(["kernel-devel-5.10.0-1.oe2203.aarch64", "dkms"])
    assert state == {"installed": ["kernel-devel-5.10.0-1.oe2203.aarch64"], "missing": ["dkms"]}
    assert calls[1] == ["rpm", "-q", "dkms"]


def test_unknown_manager_refused():
    with pytest.raises(ValueError):
        OsPackages(lambda argv: (0, "", ""), "pacman")


# systemctl show --property=ActiveState --property=UnitFileState --property=ActiveEnterTimestampMonotonic UNIT,
# as systemd 249/252 print it (the properties in systemd's order, not the order asked; 0 for a unit never started)
FAKE_SYSTEMCTL = r'''#!/usr/bin/env python3
import sys, time
units = {"docker": ("active", "enabled"), "chrony": ("active", "disabled"), "containerd": ("failed", "enabled")}
if sys.argv[1] != "show" or not sys.argv[2].startswith("--property="):
    sys.stderr.write("unexpected call %s\n" % sys.argv); sys.exit(2)
active, enabled = units.get(sys.argv[-1], ("inactive", ""))
print("ActiveState=%s" % active)
# docker became active 100 s ago
mono = int((time.monotonic() - 100) * 1e6) if sys.argv[-1] in ("docker", "chrony", "containerd") else 0
if "--property=ActiveEnterTimestampMonotonic" in sys.argv:
    print("ActiveEnterTimestampMonotonic=%d" % mono)
print("UnitFileState=%s" % enabled)
'''


@pytest.mark.parametrize("text,state", [
    ("ActiveState=active\nUnitFileState=enabled\n", {"active": "active", "enabled": "enabled"}),
    ("UnitFileState=disabled\nActiveState=inactive\n", {"active": "inactive", "enabled": "disabled"}),
    ("ActiveState=inactive\nUnitFileState=\n", {"active": "inactive", "enabled": ""}),
    ("", {"active": "", "enabled": ""}),
])
def test_parse_unit_show(text, state):
    assert parse_unit_show(text) == state


def test_parse_started_from_the_monotonic_stamp():
    text = "ActiveState=active\nActiveEnterTimestampMonotonic=5000000\nUnitFileState=enabled\n"
    # booted at wall time 1000 (now 1100 = 100 s on the monotonic clock): active since 1005
    assert parse_started(text, now=1100.0, monotonic=100.0) == 1005.0
    assert parse_started("ActiveEnterTimestampMonotonic=0\n", now=1100.0, monotonic=100.0) is None
    assert parse_started("", now=1.0, monotonic=1.0) is None


def test_service_states_fail_names_the_unit():
    with pytest.raises(RuntimeError, match="systemctl show docker failed"):
        service_states(lambda argv: (1, "", "Failed to connect to bus"), ["docker"])


def test_module_reports_services_with_the_packages(run_module, tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    write_script(bindir / "dpkg-query", FAKE_DPKG_QUERY)
    write_script(bindir / "systemctl", FAKE_SYSTEMCTL)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    units = ["docker", "chrony", "containerd", "nosuch"]
    result = run_module(os_packages_info.main, {"names": ["gcc"], "services": units}, check_mode=True)
    assert not result.get("failed") and result["changed"] is False, result
    assert result["services"] == {
        "docker": {"active": "active", "enabled": "enabled"},
        "chrony": {"active": "active", "enabled": "disabled"},
        "containerd": {"active": "failed", "enabled": "enabled"},
        "nosuch": {"active": "inactive", "enabled": ""},
    }
    # When each active unit became active (docker: 100 s before the read); none for a unit not active.
    assert abs(result["started"]["docker"] - (time.time() - 100)) < 5
    assert result["started"]["containerd"] is None and result["started"]["nosuch"] is None
    # Without services the answer has no services key (the callers that do not ask are unchanged).
    plain = run_module(os_packages_info.main, {"names": ["gcc"]}, check_mode=True)
    assert "services" not in plain
