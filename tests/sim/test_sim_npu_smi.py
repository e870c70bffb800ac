"""npu-smi, upgrade-tool and `ascend-sim boot` stand-ins held against the vendor facts."""

import json
import os
import re
import stat
import subprocess

import pytest
from simhelpers import CURRENT, PREVIOUS, SIM_NPU, make_node

# The 910B sample of shared/ascend-facts.md, verbatim.
FACTS_SAMPLE = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 23.0.rc2                 Version: 23.0.rc2                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B1               | OK            | 88.4        46                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          4175 / 65536         |
+===========================+===============+====================================================+
""".splitlines()
DCMI_8005 = "dcmi module initialize failed. ret is -8005"
DRIVER_OK = "Driver package installed successfully! Reboot needed for installation/upgrade to take effect!"
DRIVER_NOW = "Driver package installed successfully! The new version takes effect immediately."
FW_LINE = re.compile(r"^Get component version\((\S+)\) succeed for deviceId\((\d+)\), componentType\((\d+)\)\.$")
FW_JSONISH = re.compile(r'^\t\{"device_id":(\d+), "component":(\w+), "version":(\S+)\}$')


def parse_info(text: str) -> dict:
    """Parse `npu-smi info` like a consumer would: by column headers, two lines per NPU."""
    lines = text.splitlines()
    header = re.match(r"^\| npu-smi (\S+)\s+Version: (\S+)\s+\|$", lines[1])
    assert header, lines[1]
    npus = []
    i = 6
    while i + 1 < len(lines) and not lines[i].startswith("+---"):
        first = [c.strip() for c in lines[i].strip("|").split("|")]
        second = [c.strip() for c in lines[i + 1].strip("|").split("|")]
        npu_id, name = first[0].split()
        hbm_used, hbm_total = [int(x) for x in second[2].split()[-3::2]]
        npus.append({"npu": int(npu_id), "name": name, "health": first[1], "chip": int(second[0]),
                     "bus": second[1], "hbm_used": hbm_used, "hbm_total": hbm_total})
        assert lines[i + 2] == FACTS_SAMPLE[5]
        i += 3
    procs = lines[i:]
    return {"tool": header.group(1), "driver": header.group(2), "npus": npus, "procs": procs, "lines": lines}


def test_fresh_driver_takes_effect_immediately(node, packages):
    """A fresh driver install on a node where no driver runs starts the devices at once."""
    r = node.install(packages.pkg("driver"), "--full", "--quiet")
    assert r.returncode == 0, r.stdout
    assert r.stdout.splitlines()[-1] == DRIVER_NOW
    r = node.npu_smi("info")
    assert r.returncode == 0, r.stdout
    info = parse_info(r.stdout)
    assert info["driver"] == CURRENT["driver"]
    assert [(n["npu"], n["health"]) for n in info["npus"]] == [(0, "OK"), (1, "OK")]
    state = json.loads(node.sim("state").stdout)
    assert state["running"]["driver"] == CURRENT["driver"] and state["pending_reboot"] == []
    assert os.path.exists(node.p("/dev/davinci_manager")) and os.path.exists(node.p("/dev/davinci1"))
    assert f"load driver={CURRENT['driver']}" in node.events()
    # the firmware still needs a reboot: upgrade-tool shows the factory firmware until then
    r = node.install(packages.pkg("firmware"), "--full", "--quiet")
    assert r.returncode == 0, r.stdout
    fw = node.upgrade_tool("--device_index", "-1", "--component", "-1", "--version").stdout
    assert "(7.1.0.3.220)" in fw and CURRENT["firmware"] not in fw
    assert json.loads(node.sim("state").stdout)["pending_reboot"] == ["firmware"]


def test_npu_smi_fails_with_8005_until_first_boot(node, packages):
    """Simulated hardware whose devices do not start at install ("driver_starts_at_install": false)."""
    hw_file = node.p("/etc/ascend-sim/hardware.json")
    hw = json.loads(hw_file.read_text()) if hw_file.exists() else {}
    hw_file.parent.mkdir(parents=True, exist_ok=True)
    hw_file.write_text(json.dumps(dict(hw, driver_starts_at_install=False)))
    r = node.install(packages.pkg("driver"), "--full", "--quiet")
    assert r.returncode == 0, r.stdout
    assert r.stdout.splitlines()[-1] == DRIVER_OK
    for args in (("info",), ("info", "-l"), ("info", "-t", "topo")):
        r = node.npu_smi(*args)
        assert r.returncode == 1
        assert r.stdout.strip() == DCMI_8005
    r = node.upgrade_tool("--device_index", "-1", "--component", "-1", "--version")
    assert (r.returncode, r.stdout.strip()) == (1, DCMI_8005)
    r = node.hccn("-i", "0", "-link", "-g")
    assert (r.returncode, r.stdout.strip()) == (1, DCMI_8005)
    assert node.sim("boot").returncode == 0
    r = node.npu_smi("info")
    assert r.returncode == 0, r.stdout
    info = parse_info(r.stdout)
    assert info["driver"] == CURRENT["driver"]
    assert [(n["npu"], n["health"]) for n in info["npus"]] == [(0, "OK"), (1, "OK")]


def test_info_table_matches_facts_layout(booted_node):
    r = booted_node.npu_smi("info")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert all(len(line) == 98 for line in lines), [len(x) for x in lines]
    assert lines[0] == FACTS_SAMPLE[0]
    assert lines[2:6] == FACTS_SAMPLE[2:6]
    info = parse_info(r.stdout)
    assert info["driver"] == info["tool"] == CURRENT["driver"]
    assert lines[1] == FACTS_SAMPLE[1].replace("23.0.rc2", CURRENT["driver"])
    assert [n["npu"] for n in info["npus"]] == [0, 1]
    assert all(n["name"] == "910B1" and n["health"] == "OK" and n["chip"] == 0 for n in info["npus"])
    assert [n["bus"] for n in info["npus"]] == ["0000:C1:00.0", "0000:C2:00.0"]
    assert all(n["hbm_total"] == 65536 and 0 < n["hbm_used"] < 65536 for n in info["npus"])
    # NPU 0 renders exactly like the facts sample rows (same telemetry by design).
    assert lines[6:9] == FACTS_SAMPLE[6:9]
    # Process table like the real tool.
    procs = info["procs"]
    assert procs[0] == FACTS_SAMPLE[2]
    assert re.match(r"^\| NPU\s+Chip\s+\| Process id\s+\| Process name\s+\| Process memory\(MB\)\s+\|$", procs[1])
    assert procs[2] == FACTS_SAMPLE[5]
    assert procs[3].startswith("| No running processes found in NPU 0 ") and procs[3].endswith("|")
    assert procs[5].startswith("| No running processes found in NPU 1 ")
    assert len(procs) == 7


def test_info_list_and_topo(tmp_path, packages):
    n = make_node(tmp_path, npus=8)
    assert n.install(packages.pkg("driver"), "--full", "--quiet").returncode == 0
    assert n.sim("boot").returncode == 0
    r = n.npu_smi("info", "-l")
    assert r.returncode == 0
    fields = [tuple(x.strip() for x in line.split(":", 1)) for line in r.stdout.splitlines() if ":" in line]
    assert fields[0] == ("Total Count", "8")
    assert [v for k, v in fields if k == "NPU ID"] == [str(i) for i in range(8)]
    assert [v for k, v in fields if k == "Chip Count"] == ["1"] * 8
    assert re.search(r"^\s*Total Count\s*:\s*8$", r.stdout, re.M)
    r = n.npu_smi("info", "-t", "topo")
    assert r.returncode == 0
    rows = r.stdout.splitlines()
    assert rows[0].split() == [f"NPU{i}" for i in range(8)] + ["CPU", "Affinity"]
    for i in range(8):
        cells = rows[1 + i].split()
        assert cells[0] == f"NPU{i}" and cells[1 + i] == "X"
        assert cells[1:9].count("HCCS") == 7
        assert re.match(r"^\d+-\d+$", cells[9])
    info = parse_info(n.npu_smi("info").stdout)
    assert len(info["npus"]) == 8


def test_unsupported_command_is_an_error(booted_node):
    r = booted_node.npu_smi("info", "-t", "nonsense")
    assert r.returncode == 1
    assert "unsupported" in r.stdout


def test_health_fault_shows_in_table_and_clears(booted_node):
    r = booted_node.sim("fault", "health", "1", "Critical")
    assert r.returncode == 0, r.stderr
    info = parse_info(booted_node.npu_smi("info").stdout)
    assert [n["health"] for n in info["npus"]] == ["OK", "Critical"]
    assert booted_node.sim("fault", "health", "5", "OK").returncode != 0
    assert booted_node.sim("fault", "health", "0", "Broken").returncode != 0
    booted_node.sim("fault", "clear")
    info = parse_info(booted_node.npu_smi("info").stdout)
    assert [n["health"] for n in info["npus"]] == ["OK", "OK"]
    assert "fault health 1 Critical" in booted_node.events()


def test_upgrade_tool_reports_running_firmware(booted_node):
    """Brace-wrapped output; per device several components, each line followed by its JSON-ish line."""
    r = booted_node.upgrade_tool("--device_index", "-1", "--component", "-1", "--version")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    body = lines[1:-1]
    gets = [FW_LINE.match(line) for line in body[0::2]]
    jsonish = [FW_JSONISH.match(line) for line in body[1::2]]
    assert all(gets) and all(jsonish), r.stdout
    assert [(m.group(2), m.group(3)) for m in gets] == [(d, c) for d in "01" for c in ("0", "3", "8", "9")]
    names = ("nve", "xloader", "m3fw", "uefi")
    assert [(m.group(1), m.group(2)) for m in jsonish] == [(d, c) for d in "01" for c in names]
    # nve carries its own numbering; the main components report the firmware package version
    assert {m.group(3) for m in jsonish if m.group(2) != "nve"} == {CURRENT["firmware"]}
    assert {m.group(3) for m in jsonish if m.group(2) == "nve"} == {"1.83.10.1.248"}
    r = booted_node.upgrade_tool("--device_index", "1", "--component", "3", "--version")
    assert r.stdout == (f"{{\nGet component version({CURRENT['firmware']}) succeed for deviceId(1), componentType(3).\n"
                        f'\t{{"device_id":1, "component":xloader, "version":{CURRENT["firmware"]}}}\n}}\n')
    assert booted_node.upgrade_tool("--device_index", "7", "--component", "-1", "--version").returncode == 1
    assert booted_node.upgrade_tool("--device_index", "-1", "--version").returncode == 1


def test_upgrade_keeps_running_versions_until_boot(tmp_path, packages):
    n = make_node(tmp_path)
    for kind, mode in (("driver", "--full"), ("firmware", "--full")):
        r = n.install(packages.pkg(kind, "previous"), mode, "--quiet")
        assert r.returncode == 0, r.stdout
    n.sim("boot")
    assert parse_info(n.npu_smi("info").stdout)["driver"] == PREVIOUS["driver"]
    # Upgrade order on an installed host: firmware first (exit 2 = success), then the driver.
    r = n.install(packages.pkg("firmware"), "--upgrade", "--quiet")
    assert r.returncode == 2 and "Firmware package installed successfully!" in r.stdout
    r = n.install(packages.pkg("driver"), "--upgrade", "--quiet")
    assert r.returncode == 0, r.stdout
    state = json.loads(n.sim("state").stdout)
    assert state["installed"] == {"driver": CURRENT["driver"], "firmware": CURRENT["firmware"]}
    assert state["running"] == {"driver": PREVIOUS["driver"], "firmware": PREVIOUS["firmware"]}
    assert state["pending_reboot"] == ["driver", "firmware"]
    info = parse_info(n.npu_smi("info").stdout)
    assert (info["tool"], info["driver"]) == (CURRENT["driver"], PREVIOUS["driver"])
    fw = n.upgrade_tool("--device_index", "-1", "--component", "-1", "--version").stdout
    assert f"({PREVIOUS['firmware']})" in fw and CURRENT["firmware"] not in fw
    n.sim("boot")
    info = parse_info(n.npu_smi("info").stdout)
    assert (info["tool"], info["driver"]) == (CURRENT["driver"], CURRENT["driver"])
    fw = n.upgrade_tool("--device_index", "-1", "--component", "-1", "--version").stdout
    assert fw.count(f"({CURRENT['firmware']})") == 6  # 2 devices x 3 main components
    state = json.loads(n.sim("state").stdout)
    assert state["pending_reboot"] == [] and state["boot_count"] == 2
    assert f"boot driver={CURRENT['driver']} firmware={CURRENT['firmware']}" in n.events()


def test_boot_creates_device_nodes_owned_by_the_install_user(tmp_path, packages):
    n = make_node(tmp_path)
    n.set_users({"HwHiAiUser": (1000, 1000), "aiuser": (1234, 1234)}, {"HwHiAiUser": 1000, "aigrp": 4321})
    r = n.sim("boot")
    assert r.returncode == 0 and not os.path.exists(n.p("/dev/davinci_manager"))
    assert "boot driver=none firmware=7.1.0.3.220" in n.events()
    # aiuser's primary group is not aigrp; membership via the group file counts too.
    (n.p("/etc/group")).write_text("root:x:0:\nHwHiAiUser:x:1000:\naigrp:x:4321:aiuser\n")
    r = n.install(packages.pkg("driver"), "--full", "--install-username=aiuser",
                  "--install-usergroup=aigrp", "--quiet")
    assert r.returncode == 0, r.stdout
    assert n.install_info()["UserName"] == "aiuser"
    assert n.sim("boot").returncode == 0
    names = ["davinci0", "davinci1", "davinci_manager", "devmm_svm", "hisi_hdc"]
    assert sorted(os.listdir(n.p("/dev"))) == sorted(names)
    for name in names:
        st = os.lstat(n.p(f"/dev/{name}"))
        assert stat.S_IMODE(st.st_mode) == 0o660
        assert stat.S_ISCHR(st.st_mode) or stat.S_ISREG(st.st_mode)
        if os.geteuid() == 0:
            assert (st.st_uid, st.st_gid) == (1234, 4321)
    # Fewer NPUs after a hardware change: stale nodes go at the next boot.
    n.sim("hardware", "--npus", "1")
    n.sim("boot")
    assert not os.path.exists(n.p("/dev/davinci1")) and os.path.exists(n.p("/dev/davinci0"))
    # Uninstalled driver: npu-smi is gone, devices disappear at the next boot.
    r = n.run(n.p("/usr/local/Ascend/driver/script/uninstall.sh"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert not os.path.exists(n.p("/usr/local/bin/npu-smi"))
    assert not os.path.exists(n.p("/usr/local/Ascend/driver"))
    assert not any(k.startswith("Driver_") for k in n.install_info())
    assert json.loads(n.sim("state").stdout)["running"]["driver"] == CURRENT["driver"]
    n.sim("boot")
    assert not os.path.exists(n.p("/dev/davinci_manager"))
    assert json.loads(n.sim("state").stdout)["running"]["driver"] is None
    assert f"uninstall driver {CURRENT['driver']} rc=0" in n.events()


def test_hardware_command_validates_and_sets_model(node):
    r = node.sim("hardware", "--npus", "0")
    assert r.returncode != 0
    r = node.sim("hardware", "--npus", "4", "--model", "910B4", "--nic-interface", "eth1")
    assert r.returncode == 0, r.stderr
    hw = json.loads(node.p("/etc/ascend-sim/hardware.json").read_text())
    assert hw["npu_count"] == 4 and hw["model"] == "910B4" and hw["hbm_mb"] == 32768
    assert hw["nic_interface"] == "eth1"
    state = json.loads(node.sim("state").stdout)
    assert sorted(state["npus"]) == ["0", "1", "2", "3"]
    node.sim("hardware", "--nic-interface", "none")
    assert json.loads(node.p("/etc/ascend-sim/hardware.json").read_text())["nic_interface"] is None


def test_boot_does_not_touch_boot_id_under_sim_root(booted_node):
    assert not booted_node.p("/run/ascend-sim/boot_id").exists()


@pytest.mark.parametrize("args", [("info",), ("info", "-l")])
def test_installed_npu_smi_does_not_need_the_source_tree(booted_node, args):
    # The copy in /usr/local/bin finds its library in the driver's tools/.ascend_sim.
    text = booted_node.p("/usr/local/bin/npu-smi").read_text()
    assert "SIMULATION" in text.splitlines()[1]
    assert '"/usr/local/Ascend/driver/tools/.ascend_sim"' in text
    assert booted_node.npu_smi(*args).returncode == 0


def test_state_updates_do_not_get_lost_under_concurrency(tmp_path):
    n = make_node(tmp_path, npus=8)
    procs = [
        subprocess.Popen([str(SIM_NPU / "ascend-sim"), "fault", "health", str(i), "Alarm"], env=n.env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for i in range(8)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0] * 8
    state = json.loads(n.sim("state").stdout)
    assert [state["npus"][str(i)]["health"] for i in range(8)] == ["Alarm"] * 8
    assert len(n.events()) == 9  # hardware + 8 faults, one line each


def test_spod_info_answers_per_chip(booted_node):
    r = booted_node.npu_smi("info", "-t", "spod-info", "-i", "1", "-c", "0")
    assert r.returncode == 0, r.stdout
    lines = [ln.split(":") for ln in r.stdout.splitlines()]
    assert [k.strip() for k, _v in lines] == ["SDID", "Super Pod Size", "Super Pod ID", "Server Index"]
    assert lines[0][1].strip() == "2"
    assert booted_node.npu_smi("info", "-t", "spod-info", "-i", "9", "-c", "0").returncode == 1
    assert booted_node.npu_smi("info", "-t", "spod-info", "-i", "0").returncode == 1


def test_process_table_lists_processes_holding_a_device_node(booted_node):
    """A process with /dev/davinciN open is listed under NPU N (the driver's view), in the layout the
    collection's parser reads; the other NPUs say no running processes."""
    from ansible_collections.ascendops.cluster.plugins.module_utils.npu_smi import parse_npu_smi_processes

    fd_dir = booted_node.p("/proc/4242/fd")
    fd_dir.mkdir(parents=True)
    (fd_dir / "3").symlink_to(booted_node.p("/dev/davinci1"))
    (fd_dir / "4").symlink_to(booted_node.p("/etc/hostname"))
    booted_node.p("/proc/4242/comm").write_text("stale-holder\n")
    booted_node.p("/proc/77/fd").mkdir(parents=True)  # a process holding nothing
    booted_node.p("/proc/77/comm").write_text("bash\n")
    r = booted_node.npu_smi("info")
    assert r.returncode == 0, r.stdout
    rows = parse_npu_smi_processes(r.stdout)
    assert [(p["npu_id"], p["chip_id"], p["pid"], p["name"]) for p in rows] == [(1, 0, 4242, "stale-holder")]
    assert "No running processes found in NPU 0" in r.stdout
    assert "No running processes found in NPU 1" not in r.stdout


def _hold(node, pid, npu, name="python3"):
    fd_dir = node.p(f"/proc/{pid}/fd")
    fd_dir.mkdir(parents=True)
    (fd_dir / "3").symlink_to(node.p(f"/dev/davinci{npu}"))
    node.p(f"/proc/{pid}/comm").write_text(name + "\n")


def test_usages_and_common_follow_the_load(booted_node):
    """-t usages / -t common print the 910B layouts (read back with the collection's parser) from the
    simulated load: idle NPUs report no AI Core use, an NPU a process holds reports use, more HBM,
    power and temperature; the summary table agrees."""
    from ansible_collections.ascendops.cluster.plugins.module_utils.npu_smi import (
        parse_npu_smi_chip_values,
        parse_npu_smi_info,
    )

    _hold(booted_node, 5151, 1)
    usages, common = {}, {}
    for npu in (0, 1):
        r = booted_node.npu_smi("info", "-t", "usages", "-i", str(npu))
        assert r.returncode == 0, r.stdout
        usages[npu] = parse_npu_smi_chip_values(r.stdout, "usages")
        r = booted_node.npu_smi("info", "-t", "common", "-i", str(npu))
        assert r.returncode == 0, r.stdout
        common[npu] = parse_npu_smi_chip_values(r.stdout, "common")
    assert [usages[n]["npu_id"] for n in (0, 1)] == [0, 1]
    idle, busy = usages[0]["chips"][0], usages[1]["chips"][0]
    assert idle["aicore_pct"] == 0 and busy["aicore_pct"] > 50
    assert idle["hbm_capacity_mb"] == busy["hbm_capacity_mb"] == 65536
    assert busy["hbm_usage_pct"] > idle["hbm_usage_pct"] > 0
    assert common[1]["chips"][0]["power_w"] > common[0]["chips"][0]["power_w"]
    assert common[1]["chips"][0]["temperature_c"] > common[0]["chips"][0]["temperature_c"]
    assert common[0]["mcu"]["temperature_c"] < common[0]["chips"][0]["temperature_c"]
    table = {c["npu_id"]: c for c in parse_npu_smi_info(booted_node.npu_smi("info").stdout)["chips"]}
    assert table[1]["aicore_pct"] == busy["aicore_pct"] and table[0]["aicore_pct"] == 0
    assert round(table[1]["hbm_used_mb"] * 100 / 65536) == busy["hbm_usage_pct"]
    assert table[1]["power_w"] == common[1]["chips"][0]["power_w"]
    # with -c 0 the same answer (one chip per 910B NPU)
    r = booted_node.npu_smi("info", "-t", "usages", "-i", "1", "-c", "0")
    assert r.returncode == 0 and parse_npu_smi_chip_values(r.stdout, "usages")["chips"][0]["aicore_pct"] == 87


def test_usages_rejects_what_the_tool_rejects(booted_node):
    for args in (["-t", "usages"], ["-t", "common", "-i"], ["-t", "usages", "-i", "x"],
                 ["-t", "usages", "-i", "0", "-c", "1"], ["-t", "common", "-i", "0", "-x", "0"]):
        r = booted_node.npu_smi("info", *args)
        assert r.returncode == 1 and r.stdout.startswith("Error"), (args, r.stdout)
    r = booted_node.npu_smi("info", "-t", "usages", "-i", "2")  # two NPUs: 0 and 1
    assert r.returncode == 1 and "invalid" in r.stdout


def test_usages_before_first_boot_is_8005(node, packages):
    assert node.install(packages.pkg("driver"), "--full", "--quiet").returncode == 0
    node.p("/dev/davinci_manager").unlink(missing_ok=True)
    r = node.npu_smi("info", "-t", "usages", "-i", "0")
    assert r.returncode == 1 and r.stdout.strip() == DCMI_8005


def test_health_and_ecc_print_the_guides_layout_and_follow_faults(booted_node):
    """`npu-smi info -t health|ecc -i N` as MindCluster FaultDiag's guide prints them
    (tests/unit/plugins/fixtures/npu_smi_health.txt, npu_smi_ecc.txt), read by the collection's parsers."""
    from pathlib import Path

    from ansible_collections.ascendops.cluster.plugins.module_utils.npu_smi import (
        ecc_problems,
        parse_npu_smi_ecc,
        parse_npu_smi_health,
    )

    fixtures = Path(__file__).resolve().parents[1] / "unit" / "plugins" / "fixtures"
    r = booted_node.npu_smi("info", "-t", "health", "-i", "0")
    assert r.returncode == 0 and r.stdout == (fixtures / "npu_smi_health.txt").read_text()
    r = booted_node.npu_smi("info", "-t", "ecc", "-i", "0")
    assert r.returncode == 0 and r.stdout == (fixtures / "npu_smi_ecc.txt").read_text()
    assert booted_node.sim("fault", "health", "1", "Alarm").returncode == 0
    assert booted_node.sim("fault", "ecc", "1", "2", "4").returncode == 0
    assert parse_npu_smi_health(booted_node.npu_smi("info", "-t", "health", "-i", "1").stdout)["health"] == "Alarm"
    assert ecc_problems(parse_npu_smi_ecc(booted_node.npu_smi("info", "-t", "ecc", "-i", "1").stdout)) == [
        "chip 0: 2 HBM double-bit (uncorrectable) ECC errors",
        "chip 0: 4 HBM pages isolated (single-bit 0, double-bit 4; more than 0)"]
    assert booted_node.sim("fault", "clear").returncode == 0
    assert ecc_problems(parse_npu_smi_ecc(booted_node.npu_smi("info", "-t", "ecc", "-i", "1").stdout)) == []
    assert booted_node.npu_smi("info", "-t", "ecc", "-i", "9").returncode == 1
