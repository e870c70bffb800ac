"""Vendor format parsers (plugins/module_utils/ascend_formats.py), on the samples of ascend-facts.md."""

from __future__ import annotations

import os

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_formats import (
    get_key,
    info_version,
    parse_hccn_conf,
    parse_hccn_output,
    parse_key_value,
    read_key_value_file,
    render_hccn_conf,
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


# ------------------------------------------------------------------ hccn_tool


@pytest.mark.parametrize("text,expected", [
    ("ipaddr:29.1.112.213\nnetmask:255.255.0.0\n", {"ipaddr": "29.1.112.213", "netmask": "255.255.0.0"}),
    ("link status: UP", {"link_status": "UP"}),
    ("link status: DOWN", {"link_status": "DOWN"}),
    ("net health status: Success", {"net_health": "Success"}),
    ("net health status: Fault", {"net_health": "Fault"}),
    ("netdetect address: 11.12.165.1", {"netdetect": "11.12.165.1"}),
    ("default gateway:11.12.165.1, Iface:eth0", {"gateway": "11.12.165.1", "iface": "eth0"}),
    ("Speed: 100000 Mb/s", {"speed_mbps": 100000}),
    ("dev_id:4, tls switch[0](0:disable, 1:enable), ...",
     {"dev_id": 4, "tls_switch": 0, "tls_enabled": False}),
    ("dev_id:0, tls switch[1](0:disable, 1:enable), tls preconfigured[1](0:non-preset, 1:preset), "
     "tls alarm time threshold[60]days",
     {"dev_id": 0, "tls_switch": 1, "tls_enabled": True, "tls_preconfigured": 1}),
    ("3 packets transmitted, 3 received, 0.00% packet loss",
     {"ping_transmitted": 3, "ping_received": 3, "ping_loss_pct": 0.0}),
    ("3 packets transmitted, 1 received, 66.67% packet loss",
     {"ping_transmitted": 3, "ping_received": 1, "ping_loss_pct": 66.67}),
])
def test_hccn_get_outputs(text, expected):
    parsed = parse_hccn_output(text)
    assert parsed.pop("success") is False
    assert parsed.pop("busy") is False
    assert parsed == expected


def test_hccn_set_and_busy():
    assert parse_hccn_output("Cmd executed successfully!") == {"success": True, "busy": False}
    assert parse_hccn_output("hccn_tool is busy, please try again") == {"success": False, "busy": True}


def test_hccn_conf_sample_and_round_trip():
    text = fixture("hccn.conf")
    devices = parse_hccn_conf(text)
    assert devices == {0: {"address": "29.1.137.205", "netmask": "255.255.0.0", "netdetect": "29.1.0.1",
                           "gateway": "29.1.0.1", "send_arp_status": "1"}}
    assert list(devices[0]) == ["address", "netmask", "netdetect", "gateway", "send_arp_status"]
    assert render_hccn_conf(devices) == text
    assert parse_hccn_conf(render_hccn_conf(devices)) == devices


def test_hccn_conf_eight_devices_round_trip():
    devices = {i: {"address": f"192.168.100.{11 + i}", "netmask": "255.255.255.0",
                   "netdetect": "192.168.100.1", "gateway": "192.168.100.1", "send_arp_status": "1"}
               for i in (7, 0, 3, 1, 2, 6, 4, 5, 10)}
    text = render_hccn_conf(devices)
    assert text.splitlines()[0] == "address_0=192.168.100.11"
    assert text.splitlines()[-1] == "send_arp_status_10=1"
    parsed = parse_hccn_conf(text)
    assert list(parsed) == [0, 1, 2, 3, 4, 5, 6, 7, 10]
    assert parsed == devices
    assert render_hccn_conf(parsed) == text


def test_hccn_conf_skips_comments_and_unindexed_keys():
    parsed = parse_hccn_conf("# managed\n\naddress_1=10.0.0.2\nversion=2\naddress_0 = 10.0.0.1\n")
    assert parsed == {0: {"address": "10.0.0.1"}, 1: {"address": "10.0.0.2"}}
    assert list(parsed) == [0, 1]
