"""SIMULATION ONLY - not Huawei software. Device-NIC plumbing shared by hccn_tool and boot.

When ``hardware.json`` names a ``nic_interface`` (e.g. "eth1", a real container interface on the
simulated RoCE network), the device IPs set with ``hccn_tool -ip -s`` are also added to that
interface (``ip addr replace A/prefix dev IF``; the previous address of the same NPU is removed),
and pings are real ``ping -c 3 -W 1 -I <own device ip> X``. So cross-node pings between simulated
device NICs really cross the network. Without ``nic_interface`` nothing touches the OS network:
a ping succeeds only for addresses configured on this node's own NPUs whose link is up, and a
net-detect address counts as reachable when it lies in the NPU's own subnet.
"""

import ipaddress
import re
import shutil
import subprocess

_PING_RE = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")


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


def remove_address(iface: str, ip: str, mask: str | None) -> None:
    """``ip addr del ip/prefix dev iface``; an address that is not there is no error."""
    try:
        prefix = netmask_prefix(mask) if mask else 32
    except NetError:
        prefix = 32
    _ip("addr", "del", f"{ip}/{prefix}", "dev", iface)


def set_address(iface: str, old_ip: str | None, old_mask: str | None, ip: str, mask: str) -> None:
    """Put ``ip/mask`` on ``iface``, removing the NPU's previous address first."""
    prefix = netmask_prefix(mask)
    if old_ip and (old_ip, old_mask) != (ip, mask):
        remove_address(iface, old_ip, old_mask)
    done = _ip("addr", "replace", f"{ip}/{prefix}", "dev", iface)
    if done.returncode != 0:
        raise NetError(f"ip addr replace {ip}/{prefix} dev {iface} failed: {done.stderr.strip()}")


def real_ping(source_ip: str, target: str, count: int) -> int:
    """Packets received by ``ping -c count -W 1 -I source_ip target``."""
    tool = shutil.which("ping")
    if tool is None:
        raise NetError("the ping command (iputils-ping) is missing")
    done = subprocess.run(
        [tool, "-c", str(count), "-W", "1", "-I", source_ip, target],
        capture_output=True,
        text=True,
        check=False,
    )
    m = _PING_RE.search(done.stdout)
    return int(m.group(2)) if m else 0
