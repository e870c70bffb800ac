"""Ordering of Ascend version strings (plugins/module_utils/ascend_version.py)."""

from __future__ import annotations

import random

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_version import (
    AscendVersion,
    compare,
    is_internal_version,
    is_valid_version,
    parse_version,
    sort_versions,
    version_key,
    versions_equal,
)

# Each pair is (older, newer).
ORDERED_PAIRS = [
    # driver / npu-smi
    ("23.0.rc2", "23.0.rc3"),
    ("23.0.rc3", "23.0.0"),
    ("23.0.0", "24.1.rc1"),
    ("23.0.rc2", "24.1.rc1"),
    ("23.0.0", "23.0.1"),
    ("23.0.rc3", "23.0.1"),
    ("24.1.rc1", "24.1.rc2"),
    ("24.1.rc2", "24.1.0"),
    # CANN (upper-case RC)
    ("8.0.RC3", "8.0.0"),
    ("8.0.RC1", "8.0.RC2"),
    ("8.0.0", "8.1.RC1"),
    ("7.0.0", "8.0.RC1"),
    # firmware
    ("7.1.0.11.220", "7.5.0.2.220"),
    ("7.1.0.5.220", "7.1.0.11.220"),
    ("7.5.0.2.220", "7.5.0.2.221"),
    # builds, service packs, pre-releases of an RC
    ("24.1.rc1", "24.1.rc1.b030"),
    ("24.1.rc1.b030", "24.1.rc1.b040"),
    ("24.1.rc1.b030", "24.1.rc2"),
    ("24.1.rc1.b030", "24.1.0"),
    ("6.0.RC1", "6.0.RC1.SPC1"),
    ("6.0.RC1.SPC1", "6.0.RC1.SPC2"),
    ("6.0.RC1.SPC1", "6.0.RC2"),
    ("7.0.RC1.alpha003", "7.0.RC1"),
    ("7.0.RC1.alpha003", "7.0.RC1.beta1"),
    ("7.0.RC1.beta1", "7.0.RC1"),
    ("23.0.rc3", "23.0.rc3.1"),
    # alpha / beta builds of a final release come after its RCs (8.0.0.alpha002 was published after 8.0.RC3)
    ("8.0.RC3", "8.0.0.alpha002"),
    ("8.0.0.alpha002", "8.0.0"),
    ("8.0.0.alpha001", "8.0.0.alpha002"),
    ("8.0.0.alpha002", "8.0.0.beta1"),
    ("8.0.RC3.alpha001", "8.0.0.alpha001"),
    ("8.0.0.alpha002", "8.0.1"),
]


@pytest.mark.parametrize("older,newer", ORDERED_PAIRS)
def test_ordering(older, newer):
    assert compare(older, newer) == -1
    assert compare(newer, older) == 1
    assert version_key(older) < version_key(newer)
    assert AscendVersion(older) < AscendVersion(newer)
    assert AscendVersion(newer) > older


@pytest.mark.parametrize("a,b", [
    ("8.0.RC3", "8.0.rc3"),
    ("24.1.RC1", "24.1.rc1"),
    ("23.0", "23.0.0"),
    ("23.0.rc2", "23.rc2"),
    ("6.0.rc1.spc1", "6.0.RC1.SPC1"),
    (" 24.1.rc1\n", "24.1.rc1"),
    ("V24.1.rc1", "24.1.rc1"),
    ("24.1-rc1", "24.1.rc1"),
])
def test_equal_spellings(a, b):
    assert compare(a, b) == 0
    assert AscendVersion(a) == AscendVersion(b)
    assert hash(AscendVersion(a)) == hash(AscendVersion(b))
    assert versions_equal(a, b)


def test_shuffled_list_sorts_into_order():
    expected = [
        "6.0.RC1", "6.0.RC1.SPC1", "6.0.RC2",
        "7.0.RC1.alpha003", "7.0.RC1.beta1", "7.0.RC1",
        "7.1.0.11.220", "7.5.0.2.220",
        "8.0.RC3", "8.0.0",
        "23.0.rc2", "23.0.rc3", "23.0.0",
        "24.1.rc1", "24.1.rc1.b030", "24.1.rc2", "24.1.0",
    ]
    rng = random.Random(20261129)
    for _attempt in range(20):
        shuffled = expected[:]
        rng.shuffle(shuffled)
        assert sort_versions(shuffled) == expected
        assert sorted(shuffled, key=version_key) == expected
        assert sorted(shuffled, key=AscendVersion) == expected
    assert sort_versions(expected, reverse=True) == expected[::-1]


@pytest.mark.parametrize("bad", [
    "", "   ", "latest", "rc1", "V100R001C15SPC006B220", "24.1..rc1", "24.1.rc1.", "24.1.x1",
    "24.1.rc1 b030", "8.0.RC3+local", None, 24.1,
])
def test_invalid_versions_raise(bad):
    with pytest.raises(ValueError) as err:
        version_key(bad)
    assert "version" in str(err.value).lower()
    assert not is_valid_version(bad)


def test_invalid_message_names_the_string():
    with pytest.raises(ValueError, match="'latest'"):
        compare("latest", "24.1.rc1")


def test_parse_version_keeps_the_original_text():
    v = parse_version(" 8.0.RC3 ")
    assert str(v) == "8.0.RC3"
    assert repr(v) == "AscendVersion('8.0.RC3')"
    assert AscendVersion(v) == v


def test_versions_equal_tolerates_unparsable_text():
    assert versions_equal("custom-build", "CUSTOM-BUILD")
    assert not versions_equal("custom-build", "24.1.rc1")
    assert versions_equal(None, None)
    assert not versions_equal(None, "24.1.rc1")


@pytest.mark.parametrize("version", ["8.3.T5.0.B028", "7.6.T13.0.B094", "8.0.T63", "8.0.t63"])
def test_build_internal_versions_are_refused_by_name(version):
    assert is_internal_version(version)
    assert not is_valid_version(version)
    with pytest.raises(ValueError, match="build-internal") as err:
        compare(version, "8.0.RC3")
    assert version.strip() in str(err.value)
    with pytest.raises(ValueError, match="build-internal"):
        AscendVersion(version)
    # equality still works as text, so an installed internal build matches its own package
    assert versions_equal(version, version.upper())
    assert not versions_equal(version, "8.0.0")


def test_release_versions_are_not_internal():
    for version in ("8.0.RC3", "24.1.rc1.b030", "7.5.0.2.220", "8.0.0.alpha002", "6.0.RC1.SPC1"):
        assert not is_internal_version(version)
