# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for vendor package manifests and file names."""

from __future__ import annotations

import re

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


class FilterModule:
    """Package manifest filters."""

    def filters(self):
        return {"sha256sums": sha256sums, "cann_package_files": cann_package_files,
                "driver_package_file": driver_package_file, "installer_asks_eula": installer_asks_eula}
