"""hccn_tool stand-in: exact vendor strings, faults, busy behaviour, NIC plumbing."""

import fcntl
import json
import os
from pathlib import Path

from simhelpers import stub

OK = "Cmd executed successfully!"
BUSY = "hccn_tool is busy, please try again"
# The vendor's texts with their sources, shared with the parsers' tests
VENDOR = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "hccn_tool" / "outputs.json").read_text())


def out(r) -> str:
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_set_and_get_strings(booted_node):
    h = booted_node.hccn
    assert out(h("-i", "0", "-ip", "-s", "address", "29.1.112.213", "netmask", "255.255.0.0")) == OK + "\n"
    assert out(h("-i", "0", "-ip", "-g")) == "ipaddr:29.1.112.213\nnetmask:255.255.0.0\n"
    assert out(h("-i", "0", "-netdetect", "-s", "address", "29.1.0.1")) == OK + "\n"
    assert out(h("-i", "0", "-netdetect", "-g")) == "netdetect address: 29.1.0.1\n"
    assert out(h("-i", "0", "-gateway", "-s", "gateway", "29.1.0.1")) == OK + "\n"
    assert out(h("-i", "0", "-gateway", "-g")) == "default gateway:29.1.0.1, Iface:eth0\n"
    assert out(h("-i", "0", "-link", "-g")) == "link status: UP\n"
    assert out(h("-i", "0", "-net_health", "-g")) == "net health status: Success\n"
    assert out(h("-i", "0", "-speed", "-g")) == "Speed: 200000 Mb/s\n"
    # TLS is on by default (vendor default); multi-node jobs need it off on every device.
    assert out(h("-i", "1", "-tls", "-g")).startswith("dev_id:1, tls switch[1](0:disable, 1:enable), ")
    assert out(h("-i", "1", "-tls", "-s", "enable", "0")) == OK + "\n"
    assert out(h("-i", "1", "-tls", "-g")).startswith("dev_id:1, tls switch[0](0:disable, 1:enable), ")
    # Configuration lives in the device, never in /etc/hccn.conf.
    assert not booted_node.p("/etc/hccn.conf").exists()


def test_unconfigured_device_and_bad_input(booted_node):
    h = booted_node.hccn
    assert out(h("-i", "1", "-ip", "-g")) == "ipaddr:\nnetmask:\n"
    assert out(h("-i", "1", "-net_health", "-g")) == "net health status: Init\n"
    for args in (("-i", "1", "-ip", "-s", "address", "300.1.1.1", "netmask", "255.255.0.0"),
                 ("-i", "1", "-ip", "-s", "address", "10.0.0.1", "netmask", "255.0.255.0"),
                 ("-i", "1", "-ip", "-s", "address", "10.0.0.1"),
                 ("-i", "1", "-tls", "-s", "enable", "2"),
                 ("-i", "2", "-link", "-g"),
                 ("-i", "1", "-frobnicate", "-g"),
                 ("-link", "-g")):
        r = h(*args)
        assert r.returncode == 1, args
        assert OK not in r.stdout
    assert out(h("-i", "1", "-ip", "-g")) == "ipaddr:\nnetmask:\n"


def test_ping_local_rules_and_link_fault(booted_node):
    h = booted_node.hccn
    out(h("-i", "0", "-ip", "-s", "address", "192.168.100.11", "netmask", "255.255.255.0"))
    out(h("-i", "1", "-ip", "-s", "address", "192.168.100.12", "netmask", "255.255.255.0"))
    out(h("-i", "0", "-netdetect", "-s", "address", "192.168.100.1"))
    r = out(h("-i", "0", "-ping", "-g", "address", "192.168.100.12"))
    assert r.splitlines()[-1] == "3 packets transmitted, 3 received, 0.00% packet loss"
    r = out(h("-i", "0", "-ping", "-g", "address", "192.168.100.99"))
    assert r.splitlines()[-1] == "3 packets transmitted, 0 received, 100.00% packet loss"
    assert booted_node.sim("fault", "link", "1", "down").returncode == 0
    assert out(h("-i", "1", "-link", "-g")) == "link status: DOWN\n"
    assert out(h("-i", "1", "-net_health", "-g")) == "net health status: Fault\n"
    r = out(h("-i", "0", "-ping", "-g", "address", "192.168.100.12"))
    assert r.splitlines()[-1] == "3 packets transmitted, 0 received, 100.00% packet loss"
    r = out(h("-i", "1", "-ping", "-g", "address", "192.168.100.11"))
    assert r.splitlines()[-1].endswith(" 100.00% packet loss")
    # netdetect outside the device subnet is unreachable without a real NIC
    out(h("-i", "0", "-netdetect", "-s", "address", "10.9.9.9"))
    assert out(h("-i", "0", "-net_health", "-g")) == "net health status: Fault\n"
    booted_node.sim("fault", "clear")
    assert out(h("-i", "1", "-link", "-g")) == "link status: UP\n"
    assert "fault link 1 down" in booted_node.events()


def test_injected_busy_once_then_success(booted_node):
    assert booted_node.sim("fault", "hccn-busy").returncode == 0
    r = booted_node.hccn("-i", "0", "-link", "-g")
    assert (r.returncode, r.stdout) == (1, BUSY + "\n")
    assert out(booted_node.hccn("-i", "0", "-link", "-g")) == "link status: UP\n"
    booted_node.sim("fault", "hccn-busy", "2")
    assert [booted_node.hccn("-i", "0", "-link", "-g").returncode for _ in range(3)] == [1, 1, 0]


def test_concurrent_call_is_busy(booted_node):
    lock_path = booted_node.p("/var/lib/ascend-sim/hccn_tool.lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another hccn_tool is running
        r = booted_node.hccn("-i", "0", "-ip", "-s", "address", "10.1.1.1", "netmask", "255.255.0.0")
        assert (r.returncode, r.stdout) == (1, BUSY + "\n")
    finally:
        os.close(fd)
    assert out(booted_node.hccn("-i", "0", "-ip", "-g")) == "ipaddr:\nnetmask:\n"


def test_boot_reapplies_hccn_conf_only(booted_node):
    h = booted_node.hccn
    out(h("-i", "0", "-ip", "-s", "address", "29.1.137.205", "netmask", "255.255.0.0"))
    out(h("-i", "1", "-ip", "-s", "address", "29.1.137.206", "netmask", "255.255.0.0"))
    out(h("-i", "1", "-tls", "-s", "enable", "0"))
    booted_node.p("/etc/hccn.conf").write_text(
        "address_0=29.1.137.205\nnetmask_0=255.255.0.0\nnetdetect_0=29.1.0.1\ngateway_0=29.1.0.1\n"
        "send_arp_status_0=1\n"
    )
    booted_node.sim("boot")
    assert out(h("-i", "0", "-ip", "-g")) == "ipaddr:29.1.137.205\nnetmask:255.255.0.0\n"
    assert out(h("-i", "0", "-netdetect", "-g")) == "netdetect address: 29.1.0.1\n"
    assert out(h("-i", "0", "-gateway", "-g")) == "default gateway:29.1.0.1, Iface:eth0\n"
    # Not persisted in /etc/hccn.conf: lost at reboot. The TLS switch is kept by the device.
    assert out(h("-i", "1", "-ip", "-g")) == "ipaddr:\nnetmask:\n"
    assert "tls switch[0]" in out(h("-i", "1", "-tls", "-g"))


def _net_stubs(node, log):
    """``ip`` logs its arguments, knows whether the device port was made, runs ``netns exec``; ``ping`` answers
    for 192.168.100.21 only."""
    moved = node.root.parent / "port-made"
    stub(node.stub_bin / "ip", f"""if [ "$1" = netns ] && [ "$2" = exec ]; then shift 3; exec "$@"; fi
echo "ip $*" >> {log}
case "$*" in
  "-n ascend-dev link show ascend0") [ -e {moved} ] || exit 1 ;;
  "link set ascend0 netns ascend-dev") touch {moved} ;;
esac
exit 0
""")
    stub(node.stub_bin / "ping", f"""echo "ping $*" >> {log}
for last; do :; done
if [ "$last" = 192.168.100.21 ]; then
  echo "3 packets transmitted, 2 received, 33.3333% packet loss, time 2003ms"
else
  echo "3 packets transmitted, 0 received, 100% packet loss, time 2003ms"; exit 1
fi
""")


def test_nic_interface_runs_ip_and_real_ping(booted_node):
    log = booted_node.root.parent / "net.log"
    _net_stubs(booted_node, log)
    assert booted_node.sim("hardware", "--nic-interface", "eth1").returncode == 0
    assert not log.exists()  # under $ASCEND_SIM_ROOT the hardware command leaves the network alone
    h = booted_node.hccn
    out(h("-i", "0", "-ip", "-s", "address", "192.168.100.11", "netmask", "255.255.255.0"))
    # First the NPUs' port: a macvlan on the interface, in the device namespace; the interface
    # itself keeps no IPv4 address (the host never sees the device subnet).
    plugged = "ip -n ascend-dev link show ascend0"
    assert log.read_text().splitlines()[:10] == [
        plugged,
        "ip netns add ascend-dev",
        "ip -4 addr flush dev eth1",
        "ip link set eth1 up",
        "ip link del ascend0",
        "ip link add ascend0 link eth1 type macvlan mode bridge",
        "ip link set ascend0 netns ascend-dev",
        "ip -n ascend-dev link set lo up",
        "ip -n ascend-dev link set ascend0 up",
        "ip -n ascend-dev addr replace 192.168.100.11/24 dev ascend0",
    ]
    log.write_text("")
    out(h("-i", "0", "-ip", "-s", "address", "192.168.100.15", "netmask", "255.255.255.0"))
    r = out(h("-i", "0", "-ping", "-g", "address", "192.168.100.21"))
    assert r.splitlines()[-1] == "3 packets transmitted, 2 received, 33.33% packet loss"
    r = out(h("-i", "0", "-ping", "-g", "address", "192.168.100.22"))
    assert r.splitlines()[-1] == "3 packets transmitted, 0 received, 100.00% packet loss"
    out(h("-i", "0", "-netdetect", "-s", "address", "192.168.100.21"))
    assert out(h("-i", "0", "-net_health", "-g")) == "net health status: Success\n"
    assert log.read_text().splitlines() == [
        plugged,
        "ip -n ascend-dev addr del 192.168.100.11/24 dev ascend0",
        plugged,
        "ip -n ascend-dev addr replace 192.168.100.15/24 dev ascend0",
        "ping -c 3 -W 1 -I 192.168.100.15 192.168.100.21",
        "ping -c 3 -W 1 -I 192.168.100.15 192.168.100.22",
        "ping -c 1 -W 1 -I 192.168.100.15 192.168.100.21",
    ]
    # A downed port stops answering other nodes: its address leaves the interface.
    log.write_text("")
    booted_node.sim("fault", "link", "0", "down")
    booted_node.sim("fault", "link", "0", "up")
    assert log.read_text().splitlines() == [
        plugged,
        "ip -n ascend-dev addr del 192.168.100.15/24 dev ascend0",
        plugged,
        "ip -n ascend-dev addr replace 192.168.100.15/24 dev ascend0",
    ]
    # At boot the addresses come back from /etc/hccn.conf only.
    log.write_text("")
    booted_node.p("/etc/hccn.conf").write_text("address_1=192.168.100.12\nnetmask_1=255.255.255.0\n")
    booted_node.sim("boot")
    assert [line for line in log.read_text().splitlines() if line != plugged] == [
        "ip -n ascend-dev addr del 192.168.100.15/24 dev ascend0",
        "ip -n ascend-dev addr replace 192.168.100.12/24 dev ascend0",
    ]


def test_boot_recreates_the_device_port(booted_node):
    """A restarted container has lost the device namespace and its port: boot makes them again."""
    log = booted_node.root.parent / "net.log"
    _net_stubs(booted_node, log)
    hw = booted_node.p("/etc/ascend-sim/hardware.json")
    hw.parent.mkdir(parents=True, exist_ok=True)
    hw.write_text('{"npu_count": 2, "nic_interface": "eth1"}')
    assert booted_node.sim("boot").returncode == 0
    assert "ip link set ascend0 netns ascend-dev" in log.read_text().splitlines()


def test_ip_failure_leaves_state_unchanged(booted_node):
    stub(booted_node.stub_bin / "ip", 'echo "RTNETLINK answers: Operation not permitted" >&2\nexit 2\n')
    booted_node.sim("hardware", "--nic-interface", "eth1")
    r = booted_node.hccn("-i", "0", "-ip", "-s", "address", "192.168.100.11", "netmask", "255.255.255.0")
    assert r.returncode == 1 and "Operation not permitted" in r.stdout
    assert out(booted_node.hccn("-i", "0", "-ip", "-g")) == "ipaddr:\nnetmask:\n"


NO_CERT = "No certificate found, please set certs firstly!"


def test_device_without_certificates_answers_no_certificate(booted_node):
    h = booted_node.hccn
    assert booted_node.sim("fault", "tls-certs", "1", "absent").returncode == 0
    r = h("-i", "1", "-tls", "-g")
    assert r.returncode == 1 and r.stdout == NO_CERT + "\n"
    r = h("-i", "1", "-tls", "-s", "enable", "0")
    assert r.returncode == 1 and r.stdout == NO_CERT + "\n"
    # the other device still has its certificates
    assert out(h("-i", "0", "-tls", "-g")).startswith("dev_id:0, tls switch[1]")


def test_rdma_qos_commands(booted_node):
    h = booted_node.hccn
    assert out(h("-i", "0", "-prio_tc", "-g")) == "prio_tc map 0,0,1,1,2,2,3,3\n"
    assert out(h("-i", "0", "-dscp_to_tc", "-g", "dscp", "33")) == "dscp:33 tc:0\n"
    assert out(h("-i", "0", "-dscp_to_tc", "-s", "dscp", "33", "tc", "2")) == OK + "\n"
    assert out(h("-i", "0", "-dscp_to_tc", "-g", "dscp", "33")) == "dscp:33 tc:2\n"
    assert len(out(h("-i", "0", "-dscp_to_tc", "-g")).splitlines()) == 64
    assert out(h("-i", "0", "-pfc", "-g")) == (
        "PFC configuration:\npriority   0 1 2 3 4 5 6 7\nenabled    0 0 0 0 0 0 0 0\n")
    assert out(h("-i", "0", "-pfc", "-s", "priority", "0,0,0,0,1,0,0,0")) == OK + "\n"
    # the text of Huawei's CANN troubleshooting guide, byte for byte
    assert out(h("-i", "0", "-pfc", "-g")) == VENDOR["pfc_get"]["text"]
    assert out(h("-i", "0", "-mtu", "-g")) == "mtu:1500\n"
    assert out(h("-i", "0", "-mtu", "-s", "size", "9000")) == OK + "\n"
    assert out(h("-i", "0", "-mtu", "-g")) == "mtu:9000\n"
    # device 1 untouched
    assert out(h("-i", "1", "-mtu", "-g")) == "mtu:1500\n"
    for args in (("-dscp_to_tc", "-s", "dscp", "64", "tc", "1"), ("-dscp_to_tc", "-s", "dscp", "3", "tc", "4"),
                 ("-pfc", "-s", "priority", "0,1"), ("-mtu", "-s", "size", "9703")):
        r = h("-i", "0", *args)
        assert r.returncode == 1 and OK not in r.stdout, args


def test_recovery_restores_the_ports_from_hccn_conf(booted_node):
    h = booted_node.hccn
    booted_node.p("/etc/hccn.conf").write_text(
        "address_0=29.1.137.205\nnetmask_0=255.255.0.0\nnetdetect_0=29.1.0.1\ngateway_0=29.1.0.1\n"
        "send_arp_status_0=1\ntls_enable_0=0\naddress_1=29.1.137.206\nnetmask_1=255.255.0.0\n")
    assert out(h("-a", "-cfg", "recovery")) == OK + "\n"
    assert out(h("-i", "0", "-ip", "-g")) == "ipaddr:29.1.137.205\nnetmask:255.255.0.0\n"
    assert out(h("-i", "0", "-gateway", "-g")) == "default gateway:29.1.0.1, Iface:eth0\n"
    assert out(h("-i", "0", "-tls", "-g")).startswith("dev_id:0, tls switch[0]")
    assert out(h("-i", "1", "-ip", "-g")) == "ipaddr:29.1.137.206\nnetmask:255.255.0.0\n"
    assert h("-a", "-cfg", "status").returncode == 1


def test_outputs_match_the_fixture_texts_the_parsers_are_tested_on(booted_node):
    h = booted_node.hccn
    assert out(h("-i", "0", "-prio_tc", "-g")) == VENDOR["prio_tc_get_map"]["text"]
    out(h("-i", "0", "-dscp_to_tc", "-s", "dscp", "33", "tc", "2"))
    assert out(h("-i", "0", "-dscp_to_tc", "-g", "dscp", "33")) == VENDOR["dscp_to_tc_get"]["text"]
    out(h("-i", "0", "-mtu", "-s", "size", "9000"))
    assert out(h("-i", "0", "-mtu", "-g")) == VENDOR["mtu_get"]["text"]


def test_a_down_port_refuses_qos_reads_and_prints_speed_unknown(booted_node):
    h = booted_node.hccn
    assert booted_node.sim("fault", "link", "1", "down").returncode == 0
    for cmd in ("-prio_tc", "-pfc"):
        r = h("-i", "1", cmd, "-g")
        assert (r.returncode, r.stdout) == (VENDOR["qos_get_link_down"]["rc"], VENDOR["qos_get_link_down"]["text"])
    assert out(h("-i", "1", "-speed", "-g")) == VENDOR["speed_unknown"]["text"]
    assert out(h("-i", "1", "-link", "-g")) == "link status: DOWN\n"
    # the other port is untouched
    assert out(h("-i", "0", "-speed", "-g")) == "Speed: 200000 Mb/s\n"
    assert out(h("-i", "0", "-pfc", "-g")).startswith("PFC configuration:\n")
    booted_node.sim("fault", "clear")
    assert out(h("-i", "1", "-speed", "-g")) == "Speed: 200000 Mb/s\n"
    assert out(h("-i", "1", "-pfc", "-g")).startswith("PFC configuration:\n")


def test_optics_and_link_history_print_the_vendor_texts(booted_node):
    """`-optical -g` is the guide's text on a working port (fixtures/hccn_tool/outputs.json); a down port
    receives no light; `-link_stat -g` has the guide's lines and records the changes faults make."""
    h = booted_node.hccn
    assert out(h("-i", "0", "-optical", "-g")) == VENDOR["optical_get"]["text"]
    lines = out(h("-i", "1", "-link_stat", "-g")).splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["[device 1]current time        ", "[device 1]link up count       ",
                                                  "[device 1]link change records "]
    assert lines[1].endswith(": 1")
    assert booted_node.sim("fault", "link", "1", "down").returncode == 0
    assert "Rx Power             : 0.0000 mW\n" in out(h("-i", "1", "-optical", "-g"))
    assert booted_node.sim("fault", "link", "1", "up").returncode == 0
    text = out(h("-i", "1", "-link_stat", "-g"))
    records = text.splitlines()[3:]  # newest first, as the guide prints them
    assert text.splitlines()[1].endswith(": 2") and [r.split()[-1] for r in records] == ["UP", "DOWN"]


def test_optics_and_link_history_read_by_the_collections_parsers(booted_node):
    from ansible_collections.ascendops.cluster.plugins.module_utils.hccn_tool import (
        link_flaps,
        optical_problems,
        parse_link_stat,
        parse_optical,
    )

    h = booted_node.hccn
    assert optical_problems(parse_optical(out(h("-i", "0", "-optical", "-g")))) == []
    assert booted_node.sim("fault", "link", "0", "down").returncode == 0
    assert optical_problems(parse_optical(out(h("-i", "0", "-optical", "-g"))))[0].startswith(
        "the optical module receives 0 mW")
    assert link_flaps(parse_link_stat(out(h("-i", "0", "-link_stat", "-g"))), 3600) == 1


def test_packet_statistics_have_the_tools_layout_and_injected_counters(booted_node):
    """`-stat -g` prints hccn_tool's own lines in its order (fixtures/hccn_tool/outputs.json stat_get: the title,
    then `name:count`), every counter zero; `ascend-sim fault port-stat` raises one on one port, `fault clear`
    zeroes it."""
    h = booted_node.hccn

    def layout(text):
        return [line.split(":")[0] for line in text.splitlines()]

    text = out(h("-i", "0", "-stat", "-g"))
    assert layout(text) == layout(VENDOR["stat_get"]["text"])
    assert text.startswith("packet statistics:\n") and all(line.split(":")[1] == "0" for line in text.splitlines()[1:])
    assert booted_node.sim("fault", "port-stat", "1", "roce_rx_err_pkt_num", "4321").returncode == 0
    assert "\nroce_rx_err_pkt_num:4321\n" in out(h("-i", "1", "-stat", "-g"))
    assert "\nroce_rx_err_pkt_num:0\n" in out(h("-i", "0", "-stat", "-g"))  # the other port is untouched
    bad = booted_node.sim("fault", "port-stat", "1", "no_such_counter", "1")
    assert bad.returncode != 0 and "no counter no_such_counter" in bad.stdout + bad.stderr
    booted_node.sim("fault", "clear")
    assert "\nroce_rx_err_pkt_num:0\n" in out(h("-i", "1", "-stat", "-g"))


def test_packet_statistics_read_by_the_collections_parser(booted_node):
    from ansible_collections.ascendops.cluster.plugins.module_utils.hccn_tool import (
        parse_stat,
        pfc_highest,
        stat_problems,
    )

    h = booted_node.hccn
    assert stat_problems(parse_stat(out(h("-i", "0", "-stat", "-g"))), 0) == []
    booted_node.sim("fault", "port-stat", "0", "mac_rx_fcs_err_pkt_num", "2000")
    booted_node.sim("fault", "port-stat", "0", "mac_rx_pfc_pri3_pkt_num", "77")
    stat = parse_stat(out(h("-i", "0", "-stat", "-g")))
    assert [p.split(" is ")[0] for p in stat_problems(stat, 1000)] == ["mac_rx_fcs_err_pkt_num"]
    assert pfc_highest(stat) == ("mac_rx_pfc_pri3_pkt_num", 77)
