"""SIMULATION ONLY - not Huawei software. Device-NIC plumbing shared by hccn_tool and boot.

When ``hardware.json`` names a ``nic_interface`` (e.g. "eth1", a real container interface on the
simulated RoCE network), that interface stands for the NPUs' own ports: it is moved into a network
namespace of its own, ``ascend-dev`` (the device side: the host OS never sees device addresses, as
on a real server where they live on the NPU), its podman address is flushed, and the device IPs set
with ``hccn_tool -ip -s`` are added to it there (``ip -n ascend-dev addr replace A/prefix dev IF``;
the previous address of the same NPU is removed). Pings are real, from that namespace:
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
    """Move ``iface`` into the device namespace (once; a no-op when it is there already)."""
    if _ip("-n", NETNS, "link", "show", iface).returncode == 0:
        return
    _ip("netns", "add", NETNS)  # fails harmlessly when the namespace exists
    moved = _ip("link", "set", iface, "netns", NETNS)
    if moved.returncode != 0:
        raise NetError(f"ip link set {iface} netns {NETNS} failed: {moved.stderr.strip()}")
    _ip("-n", NETNS, "addr", "flush", "dev", iface)
    _ip("-n", NETNS, "link", "set", "lo", "up")
    _ip("-n", NETNS, "link", "set", iface, "up")


def remove_address(iface: str, ip: str, mask: str | None) -> None:
    """``ip addr del ip/prefix dev iface`` in the device namespace; a missing address is no error."""
    plug(iface)
    try:
        prefix = netmask_prefix(mask) if mask else 32
    except NetError:
        prefix = 32
    _ip("-n", NETNS, "addr", "del", f"{ip}/{prefix}", "dev", iface)


def set_address(iface: str, old_ip: str | None, old_mask: str | None, ip: str, mask: str) -> None:
    """Put ``ip/mask`` on ``iface`` (device namespace), removing the NPU's previous address first."""
    prefix = netmask_prefix(mask)
    if old_ip and (old_ip, old_mask) != (ip, mask):
        remove_address(iface, old_ip, old_mask)
    plug(iface)
    done = _ip("-n", NETNS, "addr", "replace", f"{ip}/{prefix}", "dev", iface)
    if done.returncode != 0:
        raise NetError(f"ip addr replace {ip}/{prefix} dev {iface} failed: {done.stderr.strip()}")


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
