"""The roce scenario's final state on each node: /etc/hccn.conf and the device NICs as hccn_tool reads them."""

import ascend_verify
import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils import hccn_tool

HCCN = "/usr/local/Ascend/driver/tools/hccn_tool"
PLAN = {
    "node1": ["192.168.121.101", "192.168.121.102"],  # explicit
    "node2": ["192.168.121.103", "192.168.121.104"],  # by rule: 192.168.121.100 + 3 + i
}


def _plan(node):
    return PLAN["node1" if node.endswith("node1") else "node2"]


def _hccn(host, *args):
    cmd = host.run(" ".join([HCCN, *args]))
    assert cmd.rc == 0, cmd.stdout + cmd.stderr
    return cmd.stdout


DSCP, PRIORITY, MTU = 26, 3, 9000  # molecule.yml: ascend_rdma_dscp, ascend_rdma_priority, roce_device_mtu


def test_hccn_conf_holds_the_plan_and_keeps_the_site_keys(host, node):
    conf = host.file("/etc/hccn.conf")
    assert conf.exists and conf.user == "root" and conf.mode == 0o644
    parsed = hccn_tool.parse_hccn_conf(conf.content_string)
    for i, addr in enumerate(_plan(node)):
        managed = {k: parsed[i][k] for k in ("address", "netmask", "netdetect", "gateway", "send_arp_status",
                                             "tls_enable")}
        assert managed == {"address": addr, "netmask": "255.255.255.0", "netdetect": "192.168.121.1",
                           "gateway": "192.168.121.1", "send_arp_status": "1", "tls_enable": "0"}
    if node.endswith("node1"):
        # prepare's site file: its own keys and comment stay, merged in place
        lines = conf.content_string.splitlines()
        assert lines[0] == "# site settings" and lines[1] == "address_0=192.168.121.101"
        assert "bitmap_0=0,0,0,0,0,0,0,0" in lines and "udp_port_1=4791" in lines


def test_device_ports_rdma_qos(host, node):
    """The DSCP maps to the traffic class of the priority, PFC is on for it, the port MTU is set."""
    for dev in ("0", "1"):
        prio_tc = hccn_tool.parse_prio_tc(_hccn(host, "-i", dev, "-prio_tc", "-g"))
        dscp_tc = hccn_tool.parse_dscp_to_tc(_hccn(host, "-i", dev, "-dscp_to_tc", "-g", "dscp", str(DSCP)), DSCP)
        assert dscp_tc == prio_tc[PRIORITY]
        assert hccn_tool.parse_pfc(_hccn(host, "-i", dev, "-pfc", "-g"))[PRIORITY] == 1
        assert hccn_tool.parse_mtu(_hccn(host, "-i", dev, "-mtu", "-g")) == MTU


def test_device_without_certificates_reads_as_tls_off(host, node):
    if not node.endswith("node2"):
        pytest.skip("prepare removed the certificates of node2's device 1 only")
    cmd = host.run(f"{HCCN} -i 1 -tls -g")
    assert "No certificate found" in cmd.stdout
    assert hccn_tool.parse_tls(cmd.stdout) == {"dev_id": None, "enabled": False, "certificates": False}


def test_device_nics_read_back(host, node):
    for i, addr in enumerate(_plan(node)):
        dev = str(i)
        assert hccn_tool.parse_ip(_hccn(host, "-i", dev, "-ip", "-g")) == {"address": addr, "netmask": "255.255.255.0"}
        assert hccn_tool.parse_gateway(_hccn(host, "-i", dev, "-gateway", "-g"))["gateway"] == "192.168.121.1"
        assert hccn_tool.parse_netdetect(_hccn(host, "-i", dev, "-netdetect", "-g")) == "192.168.121.1"
        tls = host.run(f"{HCCN} -i {dev} -tls -g").stdout  # rc 1 on a device without certificates
        assert hccn_tool.parse_tls(tls)["enabled"] is False
        assert hccn_tool.parse_link(_hccn(host, "-i", dev, "-link", "-g")) == "UP"
        assert hccn_tool.parse_net_health(_hccn(host, "-i", dev, "-net_health", "-g")) == "Success"


def test_peers_answer_pings(host, node):
    peer = PLAN["node2" if node.endswith("node1") else "node1"]
    for i, addr in enumerate(peer):
        assert hccn_tool.parse_ping(_hccn(host, "-i", str(i), "-ping", "-g", "address", addr))["received"] == 3
    # An address nobody holds never answers: the pings are real.
    assert hccn_tool.parse_ping(_hccn(host, "-i", "0", "-ping", "-g", "address", "192.168.121.199"))["received"] == 0


def test_device_addresses_stay_off_the_host_network(host):
    # The host OS never carries device addresses (they live on the NPUs' ports).
    assert "192.168.121." not in host.run("ip -o -4 addr show").stdout


def test_host_tuning(host, node):
    sysctl = host.file("/etc/sysctl.d/91-ascendops-roce.conf")
    assert sysctl.contains("net.ipv4.tcp_rmem=4096 87380 134217728")
    assert host.run("sysctl -n net.ipv4.tcp_rmem").stdout.split() == ["4096", "87380", "134217728"]
    if node.endswith("node1"):
        assert host.run("cat /sys/class/net/eth0/mtu").stdout.strip() == "1400"


def test_node1_was_rebooted_after_converge(host, node):
    """The addresses checked above came back through /etc/hccn.conf: node1 booted again after converge."""
    if not node.endswith("node1"):
        pytest.skip("only node1 is rebooted by the side effect")
    boots = [e for e in ascend_verify.events(host) if e.startswith("boot ")]
    # the prepared image's two (its first start, the driver stage's reboot), this node's start, and
    # the side effect's reboot
    assert len(boots) >= 4, boots


def test_vendor_recovery_restores_the_ports_from_the_merged_file(host, node):
    """Last (it changes a port): hccn_tool -a -cfg recovery brings device 0 back from /etc/hccn.conf."""
    _hccn(host, "-i", "0", "-ip", "-s", "address", "192.168.121.250", "netmask", "255.255.255.0")
    _hccn(host, "-a", "-cfg", "recovery")
    assert hccn_tool.parse_ip(_hccn(host, "-i", "0", "-ip", "-g"))["address"] == _plan(node)[0]
