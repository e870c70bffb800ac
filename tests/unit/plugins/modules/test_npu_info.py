"""npu_info against a temporary install tree and fake npu-smi / upgrade-tool scripts."""

from __future__ import annotations

import os
import shlex

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils import npu_info as npu_info_utils
from ansible_collections.ascendops.cluster.plugins.modules import npu_info
from ansible_collections.ascendops.cluster.tests.unit.plugins.modules.ascend_module_harness import (
    fixture_text,
    write_script,
)

DRIVER_INFO = fixture_text("driver_version.info")  # Version=24.1.rc1
TABLE_8 = fixture_text("npu_smi_info_910b_8npu.txt")  # header Version: 24.1.rc1; NPU 3 Alarm, NPU 6 Warning
TABLE_8_OK = TABLE_8.replace("| Alarm         |", "| OK            |").replace("| Warning       |", "| OK            |")


class Node:
    """A fake node: install tree, install record, npu-smi and upgrade-tool under tmp_path."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.root = str(tmp_path / "Ascend")
        self.info = str(tmp_path / "ascend_install.info")
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        os.makedirs(self.root)
        self.npu_smi = None

    def put(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
        return path

    def driver(self, version_info=DRIVER_INFO):
        self.put("driver/version.info", version_info)

    def firmware(self, version):
        self.put("firmware/version.info", f"Version={version}\n")

    def smi(self, output, rc=0, name="npu-smi"):
        out = self.tmp / f"{name}.out"
        out.write_text(output)
        self.npu_smi = write_script(self.bin / name, f"#!/bin/sh\ncat {shlex.quote(str(out))}\nexit {rc}\n")
        return self.npu_smi

    def upgrade_tool(self, versions, rc=0):
        """versions: {device_id: version}; two components per device."""
        lines = "".join(
            f"Get component version({v}) succeed for deviceId({d}), componentType({c}).\n"
            for d, v in sorted(versions.items()) for c in (0, 3))
        out = self.tmp / "upgrade-tool.out"
        out.write_text(lines)
        path = os.path.join(self.root, "driver", "tools", "upgrade-tool")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_script(path, f"#!/bin/sh\ncat {shlex.quote(str(out))}\nexit {rc}\n")

    def args(self, **extra):
        args = {"install_path": self.root, "install_info": self.info}
        if self.npu_smi:
            args["npu_smi"] = self.npu_smi
        args.update(extra)
        return args


@pytest.fixture
def node(tmp_path, monkeypatch):
    # npu-smi is looked up on PATH: keep the host's out of the way
    monkeypatch.setenv("PATH", str(tmp_path / "bin") + os.pathsep + "/usr/bin" + os.pathsep + "/bin")
    return Node(tmp_path)


def test_bare_node(run_module, node):
    res = run_module(npu_info.main, node.args(npu_smi=str(node.tmp / "absent" / "npu-smi")))
    assert not res.get("failed"), res.get("msg")
    assert res["changed"] is False
    assert res["driver"] == {"installed": False, "version": None, "running_version": None,
                             "install_path": None, "info": {}}
    assert res["firmware"]["installed"] is False and res["firmware"]["running_versions"] == []
    assert res["toolkit"] == {"installed": False, "version": None, "path": None, "arch": None, "info": {}}
    assert res["kernels"] == {"installed": False, "version": None, "required": {}}
    assert res["docker_runtime"] == {"installed": False, "version": None}
    assert res["install_info"] == {}
    assert res["npu_smi"]["available"] is False and "not found" in res["npu_smi"]["error"]
    assert res["npus"] == [] and res["count"] == 0
    assert res["names"] == [] and res["model"] is None
    assert res["healthy"] is False and res["unhealthy"] == []
    assert res["reboot_required"] is False and res["reboot_reasons"] == []
    facts = res["ansible_facts"]["ascend_npu"]
    assert facts["count"] == 0 and facts["reboot_required"] is False


def test_bare_node_default_lookup(run_module, node, monkeypatch):
    monkeypatch.setattr(npu_info_utils, "NPU_SMI_DIRS", [str(node.tmp / "local-bin"), str(node.tmp / "local-sbin")])
    res = run_module(npu_info.main, node.args())
    if res["npu_smi"]["path"]:  # pragma: no cover - a real npu-smi in /usr/local/bin on the test host
        pytest.skip("npu-smi installed on this host")
    assert "not found" in res["npu_smi"]["error"]


def test_healthy_node(run_module, node, tmp_path):
    node.driver()
    node.firmware("7.5.0.2.220")
    node.smi(TABLE_8_OK)
    node.upgrade_tool({d: "7.5.0.2.220" for d in range(8)})
    (tmp_path / "ascend_install.info").write_text(fixture_text("ascend_install.info"))
    res = run_module(npu_info.main, node.args())
    assert not res.get("failed"), res.get("msg")
    assert res["driver"]["installed"] and res["driver"]["version"] == "24.1.rc1"
    assert res["driver"]["running_version"] == "24.1.rc1"
    assert res["driver"]["info"]["ascendhal_version"] == "7.35.19"
    assert res["driver"]["install_path"] == node.root
    assert res["firmware"]["version"] == "7.5.0.2.220"
    assert res["firmware"]["running_versions"] == ["7.5.0.2.220"]
    assert len(res["firmware"]["components"]) == 16
    assert res["install_info"]["UserName"] == "HwHiAiUser"
    assert res["npu_smi"] == {"available": True, "path": node.npu_smi, "version": "24.1.rc1",
                              "error": None, "error_code": None}
    assert res["count"] == 8
    assert [n["npu_id"] for n in res["npus"]] == list(range(8))
    assert res["names"] == ["910B1"] and res["model"] == "910B1"
    assert res["healthy"] is True and res["unhealthy"] == []
    assert res["reboot_required"] is False, res["reboot_reasons"]
    assert res["ansible_facts"]["ascend_npu"]["npus"] == res["npus"]


def test_unhealthy_npus(run_module, node):
    node.driver()
    node.smi(TABLE_8)
    res = run_module(npu_info.main, node.args())
    assert res["healthy"] is False
    assert res["unhealthy"] == [{"npu_id": 3, "chip_id": 0, "phy_id": 3, "health": "Alarm"},
                                {"npu_id": 6, "chip_id": 0, "phy_id": 6, "health": "Warning"}]
    assert res["count"] == 8 and res["chip_count"] == 8


def test_driver_installed_not_loaded_8005(run_module, node):
    node.driver()
    node.smi("dcmi module initialize failed. ret is -8005\n", rc=1)
    res = run_module(npu_info.main, node.args())
    assert not res.get("failed")
    assert res["npu_smi"]["available"] is False
    assert res["npu_smi"]["error_code"] == -8005
    assert res["npu_smi"]["error"] == "dcmi module initialize failed. ret is -8005"
    assert res["reboot_required"] is True
    assert len(res["reboot_reasons"]) == 1 and "-8005" in res["reboot_reasons"][0]
    assert "24.1.rc1" in res["reboot_reasons"][0]
    assert res["count"] == 0 and res["healthy"] is False


def test_8005_without_driver_is_not_a_reboot(run_module, node):
    node.smi("dcmi module initialize failed. ret is -8005\n", rc=1)
    res = run_module(npu_info.main, node.args())
    assert res["reboot_required"] is False


def test_device_busy_8020_is_not_a_reboot(run_module, node):
    node.driver()
    node.smi("Failed to query the information because the device is used. ret is -8020\n", rc=1)
    res = run_module(npu_info.main, node.args())
    assert res["npu_smi"]["error_code"] == -8020
    assert res["reboot_required"] is False


def test_running_driver_older_than_installed(run_module, node):
    node.driver()  # 24.1.rc1 installed
    node.smi(TABLE_8_OK.replace("Version: 24.1.rc1", "Version: 23.0.0 "))
    res = run_module(npu_info.main, node.args())
    assert res["driver"]["running_version"] == "23.0.0"
    assert res["reboot_required"] is True
    assert res["reboot_reasons"] == [
        "installed driver 24.1.rc1 differs from the running driver 23.0.0; reboot to load it"]


def test_same_driver_version_other_spelling(run_module, node):
    node.driver("Version=24.1.RC1\n")
    node.smi(TABLE_8_OK)
    res = run_module(npu_info.main, node.args())
    assert res["reboot_required"] is False


def test_firmware_installed_not_running(run_module, node):
    node.driver()
    node.firmware("7.5.0.2.220")
    node.smi(TABLE_8_OK)
    versions = {d: "7.5.0.2.220" for d in range(8)}
    versions[5] = "7.1.0.11.220"
    node.upgrade_tool(versions)
    res = run_module(npu_info.main, node.args())
    assert res["firmware"]["running_versions"] == ["7.5.0.2.220", "7.1.0.11.220"]
    assert res["firmware"]["stale_devices"] == [5] and res["firmware"]["active"] is False
    assert res["reboot_required"] is True
    assert len(res["reboot_reasons"]) == 1
    reason = res["reboot_reasons"][0]
    assert "firmware 7.5.0.2.220" in reason and "device(s) 5 " in reason and "7.1.0.11.220" in reason


def test_firmware_upgrade_pending_on_all_devices_and_driver(run_module, node):
    node.driver()
    node.firmware("7.5.0.2.220")
    node.smi(TABLE_8_OK.replace("Version: 24.1.rc1", "Version: 23.0.0 "))
    node.upgrade_tool({d: "7.1.0.11.220" for d in range(8)})
    res = run_module(npu_info.main, node.args())
    assert res["reboot_required"] is True
    assert len(res["reboot_reasons"]) == 2
    assert "device(s) 0,1,2,3,4,5,6,7" in res["reboot_reasons"][1]


def test_upgrade_tool_error_is_reported_not_fatal(run_module, node):
    node.driver()
    node.firmware("7.5.0.2.220")
    node.smi(TABLE_8_OK)
    path = os.path.join(node.root, "driver", "tools", "upgrade-tool")
    os.makedirs(os.path.dirname(path))
    write_script(path, "#!/bin/sh\necho 'dcmi module initialize failed. ret is -8005'\nexit 1\n")
    res = run_module(npu_info.main, node.args())
    assert not res.get("failed")
    assert res["firmware"]["running_versions"] == []
    assert "-8005" in res["firmware"]["error"]


def test_upgrade_tool_option(run_module, node, tmp_path):
    node.driver()
    node.firmware("7.5.0.2.220")
    node.smi(TABLE_8_OK)
    out = tmp_path / "ut.out"
    out.write_text("Get component version(7.5.0.2.220) succeed for deviceId(0), componentType(0).\n")
    tool = write_script(tmp_path / "my-upgrade-tool", f"#!/bin/sh\ncat {shlex.quote(str(out))}\n")
    res = run_module(npu_info.main, node.args(upgrade_tool=tool))
    assert res["firmware"]["components"] == [
        {"device_id": 0, "component_type": 0, "component": None, "version": "7.5.0.2.220"}]
    assert res["firmware"]["active"] is True and res["reboot_required"] is False


def test_npu_smi_found_on_path(run_module, node):
    node.driver()
    path = node.smi(TABLE_8_OK)
    node.npu_smi = None  # let the module look it up
    res = run_module(npu_info.main, node.args())
    assert res["npu_smi"]["path"] == path
    assert res["count"] == 8


def test_npu_smi_option_bare_name(run_module, node):
    path = node.smi(TABLE_8_OK, name="npu-smi-custom")
    res = run_module(npu_info.main, node.args(npu_smi="npu-smi-custom"))
    assert res["npu_smi"]["path"] == path and res["count"] == 8


def test_unparsable_npu_smi_output(run_module, node):
    node.smi("something unexpected\n")
    res = run_module(npu_info.main, node.args())
    assert res["npu_smi"]["available"] is False
    assert "cannot parse" in res["npu_smi"]["error"]


def test_a3_chips(run_module, node):
    node.smi(fixture_text("npu_smi_info_a3.txt"))
    res = run_module(npu_info.main, node.args())
    # two NPUs of two chips each: NPUs and chips are counted apart
    assert res["count"] == 2 and res["chip_count"] == 4
    assert [(c["npu_id"], c["chip_id"], c["phy_id"]) for c in res["chips"]] == [
        (0, 0, 0), (0, 1, 1), (1, 0, 2), (1, 1, 3)]
    assert [n["phy_ids"] for n in res["npus"]] == [[0, 1], [2, 3]]
    assert res["model"] == "Ascend910"
    assert {(u["npu_id"], u["chip_id"]) for u in res["unhealthy"]} == {(1, 0), (1, 1)}


def test_a3_super_device_ids_read_from_spod_info(run_module, node, tmp_path):
    """Each chip's SDID from `npu-smi info -t spod-info -i <npu> -c <chip>`, never computed."""
    table = tmp_path / "table.out"
    table.write_text(fixture_text("npu_smi_info_a3.txt"))
    script = (
        "#!/bin/sh\n"
        f'if [ "$2" = "-t" ] && [ "$3" = "spod-info" ]; then\n'
        '  echo "SDID                 : $((7000 + $5 * 10 + $7))"\n'
        '  echo "Super Pod Size       : 384"\n  echo "Super Pod ID         : 2"\n  echo "Server Index         : 5"\n'
        "  exit 0\nfi\n"
        f"cat {shlex.quote(str(table))}\n")
    smi = write_script(node.bin / "npu-smi", script)
    res = run_module(npu_info.main, node.args(npu_smi=smi, spod_info=True))
    assert not res.get("failed"), res.get("msg")
    assert [(c["npu_id"], c["chip_id"], c["super_device_id"]) for c in res["chips"]] == [
        (0, 0, "7000"), (0, 1, "7001"), (1, 0, "7010"), (1, 1, "7011")]
    assert {c["super_pod_id"] for c in res["chips"]} == {"2"}
    # without the option nothing is asked
    assert "super_device_id" not in run_module(npu_info.main, node.args(npu_smi=smi))["chips"][0]


def test_a3_spod_info_that_does_not_answer_fails_naming_the_command(run_module, node):
    node.smi(fixture_text("npu_smi_info_a3.txt"))  # answers every call with the table: no SDID line
    res = run_module(npu_info.main, node.args(spod_info=True))
    assert res["failed"] and "info -t spod-info -i 0 -c 0" in res["msg"] and "no SDID line" in res["msg"]


def test_firmware_rule_with_several_components_per_device(run_module, node, tmp_path):
    """nve reports its own numbering; the main components report the package version. The same
    rule decides firmware.active and the reboot reasons."""
    node.driver()
    node.firmware("7.5.0.2.220")
    node.smi(TABLE_8_OK)
    out = tmp_path / "ut.out"
    out.write_text(fixture_text("upgrade_tool_version_braces.txt"))
    tool = write_script(tmp_path / "braces-upgrade-tool", f"#!/bin/sh\ncat {shlex.quote(str(out))}\n")
    res = run_module(npu_info.main, node.args(upgrade_tool=tool))
    assert [c["component"] for c in res["firmware"]["components"][:4]] == ["nve", "xloader", "m3fw", "uefi"]
    assert res["firmware"]["stale_devices"] == [1]
    assert res["firmware"]["active"] is False
    assert res["reboot_required"] is True
    assert "device(s) 1 (running 7.1.0.11.220)" in res["reboot_reasons"][0]
    out.write_text(fixture_text("upgrade_tool_version_braces.txt").replace("7.1.0.11.220", "7.5.0.2.220"))
    res = run_module(npu_info.main, node.args(upgrade_tool=tool))
    assert res["firmware"]["active"] is True and res["reboot_required"] is False
    assert res["firmware"]["running_versions"] == ["7.5.0.2.220"]


def test_table_row_of_no_layout_is_an_error_not_an_npu(run_module, node):
    node.driver()
    lines = TABLE_8_OK.splitlines()
    node.smi("\n".join(lines[:9] + ["| 9     910B1  x  | OK | 1 2 3 |"] + lines[9:]) + "\n")
    res = run_module(npu_info.main, node.args())
    assert res["npu_smi"]["available"] is False
    assert "| 9     910B1  x  | OK | 1 2 3 |" in res["npu_smi"]["error"]
    assert res["count"] == 0


def test_toolkit_kernels_runtime_through_latest_link(run_module, node):
    # CANN 9 style: ascend-toolkit/latest is a link into <install_path>/cann-<ver>
    cann = os.path.join(node.root, "cann-9.0.0")
    node.put("cann-9.0.0/aarch64-linux/ascend_toolkit_install.info",
             fixture_text("ascend_toolkit_install.info").replace("version=8.0.0", "version=9.0.0"))
    node.put("cann-9.0.0/opp_kernel/version.info", 'Version=9.0.0\nrequired_package_driver_version=">=25.0.rc1"\n')
    os.makedirs(os.path.join(node.root, "ascend-toolkit"))
    os.symlink(os.path.join("..", "cann-9.0.0"), os.path.join(node.root, "ascend-toolkit", "latest"))
    node.put("Ascend-Docker-Runtime/ascend_docker_runtime_install.info", "version=v6.0.0\narch=aarch64\nos=linux\n")
    res = run_module(npu_info.main, node.args())
    assert res["toolkit"]["installed"] is True
    assert res["toolkit"]["version"] == "9.0.0"
    assert res["toolkit"]["path"] == os.path.realpath(cann)
    assert res["toolkit"]["arch"] == "aarch64"
    assert res["toolkit"]["info"]["package_name"] == "Ascend-cann-toolkit"
    assert res["kernels"] == {"installed": True, "version": "9.0.0", "required": {"driver": ">=25.0.rc1"}}
    assert res["docker_runtime"] == {"installed": True, "version": "v6.0.0"}


def test_check_mode_same_result(run_module, node):
    node.driver()
    node.smi(TABLE_8_OK)
    normal = run_module(npu_info.main, node.args())
    checked = run_module(npu_info.main, node.args(), check_mode=True)
    assert checked["changed"] is False
    for key in ("driver", "npus", "count", "healthy", "reboot_required"):
        assert checked[key] == normal[key]


def test_pci_npus_counted_by_device_id_before_any_driver(run_module, node, tmp_path):
    """Bare node on a Kunpeng host: 8 NPUs (d802) and two ZIP engines in the NPUs' class are 8, not 10."""
    root = tmp_path / "pci"
    for bus, device in [(f"0000:{0xc1 + i:02x}:00.0", "0xd802") for i in range(8)] + [
            ("0000:75:00.0", "0xa250"), ("0000:b5:00.0", "0xa250")]:
        (root / bus).mkdir(parents=True)
        (root / bus / "vendor").write_text("0x19e5\n")
        (root / bus / "device").write_text(device + "\n")
        (root / bus / "class").write_text("0x120000\n")
    res = run_module(npu_info.main, node.args(npu_smi=str(node.tmp / "absent" / "npu-smi"), pci_devices=str(root)))
    assert not res.get("failed"), res.get("msg")
    assert res["pci"]["count"] == 8 and res["pci"]["error"] is None
    assert [f["bus_id"] for f in res["pci"]["other_huawei"]] == ["0000:75:00.0", "0000:b5:00.0"]
    res = run_module(npu_info.main, node.args(pci_devices=str(tmp_path / "absent")))
    assert res["pci"]["count"] == 0 and "cannot list" in res["pci"]["error"]
    assert run_module(npu_info.main, node.args())["pci"] is None
    res = run_module(npu_info.main, node.args(pci_devices=str(root), pci_device_ids=["nope"]))
    assert res["failed"] and "pci_device_ids" in res["msg"]


def test_health_checks_read_each_npus_health_record_and_hbm_ecc(run_module, node, tmp_path):
    """npu-smi info -t health / -t ecc per NPU (the guide's texts): an Alarm with its error code and HBM
    double-bit errors are problems naming the NPU; an unreadable output is shown; a refused read a note."""
    health = fixture_text("npu_smi_health.txt")
    ecc = fixture_text("npu_smi_ecc.txt")
    (tmp_path / "h3.out").write_text(health.replace(": OK", ": Alarm").replace(
        "Error Code                     : NA", "Error Code                     : 80E01801"))
    (tmp_path / "e5.out").write_text(ecc.replace("HBM Double Bit Error Count               : 0",
                                                 "HBM Double Bit Error Count               : 2"))
    (tmp_path / "h.out").write_text(health)
    (tmp_path / "e.out").write_text(ecc)
    (tmp_path / "table.out").write_text(TABLE_8_OK)
    script = (
        "#!/bin/sh\n"
        f'if [ "$2" = "-t" ] && [ "$3" = "health" ]; then\n'
        f'  if [ "$5" = 3 ]; then cat {tmp_path}/h3.out; elif [ "$5" = 6 ]; then echo "garbage"; '
        f'else cat {tmp_path}/h.out; fi; exit 0\n'
        "fi\n"
        f'if [ "$2" = "-t" ] && [ "$3" = "ecc" ]; then\n'
        f'  if [ "$5" = 5 ]; then cat {tmp_path}/e5.out; elif [ "$5" = 7 ]; then echo "not support"; exit 255; '
        f'else cat {tmp_path}/e.out; fi; exit 0\n'
        "fi\n"
        f"cat {tmp_path}/table.out\n")
    smi = write_script(node.bin / "npu-smi", script)
    res = run_module(npu_info.main, node.args(npu_smi=smi, health_checks=True))
    assert not res.get("failed"), res.get("msg")
    checks = res["health_checks"]
    assert checks["problems"][:2] == [
        "NPU 3: health Alarm (error 80E01801) (npu-smi info -t health)",
        "NPU 5 chip 0: 2 HBM double-bit (uncorrectable) ECC errors (npu-smi info -t ecc)"]
    assert checks["problems"][2].startswith("NPU 6: npu-smi info -t health: no 'Health Status : <word>' line "
                                            "(first line 'garbage')")
    assert len(checks["problems"]) == 3
    assert checks["notes"] == ["NPU 7: info -t ecc -i 7 failed (rc=255): not support"]
    assert checks["details"][0] == {"npu_id": 0, "health": "OK", "error_code": None, "error_info": None,
                                    "ecc": [dict.fromkeys(checks["details"][0]["ecc"][0], 0) | {"chip_id": 0}]}
    # not asked: nothing read
    assert run_module(npu_info.main, node.args(npu_smi=smi))["health_checks"] == {
        "details": [], "problems": [], "notes": []}


def test_driver_and_toolkit_read_from_version_cfg_where_no_version_info(run_module, node):
    """Older layouts and images record versions in version.cfg only: the driver (its record's own keys or
    a driver_running_version entry) and the toolkit behind the latest link are read from it."""
    node.put("driver/version.cfg", "# version: 1.0\ndriver_running_version=[7.1.0.3.220:23.0.0]\n")
    node.put("ascend-toolkit/8.0.0/version.cfg", fixture_text("cann_version.cfg"))
    os.symlink("8.0.0", os.path.join(node.root, "ascend-toolkit", "latest"))
    res = run_module(npu_info.main, node.args(npu_smi=str(node.tmp / "absent" / "npu-smi")))
    assert not res.get("failed"), res.get("msg")
    assert res["driver"]["installed"] and res["driver"]["version"] == "23.0.0"
    assert res["toolkit"]["installed"] and res["toolkit"]["version"] == "8.0.0"
    node.driver()  # version.info appears: it wins
    assert run_module(npu_info.main, node.args(npu_smi=str(node.tmp / "absent" / "npu-smi")))["driver"]["version"] \
        == "24.1.rc1"


def test_unreadable_version_cfg_fails_naming_the_file_and_line(run_module, node):
    node.put("driver/version.cfg", "driver 23.0.0\n")
    res = run_module(npu_info.main, node.args(npu_smi=str(node.tmp / "absent" / "npu-smi")))
    assert res["failed"]
    assert "driver/version.cfg: cannot read the line 'driver 23.0.0'" in res["msg"]
