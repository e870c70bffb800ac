"""Vendor format parsers (plugins/module_utils/ascend_formats.py), on the samples of ascend-facts.md."""

from __future__ import annotations

import os

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_formats import (
    RecordError,
    get_key,
    info_version,
    parse_key_value,
    parse_version_cfg,
    parse_version_record,
    read_key_value_file,
    render_key_value,
    version_cfg_release,
)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


# ------------------------------------------------------------------ key=value records


def test_driver_version_info():
    info = parse_key_value(fixture("driver_version.info"))
    assert list(info) == ["Version", "ascendhal_version", "Innerversion", "compatible_version",
                          "compatible_version_fw"]
    assert info["Version"] == "24.1.rc1"
    assert info["ascendhal_version"] == "7.35.19"
    assert info["Innerversion"] == "V100R001C15SPC006B220"
    assert info["compatible_version"] == "[V100R001C30],[V100R001C13],[V100R001C15],[V100R001C17]"
    assert info["compatible_version_fw"] == "[7.0.0,7.2.99]"
    assert info_version(info) == "24.1.rc1"


def test_a_record_whose_version_is_a_components_names_its_package_version():
    """A 26.0 driver version.info: Version= is a component's version, package_version= the release."""
    info = parse_key_value("Version=7.8.0.5.210\npackage_version=26.0.rc1\ncompatible_version_fw=[7.0.0,8.9.9]\n")
    assert info_version(info) == "26.0.rc1"
    assert info_version(parse_key_value("Version=24.1.rc1\npackage_version=\n")) == "24.1.rc1"


def test_firmware_version_info():
    info = parse_key_value(fixture("firmware_version.info"))
    assert dict(info) == {"Version": "7.1.0.11.220"}
    assert info_version(info) == "7.1.0.11.220"


def test_ascend_install_info_keeps_order():
    info = parse_key_value(fixture("ascend_install.info"))
    assert list(info.items()) == [
        ("UserName", "HwHiAiUser"),
        ("UserGroup", "HwHiAiUser"),
        ("Driver_Install_Type", "full"),
        ("Driver_Install_Path_Param", "/usr/local/Ascend"),
        ("Driver_Install_For_All", "yes"),
        ("Firmware_Install_Type", "full"),
        ("Firmware_Install_Path_Param", "/usr/local/Ascend"),
    ]
    assert render_key_value(info) == fixture("ascend_install.info")


def test_toolkit_install_info():
    info = parse_key_value(fixture("ascend_toolkit_install.info"))
    assert info["package_name"] == "Ascend-cann-toolkit"
    assert info_version(info) == "8.0.0"
    assert get_key(info, "ARCH") == "aarch64"
    assert info["path"] == "/usr/local/Ascend/ascend-toolkit/8.0.0/aarch64-linux"


def test_key_value_tolerates_blanks_comments_and_junk():
    text = "\n# a comment\n  ; another\nVersion = 8.0.RC3 \n\nnot a pair\n=novalue\npath=\"/opt/x\"\nk=a=b\n"
    info = parse_key_value(text)
    assert list(info.items()) == [("Version", "8.0.RC3"), ("path", "/opt/x"), ("k", "a=b")]
    assert parse_key_value("") == {}
    assert parse_key_value(None) == {}
    assert info_version({"Version": "  "}) is None


def test_read_key_value_file(tmp_path):
    path = tmp_path / "version.info"
    path.write_text("Version=24.1.rc1\n")
    assert read_key_value_file(str(path)) == {"Version": "24.1.rc1"}
    assert read_key_value_file(str(tmp_path / "missing")) is None


# ------------------------------------------------------------------ version.cfg


def test_cann_version_cfg_reads_each_components_build_and_release():
    """``/usr/local/Ascend/ascend-toolkit/latest/version.cfg`` of CANN 8.0.0 (fixture: the file as
    printed in the installation notes of a public Ascend deployment guide; the same layout with 8.0.RC2
    in another): ``# version: 1.0`` then ``<component>_running_version=[<build>:<release>]``."""
    entries = parse_version_cfg(fixture("cann_version.cfg"))
    assert list(entries)[:2] == ["runtime_running_version", "compiler_running_version"]
    assert entries["toolkit_running_version"] == {"build": "7.6.0.1.220", "release": "8.0.0"}
    assert entries["hccl_upgrade_version"] == {"build": "7.6.0.1.220", "release": "8.0.0"}
    assert version_cfg_release(entries) == "8.0.0"


def test_version_cfg_older_and_short_forms():
    """HCCL's own reader documents ``runtime_running_version=[1.83.T8.0.B128:CANN-1.83]``; a release
    alone in brackets is read as the release."""
    old = parse_version_cfg("runtime_running_version=[1.83.T8.0.B128:CANN-1.83]\n")
    assert old["runtime_running_version"] == {"build": "1.83.T8.0.B128", "release": "1.83"}
    assert version_cfg_release(old) == "1.83"
    assert version_cfg_release(parse_version_cfg("# version: 1.0\nruntime_running_version=[9.9]\n")) == "9.9"


def test_version_cfg_release_prefers_the_toolkit_component():
    entries = parse_version_cfg("runtime_running_version=[1:8.0.RC2]\ntoolkit_running_version=[2:8.0.RC3]\n")
    assert version_cfg_release(entries) == "8.0.RC3"


@pytest.mark.parametrize("line", ["runtime_running_version 8.0.0", "runtime_running_version=8.0.0",
                                  "runtime_running_version=[7.6:8.0.0", "[7.6:8.0.0]"])
def test_version_cfg_line_it_cannot_read_is_named(line):
    with pytest.raises(RecordError) as err:
        parse_version_cfg("# version: 1.0\n" + line + "\n", "/x/version.cfg")
    assert "/x/version.cfg" in str(err.value) and repr(line) in str(err.value)


def test_version_cfg_without_a_known_components_release_is_refused():
    with pytest.raises(RecordError, match="no release in any of toolkit_running_version.*aoe_running_version"):
        version_cfg_release(parse_version_cfg("aoe_running_version=[7.6.0.1.220:8.0.0]\n"), "v.cfg")


def test_version_record_in_either_form():
    """A driver's ``version.cfg`` (layout not published: assumed, docs/sim-contract.md) is read whether it
    holds version.info's keys or version.cfg's bracket entries; the kind's own entry wins."""
    assert info_version(parse_version_record("Version=23.0.rc3\n", "v.cfg", "driver")) == "23.0.rc3"
    assert info_version(parse_version_record(
        "Version=7.8.0.5.210\npackage_version=26.0.rc1\n", "v.cfg", "driver")) == "26.0.rc1"
    rec = parse_version_record("driver_running_version=[7.1.0.3.220:23.0.0]\n"
                               "runtime_running_version=[7.6:8.0.0]\n", "v.cfg", "driver")
    assert info_version(rec) == "23.0.0"
    with pytest.raises(RecordError, match="v.cfg: cannot read the line 'driver 23.0.0'"):
        parse_version_record("driver 23.0.0\n", "v.cfg", "driver")
