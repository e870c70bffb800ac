"""hccn_tool parsers and driver (plugins/module_utils/hccn_tool.py), on the formats of ascend-facts.md."""

from __future__ import annotations

import os

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.hccn_tool import (
    HCCN_BUSY,
    HccnDevice,
    HccnError,
    HccnParseError,
    HccnTool,
    parse_gateway,
    parse_hccn_conf,
    parse_ip,
    parse_link,
    parse_net_health,
    parse_netdetect,
    parse_ping,
    parse_speed,
    parse_tls,
    render_hccn_conf,
)

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
    assert parse_tls("dev_id:4, tls switch[0](0:disable, 1:enable), ...") == {"dev_id": 4, "enabled": False}
    assert parse_tls("dev_id:0, tls switch[1](0:disable, 1:enable), tls preconfigured[1](0:non-preset, "
                     "1:preset), tls alarm time threshold[60]days") == {"dev_id": 0, "enabled": True}
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
        self.busy = busy
        self.fail = fail
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
            return 0, f"dev_id:{argv[2]}, tls switch[{c['tls']}](0:disable, 1:enable), ...\n", ""
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
