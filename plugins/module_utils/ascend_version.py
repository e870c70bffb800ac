# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse and compare Huawei Ascend version strings.

Ascend software uses several version shapes, all handled by one ordering:

* driver / npu-smi: ``23.0.rc2``, ``23.0.rc3``, ``23.0.0``, ``24.1.rc1``, ``24.1.rc1.b030``
* CANN toolkit / kernels: ``8.0.RC3``, ``8.0.0``, ``6.0.RC1.SPC1``, ``7.0.RC1.alpha003``, ``8.0.0.alpha002``
* firmware: ``7.1.0.11.220``, ``7.5.0.2.220``

Rules (case-insensitive, separators ``.`` ``-`` ``_``):

* numbers compare numerically; trailing zeros of a run of numbers do not matter
  (``23.0`` == ``23.0.0``, ``23.0.rc2`` == ``23.rc2``);
* ``rcN``, ``alphaN``, ``betaN`` are pre-releases: ``X.rcN`` sorts before ``X`` and before
  ``X.0`` (``23.0.rc3 < 23.0.0``, ``8.0.RC3 < 8.0.0``) and before any ``X.N``. At one position
  ``rcN`` < ``alphaN`` < ``betaN``: the vendor publishes ``X.Y.RCn`` first and then the alpha and
  beta builds of the final ``X.Y.Z`` (``8.0.RC3 < 8.0.0.alpha002 < 8.0.0``), and an alpha or beta
  of an RC sorts before that RC (``7.0.RC1.alpha003 < 7.0.RC1.beta1 < 7.0.RC1``);
* ``spcN`` (service pack) and ``bN`` (build) come after the version they qualify and before the
  next number: ``6.0.RC1 < 6.0.RC1.SPC1 < 6.0.RC2``, ``24.1.rc1 < 24.1.rc1.b030 < 24.1.rc2``.

Build-internal versions carry a ``T`` token (``8.3.T5.0.B028``, ``7.6.T13.0.B094``, ``8.0.T63``):
they have no place in the release order, so they raise ``ValueError`` naming the string (callers
compare them as text at most). Anything else (empty strings, ``latest``,
``V100R001C15SPC006B220`` inner versions, unknown qualifiers) raises ``ValueError`` too; nothing
here raises another exception for a string.
"""

from __future__ import annotations

import functools
import re

# Ranks of a component; compared position by position.
_RANK = {
    "rc": 0,
    "alpha": 1,
    "beta": 2,
    # 3: end of the version (see _END)
    "spc": 4,
    "b": 5,
    # 6: a plain number
}
_END = (3, 0)
_NUMBER_RANK = 6
# a build-internal (test) build: T<n> in a version
_INTERNAL_RE = re.compile(r"(?:^|[._-])t\d+(?:$|[._-])")
_ALIASES = {"a": "alpha", "build": "b"}

_SPLIT_RE = re.compile(r"[._-]")
_TOKEN_RE = re.compile(r"(\d+)|([a-z]+)(\d*)")
_LEADING_RE = re.compile(r"^v(?=\d)")


def _tokens(text):
    """Split one separator-delimited part into (kind, number) tokens; raise on junk."""
    pos = 0
    out = []
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m:
            raise ValueError(f"unexpected character {text[pos]!r}")
        if m.group(1) is not None:
            out.append((_NUMBER_RANK, int(m.group(1))))
        else:
            word = _ALIASES.get(m.group(2), m.group(2))
            if word not in _RANK:
                raise ValueError(f"unknown qualifier {m.group(2)!r}")
            out.append((_RANK[word], int(m.group(3) or 0)))
        pos = m.end()
    return out


def _strip_zero_runs(comps):
    """Drop zeros at the end of every run of plain numbers: ``23.0.0`` == ``23``,
    ``23.0.rc2`` == ``23.rc2``, ``8.0.RC3.0`` == ``8.0.RC3``. Zero padding is what the
    ordering means, so this keeps comparisons consistent. The key always ends with _END."""
    out = []
    for comp in comps + [_END]:
        if comp[0] != _NUMBER_RANK:
            while out and out[-1] == (_NUMBER_RANK, 0):
                out.pop()
        out.append(comp)
    return tuple(out)


def version_key(version):
    """Return a sortable key for an Ascend version string (or AscendVersion).

    ``sorted(versions, key=version_key)`` orders versions oldest first.
    Raises ValueError for strings that are not Ascend versions.
    """
    if isinstance(version, AscendVersion):
        return version.key
    if not isinstance(version, str):
        raise ValueError(f"Ascend version must be a string, got {type(version).__name__}")
    text = version.strip().lower()
    text = _LEADING_RE.sub("", text)
    if _INTERNAL_RE.search(text):
        raise ValueError(
            f"{version.strip()!r} is a build-internal (T) version; it has no place in the order of "
            "published releases, so it cannot be compared with another version")
    if not text or not text[0].isdigit():
        raise ValueError(
            f"Invalid Ascend version {version!r}: it must start with a number (e.g. 24.1.rc1, 8.0.RC3, 7.5.0.2.220)")
    comps = []
    for part in _SPLIT_RE.split(text):
        if not part:
            raise ValueError(f"Invalid Ascend version {version!r}: empty component")
        try:
            comps.extend(_tokens(part))
        except ValueError as exc:
            raise ValueError(f"Invalid Ascend version {version!r}: {exc}") from None
    return _strip_zero_runs(comps)


def is_internal_version(version):
    """True for a build-internal version string (a ``T<n>`` token, e.g. ``8.3.T5.0.B028``)."""
    return isinstance(version, str) and bool(_INTERNAL_RE.search(version.strip().lower()))


def is_valid_version(version):
    """True when ``version`` parses as an Ascend version."""
    try:
        version_key(version)
    except ValueError:
        return False
    return True


def compare(a, b):
    """Compare two Ascend versions: -1 if a < b, 0 if equal, 1 if a > b.

    Raises ValueError when either is not a valid version.
    """
    ka = version_key(a)
    kb = version_key(b)
    return (ka > kb) - (ka < kb)


def versions_equal(a, b):
    """Equality that tolerates unparsable strings (compared case-insensitively as text)."""
    if a is None or b is None:
        return a is b
    try:
        return compare(a, b) == 0
    except ValueError:
        return str(a).strip().lower() == str(b).strip().lower()


def sort_versions(versions, reverse=False):
    """Return the versions sorted oldest first (newest first with reverse=True)."""
    return sorted(versions, key=version_key, reverse=reverse)


@functools.total_ordering
class AscendVersion:
    """A parsed Ascend version; compares with other AscendVersion objects and strings."""

    __slots__ = ("original", "key")

    def __init__(self, version):
        if isinstance(version, AscendVersion):
            version = version.original
        self.key = version_key(version)
        self.original = version.strip()

    def _other_key(self, other):
        if isinstance(other, AscendVersion):
            return other.key
        if isinstance(other, str):
            return version_key(other)
        return None

    def __eq__(self, other):
        key = self._other_key(other)
        if key is None:
            return NotImplemented
        return self.key == key

    def __lt__(self, other):
        key = self._other_key(other)
        if key is None:
            return NotImplemented
        return self.key < key

    def __hash__(self):
        return hash(self.key)

    def __str__(self):
        return self.original

    def __repr__(self):
        return f"AscendVersion({self.original!r})"


def parse_version(version):
    """Return an AscendVersion for ``version`` (ValueError if invalid)."""
    return AscendVersion(version)
