# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The device-NIC IP plan of a cluster: expanded from the inventory and validated as a whole."""

from __future__ import annotations

import hashlib
import ipaddress
import random

from ansible_collections.ascendops.cluster.plugins.module_utils.hccn_tool import (
    HEALTH_INIT,
    hccn_conf_devices,
    health_ok,
    link_flaps,
    merge_hccn_conf,
    optical_problems,
    pfc_highest,
    stat_problems,
)

SINGLE_SUBNET_MODELS = ("910b",)
PING_STRATEGIES = ("auto", "full", "ring", "sample")
# hccn_tool -ping sends one packet a second (as ping does): the estimate of the matrix's duration.
PING_SECONDS_PER_PACKET = 1.0


def _ip(value):
    try:
        return ipaddress.IPv4Address(str(value).strip())
    except ValueError:
        return None


def _network(address, netmask):
    try:
        return ipaddress.IPv4Network(f"{address}/{netmask}", strict=False)
    except ValueError:
        return None


def _host_networks(node):
    """[(interface, network)] from "eth0 10.0.0.11/255.255.255.0" entries or interface facts
    (``ansible_facts[iface]``: ``device``, ``ipv4``, ``ipv4_secondaries``)."""
    out = []
    for entry in node.get("host_networks") or []:
        if isinstance(entry, dict):
            addrs = ([entry["ipv4"]] if isinstance(entry.get("ipv4"), dict) else []) + list(
                entry.get("ipv4_secondaries") or [])
            for addr in addrs:
                net = _network(addr.get("address"), addr.get("netmask"))
                if net is not None and not net.is_loopback:
                    out.append((entry.get("device") or "?", net))
            continue
        iface, _sep, cidr = str(entry).strip().rpartition(" ")
        try:
            out.append((iface or "?", ipaddress.IPv4Network(cidr, strict=False)))
        except ValueError:
            continue
    return out


def _addresses(node, devices, errors):
    """The node's device addresses, explicit or by rule; errors for what is missing or malformed."""
    host = node["host"]
    explicit = node.get("addresses") or []
    if explicit:
        if not isinstance(explicit, (list, tuple)):
            errors.append(f"{host}: roce_device_addresses must be a list (one address per NPU)")
            return []
        out = []
        for index in range(devices):
            if index >= len(explicit) or explicit[index] in (None, ""):
                errors.append(f"{host} NPU {index}: no address (roce_device_addresses has {len(explicit)} "
                              f"entries, the node has {devices} device NICs)")
                out.append(None)
                continue
            ip = _ip(explicit[index])
            if ip is None:
                errors.append(f"{host} NPU {index}: {explicit[index]!r} is not an IPv4 address")
            out.append(ip)
        if len(explicit) > devices:
            errors.append(f"{host}: roce_device_addresses has {len(explicit)} entries for {devices} device NICs "
                          f"(extra: {', '.join(str(a) for a in explicit[devices:])})")
        return out
    base, offset = node.get("address_base"), node.get("address_offset")
    if base in (None, "") or offset in (None, ""):
        errors.append(f"{host}: no device addresses: set roce_device_addresses (one per NPU) or "
                      f"roce_address_base and roce_address_offset")
        return [None] * devices
    base_ip = _ip(base)
    try:
        offset = int(offset)
    except (TypeError, ValueError):
        errors.append(f"{host}: roce_address_offset {offset!r} is not an integer")
        return [None] * devices
    if base_ip is None:
        errors.append(f"{host}: roce_address_base {base!r} is not an IPv4 address")
        return [None] * devices
    out = []
    for index in range(devices):
        try:
            out.append(base_ip + offset + index)
        except ipaddress.AddressValueError:
            errors.append(f"{host} NPU {index}: {base} + {offset + index} is past 255.255.255.255")
            out.append(None)
    return out


class _HostNetIndex:
    """The host NIC subnets of every node, looked up by address in one step per prefix length (not one
    comparison per subnet of the cluster for each device address)."""

    def __init__(self, nodes):
        self._by_prefix = {}
        order = 0
        for node in nodes:
            for iface, net in _host_networks(node):
                self._by_prefix.setdefault(net.prefixlen, {}).setdefault(int(net.network_address), []).append(
                    (order, node["host"], iface, net))
                order += 1

    def containing(self, address):
        """[(host, iface, net)] of the subnets that hold ``address``, in the nodes' order."""
        found = []
        value = int(address)
        for prefix, nets in self._by_prefix.items():
            mask = (0xFFFFFFFF << (32 - prefix)) & 0xFFFFFFFF
            found.extend(nets.get(value & mask, ()))
        return [entry[1:] for entry in sorted(found, key=lambda entry: entry[0])]


def plan_fingerprint(devices):
    """The sha1 of the plan's ``host device_id address netmask`` lines, sorted as Jinja's ``sort`` does
    (case-insensitive) and joined with commas: the value the ping record kept before this filter computed
    it (``__roce_ping_fingerprint``), so a node's record stays valid."""
    lines = [" ".join(str(d.get(key)) for key in ("host", "device_id", "address", "netmask")) for d in devices]
    return hashlib.sha1(",".join(sorted(lines, key=str.lower)).encode("utf-8")).hexdigest()


def roce_plan(nodes):
    """Expand and validate the device-NIC plan of every node.

    ``nodes``: one dict per host, in inventory order: ``host``, ``devices`` (device NICs per node),
    ``model`` (``910b`` | ``a3``), ``addresses`` (explicit list, one per device) or ``address_base``
    + ``address_offset`` (device i gets base + offset + i), ``netmask``, ``gateway``, ``netdetect``
    (default: the gateway), ``tls`` (bool), ``host_networks`` (optional, ``"IFACE ADDR/MASK"`` of
    the host's own NICs, from facts).

    Returns ``{"devices": [{host, device_id, address, netmask, prefix, gateway, netdetect, tls}],
    "by_host": {host: [its devices]}, "fingerprint": sha1, "errors": [...]}``: every problem found,
    each naming the host, the NPU index and the conflicting address or host. The plan is usable only
    when ``errors`` is empty. ``by_host`` has every node given (an empty list for a node without
    devices), so that each node takes its part by key (``plan.by_host[inventory_hostname]``), not by
    filtering the whole cluster's list.
    """
    errors = []
    plan = []
    by_host = {}
    owners = {}
    host_nets = _HostNetIndex(nodes)
    tls_values = {}
    for node in nodes:
        host = node["host"]
        mine = by_host.setdefault(host, [])
        try:
            devices = int(node.get("devices"))
        except (TypeError, ValueError):
            devices = 0
        if devices < 1:
            errors.append(f"{host}: roce_devices_per_node must be a positive integer, got {node.get('devices')!r}")
            continue
        netmask = str(node.get("netmask") or "")
        if _network("0.0.0.0", netmask) is None:
            errors.append(f"{host}: roce_netmask {netmask!r} is not a netmask")
            netmask = None
        gateway = _ip(node.get("gateway")) if node.get("gateway") not in (None, "") else None
        if node.get("gateway") not in (None, "") and gateway is None:
            errors.append(f"{host}: roce_gateway {node.get('gateway')!r} is not an IPv4 address")
        netdetect_raw = node.get("netdetect") if node.get("netdetect") not in (None, "") else node.get("gateway")
        netdetect = _ip(netdetect_raw) if netdetect_raw not in (None, "") else None
        if netdetect_raw not in (None, "") and netdetect is None:
            errors.append(f"{host}: roce_netdetect {netdetect_raw!r} is not an IPv4 address")
        tls = bool(node.get("tls"))
        tls_values.setdefault(tls, []).append(host)
        addresses = _addresses(node, devices, errors)
        first_net = None
        for index, address in enumerate(addresses):
            if address is None:
                continue
            label = f"{host} NPU {index}"
            where = owners.get(address)
            if where:
                errors.append(f"{label}: address {address} is also used by {where}")
            else:
                owners[address] = label
            for other, iface, net in host_nets.containing(address):
                errors.append(f"{label}: address {address} is inside host NIC {iface} subnet {net} of {other}")
            net = _network(address, netmask) if netmask else None
            if net is not None:
                if net.prefixlen < 31 and address in (net.network_address, net.broadcast_address):
                    errors.append(f"{label}: address {address} is the network or broadcast address of {net}")
                if gateway is not None and gateway not in net and (
                        node.get("model") not in SINGLE_SUBNET_MODELS or first_net is None):
                    errors.append(f"{label}: gateway {gateway} is outside the device subnet {net}")
                if gateway is not None and gateway == address:
                    errors.append(f"{label}: address {address} is the gateway")
                if node.get("model") in SINGLE_SUBNET_MODELS:
                    if first_net is None:
                        first_net = (index, net)
                    elif net != first_net[1]:
                        errors.append(f"{label}: address {address} is outside the subnet {first_net[1]} of "
                                      f"{host} NPU {first_net[0]} (910B: one subnet per node)")
            entry = {
                "host": host,
                "device_id": str(index),
                "address": str(address),
                "netmask": netmask,
                "prefix": net.prefixlen if net is not None else None,
                "gateway": str(gateway) if gateway is not None else None,
                "netdetect": str(netdetect) if netdetect is not None else None,
                "tls": tls,
            }
            plan.append(entry)
            mine.append(entry)
    if len(tls_values) > 1:
        errors.append("roce_tls differs between nodes (it must be the same on every device of a job): " + "; ".join(
            f"{'on' if value else 'off'}: {', '.join(hosts)}" for value, hosts in sorted(tls_values.items())))
    return {"devices": plan, "by_host": by_host, "fingerprint": plan_fingerprint(plan), "errors": errors}


def _rails(devices):
    """{device_id: [plan entries of that device index, in the plan's (inventory) order]}: the rails."""
    rails = {}
    for entry in devices:
        rails.setdefault(str(entry["device_id"]), []).append(entry)
    return rails


def _ring_positions(position, size):
    """Positions of the ring neighbours (previous, next) on a rail of ``size``, without self or repeats."""
    out = []
    for other in ((position - 1) % size, (position + 1) % size):
        if other != position and other not in out:
            out.append(other)
    return out


def _sample_positions(rng, position, size, taken, count):
    """``count`` (at most) positions of the rail other than ``position`` and ``taken``, drawn by ``rng``."""
    forbidden = sorted(set(taken) | {position})
    free = size - len(forbidden)
    chosen = []
    for index in rng.sample(range(free), min(count, free)) if free > 0 else ():
        for skip in forbidden:  # the index-th free position
            if index >= skip:
                index += 1
        chosen.append(index)
    return sorted(chosen)


def roce_ping_plan(plan, strategy="auto", full_max_hosts=32, sample_peers=4, seed="", count=3, forks=16):
    """The ping matrix of the RoCE check: for each node, the plan entries its devices ping.

    ``plan``: the ``roce_plan`` result (its ``devices`` in inventory order). A device pings devices of
    the same index on other nodes (the same rail), never itself, each at most once.

    ``strategy``: ``full`` - every other node's device of the same index (N - 1 peers a device);
    ``ring`` - the previous and the next node on the rail (inventory order, wrapping around);
    ``sample`` - the ring neighbours plus ``sample_peers`` other peers of the rail drawn at random
    from ``seed`` (the same seed gives the same peers; a new seed on each run covers the whole fabric
    over runs); ``auto`` - ``full`` up to ``full_max_hosts`` nodes, else ``sample``.

    Returns ``{"strategy": the one used, "seed", "by_host": {host: [plan entries to ping]}, "pings":
    their number, "nodes": nodes with a peer, "max_per_node", "duration_s", "fingerprint"}``.
    ``duration_s`` estimates the matrix: every node pings one peer after another, ``count`` packets of
    a second each, ``forks`` nodes at a time. ``fingerprint`` is the plan's (``plan_fingerprint``) for
    ``full``, and names the strategy for the others (a matrix that passed with fewer peers does not
    stand for a full one).
    """
    if strategy not in PING_STRATEGIES:
        raise ValueError(f"roce_ping_plan: strategy {strategy!r} must be one of {', '.join(PING_STRATEGIES)}")
    try:
        full_max_hosts, sample_peers, count, forks = (int(v) for v in (full_max_hosts, sample_peers, count, forks))
    except (TypeError, ValueError):
        raise ValueError("roce_ping_plan: full_max_hosts, sample_peers, count and forks must be integers") from None
    if full_max_hosts < 0 or sample_peers < 0 or count < 1 or forks < 1:
        raise ValueError("roce_ping_plan: full_max_hosts and sample_peers must be 0 or more, count and forks 1 or more")
    devices = list((plan or {}).get("devices") or [])
    hosts = list(dict.fromkeys(entry["host"] for entry in devices))
    if strategy == "auto":
        strategy = "full" if len(hosts) <= full_max_hosts else "sample"
    by_host = {host: [] for host in hosts}
    rails = _rails(devices)
    if strategy == "full":
        rail_ids = {host: set() for host in hosts}
        for entry in devices:
            rail_ids[entry["host"]].add(str(entry["device_id"]))
        for host in hosts:
            mine = rail_ids[host]
            by_host[host] = [entry for entry in devices if entry["host"] != host and str(entry["device_id"]) in mine]
    else:
        for rail_id, rail in rails.items():
            size = len(rail)
            for position, entry in enumerate(rail):
                taken = _ring_positions(position, size)
                if strategy == "sample":
                    rng = random.Random(f"{seed}/{entry['host']}/{rail_id}")
                    taken = taken + _sample_positions(rng, position, size, taken, sample_peers)
                # rails in the order of their first device: each node's peers device by device
                by_host[entry["host"]].extend(rail[other] for other in taken)
    counts = [len(peers) for peers in by_host.values()]
    pinging = sum(1 for n in counts if n)
    max_per_node = max(counts, default=0)
    waves = -(-pinging // forks)
    fingerprint = plan_fingerprint(devices)
    if strategy != "full":
        fingerprint = hashlib.sha1(f"{fingerprint} {strategy}".encode()).hexdigest()
    return {"strategy": strategy, "seed": str(seed), "by_host": by_host, "pings": sum(counts), "nodes": pinging,
            "max_per_node": max_per_node, "duration_s": int(waves * max_per_node * count * PING_SECONDS_PER_PACKET),
            "fingerprint": fingerprint}


def _speed_text(speed):
    return "Unknown" if speed is None else f"{speed} Mb/s"


def _unreadable(error):
    """An hccn_tool output the parser could not read (not the tool refusing the read)."""
    return "could not read the line" in str(error or "")


def _health_checks(dev, label, optics, link_flaps_max, link_flap_window_s, problems, notes):
    """The optics and link-history findings of one port (``optics``; ``link_flaps_max`` < 0: not judged).
    Returns the optics findings, which a down link's message carries as its likely cause."""
    found = []
    if optics and "optical" in dev:
        error = dev.get("optical_error")
        if dev.get("optical"):
            found = optical_problems(dev["optical"])
        elif _unreadable(error):
            problems.append(f"{label}: {error}")
        elif error:
            notes.append(f"{label}: optics not read ({error})")
    if link_flaps_max is not None and int(link_flaps_max) >= 0 and "link_stat" in dev:
        error = dev.get("link_stat_error")
        if dev.get("link_stat"):
            flaps = link_flaps(dev["link_stat"], int(link_flap_window_s))
            if flaps > int(link_flaps_max):
                problems.append(f"{label}: the link went down {flaps} times in the last {int(link_flap_window_s)} s "
                                f"(hccn_tool -link_stat -g; at most {int(link_flaps_max)}); likely cause: cable, "
                                "optics or switch port")
        elif _unreadable(error):
            problems.append(f"{label}: {error}")
        elif error:
            notes.append(f"{label}: link history not read ({error})")
    return found


def _stat_checks(dev, label, max_errors, problems, notes):
    """The packet-statistics findings of one port (``hccn_tool -stat -g``, read with the module's ``stat``):
    error counters above ``max_errors`` (< 0: not judged) are problems. Returns the port's highest PFC or
    pause counter ``(count, name)`` or None (reported per node, never refused)."""
    if "stat" not in dev:
        return None
    error = dev.get("stat_error")
    stat = dev.get("stat")
    if not stat:
        if _unreadable(error):
            problems.append(f"{label}: {error}")
        elif error:
            notes.append(f"{label}: packet statistics not read ({error})")
        return None
    if max_errors is not None and int(max_errors) >= 0:
        problems.extend(f"{label}: {finding}; likely cause: cable, optics or switch port"
                        for finding in stat_problems(stat, max_errors))
    highest = pfc_highest(stat)
    return (highest[1], highest[0]) if highest else None


def roce_report(info, plan, host, expected_speed_mbps=0, optics=False, link_flaps_max=-1, link_flap_window_s=3600,
                stat_max_errors=-1):
    """The cluster-wide report's part for one node: ``{"problems": [...], "notes": [...]}`` from an
    ``hccn_info`` (or ``hccn`` with ``status``) result and the node's plan entries, each line naming the
    node and the NPU.

    Problems: a link not UP or a speed the tool prints as ``Unknown`` (the likely cause named: cable,
    optics or switch port; the port's RDMA QoS is set on a later run once the link is up), net health
    ``Fault`` or anything but ``Success`` (``Init`` where the port has a net-detect address that has
    not answered), speed not ``expected_speed_mbps`` (0 = not checked), address read back not the
    planned one, every ping that did not get all its packets back. Notes: ports accepted with net
    health ``Init`` because no net-detect address is configured for them (nothing to probe).
    With ``optics``: no optical module, or light under the module's own low threshold
    (``hccn_tool -optical -g``), is a problem; on a down port it is named as the likely cause. With
    ``link_flaps_max`` >= 0: more link-downs than that in the last ``link_flap_window_s`` seconds
    (``hccn_tool -link_stat -g``) is a problem. With ``stat_max_errors`` >= 0, on ports whose packet
    statistics were read (``hccn_tool -stat -g``): an error counter (RoCE receive/send errors, bad or FCS-error
    frames) above it is a problem naming the NPU, the counter and its value; the node's highest PFC or pause
    counter is a note (congestion somewhere on the path; never refused). An output that cannot be read is a
    problem showing it; a tool that refuses the read is a note.
    """
    problems = []
    notes = []
    pfc = []
    planned = {str(d["device_id"]): d for d in plan or []}
    for dev in (info or {}).get("devices", []):
        label = f"{host} NPU {dev['device_id']}"
        want = planned.get(str(dev["device_id"]))
        netdetect = dev.get("netdetect") if "netdetect" in dev else (want or {}).get("netdetect")
        link = str(dev.get("link") or "unknown")
        optics_found = _health_checks(dev, label, optics, link_flaps_max, link_flap_window_s, problems, notes)
        highest = _stat_checks(dev, label, stat_max_errors, problems, notes)
        if highest and highest[0] > 0:
            pfc.append(highest + (str(dev["device_id"]),))
        if link.upper() != "UP":
            cause = ("; ".join(optics_found) + ", so likely the optics or fibre") if optics_found else \
                "cable, optics or switch port"
            problems.append(
                f"{label}: link is {link} (net health {dev.get('health') or 'unknown'}, speed "
                f"{_speed_text(dev.get('speed_mbps'))}); likely cause: {cause} "
                "(RDMA QoS of this port is set on a later run once its link is up)")
        elif optics_found:
            problems.extend(f"{label}: {finding}; likely cause: optics or fibre" for finding in optics_found)
        elif "speed_mbps" in dev and dev.get("speed_mbps") is None:
            problems.append(f"{label}: speed is Unknown (hccn_tool -speed -g) with the link UP; likely cause: "
                            "cable, optics or switch port")
        elif dev.get("qos_link_down"):
            problems.append(f"{label}: hccn_tool refused the RDMA QoS reads (Link status is down); likely cause: "
                            "cable, optics or switch port (the QoS is set on a later run once the link stays up)")
        if link.upper() == "UP":
            health = dev.get("health")
            if health_ok(health, netdetect):
                if health == HEALTH_INIT:
                    notes.append(f"{label}: net health Init accepted (no net-detect address configured on this "
                                 "port, nothing to probe)")
            elif health == HEALTH_INIT:
                problems.append(f"{label}: net health is Init: the net-detect address {netdetect} has not answered")
            else:
                problems.append(f"{label}: net health is {health or 'unknown'}")
            speed = dev.get("speed_mbps")
            if expected_speed_mbps and int(expected_speed_mbps) > 0 and speed is not None \
                    and speed != int(expected_speed_mbps):
                problems.append(f"{label}: speed is {speed} Mb/s, expected {expected_speed_mbps}")
        if want and (dev.get("address"), dev.get("netmask")) != (want["address"], want["netmask"]):
            problems.append(f"{label}: address is {dev.get('address')}/{dev.get('netmask')}, the plan says "
                            f"{want['address']}/{want['netmask']}")
    if pfc:
        count, name, device = max(pfc, key=lambda entry: entry[0])
        notes.append(f"{host}: highest PFC/pause counter NPU {device} {name} = {count} (hccn_tool -stat -g since the "
                     "driver started; pauses mean congestion on the path, reported only)")
    for ping in (info or {}).get("pings", []):
        if not ping.get("ok"):
            peer = f"{ping.get('host', '?')} NPU {ping.get('device_id', ping.get('device'))}"
            why = f" (the link of {host} NPU {ping.get('device')} is down)" if ping.get("link_down") else ""
            problems.append(f"{host} NPU {ping.get('device')} cannot reach {peer} ({ping.get('address')}): "
                            f"{ping.get('received')}/{ping.get('transmitted')} packets received{why}")
    return {"problems": problems, "notes": notes}


def roce_unsettled(devices, plan=None):
    """The ports of ``devices`` (hccn_info's) that have not settled: link not UP, or net health not
    accepted (``health_ok``: Success, or Init where the port has no net-detect address; the port's own
    read, else the plan's). One ``NPU <id>: link <L>, net health <H>`` per port, in device order."""
    planned = {str(d["device_id"]): d for d in plan or []}
    out = []
    for dev in devices or []:
        want = planned.get(str(dev.get("device_id")), {})
        netdetect = dev.get("netdetect") if "netdetect" in dev else want.get("netdetect")
        link = str(dev.get("link") or "unknown")
        if link.upper() != "UP" or not health_ok(dev.get("health"), netdetect):
            out.append(f"NPU {dev.get('device_id')}: link {link}, net health {dev.get('health') or 'unknown'}")
    return out


def roce_problems(info, plan, host, expected_speed_mbps=0, optics=False, link_flaps_max=-1, link_flap_window_s=3600):
    """The problems of ``roce_report`` (one message per problem, each naming the node and the NPU)."""
    return roce_report(info, plan, host, expected_speed_mbps, optics, link_flaps_max, link_flap_window_s)["problems"]


def roce_ports(plan):
    """The ``ports`` of the ``hccn`` module from this node's plan entries: per device its index,
    address and netmask, TLS switch, and gateway and net-detect address when the plan has them."""
    ports = []
    for entry in plan or []:
        try:
            port = {"device": int(entry["device_id"]), "address": entry["address"], "netmask": entry["netmask"],
                    "tls": bool(entry.get("tls"))}
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"roce_ports: plan entry without a device_id, address or netmask: {entry!r}") from None
        for key in ("gateway", "netdetect"):
            if entry.get(key):
                port[key] = entry[key]
        ports.append(port)
    return ports


def roce_hccn_conf(text, plan, send_arp_status=1):
    """``/etc/hccn.conf`` with this node's planned devices merged in (module_utils
    ``merge_hccn_conf``): per device ``address``, ``netmask``, ``netdetect`` and ``gateway`` (when
    planned), ``send_arp_status`` and ``tls_enable`` (0/1, as real 8-NPU nodes carry it); every
    other line the site has stays."""
    try:
        devices = hccn_conf_devices(plan, send_arp_status)
    except ValueError as exc:
        raise ValueError(f"roce_hccn_conf: {exc}") from None
    return merge_hccn_conf(text or "", devices)


class FilterModule:
    """Device-NIC IP plan."""

    def filters(self):
        return {"roce_plan": roce_plan, "roce_ping_plan": roce_ping_plan, "roce_problems": roce_problems,
                "roce_report": roce_report, "roce_hccn_conf": roce_hccn_conf, "roce_ports": roce_ports,
                "roce_unsettled": roce_unsettled}
