# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which OS packages are installed, read from the package database (dpkg or rpm), one query per
name: what a role needs to know before it calls the package manager, whose no-op run (apt opening
its cache, dnf loading repository metadata) costs seconds on every re-run. Read-only; only the
standard library and the module's run_command are used.

* dpkg: ``dpkg-query -W -f='${db:Status-Abbrev}' NAME`` prints ``ii `` for an installed package
  (``rc``, ``un`` ... otherwise; exit 1 and nothing on stdout for a name dpkg does not know).
* rpm: ``rpm -q NAME`` exits 0 when a package of that name (or name-version) is installed.
* systemd units the packages bring (``services``): ``systemctl show --property=ActiveState
  --property=UnitFileState UNIT`` prints ``ActiveState=active`` and ``UnitFileState=enabled`` (an
  unknown unit: ``inactive`` and an empty state), so a role starts or enables a service only where
  it is not both.
"""

from __future__ import annotations

import time

DPKG_QUERY = "dpkg-query"
RPM = "rpm"
SYSTEMCTL = "systemctl"


def parse_unit_show(text):
    """``systemctl show --property=ActiveState --property=UnitFileState`` -> {"active", "enabled"}
    (missing keys as empty strings)."""
    values = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return {"active": values.get("ActiveState", ""), "enabled": values.get("UnitFileState", "")}


def parse_started(text, now=None, monotonic=None):
    """When the unit last became active, in seconds since the epoch, from ``ActiveEnterTimestampMonotonic``
    (microseconds on CLOCK_MONOTONIC, the clock systemd stamps with; 0 for a unit never started): None when
    it never was. ``now``/``monotonic``: the current wall and monotonic clocks (tests)."""
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "ActiveEnterTimestampMonotonic" and value.strip().isdigit() and int(value) > 0:
            now = time.time() if now is None else now
            monotonic = time.monotonic() if monotonic is None else monotonic
            return round(now - monotonic + int(value) / 1e6, 3)
    return None


def service_states(run, names, started=None):
    """{unit: {"active": ..., "enabled": ...}} through ``run(argv) -> (rc, out, err)``; with a dict as
    ``started``, each unit's parse_started() goes there."""
    out = {}
    for name in names:
        rc, text, err = run([SYSTEMCTL, "show", "--property=ActiveState", "--property=UnitFileState",
                             "--property=ActiveEnterTimestampMonotonic", name])
        if rc != 0:
            raise RuntimeError(f"systemctl show {name} failed (rc={rc}): {(err or text).strip()}")
        out[name] = parse_unit_show(text)
        if started is not None:
            started[name] = parse_started(text) if out[name]["active"] == "active" else None
    return out


def dpkg_installed(status):
    """``${db:Status-Abbrev}`` -> installed: the desired action and the state are both ``i``
    (``ii``, ``hi`` held and installed), with no error flag (third column blank)."""
    text = (status or "").rstrip("\n")
    return len(text) >= 2 and text[0] in "ih" and text[1] == "i" and (len(text) < 3 or text[2] == " ")


class OsPackages:
    """``installed(name) -> bool`` through ``run(argv) -> (rc, out, err)`` and the manager found."""

    def __init__(self, run, manager):
        if manager not in ("dpkg", "rpm"):
            raise ValueError(f"unknown package manager {manager!r}")
        self.run = run
        self.manager = manager

    def installed(self, name):
        if self.manager == "dpkg":
            rc, out, _err = self.run([DPKG_QUERY, "-W", "-f=${db:Status-Abbrev}", name])
            return rc == 0 and dpkg_installed(out)
        rc, _out, _err = self.run([RPM, "-q", name])
        return rc == 0

    def state(self, names):
        """{"installed": [...], "missing": [...]} in the order given (duplicates once)."""
        seen, installed, missing = set(), [], []
        for name in names:
            if name in seen:
                continue
            seen.add(name)
            (installed if self.installed(name) else missing).append(name)
        return {"installed": installed, "missing": missing}


class OsPackagesInfoTask:
    """plugins/modules/os_packages_info.py."""

    def __init__(self, module):
        self.module = module

    def run(self):
        module = self.module
        names = module.params["names"]
        if module.get_bin_path(DPKG_QUERY):
            manager, binary = "dpkg", module.get_bin_path(DPKG_QUERY)
        elif module.get_bin_path(RPM):
            manager, binary = "rpm", module.get_bin_path(RPM)
        else:
            module.fail_json(msg="neither dpkg-query nor rpm is on this host: cannot tell which packages are installed")

        def run(argv):
            return module.run_command([binary] + argv[1:], environ_update={"LC_ALL": "C"})

        result = OsPackages(run, manager).state(names)
        if module.params.get("services"):
            systemctl = module.get_bin_path(SYSTEMCTL, required=True)
            result["started"] = {}
            try:
                result["services"] = service_states(
                    lambda argv: module.run_command([systemctl] + argv[1:], environ_update={"LC_ALL": "C"}),
                    module.params["services"], result["started"])
            except RuntimeError as exc:
                module.fail_json(msg=str(exc))
        module.exit_json(changed=False, manager=manager, **result)
