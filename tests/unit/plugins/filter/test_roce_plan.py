"""roce_plan: the cluster's device-NIC plan, expanded and validated as a whole."""

import pytest
from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import FilterModule, roce_plan


def node(host, **kw):
    base = {"host": host, "devices": 2, "model": "910b", "netmask": "255.255.255.0",
            "gateway": "192.168.121.1", "netdetect": None, "tls": False,
            "host_networks": ["eth0 10.88.0.8/255.255.0.0"]}
    base.update(kw)
    return base


def good():
    return [node("node1", addresses=["192.168.121.101", "192.168.121.102"]),
            node("node2", address_base="192.168.121.100", address_offset=3)]


def test_explicit_and_rule_expand():
    result = roce_plan(good())
    assert result["errors"] == []
    assert [(d["host"], d["device_id"], d["address"]) for d in result["devices"]] == [
        ("node1", "0", "192.168.121.101"), ("node1", "1", "192.168.121.102"),
        ("node2", "0", "192.168.121.103"), ("node2", "1", "192.168.121.104")]
    first = result["devices"][0]
    assert first == {"host": "node1", "device_id": "0", "address": "192.168.121.101", "netmask": "255.255.255.0",
                     "prefix": 24, "gateway": "192.168.121.1", "netdetect": "192.168.121.1", "tls": False}


def test_eight_npus_by_rule():
    nodes = [node(f"n{i}", devices=8, address_base="29.1.0.0", address_offset=10 * i, netmask="255.255.0.0",
                  gateway="29.1.0.1") for i in (1, 2, 3)]
    result = roce_plan(nodes)
    assert result["errors"] == []
    assert len(result["devices"]) == 24
    assert result["devices"][-1]["address"] == "29.1.0.37"


def errors_of(nodes):
    errors = roce_plan(nodes)["errors"]
    assert errors
    return errors


def test_duplicate_address_names_both():
    nodes = good()
    nodes[1]["address_offset"] = 2  # node2 NPU 0 = 102 = node1 NPU 1
    assert errors_of(nodes) == ["node2 NPU 0: address 192.168.121.102 is also used by node1 NPU 1"]


def test_missing_addresses():
    nodes = good()
    nodes[0]["addresses"] = ["192.168.121.101"]
    nodes[1] = node("node2")
    errs = errors_of(nodes)
    assert errs[0] == "node1 NPU 1: no address (roce_device_addresses has 1 entries, the node has 2 device NICs)"
    assert errs[1].startswith("node2: no device addresses: set roce_device_addresses")


def test_too_many_and_malformed_addresses():
    nodes = good()
    nodes[0]["addresses"] = ["192.168.121.101", "192.168.121.300", "192.168.121.110"]
    errs = errors_of(nodes)
    assert "node1 NPU 1: '192.168.121.300' is not an IPv4 address" in errs
    assert any(e.startswith("node1: roce_device_addresses has 3 entries for 2 device NICs") for e in errs)


def test_910b_one_subnet_per_node_and_gateway_inside():
    nodes = good()
    nodes[0]["addresses"] = ["192.168.121.101", "192.168.122.102"]
    assert errors_of(nodes) == [
        "node1 NPU 1: address 192.168.122.102 is outside the subnet 192.168.121.0/24 of node1 NPU 0 "
        "(910B: one subnet per node)"]
    nodes = good()
    nodes[1]["gateway"] = "192.168.120.1"
    assert errors_of(nodes) == ["node2 NPU 0: gateway 192.168.120.1 is outside the device subnet 192.168.121.0/24"]


def test_a3_allows_subnets_per_device_but_not_a_foreign_gateway():
    nodes = [node("a3n1", model="a3", netmask="255.255.255.128",
                  addresses=["192.168.121.10", "192.168.121.200"], gateway="192.168.121.1")]
    assert errors_of(nodes) == ["a3n1 NPU 1: gateway 192.168.121.1 is outside the device subnet 192.168.121.128/25"]


def test_address_inside_a_host_nic_subnet():
    nodes = good()
    nodes[1]["host_networks"] = ["eth0 10.88.0.9/255.255.0.0", "bond0 192.168.121.70/255.255.255.192"]
    errs = errors_of(nodes)
    assert errs[0] == "node1 NPU 0: address 192.168.121.101 is inside host NIC bond0 subnet 192.168.121.64/26 of node2"
    assert len(errs) == 4


def test_tls_must_match():
    nodes = good()
    nodes[1]["tls"] = True
    assert errors_of(nodes) == [
        "roce_tls differs between nodes (it must be the same on every device of a job): off: node1; on: node2"]


@pytest.mark.parametrize("key,value,needle", [
    ("netmask", "255.0.255.0", "node1: roce_netmask '255.0.255.0' is not a netmask"),
    ("gateway", "gw", "node1: roce_gateway 'gw' is not an IPv4 address"),
    ("netdetect", "x.y", "node1: roce_netdetect 'x.y' is not an IPv4 address"),
    ("devices", 0, "node1: roce_devices_per_node must be a positive integer"),
])
def test_malformed_settings(key, value, needle):
    nodes = good()
    nodes[0][key] = value
    assert any(e.startswith(needle) for e in errors_of(nodes))


def test_network_address_and_gateway_as_device():
    nodes = [node("node1", addresses=["192.168.121.0", "192.168.121.1"])]
    assert errors_of(nodes) == [
        "node1 NPU 0: address 192.168.121.0 is the network or broadcast address of 192.168.121.0/24",
        "node1 NPU 1: address 192.168.121.1 is the gateway"]


def test_filter_registered():
    assert FilterModule().filters()["roce_plan"] is roce_plan


def test_host_networks_from_interface_facts():
    nodes = good()
    nodes[0]["host_networks"] = [
        {"device": "lo", "ipv4": {"address": "127.0.0.1", "netmask": "255.0.0.0"}},
        {"device": "eth0", "ipv4": {"address": "10.88.0.8", "netmask": "255.255.0.0"},
         "ipv4_secondaries": [{"address": "192.168.121.99", "netmask": "255.255.255.0"}]},
        {"device": "eth9"},
    ]
    errs = errors_of(nodes)
    assert errs[0] == "node1 NPU 0: address 192.168.121.101 is inside host NIC eth0 subnet 192.168.121.0/24 of node1"
    assert len(errs) == 4


def test_roce_problems_names_node_npu_and_peer():
    from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import roce_problems

    plan = roce_plan(good())["devices"]
    mine = [d for d in plan if d["host"] == "node1"]
    info = {
        "devices": [
            {"device_id": "0", "address": "192.168.121.101", "netmask": "255.255.255.0", "link": "UP",
             "health": "Success", "speed_mbps": 100000},
            {"device_id": "1", "address": "192.168.121.99", "netmask": "255.255.255.0", "link": "DOWN",
             "health": "Fault", "speed_mbps": 25000},
        ],
        "pings": [
            dict(plan[2], device="0", transmitted=3, received=3, loss_pct=0.0, ok=True),
            dict(plan[3], device="1", transmitted=3, received=0, loss_pct=100.0, ok=False),
        ],
    }
    assert roce_problems(info, mine, "node1", 100000) == [
        "node1 NPU 1: link is DOWN (net health Fault, speed 25000 Mb/s); likely cause: cable, optics or switch "
        "port (RDMA QoS of this port is set on a later run once its link is up)",
        "node1 NPU 1: address is 192.168.121.99/255.255.255.0, the plan says 192.168.121.102/255.255.255.0",
        "node1 NPU 1 cannot reach node2 NPU 1 (192.168.121.104): 0/3 packets received",
    ]
    info["devices"][1].update(address="192.168.121.102", link="UP", health="Success", speed_mbps=100000)
    info["pings"][1].update(received=3, ok=True)
    assert roce_problems(info, mine, "node1", 100000) == []
    assert roce_problems(info, mine, "node1") == []
    info["devices"][1]["speed_mbps"] = 25000
    assert roce_problems(info, mine, "node1", 100000) == ["node1 NPU 1: speed is 25000 Mb/s, expected 100000"]


def _report_info(**port1):
    port = {"device_id": "1", "address": "192.168.121.102", "netmask": "255.255.255.0", "netdetect": None,
            "link": "UP", "health": "Success", "speed_mbps": 100000}
    port.update(port1)
    return {"devices": [{"device_id": "0", "address": "192.168.121.101", "netmask": "255.255.255.0",
                         "netdetect": None, "link": "UP", "health": "Success", "speed_mbps": 100000}, port]}


def test_roce_report_names_a_down_port_or_unknown_speed_as_cable_not_driver():
    from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import roce_report

    mine = [d for d in roce_plan(good())["devices"] if d["host"] == "node1"]
    # a port without a link (its QoS could not be read): `-speed -g` printed "Speed: Unknown!"
    report = roce_report(_report_info(link="DOWN", health="Fault", speed_mbps=None, qos_link_down=True), mine,
                         "node1", 100000)
    assert report == {"problems": [
        "node1 NPU 1: link is DOWN (net health Fault, speed Unknown); likely cause: cable, optics or switch port "
        "(RDMA QoS of this port is set on a later run once its link is up)"], "notes": []}
    assert "driver" not in report["problems"][0]
    report = roce_report(_report_info(speed_mbps=None), mine, "node1", 100000)
    assert report["problems"] == ["node1 NPU 1: speed is Unknown (hccn_tool -speed -g) with the link UP; likely "
                                  "cause: cable, optics or switch port"]
    report = roce_report(_report_info(qos_link_down=True), mine, "node1")
    assert report["problems"] and "Link status is down" in report["problems"][0]
    assert "cable, optics or switch port" in report["problems"][0]
    pings = {"pings": [{"host": "node2", "device_id": "1", "device": "1", "address": "192.168.121.104",
                        "transmitted": 3, "received": 0, "ok": False, "link_down": True}]}
    assert roce_report(pings, mine, "node1")["problems"] == [
        "node1 NPU 1 cannot reach node2 NPU 1 (192.168.121.104): 0/3 packets received (the link of node1 NPU 1 "
        "is down)"]


@pytest.mark.parametrize("netdetect, health, problem", [
    (None, "Init", None),  # flat L2 fabric, nothing to probe: accepted, named as a note
    ("", "Init", None),
    ("192.168.121.1", "Init", "node1 NPU 1: net health is Init: the net-detect address 192.168.121.1 has not "
                              "answered"),
    (None, "Fault", "node1 NPU 1: net health is Fault"),
    ("192.168.121.1", "Fault", "node1 NPU 1: net health is Fault"),
    ("192.168.121.1", "Success", None),
])
def test_roce_report_net_health_init_only_without_netdetect(netdetect, health, problem):
    from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import roce_report

    mine = [d for d in roce_plan(good())["devices"] if d["host"] == "node1"]
    report = roce_report(_report_info(netdetect=netdetect, health=health), mine, "node1")
    assert report["problems"] == ([problem] if problem else [])
    init_note = ["node1 NPU 1: net health Init accepted (no net-detect address configured on this port, "
                 "nothing to probe)"]
    assert report["notes"] == (init_note if health == "Init" and not netdetect else [])
    assert FilterModule().filters()["roce_report"] is roce_report


def test_roce_report_net_health_init_uses_the_plan_when_the_port_was_not_read_for_netdetect():
    from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import roce_report

    mine = [dict(d, netdetect="192.168.121.1") for d in roce_plan(good())["devices"] if d["host"] == "node1"]
    info = _report_info(health="Init")
    del info["devices"][1]["netdetect"]
    assert roce_report(info, mine, "node1")["problems"] == [
        "node1 NPU 1: net health is Init: the net-detect address 192.168.121.1 has not answered"]


# ------------------------------------------------------------------ /etc/hccn.conf merged

def test_hccn_conf_keeps_the_site_keys_and_writes_tls_enable():
    from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import roce_hccn_conf
    site = ("address_0=29.1.137.205\nnetmask_0=255.255.0.0\nnetdetect_0=29.1.0.1\ngateway_0=29.1.0.1\n"
            "send_arp_status_0=1\ntls_enable_0=1\nbitmap_0=0,0,0,1\n# kept\n")
    plan = [{"device_id": "0", "address": "10.0.0.11", "netmask": "255.255.255.0", "gateway": "10.0.0.1",
             "netdetect": "10.0.0.1", "tls": False},
            {"device_id": "1", "address": "10.0.0.12", "netmask": "255.255.255.0", "gateway": "",
             "netdetect": "", "tls": False}]
    merged = roce_hccn_conf(site, plan, 1)
    assert merged.splitlines() == [
        "address_0=10.0.0.11", "netmask_0=255.255.255.0", "netdetect_0=10.0.0.1", "gateway_0=10.0.0.1",
        "send_arp_status_0=1", "tls_enable_0=0", "bitmap_0=0,0,0,1", "# kept",
        "address_1=10.0.0.12", "netmask_1=255.255.255.0", "send_arp_status_1=1", "tls_enable_1=0"]
    assert roce_hccn_conf(merged, plan, 1) == merged
    assert FilterModule().filters()["roce_hccn_conf"] is roce_hccn_conf


def test_roce_ports_from_the_plan_leaves_unplanned_keys_unmanaged():
    from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import roce_ports

    plan = [{"host": "n1", "device_id": "0", "address": "10.0.0.1", "netmask": "255.255.255.0", "prefix": 24,
             "gateway": "10.0.0.254", "netdetect": "10.0.0.254", "tls": False},
            {"host": "n1", "device_id": 1, "address": "10.0.0.2", "netmask": "255.255.255.0", "gateway": "",
             "netdetect": None, "tls": True}]
    assert roce_ports(plan) == [
        {"device": 0, "address": "10.0.0.1", "netmask": "255.255.255.0", "tls": False, "gateway": "10.0.0.254",
         "netdetect": "10.0.0.254"},
        {"device": 1, "address": "10.0.0.2", "netmask": "255.255.255.0", "tls": True}]
    with pytest.raises(ValueError, match="device_id"):
        roce_ports([{"address": "10.0.0.1"}])


# ---- health before training (issue 43 item 8): optics and link flaps, per node and port

GOOD_OPTICS = {"present": True, "tx_power_mw": [4.4], "rx_power_mw": [1.0], "tx_power_low_mw": 0.28,
               "rx_power_low_mw": 0.14, "tx_los": "0x0", "rx_los": "0x0"}


def test_roce_report_refuses_missing_or_dark_optics_naming_node_and_port():
    from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import roce_report

    mine = [d for d in roce_plan(good())["devices"] if d["host"] == "node1"]
    fine = _report_info(optical=GOOD_OPTICS, optical_error=None)
    assert roce_report(fine, mine, "node1", optics=True)["problems"] == []
    dark = _report_info(optical=dict(GOOD_OPTICS, rx_power_mw=[0.01]), optical_error=None)
    assert roce_report(dark, mine, "node1", optics=True)["problems"] == [
        "node1 NPU 1: the optical module receives 0.01 mW, under its low threshold 0.14 mW (RX power; "
        "hccn_tool -optical -g); likely cause: optics or fibre"]
    assert roce_report(dark, mine, "node1")["problems"] == []  # optics not judged unless asked
    # a down port with no module: the module is named as the likely cause
    gone = _report_info(link="DOWN", health="Fault", speed_mbps=None, optical=dict(GOOD_OPTICS, present=False),
                        optical_error=None)
    assert roce_report(gone, mine, "node1", optics=True)["problems"] == [
        "node1 NPU 1: link is DOWN (net health Fault, speed Unknown); likely cause: no optical module (hccn_tool "
        "-optical -g: present is not present), so likely the optics or fibre (RDMA QoS of this port is set on a "
        "later run once its link is up)"]


def test_roce_report_unreadable_optics_is_a_problem_a_refused_read_a_note():
    from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import roce_report

    mine = [d for d in roce_plan(good())["devices"] if d["host"] == "node1"]
    raw = "hccn_tool -optical -g: could not read the line 'Rx Power : n/a' (expected a power in mW); output: '...'"
    report = roce_report(_report_info(optical=None, optical_error=raw), mine, "node1", optics=True)
    assert report["problems"] == [f"node1 NPU 1: {raw}"]
    refused = "-i 1 -optical -g failed (rc=1): not support"
    report = roce_report(_report_info(optical=None, optical_error=refused), mine, "node1", optics=True)
    assert report == {"problems": [], "notes": [f"node1 NPU 1: optics not read ({refused})"]}


def test_roce_report_refuses_a_flapping_link():
    from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import roce_report

    mine = [d for d in roce_plan(good())["devices"] if d["host"] == "node1"]
    flapping = _report_info(link_stat={"up_count": 9, "down_count": None, "downs_ago_s": [30, 600, 1200, 7200]},
                            link_stat_error=None)
    assert roce_report(flapping, mine, "node1", link_flaps_max=2)["problems"] == [
        "node1 NPU 1: the link went down 3 times in the last 3600 s (hccn_tool -link_stat -g; at most 2); likely "
        "cause: cable, optics or switch port"]
    assert roce_report(flapping, mine, "node1", link_flaps_max=3)["problems"] == []
    assert roce_report(flapping, mine, "node1", link_flaps_max=2, link_flap_window_s=60)["problems"] == []
    assert roce_report(flapping, mine, "node1")["problems"] == []  # -1: not judged


# ---- packet statistics (hccn_tool -stat -g): error counters refused, PFC pauses reported

QUIET_STAT = {"mac_tx_mac_pause_num": 0, "mac_rx_pfc_pri4_pkt_num": 0, "mac_tx_pfc_pri4_pkt_num": 0,
              "mac_rx_bad_pkt_num": 0, "mac_tx_bad_pkt_num": 0, "mac_rx_fcs_err_pkt_num": 0,
              "roce_rx_err_pkt_num": 0, "roce_tx_err_pkt_num": 0, "mac_rx_pfc_pkt_num": 0}


def _stat_info(port0, port1):
    info = _report_info(stat=dict(QUIET_STAT, **port1), stat_error=None)
    info["devices"][0].update(stat=dict(QUIET_STAT, **port0), stat_error=None)
    return info


def test_roce_report_error_counters_below_the_threshold_pass():
    from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import roce_report

    mine = [d for d in roce_plan(good())["devices"] if d["host"] == "node1"]
    report = roce_report(_stat_info({"roce_rx_err_pkt_num": 1000}, {"mac_rx_fcs_err_pkt_num": 999}), mine, "node1",
                         stat_max_errors=1000)
    assert report == {"problems": [], "notes": []}  # at the threshold passes; no PFC pause anywhere: no note


def test_roce_report_error_counters_above_the_threshold_name_node_npu_counter_and_value():
    from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import roce_report

    mine = [d for d in roce_plan(good())["devices"] if d["host"] == "node1"]
    info = _stat_info({"roce_tx_err_pkt_num": 1001}, {"mac_rx_fcs_err_pkt_num": 50000, "mac_tx_bad_pkt_num": 2})
    report = roce_report(info, mine, "node1", stat_max_errors=1000)
    assert report["problems"] == [
        "node1 NPU 0: roce_tx_err_pkt_num is 1001 (bad packets sent by RoCE; more than 1000, hccn_tool -stat -g, "
        "counted since the driver started or the last -stat -c); likely cause: cable, optics or switch port",
        "node1 NPU 1: mac_rx_fcs_err_pkt_num is 50000 (frames received with FCS errors; more than 1000, hccn_tool "
        "-stat -g, counted since the driver started or the last -stat -c); likely cause: cable, optics or switch port"]
    assert len(roce_report(info, mine, "node1", stat_max_errors=0)["problems"]) == 3
    # the check off (-1, the default): read counters are not judged
    assert roce_report(info, mine, "node1")["problems"] == []


def test_roce_report_pfc_pauses_are_one_note_per_node_never_a_problem():
    from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import roce_report

    mine = [d for d in roce_plan(good())["devices"] if d["host"] == "node1"]
    info = _stat_info({"mac_rx_pfc_pri4_pkt_num": 120, "mac_rx_pfc_pkt_num": 120},
                      {"mac_tx_pfc_pri4_pkt_num": 987654321, "mac_tx_mac_pause_num": 3})
    report = roce_report(info, mine, "node1", stat_max_errors=0)
    assert report == {"problems": [], "notes": [
        "node1: highest PFC/pause counter NPU 1 mac_tx_pfc_pri4_pkt_num = 987654321 (hccn_tool -stat -g since the "
        "driver started; pauses mean congestion on the path, reported only)"]}


def test_roce_report_unreadable_statistics_is_a_problem_a_refused_read_a_note():
    from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import roce_report

    mine = [d for d in roce_plan(good())["devices"] if d["host"] == "node1"]
    raw = "hccn_tool -stat -g: could not read the line 'roce_rx_err_pkt_num:n/a' (expected ...); output: '...'"
    report = roce_report(_report_info(stat=None, stat_error=raw), mine, "node1", stat_max_errors=1000)
    assert report == {"problems": [f"node1 NPU 1: {raw}"], "notes": []}
    refused = "-i 1 -stat -g failed (rc=1): not support"
    report = roce_report(_report_info(stat=None, stat_error=refused), mine, "node1", stat_max_errors=1000)
    assert report == {"problems": [], "notes": [f"node1 NPU 1: packet statistics not read ({refused})"]}


# ---- the wait for the ports to settle (issue 43 item 7)

def test_roce_unsettled_names_ports_whose_link_or_net_health_has_not_settled():
    from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import roce_unsettled

    plan = [{"device_id": "0", "netdetect": None}, {"device_id": "1", "netdetect": "192.168.121.1"},
            {"device_id": "2", "netdetect": None}]
    devices = [{"device_id": "0", "link": "UP", "health": "Init"},  # no net-detect address: Init accepted
               {"device_id": "1", "link": "UP", "health": "Init"},  # probing its address: not yet
               {"device_id": "2", "link": "DOWN", "health": "Fault"},
               {"device_id": "3", "link": "UP", "health": "Success", "netdetect": "192.168.121.1"}]
    assert roce_unsettled(devices, plan) == ["NPU 1: link UP, net health Init", "NPU 2: link DOWN, net health Fault"]
    assert roce_unsettled([dict(d, link="UP", health="Success") for d in devices], plan) == []
    assert FilterModule().filters()["roce_unsettled"] is roce_unsettled


def test_the_check_waits_for_the_ports_to_settle_before_the_ping_matrix():
    """check.yml includes settle.yml (bounded by roce_settle_timeout_s, only after a change in this run)
    before ping.yml; settle.yml re-reads until roce_unsettled is empty and says how long it waited."""
    from pathlib import Path

    import yaml

    roce = Path(__file__).resolve().parents[4] / "roles" / "roce"
    check = yaml.safe_load((roce / "tasks" / "check.yml").read_text())
    files = [t["ansible.builtin.include_tasks"]["file"] for t in check if "ansible.builtin.include_tasks" in t]
    assert files.index("settle.yml") < files.index("ping.yml")
    settle_include = next(t for t in check if t.get("ansible.builtin.include_tasks", {}).get("file") == "settle.yml")
    when = " ".join(settle_include["when"])
    assert "roce_settle_timeout_s" in when and "__npu_driver_rebooted" in when and "__roce_ports is changed" in when
    settle = yaml.safe_load((roce / "tasks" / "settle.yml").read_text())
    reread = next(t for t in settle if "ascendops.cluster.hccn_info" in t)
    assert "roce_unsettled" in reread["until"] and "roce_settle_timeout_s" in reread["retries"]
    assert reread["failed_when"] is False  # the report judges what did not settle
    assert "waited" in next(t for t in settle if "ansible.builtin.debug" in t)["ansible.builtin.debug"]["msg"]
