# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the output of CANN's hccl_test binaries (``all_reduce_test`` and friends).

The result table follows a header row (the real binary spells ``aveg``)::

    data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:
    8192 | 12.50 | 18.25 | success

Rows may be separated by ``|`` or by blanks only; other lines (MPI chatter, warnings) are ignored.
``check_result`` is ``success``, ``failed`` or ``NULL`` (checking switched off with ``-c 0``).
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"data_size\s*\(Bytes\)\s*:?", re.IGNORECASE)
_ROW = re.compile(r"^\s*(?P<size>\d+)\s*\|?\s*(?P<time>[0-9.]+(?:[eE][-+]?\d+)?)\s*\|?\s*"
                  r"(?P<bw>[0-9.]+(?:[eE][-+]?\d+)?)\s*\|?\s*(?P<check>[A-Za-z_]+)\s*\|?\s*$")


class HcclTestError(ValueError):
    """hccl_test output without a result table, or a row that does not parse."""


def parse_hccl_test(text):
    """Rows of an hccl_test result table: [{size_bytes, time_us, alg_bandwidth_gbs, check_result}]."""
    rows = []
    in_table = False
    for number, line in enumerate(str(text or "").splitlines(), 1):
        if _HEADER.search(line):
            in_table = True
            continue
        if not in_table or not line.strip():
            continue
        match = _ROW.match(line)
        if match:
            rows.append({"size_bytes": int(match.group("size")), "time_us": float(match.group("time")),
                         "alg_bandwidth_gbs": float(match.group("bw")),
                         "check_result": match.group("check").lower()})
        elif re.match(r"^\s*\d+\s*\|", line):
            raise HcclTestError(f"hccl_test output line {number} looks like a result row but does not parse: {line!r}")
    if not in_table:
        raise HcclTestError("no hccl_test result table (no 'data_size(Bytes):' header) in the output")
    return rows


def summarize_hccl_test(rows, min_bandwidth_gbs=0.0, min_size_bytes=0):
    """Verdict over the rows: failed checks, and the rows at or above ``min_size_bytes`` whose
    bandwidth is under the floor. {ok, failed_sizes, slow_sizes, max_bandwidth_gbs}."""
    failed = [r["size_bytes"] for r in rows if r["check_result"] not in ("success", "null")]
    slow = [r["size_bytes"] for r in rows
            if r["size_bytes"] >= min_size_bytes and r["alg_bandwidth_gbs"] < float(min_bandwidth_gbs)]
    best = max((r["alg_bandwidth_gbs"] for r in rows), default=0.0)
    return {"ok": bool(rows) and not failed and not slow, "failed_sizes": failed, "slow_sizes": slow,
            "max_bandwidth_gbs": best}
