"""upgrade-tool parser and the firmware rule (plugins/module_utils/upgrade_tool.py)."""

from __future__ import annotations

import os

from ansible_collections.ascendops.cluster.plugins.module_utils.upgrade_tool import (
    firmware_status,
    parse_upgrade_tool_versions,
)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


# ------------------------------------------------------------------ upgrade-tool


def test_upgrade_tool_component_lines():
    assert parse_upgrade_tool_versions(fixture("upgrade_tool_version.txt")) == [
        {"device_id": 0, "component_type": 0, "component": None, "version": "7.5.0.2.220"}]
    assert parse_upgrade_tool_versions("Get component version failed") == []
    assert parse_upgrade_tool_versions("") == []


def test_upgrade_tool_braces_and_jsonish_lines():
    parsed = parse_upgrade_tool_versions(fixture("upgrade_tool_version_braces.txt"))
    assert len(parsed) == 8
    assert parsed[0] == {"device_id": 0, "component_type": 0, "component": "nve", "version": "1.83.10.1.248"}
    assert [(p["device_id"], p["component"]) for p in parsed[:4]] == [
        (0, "nve"), (0, "xloader"), (0, "m3fw"), (0, "uefi")]
    assert {p["version"] for p in parsed if p["device_id"] == 1} == {"1.83.10.1.248", "7.1.0.11.220"}


def test_upgrade_tool_jsonish_lines_alone_and_quoted_values():
    text = ('{\n{"device_id":0, "component":nve, "version":1.83.10.1.248}\n'
            '{"device_id":0, "component":"uefi", "version":"7.5.0.2.220"}\n'
            '{"device_id":1,"component":uefi,"version":7.5.0.2.220}\n}\n')
    assert parse_upgrade_tool_versions(text) == [
        {"device_id": 0, "component_type": None, "component": "nve", "version": "1.83.10.1.248"},
        {"device_id": 0, "component_type": None, "component": "uefi", "version": "7.5.0.2.220"},
        {"device_id": 1, "component_type": None, "component": "uefi", "version": "7.5.0.2.220"},
    ]


def test_upgrade_tool_get_and_jsonish_on_one_line():
    text = ('Get component version(7.5.0.2.220) succeed for deviceId(3), componentType(9). '
            '{"device_id":3, "component":uefi, "version":7.5.0.2.220}\n')
    assert parse_upgrade_tool_versions(text) == [
        {"device_id": 3, "component_type": 9, "component": "uefi", "version": "7.5.0.2.220"}]


def test_firmware_status_main_components_decide():
    comps = parse_upgrade_tool_versions(fixture("upgrade_tool_version_braces.txt"))
    status = firmware_status(comps, "7.5.0.2.220")
    # device 0 runs the package (its main components report it; nve has its own numbering)
    assert status["devices"] == {0: "7.5.0.2.220", 1: "7.1.0.11.220"}
    assert status["stale_devices"] == [1]
    assert status["running_versions"] == ["7.5.0.2.220", "7.1.0.11.220"]
    assert status["active"] is False
    old = firmware_status(comps, "7.1.0.11.220")
    assert old["stale_devices"] == [0] and not old["active"]


def test_firmware_status_all_devices_current():
    text = fixture("upgrade_tool_version_braces.txt").replace("7.1.0.11.220", "7.5.0.2.220")
    status = firmware_status(parse_upgrade_tool_versions(text), "7.5.0.2.220")
    assert status["active"] is True and status["stale_devices"] == []
    assert status["running_versions"] == ["7.5.0.2.220"]


def test_firmware_status_without_package_or_components():
    comps = parse_upgrade_tool_versions(fixture("upgrade_tool_version_braces.txt"))
    none = firmware_status(comps, None)
    assert none["active"] is False and none["stale_devices"] == []
    # the version most components report
    assert none["devices"] == {0: "7.5.0.2.220", 1: "7.1.0.11.220"}
    empty = firmware_status([], "7.5.0.2.220")
    assert empty == {"devices": {}, "running_versions": [], "stale_devices": [], "active": False}
