# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for vendor package manifests and file names."""

from __future__ import annotations

import re

from ansible_collections.ascendops.cluster.plugins.filter.settings import setting_names
from ansible_collections.ascendops.cluster.plugins.module_utils import package_manifest as pm
from ansible_collections.ascendops.cluster.plugins.module_utils.package_manifest import sha256sums
from ansible_collections.ascendops.cluster.plugins.module_utils.run_package import asks_eula, package_filename

_LEADING_NUMBERS = re.compile(r"^v?(\d+)(?:\.(\d+))?", re.IGNORECASE)
_RC = re.compile(r"(?:^|[._-])rc\d", re.IGNORECASE)


def _release(version):
    """(major, minor) of a CANN version by its leading numbers: works for RC, alpha and T builds."""
    m = _LEADING_NUMBERS.match(str(version))
    if not m:
        raise ValueError(f"cann_package_files: {version!r} is not a CANN version")
    return int(m.group(1)), int(m.group(2) or 0)


def cann_package_files(version, chip, arch):
    """Vendor file names of a CANN release: ``{"toolkit": ..., "kernels": ...}``, from the one
    table of published names (module_utils/run_package.py PACKAGE_NAME_TABLE), so every name made
    here is also read back by ``parse_package_filename``.

    Kernels: ``Ascend-cann-kernels-<chip>_<ver>_linux.run`` up to 8.0.RCx (arch-independent),
    ``Ascend-cann-kernels-<chip>_<ver>_linux-<arch>.run`` from 8.0.0, and from CANN 8.5 the operator
    package ``Ascend-cann-<chip>-ops_<ver>_linux-<arch>.run``. Atlas A3 (chip ``a3``/``A3``):
    ``Atlas-A3-cann-kernels_<ver>_linux-<arch>.run`` before 8.5, ``Ascend-cann-A3-ops_...`` (the
    published capital ``A3``) from 8.5.
    """
    version = str(version).strip()
    if not version:
        raise ValueError("cann_package_files: empty CANN version")
    chip = str(chip).strip()
    a3 = chip.lower() == "a3"
    release = _release(version)
    if release >= (8, 5):
        kernels = package_filename("kernels", "ops", version, arch, "A3" if a3 else chip)
    elif a3:
        kernels = package_filename("kernels", "a3", version, arch)
    elif release < (8, 0) or (release == (8, 0) and _RC.search(version)):
        kernels = package_filename("kernels", "noarch", version, None, chip)
    else:
        kernels = package_filename("kernels", "cann", version, arch, chip)
    return {"toolkit": package_filename("toolkit", "cann", version, arch), "kernels": kernels}


def driver_package_file(version, model, arch):
    """The vendor file name of the NPU driver package of one version, from the one table of published names
    (module_utils/run_package.py PACKAGE_NAME_TABLE): ``Ascend-hdk-<model>-npu-driver_<ver>_linux-<arch>.run``,
    ``Atlas-A3-hdk-npu-driver_<ver>_linux-<arch>.run`` for Atlas A3 (model ``a3``)."""
    version = str(version).strip()
    if not version:
        raise ValueError("driver_package_file: empty driver version")
    model = str(model).strip()
    if model.lower() == "a3":
        return package_filename("driver", "a3", version, arch)
    return package_filename("driver", "hdk", version, arch, model)


def installer_asks_eula(version, kind):
    """Whether the ``kind`` installer of ``version`` asks to accept an EULA (module_utils/run_package.py
    ``asks_eula``: the docker runtime from 26.1.0); true as well when the version cannot be ordered."""
    return asks_eula(str(kind), str(version or "")) is not False


# Each package setting: the role's variable (after its prefix) and the collection-wide one it defaults to.
PACKAGE_SETTINGS = {"package_source": ("package_source", "ascend_package_source"),
                    "package_dir": ("package_dir", "ascend_package_dir"),
                    "mirror_url": ("mirror_url", "ascend_mirror_url"),
                    "package_manifest": ("manifest_name", "ascend_package_manifest")}


def _package_values(values):
    """{key: [the role's value, the collection-wide one]} as strings (a mirror URL without its trailing /)."""
    values = dict(values or {})
    unknown = sorted(set(values) - set(PACKAGE_SETTINGS))
    if unknown:
        raise ValueError(f"package settings: unknown keys {', '.join(unknown)} (known: {', '.join(PACKAGE_SETTINGS)})")
    out = {}
    for key in PACKAGE_SETTINGS:
        pair = list(values.get(key) or ["", ""])
        own = "" if pair[0] is None else str(pair[0])
        wide = own if len(pair) < 2 or pair[1] is None else str(pair[1])
        out[key] = [own.rstrip("/"), wide.rstrip("/")] if key == "mirror_url" else [own, wide]
    return out


def package_setting_names(values, host_vars, var_prefix="ascend", show_default=True):
    """{key: the variable the user set} for a role's package settings (``var_prefix``: npu_driver, cann,
    container_runtime; ascend for the collection-wide ones): the role's variable where the host sets it or its
    value differs from the collection-wide one, else the collection-wide ``ascend_*`` one."""
    prefix = str(var_prefix or "ascend")
    settings = {key: [f"{prefix}_{role}", wide] for key, (role, wide) in PACKAGE_SETTINGS.items()}
    return setting_names(settings, host_vars, _package_values(values), show_default)


def package_settings_ok(values):
    """Whether a role's package source settings can be used at all (no file read, no host variable read):
    ``values`` {package_source, mirror_url, package_manifest: [the role's value, the collection-wide one]}."""
    own = {key: pair[0] for key, pair in _package_values(values).items()}
    return pm.settings_ok(own["package_source"], own["mirror_url"], own["package_manifest"])


def package_settings_problem(values, host_vars, host, var_prefix="ascend"):
    """The refusal of unusable package source settings ('' when they are usable), naming the settings as the
    user wrote them (``host_vars``: hostvars[inventory_hostname]); the message packages_check gives."""
    if package_settings_ok(values):
        return ""
    own = {key: pair[0] for key, pair in _package_values(values).items()}
    return pm.settings_problem(str(host), own["package_source"], own["mirror_url"],
                               package_setting_names(values, host_vars, var_prefix),
                               package_setting_names(values, host_vars, var_prefix, False))


class FilterModule:
    """Package manifest filters."""

    def filters(self):
        return {"sha256sums": sha256sums, "cann_package_files": cann_package_files,
                "driver_package_file": driver_package_file, "installer_asks_eula": installer_asks_eula,
                "package_settings_ok": package_settings_ok, "package_settings_problem": package_settings_problem}
