"""hccn_tool parsers and driver (plugins/module_utils/hccn_tool.py), on the formats of ascend-facts.md."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.hccn_tool import (
    HCCN_BUSY,
    HccnDevice,
    HccnError,
    HccnLinkDown,
    HccnParseError,
    HccnTool,
    diff_text,
    merge_hccn_conf,
    parse_dscp_to_tc,
    parse_gateway,
    parse_hccn_conf,
    parse_ip,
    parse_link,
    parse_link_stat,
    parse_mtu,
    parse_net_health,
    parse_netdetect,
    parse_optical,
    parse_pfc,
    parse_ping,
    parse_prio_tc,
    parse_speed,
    parse_stat,
    parse_tls,
    render_hccn_conf,
)

# Vendor texts (and the assumed layouts), each with its source: tests/fixtures/hccn_tool/outputs.json
VENDOR = json.loads((Path(__file__).resolve().parents[3] / "fixtures" / "hccn_tool" / "outputs.json").read_text())

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")
OK = "Cmd executed successfully!"


def test_get_outputs():
    assert parse_ip("ipaddr:29.1.112.213\nnetmask:255.255.0.0\n") == {
        "address": "29.1.112.213", "netmask": "255.255.0.0"}
    assert parse_ip("ipaddr:\nnetmask:\n") == {"address": None, "netmask": None}
    assert parse_link("link status: UP") == "UP"
    assert parse_link("link status: DOWN\n") == "DOWN"
    assert parse_net_health("net health status: Success") == "Success"
    assert parse_net_health("net health status: Init") == "Init"
    assert parse_netdetect("netdetect address: 11.12.165.1") == "11.12.165.1"
    assert parse_netdetect("netdetect address: ") is None
    assert parse_gateway("default gateway:11.12.165.1, Iface:eth0") == {"gateway": "11.12.165.1", "iface": "eth0"}
    assert parse_gateway("default gateway:, Iface:eth3") == {"gateway": None, "iface": "eth3"}
    assert parse_speed("Speed: 100000 Mb/s") == 100000
    assert parse_speed("Speed: 200 Gb/s") == 200000
    assert parse_tls("dev_id:4, tls switch[0](0:disable, 1:enable), ...") == {
        "dev_id": 4, "enabled": False, "certificates": True}
    assert parse_tls("dev_id:0, tls switch[1](0:disable, 1:enable), tls preconfigured[1](0:non-preset, "
                     "1:preset), tls alarm time threshold[60]days") == {
        "dev_id": 0, "enabled": True, "certificates": True}
    ping = "device 0 PING 29.1.1.2\nrecv seq=0,time=0.05ms\n3 packets transmitted, 3 received, 0.00% packet loss\n"
    assert parse_ping(ping) == {"transmitted": 3, "received": 3, "loss_pct": 0.0}
    assert parse_ping("3 packets transmitted, 1 received, 66.67% packet loss") == {
        "transmitted": 3, "received": 1, "loss_pct": 66.67}


@pytest.mark.parametrize("parser,text,line", [
    (parse_link, "link state is up", "link state is up"),
    (parse_net_health, "", "(no output)"),
    (parse_speed, "Speed: fast", "Speed: fast"),
    (parse_tls, "tls switch[0]", "tls switch[0]"),
    (parse_ping, "device 0 PING 1.2.3.4\nrecv time out seq=0", "device 0 PING 1.2.3.4"),
    (parse_ip, "ipaddr:1.2.3.4", "ipaddr:1.2.3.4"),
])
def test_unreadable_output_names_the_line(parser, text, line):
    with pytest.raises(HccnParseError) as err:
        parser(text)
    assert repr(line) in str(err.value) or line in str(err.value)


def test_bad_address_is_named():
    with pytest.raises(HccnParseError, match="300.1.1.1"):
        parse_ip("ipaddr:300.1.1.1\nnetmask:255.255.0.0")


def test_hccn_conf_sample_and_round_trip():
    with open(os.path.join(FIXTURES, "hccn.conf")) as handle:
        text = handle.read()
    devices = parse_hccn_conf(text)
    assert devices == {0: {"address": "29.1.137.205", "netmask": "255.255.0.0", "netdetect": "29.1.0.1",
                           "gateway": "29.1.0.1", "send_arp_status": "1"}}
    assert list(devices[0]) == ["address", "netmask", "netdetect", "gateway", "send_arp_status"]
    assert render_hccn_conf(devices) == text


def test_hccn_conf_sixteen_devices_round_trip():
    devices = {i: {"address": f"192.168.100.{11 + i}", "netmask": "255.255.255.0",
                   "netdetect": "192.168.100.1", "gateway": "192.168.100.1", "send_arp_status": "1"}
               for i in (7, 0, 3, 1, 2, 15, 6, 4, 5, 10)}
    text = render_hccn_conf(devices)
    assert text.splitlines()[0] == "address_0=192.168.100.11"
    assert text.splitlines()[-1] == "send_arp_status_15=1"
    parsed = parse_hccn_conf(text)
    assert list(parsed) == [0, 1, 2, 3, 4, 5, 6, 7, 10, 15]
    assert parsed == devices


class FakeHccn:
    """A device NIC behind fake run_command: records calls, answers in the vendor formats."""

    def __init__(self, busy=0, fail=None):
        self.conf = {"address": None, "netmask": None, "gateway": None, "netdetect": None, "tls": 1}
        self.qos = {"dscp_tc": {}, "prio_tc": [0, 0, 1, 1, 2, 2, 3, 3], "pfc": [1, 0, 0, 0, 0, 0, 0, 0], "mtu": 1500}
        self.busy = busy
        self.fail = fail
        self.no_cert = False
        self.ignore_mtu = False
        self.link_down = False
        self.calls = []

    def __call__(self, argv):
        args = argv[3:]
        self.calls.append(args)
        if self.busy:
            self.busy -= 1
            return 1, HCCN_BUSY + "\n", ""
        if self.fail:
            return 1, self.fail + "\n", ""
        c = self.conf
        if args == ["-ip", "-g"]:
            return 0, f"ipaddr:{c['address'] or ''}\nnetmask:{c['netmask'] or ''}\n", ""
        if args == ["-gateway", "-g"]:
            return 0, f"default gateway:{c['gateway'] or ''}, Iface:eth0\n", ""
        if args == ["-netdetect", "-g"]:
            return 0, f"netdetect address: {c['netdetect'] or ''}\n", ""
        if args == ["-tls", "-g"]:
            if self.no_cert:
                return 1, "No certificate found, please set certs firstly!\n", ""
            return 0, f"dev_id:{argv[2]}, tls switch[{c['tls']}](0:disable, 1:enable), ...\n", ""
        q = self.qos
        if self.link_down and args[0] in ("-prio_tc", "-pfc", "-dscp_to_tc", "-mtu") and args[1] == "-g":
            return 1, VENDOR["qos_get_link_down"]["text"], ""
        if args[:3] == ["-dscp_to_tc", "-g", "dscp"]:
            return 0, f"dscp:{args[3]} tc:{q['dscp_tc'].get(args[3], 0)}\n", ""
        if args == ["-prio_tc", "-g"]:
            return 0, "prio_tc map " + ",".join(map(str, q["prio_tc"])) + "\n", ""
        if args == ["-pfc", "-g"]:  # the vendor's table
            return 0, "PFC configuration:\npriority   0 1 2 3 4 5 6 7\nenabled    " + " ".join(
                map(str, q["pfc"])) + "\n", ""
        if args == ["-mtu", "-g"]:
            return 0, f"mtu:{q['mtu']}\n", ""
        if args[:2] == ["-dscp_to_tc", "-s"]:
            q["dscp_tc"][args[3]] = int(args[5])
            return 0, OK + "\n", ""
        if args[:2] == ["-pfc", "-s"]:
            q["pfc"] = [int(b) for b in args[3].split(",")]
            return 0, OK + "\n", ""
        if args[:2] == ["-mtu", "-s"]:
            if not self.ignore_mtu:
                q["mtu"] = int(args[3])
            return 0, OK + "\n", ""
        if args[:2] == ["-ip", "-s"]:
            c["address"], c["netmask"] = args[3], args[5]
        elif args[:2] == ["-gateway", "-s"]:
            c["gateway"] = args[3]
        elif args[:2] == ["-netdetect", "-s"]:
            c["netdetect"] = args[3]
        elif args[:2] == ["-tls", "-s"]:
            c["tls"] = int(args[3])
        else:
            raise AssertionError(args)
        return 0, OK + "\n", ""


WANT = {"address": "192.168.121.101", "netmask": "255.255.255.0", "gateway": "192.168.121.1",
        "netdetect": "192.168.121.1", "tls": False}


def test_apply_sets_only_what_differs_then_nothing():
    fake = FakeHccn()
    tool = HccnTool(fake, path="/x/hccn_tool", sleep=lambda _s: None)
    result = HccnDevice(tool, 3).apply(WANT)
    assert result["changed"]
    assert result["before"] == {"address": None, "netmask": None, "gateway": None, "netdetect": None, "tls": True}
    assert result["after"] == WANT
    sets = [c for c in fake.calls if c[1] == "-s"]
    assert sets == [["-ip", "-s", "address", "192.168.121.101", "netmask", "255.255.255.0"],
                    ["-gateway", "-s", "gateway", "192.168.121.1"],
                    ["-netdetect", "-s", "address", "192.168.121.1"],
                    ["-tls", "-s", "enable", "0"]]
    fake.calls.clear()
    again = HccnDevice(tool, 3).apply(WANT)
    assert not again["changed"] and again["commands"] == []
    assert all(c[1] == "-g" for c in fake.calls)
    # One field drifted: only that one is set.
    fake.conf["gateway"] = "192.168.121.254"
    fake.calls.clear()
    fixed = HccnDevice(tool, 3).apply(WANT)
    assert fixed["commands"] == [["-gateway", "-s", "gateway", "192.168.121.1"]]


def test_check_mode_changes_nothing():
    fake = FakeHccn()
    result = HccnDevice(HccnTool(fake, sleep=lambda _s: None), 0).apply(WANT, check_mode=True)
    assert result["changed"] and result["after"] == WANT
    assert all(c[1] == "-g" for c in fake.calls)
    assert fake.conf["address"] is None


def test_busy_is_retried_then_given_up():
    slept = []
    fake = FakeHccn(busy=2)
    tool = HccnTool(fake, retries=3, delay=0.5, sleep=slept.append)
    assert tool.read_config(0)["address"] is None
    assert slept == [0.5, 0.5]
    fake.busy = 10
    with pytest.raises(HccnError, match="still busy after 3 retries"):
        HccnTool(fake, retries=3, sleep=lambda _s: None).read_config(0)


def test_other_failures_carry_the_tool_message():
    fake = FakeHccn(fail="dcmi module initialize failed. ret is -8005")
    with pytest.raises(HccnError, match=r"-i 0 -ip -g failed \(rc=1\): dcmi module initialize failed. ret is -8005"):
        HccnTool(fake, sleep=lambda _s: None).read_config(0)


def test_set_without_confirmation_fails():
    tool = HccnTool(lambda argv: (0, "something else\n", ""), sleep=lambda _s: None)
    with pytest.raises(HccnError, match="no 'Cmd executed successfully!'"):
        tool.set(0, "-tls", "-s", "enable", "0")


def test_address_needs_netmask():
    with pytest.raises(HccnError, match="together"):
        HccnDevice(HccnTool(FakeHccn()), 0).apply({"address": "10.0.0.1"})


# ------------------------------------------------------------------ TLS without certificates

NO_CERT = "No certificate found, please set certs firstly!"


def test_no_certificate_means_tls_off():
    assert parse_tls(NO_CERT + "\n") == {"dev_id": None, "enabled": False, "certificates": False}
    assert parse_tls("dev_id:4, tls switch[0](0:disable, 1:enable), tls preconfigured[1]")["certificates"]


def test_read_config_of_a_device_without_certificates_whatever_the_exit_code():
    fake = FakeHccn()
    fake.no_cert = True
    tool = HccnTool(fake, path="/x/hccn_tool", sleep=lambda _s: None)
    assert tool.read_config(0)["tls"] is False
    # TLS wanted off: nothing to set on such a device
    result = HccnDevice(tool, 0).apply(dict(WANT))
    assert ["-tls", "-s", "enable", "0"] not in result["commands"]


# ------------------------------------------------------------------ RDMA QoS

@pytest.mark.parametrize("text", ["dscp:33 tc:2\n", "dscp 33 tc 2\n", "DSCP  TC\n33    2\n",
                                  "dscp:32 tc:0\ndscp:33 tc:2\ndscp:34 tc:0\n"])
def test_dscp_to_tc_layouts(text):
    assert parse_dscp_to_tc(text, 33) == 2


@pytest.mark.parametrize("name, parser", [
    ("pfc_get", parse_pfc), ("pfc_get_one_line", parse_pfc), ("prio_tc_get_table", parse_prio_tc),
    ("prio_tc_get_map", parse_prio_tc), ("dscp_to_tc_get", lambda text: parse_dscp_to_tc(text, 33)),
    ("mtu_get", parse_mtu), ("speed_unknown", parse_speed), ("optical_get", parse_optical),
    ("link_stat_get", parse_link_stat), ("stat_get", parse_stat)])
def test_vendor_and_documented_layouts(name, parser):
    assert parser(VENDOR[name]["text"]) == VENDOR[name]["parsed"], VENDOR[name]["source"]


def test_pfc_vendor_table_columns_follow_the_priority_row():
    # the priority row gives each column its priority; blank lines and indentation do not matter
    assert parse_pfc("PFC configuration:\n\n  priority 7 6 5 4 3 2 1 0\n  enabled  1 0 0 0 0 0 0 0\n") == [
        0, 0, 0, 0, 0, 0, 0, 1]
    assert parse_prio_tc("priority 0 1 2 3 4 5 6 7\ntc 3 3 2 2 1 1 0 0\n") == [3, 3, 2, 2, 1, 1, 0, 0]
    assert parse_prio_tc("map 0 0 1 1 2 2 3 3") == [0, 0, 1, 1, 2, 2, 3, 3]


@pytest.mark.parametrize("parser, text, line", [
    (parse_pfc, "PFC configuration:\npriority   0 1 2 3 4 5 6 7\n", "priority   0 1 2 3 4 5 6 7"),
    (parse_pfc, "PFC configuration:\npriority   0 1 2 3 4 5 6 7\nenabled    0 0 0 0 2 0 0 0\n",
     "enabled    0 0 0 0 2 0 0 0"),
    (parse_pfc, "PFC configuration:\npriority   0 1 2 3 4 5 6 6\nenabled    0 0 0 0 1 0 0 0\n",
     "priority   0 1 2 3 4 5 6 6"),
    (parse_pfc, "PFC configuration:\nenabled: 4\n", "enabled: 4"),
    (parse_prio_tc, "priority   0 1 2 3 4 5 6 7\nclass      0 0 1 1 2 2 3 3\n", "priority   0 1 2 3 4 5 6 7"),
    (parse_prio_tc, "prio_tc map 0,0,1,1,2,2,3,9\n", "prio_tc map 0,0,1,1,2,2,3,9"),
    (parse_mtu, "MTU unknown\n", "MTU unknown"),
    (parse_speed, "Speed: Unknown?\n", "Speed: Unknown?"),
])
def test_qos_outputs_of_no_documented_layout_are_refused_with_the_raw_text(parser, text, line):
    with pytest.raises(HccnParseError) as err:
        parser(text)
    assert f"could not read the line {line!r}" in str(err.value)
    assert f"output: {text.strip()!r}" in str(err.value)


def test_qos_outputs_and_unreadable_lines():
    assert parse_prio_tc("prio_tc map 0,0,1,1,2,2,3,3\n") == [0, 0, 1, 1, 2, 2, 3, 3]
    assert parse_pfc("pfc priority 0,0,0,0,1,0,0,0\n") == [0, 0, 0, 0, 1, 0, 0, 0]
    assert parse_mtu("mtu:9000\n") == 9000
    with pytest.raises(HccnParseError, match="no line for dscp 33"):
        parse_dscp_to_tc("dscp:32 tc:0\n", 33)
    with pytest.raises(HccnParseError, match="'pfc is off'"):
        parse_pfc("pfc is off\n")
    with pytest.raises(HccnParseError, match="'MTU unknown'"):
        parse_mtu("MTU unknown\n")


QOS = {"rdma_dscp": 33, "rdma_priority": 4, "mtu": 9000}


def test_qos_set_only_what_differs_and_read_back():
    fake = FakeHccn()
    tool = HccnTool(fake, path="/x/hccn_tool", sleep=lambda _s: None)
    result = HccnDevice(tool, 0).apply(dict(WANT, **QOS))
    # priority 4 is class 2 on this port (-prio_tc): DSCP 33 goes to class 2, PFC on for priority 4
    assert result["before"]["rdma_priority_tc"] == 2 and result["before"]["rdma_dscp_tc"] == 0
    assert [c for c in result["commands"] if c[0] in ("-dscp_to_tc", "-pfc", "-mtu")] == [
        ["-dscp_to_tc", "-s", "dscp", "33", "tc", "2"],
        ["-pfc", "-s", "priority", "1,0,0,0,1,0,0,0"],  # the site's PFC on priority 0 stays
        ["-mtu", "-s", "size", "9000"]]
    assert result["after"]["rdma_dscp_tc"] == 2 and result["after"]["pfc"][4] == 1
    assert result["after"]["mtu"] == 9000
    again = HccnDevice(tool, 0).apply(dict(WANT, **QOS))
    assert not again["changed"] and again["commands"] == []
    # drift: another MTU only
    fake.qos["mtu"] = 1500
    assert HccnDevice(tool, 0).apply(dict(WANT, **QOS))["commands"] == [["-mtu", "-s", "size", "9000"]]


def test_qos_check_mode_and_read_back_failure():
    fake = FakeHccn()
    tool = HccnTool(fake, path="/x/hccn_tool", sleep=lambda _s: None)
    checked = HccnDevice(tool, 0).apply(dict(QOS), check_mode=True)
    assert checked["changed"] and all(c[1] == "-g" for c in fake.calls)
    fake.ignore_mtu = True
    with pytest.raises(HccnError, match="read back {'mtu': 1500}"):
        HccnDevice(tool, 0).apply(dict(QOS))


@pytest.mark.parametrize("want,needle", [
    ({"rdma_dscp": 33}, "together"), ({"rdma_dscp": 64, "rdma_priority": 4}, "not a DSCP"),
    ({"rdma_dscp": 33, "rdma_priority": 8}, "not a priority"), ({"mtu": 9800}, "68-9702")])
def test_qos_bad_input_is_refused_before_any_call(want, needle):
    fake = FakeHccn()
    with pytest.raises(HccnError, match=needle):
        HccnDevice(HccnTool(fake, path="/x/hccn_tool"), 0).apply(want)
    assert fake.calls == []


# ------------------------------------------------------------------ /etc/hccn.conf merged, not overwritten

SITE_CONF = """# site file
address_0=29.1.137.205
netmask_0=255.255.0.0
bitmap_0=0,0,0,1
tls_enable_0=1
address_1=29.1.137.206
send_arp_status_1=1
dscp_tc_custom=1
"""


def test_hccn_conf_merge_keeps_the_site_keys():
    merged = merge_hccn_conf(SITE_CONF, {0: {"address": "10.0.0.1", "netmask": "255.255.255.0", "tls_enable": 0},
                                         1: {"address": "10.0.0.2", "netmask": "255.255.255.0", "tls_enable": 0}})
    lines = merged.splitlines()
    assert lines[:5] == ["# site file", "address_0=10.0.0.1", "netmask_0=255.255.255.0", "bitmap_0=0,0,0,1",
                         "tls_enable_0=0"]
    assert "send_arp_status_1=1" in lines and "dscp_tc_custom=1" in lines
    assert lines[-2:] == ["netmask_1=255.255.255.0", "tls_enable_1=0"]
    conf = parse_hccn_conf(merged)
    assert conf[1]["address"] == "10.0.0.2" and conf[0]["bitmap"] == "0,0,0,1"
    # merging again changes nothing
    assert merge_hccn_conf(merged, {0: {"address": "10.0.0.1"}}) == merged
    assert merge_hccn_conf("", {0: {"address": "10.0.0.1"}}) == "address_0=10.0.0.1\n"


def test_qos_of_a_port_whose_link_is_down_is_recorded_not_failed_and_set_later():
    fake = FakeHccn()
    fake.link_down = True
    tool = HccnTool(fake, path="/x/hccn_tool", sleep=lambda _s: None)
    with pytest.raises(HccnLinkDown, match="Link status is down"):
        tool.run(0, "-pfc", "-g")
    result = HccnDevice(tool, 0).apply(dict(WANT, **QOS))
    # the addresses are set; no QoS command (nothing could be read), nothing read back fails on it
    assert result["before"]["qos_link_down"] and result["after"]["qos_link_down"]
    assert result["before"]["pfc"] is None and result["before"]["mtu"] is None
    assert not [c for c in result["commands"] if c[0] in ("-dscp_to_tc", "-pfc", "-mtu")]
    assert [c[0] for c in result["commands"]] == ["-ip", "-gateway", "-netdetect", "-tls"]
    assert "pfc: (not read: link down)" in diff_text(0, result["before"])
    # once the link is up, a later run sets the QoS
    fake.link_down = False
    again = HccnDevice(tool, 0).apply(dict(WANT, **QOS))
    assert "qos_link_down" not in again["before"]
    assert [c[0] for c in again["commands"]] == ["-dscp_to_tc", "-pfc", "-mtu"]
    assert again["after"]["pfc"] == [1, 0, 0, 0, 1, 0, 0, 0]


def test_other_qos_failures_still_fail():
    fake = FakeHccn(fail="dcmi module initialize failed. ret is -8005")
    tool = HccnTool(fake, path="/x/hccn_tool", sleep=lambda _s: None)
    with pytest.raises(HccnError, match="-8005") as err:
        HccnDevice(tool, 0).apply(dict(WANT, **QOS))
    assert not isinstance(err.value, HccnLinkDown)


def test_speed_unknown_is_read_as_none():
    assert parse_speed("Speed: Unknown!") is None
    assert parse_speed("Speed: unknown") is None
