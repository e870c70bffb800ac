"""hccl_test all_reduce_test output parser (format from ascend-facts.md)."""

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.hccl_test import (
    HcclTestError,
    parse_hccl_test,
    summarize_hccl_test,
)

PIPES = """the minroot_rank is 0
data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:
8192 | 12.50 | 18.25 | success
1048576 | 60.10 | 17.45 | success
1073741824 | 45123.00 | 23.80 | success
"""

BLANKS = """[rank 0] warning: something
data_size(Bytes):     aveg_time(us):     alg_bandwidth(GB/s):     check_result:
      8192              45.92              0.17840                 NULL
     16384              47.10              0.34786                 failed
"""


def test_pipe_separated_rows():
    assert parse_hccl_test(PIPES) == [
        {"size_bytes": 8192, "time_us": 12.5, "alg_bandwidth_gbs": 18.25, "check_result": "success"},
        {"size_bytes": 1048576, "time_us": 60.1, "alg_bandwidth_gbs": 17.45, "check_result": "success"},
        {"size_bytes": 1073741824, "time_us": 45123.0, "alg_bandwidth_gbs": 23.8, "check_result": "success"},
    ]


def test_blank_separated_rows_and_null_check():
    rows = parse_hccl_test(BLANKS)
    assert [(r["size_bytes"], r["check_result"]) for r in rows] == [(8192, "null"), (16384, "failed")]
    assert rows[1]["alg_bandwidth_gbs"] == pytest.approx(0.34786)


def test_no_table_is_an_error():
    with pytest.raises(HcclTestError, match="no hccl_test result table"):
        parse_hccl_test("mpirun: command not found")


def test_damaged_row_is_an_error():
    with pytest.raises(HcclTestError, match="line 3"):
        parse_hccl_test("data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:\n"
                        "8192 | 12.50 | 18.25 | success\n16384 | 1x.0 | oops | success\n")


def test_summary_flags_failed_checks_and_slow_large_sizes():
    s = summarize_hccl_test(parse_hccl_test(PIPES), min_bandwidth_gbs=20, min_size_bytes=1 << 20)
    assert s == {"ok": False, "failed_sizes": [], "slow_sizes": [1048576], "max_bandwidth_gbs": 23.8}
    assert summarize_hccl_test(parse_hccl_test(PIPES), min_bandwidth_gbs=10)["ok"] is True
    assert summarize_hccl_test(parse_hccl_test(BLANKS))["failed_sizes"] == [16384]
    assert summarize_hccl_test([])["ok"] is False
