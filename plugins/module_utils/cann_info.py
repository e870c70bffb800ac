# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where CANN records what is installed, how to read it back, and whether versions fit together.

Layouts (``P`` = install path, default ``/usr/local/Ascend``), found from links and records,
never from a hard-coded versioned path:

* up to CANN 8.3: ``P/ascend-toolkit/<ver>/`` with ``P/ascend-toolkit/latest`` a link to it and
  ``P/ascend-toolkit/set_env.sh``; the record is ``<dir>/<arch>-linux/ascend_toolkit_install.info``
  (``version=8.2.RC1``, ``version_dir=8.2.RC1``, ``innerversion=``, ``arch=``, ``path=``);
* CANN 8.5 and later: ``P/cann-<ver>/`` (``P/ascend-toolkit/latest`` or ``P/cann`` link to it),
  the record under ``<dir>/cann/<arch>-linux/`` or ``<dir>/<arch>-linux/``;
* images and older installs without that record (MindIE images, some CANN 7/8.0 layouts): the
  directory's ``version.cfg`` (``toolkit_running_version=[7.6.0.1.220:8.0.0]``: component build and
  release; ascend_formats.parse_version_cfg), read only where no install record is found;
* operator kernels: ``<dir>/opp_kernel/version.info``: ``Version=8.2.0.0.201`` is a build number,
  ``version_dir=8.2.RC1`` the package version, ``required_package_<name>_version=">=7.6, <=8.2"``
  the versions of other packages it works with.

A package's own version data (the ``version.info`` in its archive) has the same keys.
"""

from __future__ import annotations

import glob
import os
import re

from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_formats import (
    RecordError,
    get_key,
    parse_key_value,
    parse_version_cfg,
    read_key_value_file,
    version_cfg_release,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_version import (
    compare,
    version_key,
    versions_equal,
)

TOOLKIT_RECORD = "ascend_toolkit_install.info"
VERSION_CFG = "version.cfg"
KERNELS_RECORD = os.path.join("opp_kernel", "version.info")
# links that name the active toolkit, in the order they are trusted
ACTIVE_LINKS = (os.path.join("ascend-toolkit", "latest"), os.path.join("cann", "latest"), "cann")
_REQUIRED_RE = re.compile(r"^required_package_(?P<name>.+)_version$", re.IGNORECASE)
_BOUND_RE = re.compile(r"^(?P<op>>=|<=|==|!=|>|<|=)?\s*(?P<version>\S+)$")


def _arches(arch):
    out = []
    for a in (arch, "aarch64", "x86_64"):
        if a and a not in out:
            out.append(a)
    return out


def toolkit_record(directory, arch=None):
    """The toolkit install record inside one toolkit directory (``ascend_toolkit_install.info``, else
    the directory's ``version.cfg``), or None."""
    for sub in ("", "cann"):
        for a in _arches(arch):
            candidate = os.path.join(directory, sub, f"{a}-linux", TOOLKIT_RECORD)
            if os.path.isfile(candidate):
                return candidate
    found = sorted(glob.glob(os.path.join(directory, "*-linux", TOOLKIT_RECORD))
                   + glob.glob(os.path.join(directory, "cann", "*-linux", TOOLKIT_RECORD)))
    if found:
        return found[0]
    cfg = os.path.join(directory, VERSION_CFG)
    return cfg if os.path.isfile(cfg) else None


def read_toolkit_record(path):
    """``{version, version_dir, innerversion, file, info}`` from an ``ascend_toolkit_install.info`` or a
    ``version.cfg`` (innerversion: the toolkit component's build; RecordError on a line it cannot read)."""
    if os.path.basename(path) == VERSION_CFG:
        try:
            with open(path, errors="replace") as handle:
                entries = parse_version_cfg(handle.read(), path)
        except OSError as exc:
            raise RecordError(f"{path}: cannot be read: {exc}") from exc
        version = version_cfg_release(entries, path)
        component = entries.get("toolkit_running_version") or {}
        return {"version": version, "version_dir": version, "innerversion": component.get("build"),
                "file": path, "info": {k: v["release"] for k, v in entries.items()}}
    info = read_key_value_file(path) or {}
    version = (get_key(info, "version") or "").strip() or None
    version_dir = (get_key(info, "version_dir") or "").strip() or version
    return {"version": version, "version_dir": version_dir,
            "innerversion": get_key(info, "innerversion"), "file": path, "info": dict(info)}


def parse_required(info):
    """``{name: range}`` from the ``required_package_<name>_version`` keys of a version record."""
    out = {}
    for key, value in (info or {}).items():
        m = _REQUIRED_RE.match(key)
        if m and str(value).strip():
            out[m.group("name").lower()] = str(value).strip()
    return out


def parse_kernels_info(text_or_info):
    """``{version, build, version_dir, required, info}`` from kernels ``version.info`` text (or parsed dict).

    ``version`` is the package version: ``version_dir`` when present (``Version=`` is then a build
    number), else ``Version=`` (older records)."""
    info = parse_key_value(text_or_info) if isinstance(text_or_info, str) else dict(text_or_info or {})
    build = (get_key(info, "version") or "").strip() or None
    version_dir = (get_key(info, "version_dir") or "").strip() or None
    return {"version": version_dir or build, "build": build, "version_dir": version_dir,
            "required": parse_required(info), "info": dict(info)}


def read_kernels(directory):
    """Kernels installed in one toolkit directory: parse_kernels_info plus ``installed`` and ``file``."""
    path = os.path.join(directory, KERNELS_RECORD)
    info = read_key_value_file(path)
    if info is None:
        return {"installed": False, "version": None, "build": None, "version_dir": None,
                "required": {}, "info": {}, "file": None}
    result = parse_kernels_info(info)
    result.update(installed=True, file=path)
    return result


def _toolkit_dirs(install_path):
    """Candidate toolkit directories: ``P/ascend-toolkit/*`` and ``P/cann-*`` (real directories)."""
    dirs = glob.glob(os.path.join(install_path, "ascend-toolkit", "*")) + glob.glob(
        os.path.join(install_path, "cann-*"))
    return sorted(d for d in dirs if os.path.isdir(d) and not os.path.islink(d))


def installed_toolkits(install_path, arch=None):
    """Every installed toolkit: list of ``{version, version_dir, path, file, kernels}``, oldest first
    where versions compare (unparsable versions, e.g. ``T`` builds, keep path order)."""
    out = []
    for directory in _toolkit_dirs(install_path):
        record = toolkit_record(directory, arch)
        if not record:
            continue
        tk = read_toolkit_record(record)
        tk["path"] = os.path.realpath(directory)
        tk["kernels"] = read_kernels(directory)
        out.append(tk)

    def key(item):
        try:
            return (0, version_key(item["version"]))
        except ValueError:
            return (1, ())
    return sorted(out, key=key)


def active_toolkit(install_path, arch=None):
    """The toolkit the ``latest`` link (or the ``cann`` link) points at.

    ``{installed, version, version_dir, path (resolved), link, file, set_env, kernels}``;
    ``installed`` False when no link resolves to a directory with a record."""
    result = {"installed": False, "version": None, "version_dir": None, "path": None, "link": None,
              "file": None, "set_env": None, "kernels": read_kernels("/nonexistent")}
    for rel in ACTIVE_LINKS:
        link = os.path.join(install_path, rel)
        if not os.path.islink(link) or not os.path.isdir(link):
            continue
        resolved = os.path.realpath(link)
        record = toolkit_record(resolved, arch)
        if not record:
            continue
        result.update(read_toolkit_record(record))
        result.update(installed=True, path=resolved, link=link, set_env=set_env_path(link, resolved),
                      kernels=read_kernels(resolved))
        return result
    return result


def set_env_path(link, resolved):
    """The ``set_env.sh`` for the toolkit reached through ``link``: beside the link (the vendor's
    ``P/ascend-toolkit/set_env.sh``), else in the toolkit directory itself (CANN 8.5+)."""
    for candidate in (os.path.join(os.path.dirname(link), "set_env.sh"),
                      os.path.join(resolved, "set_env.sh"),
                      os.path.join(resolved, "cann", "set_env.sh")):
        if os.path.isfile(candidate):
            return candidate
    return None


def find_toolkit(toolkits, version):
    """The entry of ``installed_toolkits`` with ``version`` (compared as versions), or None."""
    for tk in toolkits:
        if versions_equal(tk["version"], version) or versions_equal(tk["version_dir"], version):
            return tk
    return None


# ------------------------------------------------------------------------------------ ranges

def parse_range(spec):
    """``">=7.6, <=8.2"`` / ``"[7.6,8.2]"`` / ``"8.2"`` -> list of (operator, version)."""
    text = str(spec or "").strip().strip("\"'").strip()
    if not text:
        raise ValueError("empty version range")
    if text[0] in "[(" and text[-1] in "])" and "," in text:
        low, high = (part.strip() for part in text[1:-1].split(",", 1))
        bounds = []
        if low:
            bounds.append((">=" if text[0] == "[" else ">", low))
        if high:
            bounds.append(("<=" if text[-1] == "]" else "<", high))
        return bounds
    bounds = []
    for part in re.split(r"[,;]|\s+and\s+", text):
        part = part.strip()
        if not part:
            continue
        m = _BOUND_RE.match(part.replace(" ", ""))
        if not m:
            raise ValueError(f"cannot read version bound {part!r}")
        bounds.append((m.group("op") or "==", m.group("version")))
    if not bounds:
        raise ValueError(f"cannot read version range {spec!r}")
    return bounds


_INTERVALS_RE = re.compile(r"^\s*[\[(][^\[\]()]*[\])](\s*,\s*[\[(][^\[\]()]*[\])])+\s*$")


def parse_ranges(spec):
    """A version range, or a list of intervals (any one may hold): ``[6.4.0,6.4.99],[7.0.0,8.9.9]`` (the
    ``compatible_version_fw`` of a 310P 25.3.rc1 driver's version.info) -> [parse_range of each]."""
    text = str(spec or "").strip().strip("\"'").strip()
    if _INTERVALS_RE.match(text):
        return [parse_range(part) for part in re.findall(r"[\[(][^\[\]()]*[\])]", text)]
    return [parse_range(text)]


def in_range(version, spec):
    """True/False whether ``version`` is inside ``spec`` (one range, or a list of intervals of which one must
    hold); None when that cannot be told (a bound or the version is not a comparable version, e.g. a ``T``
    build)."""
    try:
        for bounds in parse_ranges(spec):
            inside = True
            for op, bound in bounds:
                c = compare(version, bound)
                if not {">=": c >= 0, "<=": c <= 0, ">": c > 0, "<": c < 0, "==": c == 0, "=": c == 0,
                        "!=": c != 0}[op]:
                    inside = False
                    break
            if inside:
                return True
    except ValueError:
        return None
    return False


def driver_fit(cann_version, spec, driver_version, what="CANN", driver_label="the installed driver"):
    """A driver against the ``required_package_driver_version`` range a CANN package declares, the one
    implementation of this rule (``compatibility`` below and ``ascend_release.check_cann_driver`` call it).
    Returns ``(status, sentence)``: status ``ok`` (or no range declared), ``outside``, ``unknown`` (a version
    that does not compare) or ``missing`` (no driver); the sentence names both versions and the rule."""
    if not spec:
        return "ok", ""
    if not driver_version:
        return "missing", (f"{what} {cann_version} needs NPU driver {spec} (required_package_driver_version); "
                           "no installed driver was found")
    verdict = in_range(driver_version, spec)
    if verdict is True:
        return "ok", ""
    if verdict is None:
        return "unknown", (f"cannot tell whether driver {driver_version} is inside {what} {cann_version}'s "
                           f"required_package_driver_version {spec} (a version that does not compare)")
    return "outside", (f"{what} {cann_version} needs NPU driver {spec} (required_package_driver_version) but "
                       f"{driver_label} is {driver_version}")


def compatibility(toolkit_version, kernels_version=None, driver_version=None, required=None):
    """Check one CANN version against its kernels and the installed driver.

    ``required`` is ``{name: range}`` from the packages' version data (``parse_required``).
    Returns ``{"ok": bool, "problems": [sentences], "warnings": [sentences]}``; a problem names
    both versions."""
    problems, warnings = [], []
    if kernels_version and not versions_equal(kernels_version, toolkit_version):
        problems.append(f"the kernels package is version {kernels_version} but the toolkit is {toolkit_version}; "
                        "kernels and toolkit must be the same CANN version")
    status, sentence = driver_fit(toolkit_version, (required or {}).get("driver"), driver_version)
    if status == "outside":
        problems.append(sentence)
    elif status in ("unknown", "missing"):
        warnings.append(sentence)
    return {"ok": not problems, "problems": problems, "warnings": warnings}


def package_state(kind, install_path, version, arch=None):
    """For installing CANN ``kind`` (toolkit or kernels) at ``version``: ``(active version or None,
    whether that version is installed already)``. A toolkit version is installed when a toolkit
    directory records it (active or not); kernels when the toolkit directory of that version holds
    kernels of it."""
    active = active_toolkit(install_path, arch)
    toolkits = installed_toolkits(install_path, arch)
    if kind == "toolkit":
        return active["version"], find_toolkit(toolkits, version) is not None
    if kind == "kernels":
        tk = find_toolkit(toolkits, version)
        present = bool(tk and tk["kernels"]["installed"] and versions_equal(tk["kernels"]["version"], version))
        return active["kernels"]["version"], present
    raise ValueError(f"not a CANN package kind: {kind!r}")


def package_version_data(run, path):
    """The version data (``./version.info`` in the archive) of a CANN .run package, read through
    makeself's ``--tar`` without extracting anything: parse_kernels_info of it, or None when the
    archive has no such member. ``run(argv) -> (rc, out, err)``."""
    prefix = []
    with open(path, "rb") as handle:
        first = handle.readline(256)
    if first.startswith(b"#!"):
        prefix = first[2:].decode("utf-8", "replace").strip().split()
    rc, out, _err = run(prefix + [path, "--tar", "xOf", "./version.info"])
    if rc != 0 or not out.strip():
        return None
    return parse_kernels_info(out)


def read_state(install_path, arch=None):
    """Everything CANN-related on a node: ``{active, toolkits, versions}``."""
    toolkits = installed_toolkits(install_path, arch)
    return {"active": active_toolkit(install_path, arch), "toolkits": toolkits,
            "versions": [tk["version"] for tk in toolkits]}


class CannQuery:
    """What the ``cann_info`` module reports: installed CANN, the driver and, for packages about
    to be installed, their version data and whether they fit. ``run(argv) -> (rc, out, err)``."""

    def __init__(self, run, install_path, arch=None, driver_version=None):
        self.run = run
        self.install_path = install_path
        self.arch = arch
        self.driver_version = driver_version

    def package(self, path, fallback_version=None):
        """``{path, version, build, required, data}`` of one staged package (``data`` False when
        its archive holds no version.info: the version is then ``fallback_version``)."""
        data = package_version_data(self.run, path) if path and os.path.isfile(path) else None
        if data is None:
            return {"path": path, "version": fallback_version, "build": None, "required": {}, "data": False}
        return {"path": path, "version": data["version"] or fallback_version, "build": data["build"],
                "required": data["required"], "data": True}

    def gather(self, toolkit_package=None, kernels_package=None, toolkit_version=None, kernels_version=None):
        result = read_state(self.install_path, self.arch)
        result["driver_version"] = self.driver_version
        if not (toolkit_package or kernels_package or toolkit_version):
            return result
        toolkit = self.package(toolkit_package, toolkit_version)
        kernels = self.package(kernels_package, kernels_version or toolkit_version)
        required = dict(toolkit["required"])
        required.update(kernels["required"])
        result["packages"] = {"toolkit": toolkit, "kernels": kernels}
        if toolkit_version:
            # What ascend_package decides from (package_state): a version present is not installed again.
            result["present"] = {
                "toolkit": package_state("toolkit", self.install_path, toolkit_version, self.arch)[1],
                "kernels": package_state("kernels", self.install_path, kernels_version or toolkit_version,
                                         self.arch)[1],
            }
        result["compatibility"] = compatibility(toolkit["version"] or toolkit_version,
                                                kernels["version"] if (kernels_package or kernels_version) else None,
                                                self.driver_version, required)
        return result


class CannInfo:
    """One cann_info module run: the CANN query with the shared vendor-command runner."""

    def __init__(self, module):
        self.module = module

    def run(self):
        # imported here: ascend_install reads the CANN records through this module
        from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_install import (
            machine_arch,
            read_installed,
        )
        from ansible_collections.ascendops.cluster.plugins.module_utils.vendor_command import vendor_runner

        p = self.module.params
        try:
            driver = p["driver_version"] or read_installed("driver", p["install_path"])["version"]
            query = CannQuery(vendor_runner(self.module), p["install_path"], p["arch"] or machine_arch(), driver)
            result = query.gather(p["toolkit_package"], p["kernels_package"], p["toolkit_version"],
                                  p["kernels_version"])
        except RecordError as exc:
            self.module.fail_json(msg=f"cannot read an installed package's version record: {exc}")
        self.module.exit_json(changed=False, **result)
