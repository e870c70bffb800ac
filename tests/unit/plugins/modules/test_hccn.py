"""Modules hccn and hccn_info against a fake hccn_tool that follows the vendor formats."""

from __future__ import annotations

import json
import os

import pytest
from ansible_collections.ascendops.cluster.plugins.modules import hccn, hccn_info
from ansible_collections.ascendops.cluster.tests.unit.plugins.modules.ascend_module_harness import write_script

# State in a JSON file next to the script; every call is logged; BUSY_FILE counts busy answers.
FAKE = r'''#!/usr/bin/env python3
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
state_path = os.path.join(here, "state.json")
st = json.load(open(state_path))
with open(os.path.join(here, "calls.log"), "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\n")
if st.get("busy", 0) > 0:
    st["busy"] -= 1
    json.dump(st, open(state_path, "w"))
    print("hccn_tool is busy, please try again"); sys.exit(1)
if st.get("dead"):
    print("dcmi module initialize failed. ret is -8005"); sys.exit(1)
a = sys.argv[1:]
dev = st["devices"].get(a[1])
if dev is None:
    print("Parameter error: invalid device id"); sys.exit(1)
cmd, mode, rest = a[2], a[3], a[4:]
kv = dict(zip(rest[::2], rest[1::2]))
down = dev.get("link", "UP") == "DOWN"
if down and mode == "-g" and cmd in ("-prio_tc", "-pfc", "-dscp_to_tc", "-mtu"):
    print("Link status is down"); sys.exit(1)  # real 910B nodes (ascend-facts.md, third round)
if mode == "-s":
    if cmd == "-ip":
        dev["address"], dev["netmask"] = kv["address"], kv["netmask"]
    elif cmd == "-gateway":
        dev["gateway"] = kv["gateway"]
    elif cmd == "-netdetect":
        dev["netdetect"] = kv["address"]
    elif cmd == "-tls":
        dev["tls"] = int(kv["enable"])
    elif cmd == "-dscp_to_tc":
        dev.setdefault("dscp_tc", {})[kv["dscp"]] = int(kv["tc"])
    elif cmd == "-pfc":
        dev["pfc"] = kv["priority"]
    elif cmd == "-mtu":
        dev["mtu"] = int(kv["size"])
    json.dump(st, open(state_path, "w"))
    print("Cmd executed successfully!"); sys.exit(0)
g = lambda k: dev.get(k) or ""
out = {
    "-ip": "ipaddr:%s\nnetmask:%s" % (g("address"), g("netmask")),
    "-gateway": "default gateway:%s, Iface:eth%s" % (g("gateway"), a[1]),
    "-netdetect": "netdetect address: %s" % g("netdetect"),
    "-tls": "dev_id:%s, tls switch[%d](0:disable, 1:enable), tls preconfigured[1](0:non-preset, 1:preset)"
            % (a[1], dev.get("tls", 1)),
    "-link": "link status: %s" % dev.get("link", "UP"),
    "-net_health": "net health status: %s" % dev.get("health", "Success"),
    "-speed": "Speed: Unknown!" if down else "Speed: 100000 Mb/s",
    "-prio_tc": "prio_tc map 0,0,1,1,2,2,3,3",
    "-pfc": "PFC configuration:\npriority   0 1 2 3 4 5 6 7\nenabled    "
            + dev.get("pfc", "0,0,0,0,0,0,0,0").replace(",", " "),
    "-dscp_to_tc": "dscp:%s tc:%d" % (kv.get("dscp"), dev.get("dscp_tc", {}).get(kv.get("dscp"), 0)),
    "-mtu": "mtu:%d" % dev.get("mtu", 1500),
    # MindCluster FaultDiag's user guide (fixtures/README-health-checks.md), short
    "-optical": "optical info:\npresent              : %s\nTx Power             : 4.4035 mW\n"
                "Rx Power             : %s mW\nRxPower Low Thres    : 0.1445 mW"
                % (dev.get("optics", "present"), dev.get("rx_mw", "1.0189")),
    "-link_stat": "[device {0}]current time        : Wed Jun  7 10:08:28 2023\n[device {0}]link up count       : 1\n"
                  "[device {0}]link change records :\n[device {0}]    Wed Jun  7 09:00:00 2023    LINK UP".format(a[1]),
    # hccn_tool's own layout (fixtures/hccn_tool/outputs.json stat_get), a few of its counters
    "-stat": dev.get("stat_text") or "packet statistics:\nmac_tx_mac_pause_num:0\nmac_rx_pfc_pri4_pkt_num:%d\n"
             "mac_rx_bad_pkt_num:0\nmac_rx_fcs_err_pkt_num:0\nroce_rx_err_pkt_num:%d\nroce_tx_err_pkt_num:0"
             % (dev.get("pfc4", 0), dev.get("rx_err", 0)),
}.get(cmd)
if cmd == "-ping" and down and st.get("ping_refused_when_down"):
    print("Link status is down"); sys.exit(1)
if cmd == "-ping":
    n = int(kv.get("pkt", "3")); r = n if kv["address"] in st.get("reachable", []) else 0
    out = "device %s PING %s\n%d packets transmitted, %d received, %.2f%% packet loss" % (
        a[1], kv["address"], n, r, 100.0 * (n - r) / n)
print(out)
'''


# What the fake's optics and link history read as (a working port, no link change in the last hour)
HEALTHY = {"optical": {"present": True, "tx_power_mw": [4.4035], "rx_power_mw": [1.0189], "tx_power_low_mw": None,
                       "rx_power_low_mw": 0.1445, "tx_los": None, "rx_los": None}, "optical_error": None,
           "link_stat": {"up_count": 1, "down_count": None, "downs_ago_s": []}, "link_stat_error": None}


class Fake:
    def __init__(self, tmp_path, devices=2, **extra):
        self.dir = tmp_path
        self.path = write_script(tmp_path / "hccn_tool", FAKE)
        state = {"devices": {str(i): {} for i in range(devices)}}
        state.update(extra)
        self.save(state)

    def save(self, state):
        (self.dir / "state.json").write_text(json.dumps(state))

    def state(self):
        return json.loads((self.dir / "state.json").read_text())

    def calls(self):
        log = self.dir / "calls.log"
        return log.read_text().splitlines() if log.exists() else []


ARGS = {"device": 1, "address": "192.168.121.102", "netmask": "255.255.255.0", "gateway": "192.168.121.1",
        "netdetect": "192.168.121.1", "tls": False, "delay": 0.0}


def test_hccn_configures_then_is_idempotent(run_module, tmp_path):
    fake = Fake(tmp_path)
    result = run_module(hccn.main, dict(ARGS, hccn_tool=fake.path), diff=True)
    assert result["changed"] and not result.get("failed"), result
    assert fake.state()["devices"]["1"] == {"address": "192.168.121.102", "netmask": "255.255.255.0",
                                            "gateway": "192.168.121.1", "netdetect": "192.168.121.1", "tls": 0}
    assert result["commands"][0] == "-i 1 -ip -s address 192.168.121.102 netmask 255.255.255.0"
    assert "address: \n" in result["diff"]["before"] and "address: 192.168.121.102\n" in result["diff"]["after"]
    assert "tls: enabled" in result["diff"]["before"] and "tls: disabled" in result["diff"]["after"]
    again = run_module(hccn.main, dict(ARGS, hccn_tool=fake.path))
    assert not again["changed"] and again["commands"] == []


def test_hccn_check_mode_reports_and_changes_nothing(run_module, tmp_path):
    fake = Fake(tmp_path)
    result = run_module(hccn.main, dict(ARGS, hccn_tool=fake.path), check_mode=True, diff=True)
    assert result["changed"] and result["after"]["address"] == "192.168.121.102"
    assert fake.state()["devices"]["1"] == {}
    assert not [c for c in fake.calls() if " -s " in c]


def test_hccn_retries_busy(run_module, tmp_path):
    fake = Fake(tmp_path, busy=2)
    result = run_module(hccn.main, dict(ARGS, hccn_tool=fake.path))
    assert result["changed"] and not result.get("failed")
    assert fake.calls()[:3] == ["-i 1 -ip -g"] * 3


def test_hccn_fails_with_the_tool_message(run_module, tmp_path):
    fake = Fake(tmp_path, dead=True)
    result = run_module(hccn.main, dict(ARGS, hccn_tool=fake.path))
    assert result["failed"]
    assert "dcmi module initialize failed. ret is -8005" in result["msg"] and "device 1" in result["msg"]


def test_hccn_missing_tool_names_the_driver(run_module, tmp_path):
    result = run_module(hccn.main, dict(ARGS, hccn_tool=str(tmp_path / "nope")))
    assert result["failed"] and "NPU driver" in result["msg"]


@pytest.mark.parametrize("main", [hccn.main, hccn_info.main])
def test_missing_tool_fails_with_the_tasks_message_before_any_call(run_module, tmp_path, main):
    """The roce role's refusal (missing_msg) replaces its own stat of hccn_tool: same message, nothing run."""
    fake = Fake(tmp_path)
    os.chmod(fake.path, 0o644)
    args = dict(ARGS) if main is hccn.main else {"devices": [0]}
    args.update(hccn_tool=fake.path,
                missing_msg="node1: /x/hccn_tool (roce_hccn_tool) is missing: run the npu_driver stage")
    result = run_module(main, args)
    assert result["failed"] and result["msg"] == args["missing_msg"]
    assert fake.calls() == []


def test_hccn_info_reports_every_device_and_pings(run_module, tmp_path):
    fake = Fake(tmp_path, reachable=["192.168.121.103"])
    state = fake.state()
    state["devices"]["0"] = {"address": "192.168.121.101", "netmask": "255.255.255.0", "tls": 0}
    state["devices"]["1"] = {"link": "DOWN", "health": "Fault"}
    fake.save(state)
    result = run_module(hccn_info.main, {"devices": [0, 1], "hccn_tool": fake.path, "ping_count": 2,
                                         "phy_ids": ["4", None], "ping": [
        {"device": 0, "address": "192.168.121.103"}, {"device_id": "0", "address": "192.168.121.104", "host": "n2"}]})
    assert not result["changed"] and not result.get("failed"), result
    assert result["devices"] == [
        {"device_id": "0", "phy_id": "4", "address": "192.168.121.101", "netmask": "255.255.255.0", "gateway": None,
         "netdetect": None, "tls": False, "link": "UP", "health": "Success", "speed_mbps": 100000, **HEALTHY},
        {"device_id": "1", "phy_id": "1", "address": None, "netmask": None, "gateway": None, "netdetect": None,
         "tls": True, "link": "DOWN", "health": "Fault", "speed_mbps": None, **HEALTHY},  # Speed: Unknown!
    ]
    assert [(p["address"], p["received"], p["ok"]) for p in result["pings"]] == [
        ("192.168.121.103", 2, True), ("192.168.121.104", 0, False)]
    assert result["pings"][1]["host"] == "n2" and result["pings"][1]["device"] == "0"
    assert "-i 0 -ping -g address 192.168.121.103 pkt 2" in fake.calls()


@pytest.mark.parametrize("args,needle", [
    ({"devices": [0]}, "ret is -8005"),
    ({}, "no /dev/davinciN"),
])
def test_hccn_info_fails_clearly_without_a_running_driver(run_module, tmp_path, monkeypatch, args, needle):
    from ansible_collections.ascendops.cluster.plugins.module_utils import hccn_tool

    monkeypatch.setattr(hccn_tool, "discover_devices", lambda dev_dir="/dev": [])
    fake = Fake(tmp_path, dead=True)
    result = run_module(hccn_info.main, dict(args, hccn_tool=fake.path))
    assert result["failed"] and needle in result["msg"] and "NPU driver" in result["msg"]


def test_discover_devices(tmp_path):
    from ansible_collections.ascendops.cluster.plugins.module_utils.hccn_tool import discover_devices

    for name in ("davinci0", "davinci10", "davinci1", "davinci_manager", "hisi_hdc"):
        (tmp_path / name).write_text("")
    assert discover_devices(str(tmp_path)) == [0, 1, 10]


PORTS = [{"device": 0, "address": "192.168.121.101", "netmask": "255.255.255.0", "gateway": "192.168.121.1",
          "netdetect": "192.168.121.1", "tls": False},
         {"device": 1, "address": "192.168.121.102", "netmask": "255.255.255.0", "gateway": "192.168.121.1",
          "netdetect": "192.168.121.1", "tls": False}]


def test_hccn_ports_configures_every_port_in_one_call_then_reads_once(run_module, tmp_path):
    fake = Fake(tmp_path)
    result = run_module(hccn.main, {"ports": PORTS, "status": True, "phy_ids": ["4", ""], "hccn_tool": fake.path,
                                    "delay": 0.0}, diff=True)
    assert result["changed"] and not result.get("failed"), result
    for port in PORTS:
        assert fake.state()["devices"][str(port["device"])] == {
            "address": port["address"], "netmask": "255.255.255.0", "gateway": "192.168.121.1",
            "netdetect": "192.168.121.1", "tls": 0}
    assert [d["device_id"] for d in result["devices"]] == ["0", "1"]
    assert result["devices"][0]["phy_id"] == "4" and result["devices"][1]["phy_id"] == "1"
    assert result["devices"][1]["address"] == "192.168.121.102" and result["devices"][1]["link"] == "UP"
    assert len(result["diff"]) == 2 and "address: 192.168.121.102\n" in result["diff"][1]["after"]
    calls = fake.calls()
    # every port is read before the first one is set
    first_set = next(i for i, c in enumerate(calls) if " -s " in c)
    assert {c.split()[1] for c in calls[:first_set]} == {"0", "1"}

    before = len(fake.calls())
    again = run_module(hccn.main, {"ports": PORTS, "status": True, "hccn_tool": fake.path, "delay": 0.0}, diff=True)
    assert not again["changed"] and again["commands"] == [] and again["diff"] == []
    reads = fake.calls()[before:]
    # a port that is right is read once: address, gateway, net-detect, TLS, link, health, speed, optics,
    # link history
    assert len(reads) == 2 * 9 and not [c for c in reads if " -s " in c]
    assert [d["health"] for d in again["devices"]] == ["Success", "Success"]


def test_hccn_ports_check_mode_shows_only_the_drifted_port(run_module, tmp_path):
    fake = Fake(tmp_path)
    run_module(hccn.main, {"ports": PORTS, "hccn_tool": fake.path, "delay": 0.0})
    state = fake.state()
    state["devices"]["1"]["address"] = "192.168.121.150"
    fake.save(state)
    before = len(fake.calls())
    result = run_module(hccn.main, {"ports": PORTS, "status": True, "hccn_tool": fake.path, "delay": 0.0},
                        check_mode=True, diff=True)
    assert result["changed"]
    assert result["commands"] == ["-i 1 -ip -s address 192.168.121.102 netmask 255.255.255.0"]
    assert [d["before_header"] for d in result["diff"]] == ["hccn_tool -i 1"]
    assert "address: 192.168.121.150\n" in result["diff"][0]["before"]
    assert "address: 192.168.121.102\n" in result["diff"][0]["after"]
    # devices: the hardware as it is (nothing was set)
    assert result["devices"][1]["address"] == "192.168.121.150"
    assert fake.state()["devices"]["1"]["address"] == "192.168.121.150"
    assert not [c for c in fake.calls()[before:] if " -s " in c]


def test_hccn_ports_sets_nothing_when_a_later_port_cannot_be_read(run_module, tmp_path):
    fake = Fake(tmp_path, devices=1)
    result = run_module(hccn.main, {"ports": PORTS, "hccn_tool": fake.path, "delay": 0.0})
    assert result["failed"] and "device 1" in result["msg"] and "invalid device id" in result["msg"]
    assert fake.state()["devices"]["0"] == {}
    assert not [c for c in fake.calls() if " -s " in c]


def test_hccn_ports_needs_address_with_netmask(run_module, tmp_path):
    fake = Fake(tmp_path)
    result = run_module(hccn.main, {"ports": [{"device": 0, "address": "192.168.121.101"}], "hccn_tool": fake.path})
    assert result["failed"] and "netmask" in result["msg"]


def test_hccn_info_without_status_only_pings(run_module, tmp_path):
    fake = Fake(tmp_path, reachable=["192.168.121.103"])
    result = run_module(hccn_info.main, {"status": False, "hccn_tool": fake.path,
                                         "ping": [{"device": 0, "address": "192.168.121.103"}]})
    assert result["devices"] == [] and result["pings"][0]["ok"]
    assert fake.calls() == ["-i 0 -ping -g address 192.168.121.103"]


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the file is made root's (chown)")


@needs_root
def test_hccn_ports_merges_hccn_conf_keeping_the_site_keys(run_module, tmp_path):
    fake = Fake(tmp_path)
    conf = tmp_path / "hccn.conf"
    conf.write_text("# site\nbitmap_0=0,0,0,0,0,0,0,1\naddress_1=10.0.0.9\n")
    os.chmod(conf, 0o600)
    args = {"ports": PORTS, "conf_file": str(conf), "send_arp_status": 1, "hccn_tool": fake.path, "delay": 0.0}
    checked = run_module(hccn.main, dict(args), check_mode=True, diff=True)
    assert checked["changed"] and checked["conf_changed"]
    assert conf.read_text() == "# site\nbitmap_0=0,0,0,0,0,0,0,1\naddress_1=10.0.0.9\n"  # check mode writes nothing
    assert checked["diff"][-1]["before_header"] == str(conf)
    assert "address_1=192.168.121.102" in checked["diff"][-1]["after"]
    result = run_module(hccn.main, dict(args))
    assert result["changed"] and result["conf_changed"]
    text = conf.read_text()
    assert text.startswith("# site\nbitmap_0=0,0,0,0,0,0,0,1\naddress_1=192.168.121.102\n")
    for line in ("address_0=192.168.121.101", "netmask_0=255.255.255.0", "netdetect_0=192.168.121.1",
                 "gateway_0=192.168.121.1", "send_arp_status_0=1", "tls_enable_0=0", "tls_enable_1=0"):
        assert line in text.splitlines()
    assert oct(os.stat(conf).st_mode & 0o777) == "0o644"
    again = run_module(hccn.main, dict(args), diff=True)
    assert not again["changed"] and not again["conf_changed"] and again["diff"] == []
    os.chmod(conf, 0o666)  # a mode drift alone is a change too
    drift = run_module(hccn.main, dict(args), check_mode=True)
    assert drift["changed"] and drift["conf_changed"]


@needs_root
def test_hccn_ports_writes_a_missing_hccn_conf(run_module, tmp_path):
    fake = Fake(tmp_path)
    conf = tmp_path / "hccn.conf"
    result = run_module(hccn.main, {"ports": PORTS[:1], "conf_file": str(conf), "hccn_tool": fake.path,
                                    "delay": 0.0})
    assert result["conf_changed"] and conf.read_text().splitlines()[0] == "address_0=192.168.121.101"


def test_hccn_conf_file_needs_ports(run_module, tmp_path):
    fake = Fake(tmp_path)
    result = run_module(hccn.main, dict(ARGS, hccn_tool=fake.path, conf_file=str(tmp_path / "c")))
    assert result["failed"] and "ports" in result["msg"]


def test_hccn_ports_a_down_port_is_recorded_not_failed_and_its_qos_set_later(run_module, tmp_path):
    """A cable fault: QoS reads fail with "Link status is down" and the speed is Unknown on one port; the
    module sets what it can, reports the port (no driver hint) and sets its QoS once the link is up."""
    fake = Fake(tmp_path)
    state = fake.state()
    state["devices"]["1"]["link"] = "DOWN"
    state["devices"]["1"]["health"] = "Fault"
    fake.save(state)
    args = {"ports": PORTS, "status": True, "rdma_dscp": 33, "rdma_priority": 4, "mtu": 9000,
            "hccn_tool": fake.path, "delay": 0.0}
    result = run_module(hccn.main, args, diff=True)
    assert not result.get("failed"), result
    assert "-i 0 -pfc -s priority 0,0,0,0,1,0,0,0" in result["commands"]
    assert not [c for c in result["commands"] if c.startswith("-i 1 -") and c.split()[2] in ("-pfc", "-mtu")]
    assert "-i 1 -ip -s address 192.168.121.102 netmask 255.255.255.0" in result["commands"]
    assert result["ports"][1]["qos_link_down"] and "qos_link_down" not in result["ports"][0]
    down = result["devices"][1]
    assert (down["link"], down["health"], down["speed_mbps"], down["qos_link_down"]) == ("DOWN", "Fault", None, True)
    assert result["devices"][0]["speed_mbps"] == 100000
    assert fake.state()["devices"]["0"]["pfc"] == "0,0,0,0,1,0,0,0" and "pfc" not in fake.state()["devices"]["1"]
    # the cable is fixed: the next run sets the port's QoS
    state = fake.state()
    state["devices"]["1"].update(link="UP", health="Success")
    fake.save(state)
    again = run_module(hccn.main, args)
    assert again["changed"] and not again.get("failed"), again
    assert again["commands"] == ["-i 1 -dscp_to_tc -s dscp 33 tc 2", "-i 1 -pfc -s priority 0,0,0,0,1,0,0,0",
                                 "-i 1 -mtu -s size 9000"]


def test_hccn_info_a_down_port_refusing_a_ping_is_a_failed_ping_not_a_driver_failure(run_module, tmp_path):
    fake = Fake(tmp_path, ping_refused_when_down=True, reachable=["192.168.121.103"])
    state = fake.state()
    state["devices"]["1"]["link"] = "DOWN"
    fake.save(state)
    result = run_module(hccn_info.main, {"devices": [1], "hccn_tool": fake.path, "ping_count": 2,
                                         "ping": [{"device": 1, "address": "192.168.121.103"}]})
    assert not result.get("failed"), result
    assert result["devices"][0]["speed_mbps"] is None
    ping = result["pings"][0]
    assert (ping["ok"], ping["received"], ping["transmitted"], ping["link_down"]) == (False, 0, 2, True)


def test_hccn_a_link_down_refusal_of_a_set_names_the_cable_not_the_driver(run_module, tmp_path):
    # a tool that refuses every call with the vendor's link-down answer
    path = write_script(tmp_path / "hccn_tool", "#!/bin/sh\necho 'Link status is down'\nexit 1\n")
    result = run_module(hccn.main, dict(ARGS, hccn_tool=path))
    assert result["failed"] and "cable, optics or switch port" in result["msg"]
    assert "NPU driver" not in result["msg"]


def test_hccn_info_reads_the_packet_statistics_only_when_asked(run_module, tmp_path):
    fake = Fake(tmp_path)
    state = fake.state()
    state["devices"]["1"] = {"pfc4": 1532, "rx_err": 7}
    fake.save(state)
    result = run_module(hccn_info.main, {"devices": [0, 1], "hccn_tool": fake.path, "stat": True})
    assert not result.get("failed"), result
    assert [d["stat"] for d in result["devices"]] == [
        {"mac_tx_mac_pause_num": 0, "mac_rx_pfc_pri4_pkt_num": p, "mac_rx_bad_pkt_num": 0, "mac_rx_fcs_err_pkt_num": 0,
         "roce_rx_err_pkt_num": e, "roce_tx_err_pkt_num": 0} for p, e in ((0, 0), (1532, 7))]
    assert [d["stat_error"] for d in result["devices"]] == [None, None]
    assert [c for c in fake.calls() if "-stat" in c] == ["-i 0 -stat -g", "-i 1 -stat -g"]
    # off (the default): no -stat command at all, and no stat key
    (tmp_path / "calls.log").unlink()
    result = run_module(hccn_info.main, {"devices": [0, 1], "hccn_tool": fake.path})
    assert all("stat" not in d and "stat_error" not in d for d in result["devices"]), result
    assert not [c for c in fake.calls() if "-stat" in c] and fake.calls()


def test_hccn_info_an_unreadable_statistics_line_is_reported_for_the_port(run_module, tmp_path):
    fake = Fake(tmp_path, devices=1)
    state = fake.state()
    state["devices"]["0"] = {"stat_text": "packet statistics:\nroce_rx_err_pkt_num:n/a"}
    fake.save(state)
    result = run_module(hccn_info.main, {"devices": [0], "hccn_tool": fake.path, "stat": True})
    (dev,) = result["devices"]
    assert dev["stat"] is None and "could not read the line 'roce_rx_err_pkt_num:n/a'" in dev["stat_error"], dev


def test_hccn_ports_with_status_reads_the_statistics_when_asked(run_module, tmp_path):
    fake = Fake(tmp_path)
    result = run_module(hccn.main, {"ports": PORTS, "status": True, "stat": True, "hccn_tool": fake.path,
                                    "delay": 0.0})
    assert not result.get("failed"), result
    assert [d["stat"]["roce_rx_err_pkt_num"] for d in result["devices"]] == [0, 0]
    # the changed ports are read back: -stat -g once before and once after, per port
    assert sorted(c for c in fake.calls() if "-stat" in c) == ["-i 0 -stat -g"] * 2 + ["-i 1 -stat -g"] * 2
