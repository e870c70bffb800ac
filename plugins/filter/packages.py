# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for vendor package manifests and file names."""

from __future__ import annotations

import re

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


class FilterModule:
    """Package manifest filters."""

    def filters(self):
        return {"sha256sums": sha256sums}
