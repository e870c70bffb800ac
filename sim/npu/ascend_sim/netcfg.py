"""SIMULATION ONLY - not Huawei software. Device-NIC plumbing shared by hccn_tool and boot.

When ``hardware.json`` names a ``nic_interface`` (e.g. "eth1", a real container interface on the
simulated RoCE network), that interface carries the NPUs' own ports: a macvlan ``ascend0`` on it
lives in a network namespace of its own, ``ascend-dev`` (the device side: the host OS never sees
device addresses, as on a real server where they live on the NPU), the interface itself keeps no
IPv4 address, and the device IPs set with ``hccn_tool -ip -s`` are added to ``ascend0`` there
(``ip -n ascend-dev addr replace A/prefix dev ascend0``; the previous address of the same NPU is
removed). Pings are real, from that namespace:
``ip netns exec ascend-dev ping -c 3 -W 1 -I <own device ip> X``. The namespace has no default
route, so a device reaches only addresses of its own subnet on the fabric: other nodes' device
addresses and the fabric's gateway (the podman bridge). Without ``nic_interface`` nothing touches the OS network:
a ping succeeds only for addresses configured on this node's own NPUs whose link is up, and a
net-detect address counts as reachable when it lies in the NPU's own subnet.
"""

import ipaddress
import re
import shutil
import subprocess

_PING_RE = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")
NETNS = "ascend-dev"
DEVICE_IF = "ascend0"


class NetError(Exception):
    pass


def valid_ip(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def netmask_prefix(mask: str) -> int:
    """Prefix length of a dotted netmask; NetError when it is not a contiguous mask."""
    try:
        return ipaddress.IPv4Network(f"0.0.0.0/{mask}").prefixlen
    except ValueError as exc:
        raise NetError(f"invalid netmask {mask}") from exc


def same_subnet(ip: str, mask: str, other: str) -> bool:
    try:
        net = ipaddress.IPv4Network(f"{ip}/{mask}", strict=False)
        return ipaddress.IPv4Address(other) in net
    except ValueError:
        return False


def _ip(*args: str) -> subprocess.CompletedProcess:
    tool = shutil.which("ip")
    if tool is None:
        raise NetError("the ip command (iproute2) is missing")
    return subprocess.run([tool, *args], capture_output=True, text=True, check=False)


def plug(iface: str) -> None:
    """Give the NPUs their ports: a macvlan ``DEVICE_IF`` on ``iface``, in the device namespace.

    ``iface`` itself stays in the host namespace without an IPv4 address (a container restart keeps
    or recreates it; a moved interface would die with the namespace). A no-op when the port exists.
    """
    if _ip("-n", NETNS, "link", "show", DEVICE_IF).returncode == 0:
        return
    _ip("netns", "add", NETNS)  # fails harmlessly when the namespace exists
    _ip("-4", "addr", "flush", "dev", iface)
    _ip("link", "set", iface, "up")
    _ip("link", "del", DEVICE_IF)  # a leftover in the host namespace; fails harmlessly
    made = _ip("link", "add", DEVICE_IF, "link", iface, "type", "macvlan", "mode", "bridge")
    if made.returncode != 0:
        raise NetError(f"ip link add {DEVICE_IF} link {iface} type macvlan failed: {made.stderr.strip()}")
    moved = _ip("link", "set", DEVICE_IF, "netns", NETNS)
    if moved.returncode != 0:
        raise NetError(f"ip link set {DEVICE_IF} netns {NETNS} failed: {moved.stderr.strip()}")
    _ip("-n", NETNS, "link", "set", "lo", "up")
    _ip("-n", NETNS, "link", "set", DEVICE_IF, "up")


def remove_address(iface: str, ip: str, mask: str | None) -> None:
    """``ip addr del ip/prefix`` on the device port; a missing address is no error."""
    plug(iface)
    try:
        prefix = netmask_prefix(mask) if mask else 32
    except NetError:
        prefix = 32
    _ip("-n", NETNS, "addr", "del", f"{ip}/{prefix}", "dev", DEVICE_IF)


def set_address(iface: str, old_ip: str | None, old_mask: str | None, ip: str, mask: str) -> None:
    """Put ``ip/mask`` on the device port, removing the NPU's previous address first."""
    prefix = netmask_prefix(mask)
    if old_ip and (old_ip, old_mask) != (ip, mask):
        remove_address(iface, old_ip, old_mask)
    plug(iface)
    done = _ip("-n", NETNS, "addr", "replace", f"{ip}/{prefix}", "dev", DEVICE_IF)
    if done.returncode != 0:
        raise NetError(f"ip addr replace {ip}/{prefix} dev {DEVICE_IF} failed: {done.stderr.strip()}")


def real_ping(source_ip: str, target: str, count: int) -> int:
    """Packets received by ``ping -c count -W 1 -I source_ip target`` in the device namespace."""
    tool = shutil.which("ip")
    if tool is None:
        raise NetError("the ip command (iproute2) is missing")
    if shutil.which("ping") is None:
        raise NetError("the ping command (iputils-ping) is missing")
    done = subprocess.run(
        [tool, "netns", "exec", NETNS, "ping", "-c", str(count), "-W", "1", "-I", source_ip, target],
        capture_output=True,
        text=True,
        check=False,
    )
    m = _PING_RE.search(done.stdout)
    return int(m.group(2)) if m else 0
