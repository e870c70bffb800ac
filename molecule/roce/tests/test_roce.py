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


def test_hccn_conf_holds_the_plan(host, node):
    conf = host.file("/etc/hccn.conf")
    assert conf.exists and conf.user == "root" and conf.mode == 0o644
    expected = {
        i: {"address": addr, "netmask": "255.255.255.0", "netdetect": "192.168.121.1",
            "gateway": "192.168.121.1", "send_arp_status": "1"}
        for i, addr in enumerate(_plan(node))
    }
    assert hccn_tool.parse_hccn_conf(conf.content_string) == expected


def test_device_nics_read_back(host, node):
    for i, addr in enumerate(_plan(node)):
        dev = str(i)
        assert hccn_tool.parse_ip(_hccn(host, "-i", dev, "-ip", "-g")) == {"address": addr, "netmask": "255.255.255.0"}
        assert hccn_tool.parse_gateway(_hccn(host, "-i", dev, "-gateway", "-g"))["gateway"] == "192.168.121.1"
        assert hccn_tool.parse_netdetect(_hccn(host, "-i", dev, "-netdetect", "-g")) == "192.168.121.1"
        assert hccn_tool.parse_tls(_hccn(host, "-i", dev, "-tls", "-g"))["enabled"] is False
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
    assert len(boots) >= 3  # first start, the driver stage's reboot, the side effect's reboot
