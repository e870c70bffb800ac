"""sha256sums: the package manifest every package is checked against."""

import pytest
from ansible_collections.ascendops.cluster.plugins.filter.packages import FilterModule, sha256sums

A = "a" * 64
B = "B" * 64


def test_parses_sha256sum_output_both_modes():
    text = (f"{A}  Ascend-hdk-910b-npu-driver_24.1.rc1_linux-x86_64.run\n"
            f"{B} *Ascend-hdk-910b-npu-firmware_7.5.0.2.220.run\n")
    assert sha256sums(text) == {
        "Ascend-hdk-910b-npu-driver_24.1.rc1_linux-x86_64.run": A,
        "Ascend-hdk-910b-npu-firmware_7.5.0.2.220.run": B.lower(),
    }


def test_skips_blanks_and_comments_and_strips_directories():
    assert sha256sums(f"# manifest\n\n{A}  ./sub/pkg.run\n") == {"pkg.run": A}


@pytest.mark.parametrize("bad", [f"{A[:-1]}  short.run", "not a manifest line", f"{A}pkg.run"])
def test_malformed_line_is_an_error(bad):
    with pytest.raises(ValueError, match="line 1"):
        sha256sums(bad)


def test_conflicting_entries_are_an_error():
    with pytest.raises(ValueError, match="listed twice"):
        sha256sums(f"{A}  pkg.run\n{B}  pkg.run\n")
    assert sha256sums(f"{A}  pkg.run\n{A}  pkg.run\n") == {"pkg.run": A}


def test_registered_with_ansible():
    assert FilterModule().filters()["sha256sums"] is sha256sums
