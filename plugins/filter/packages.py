# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for vendor package manifests and file names."""

from __future__ import annotations

import re

from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_version import compare

_LINE = re.compile(r"^(?P<digest>[0-9a-fA-F]{64}) [ *](?P<name>\S.*)$")


def sha256sums(text):
    """Parse `sha256sum` output (`<hex>  <file>` or `<hex> *<file>` lines) into {file: digest}.

    Blank lines and `#` comments are skipped; a malformed line or a file listed twice with two
    different digests raises, so a damaged manifest is never half-trusted.
    """
    if text is None:
        raise ValueError("sha256sums: manifest is empty")
    result = {}
    for number, raw in enumerate(str(text).splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if not match:
            raise ValueError(f"sha256sums: line {number} is not '<sha256>  <file>': {raw!r}")
        name = match.group("name").split("/")[-1]
        digest = match.group("digest").lower()
        if result.get(name, digest) != digest:
            raise ValueError(f"sha256sums: {name} is listed twice with different digests")
        result[name] = digest
    return result


_LEADING_NUMBERS = re.compile(r"^\D*(\d+)(?:\.(\d+))?")


def _before(version, major, minor):
    """Whether a CANN version is older than major.minor.0; build-internal strings (T builds) that do
    not compare are judged by their leading numbers."""
    try:
        return compare(version, f"{major}.{minor}.0") < 0
    except ValueError:
        m = _LEADING_NUMBERS.match(str(version))
        if not m:
            raise ValueError(f"cann_package_files: {version!r} is not a CANN version") from None
        return (int(m.group(1)), int(m.group(2) or 0)) < (major, minor)


def cann_package_files(version, chip, arch):
    """Vendor file names of a CANN release: ``{"toolkit": ..., "kernels": ...}``.

    Kernels: ``Ascend-cann-kernels-<chip>_<ver>_linux.run`` up to 8.0.RCx (arch-independent),
    ``Ascend-cann-kernels-<chip>_<ver>_linux-<arch>.run`` from 8.0.0, and from CANN 8.5 the operator
    package ``Ascend-cann-<chip>-ops_<ver>_linux-<arch>.run``.
    """
    version = str(version).strip()
    if not version:
        raise ValueError("cann_package_files: empty CANN version")
    if _before(version, 8, 0):
        kernels = f"Ascend-cann-kernels-{chip}_{version}_linux.run"
    elif _before(version, 8, 5):
        kernels = f"Ascend-cann-kernels-{chip}_{version}_linux-{arch}.run"
    else:
        kernels = f"Ascend-cann-{chip}-ops_{version}_linux-{arch}.run"
    return {"toolkit": f"Ascend-cann-toolkit_{version}_linux-{arch}.run", "kernels": kernels}


class FilterModule:
    """Package manifest filters."""

    def filters(self):
        return {"sha256sums": sha256sums, "cann_package_files": cann_package_files}
