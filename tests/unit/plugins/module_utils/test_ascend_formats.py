"""Vendor format parsers (plugins/module_utils/ascend_formats.py), on the samples of ascend-facts.md."""

from __future__ import annotations

import os

from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_formats import (
    get_key,
    info_version,
    parse_key_value,
    read_key_value_file,
    render_key_value,
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
