# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""HCCL rank table: build it from the inventory and the device addresses read back from each node,
and check a generated (or any) rank table before it is written anywhere.

Format 1.0 (Atlas 800T A2, the default)::

    {"version": "1.0", "server_count": "2", "status": "completed",
     "server_list": [{"server_id": "10.0.0.11", "host_ip": "10.0.0.11",
                      "device": [{"device_id": "0", "device_ip": "29.1.1.1", "rank_id": "0"}, ...]}]}

Format 1.2 (Atlas A3 SuperPoD) adds ``super_device_id`` to every device and a top-level
``super_pod_list: [{"super_pod_id": "0", "server_list": [{"server_id": ...}]}]``; on A3 every chip is
a device (16 per server).

Order: servers in ascending ``server_id``, ranks numbered server by server, devices in ascending
``device_id`` within a server. ``server_id`` is the host address; addresses compare as addresses
(10.0.0.9 before 10.0.0.10, IPv4 before IPv6), a server_id that is not an address sorts after all
addresses, by name. Every value in the table is a string.

On A3 each device's ``super_device_id`` is the ``SDID`` the hardware reports
(``npu-smi info -t spod-info -i <id> -c <chip>``, the ``super_device_id`` of the devices given), never
computed: a 1.2 table from the hardware without it is refused.

Tables other tools write (MindIE, the HCCL guide's A2 example) list servers in any order, may carry
``container_ip`` and leave out ``host_ip``: ``read_rank_table`` (filter ``rank_table_read``) accepts
them; ``check_rank_table`` holds our own tables to our order.
"""

from __future__ import annotations

import ipaddress
import json

from ansible_collections.ascendops.cluster.plugins.module_utils.hccn_tool import HEALTH_INIT, health_ok

VERSIONS = ("1.0", "1.2")


class RankTableError(ValueError):
    """The inventory, the plan or the hardware do not give a valid rank table."""


def server_sort_key(server_id):
    """Numeric-aware order of server ids: addresses by value (v4 before v6), then other names."""
    text = str(server_id)
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return (1, 0, 0, text)
    return (0, addr.version, int(addr), text)


def _device_index(value, where):
    try:
        index = int(str(value))
    except ValueError:
        raise RankTableError(f"{where}: device_id {value!r} is not a number") from None
    if index < 0:
        raise RankTableError(f"{where}: device_id {value!r} is negative")
    return index


def _plan_addresses(plan, name):
    """Plan of one server as {device index: address}: a list (index = device) or a list of dicts;
    None or an empty list (the plan is given by rule elsewhere) is no plan."""
    if not plan:
        return None
    if isinstance(plan, dict):
        return {_device_index(k, name): str(v) for k, v in plan.items()}
    result = {}
    for i, entry in enumerate(plan):
        if isinstance(entry, dict):
            result[_device_index(entry.get("device_id", i), name)] = str(entry.get("address"))
        else:
            result[i] = str(entry)
    return result


def _server_devices(server, expected, require_up):
    """Sorted [(device index, address, super_device_id|None)] of one server, checked against its plan."""
    name = server.get("name") or server.get("host_ip")
    devices = server.get("devices")
    plan = _plan_addresses(server.get("plan"), name)
    if devices is None:
        if plan is None:
            raise RankTableError(
                f"{name}: no device addresses (fact roce_devices is missing: run the roce stage on this host "
                "first) and no planned addresses")
        devices = [{"device_id": str(i), "address": a} for i, a in plan.items()]
    seen = {}
    for dev in devices:
        index = _device_index(dev.get("device_id"), name)
        where = f"{name} NPU {index}"
        if index in seen:
            raise RankTableError(f"{where}: device reported twice")
        address = dev.get("address") or dev.get("device_ip")
        if not address:
            raise RankTableError(f"{where}: the device NIC has no address (configure it with the roce stage)")
        try:
            ipaddress.ip_address(str(address))
        except ValueError:
            raise RankTableError(f"{where}: device address {address!r} is not an IP address") from None
        if require_up and "link" in dev and str(dev["link"]).upper() != "UP":
            raise RankTableError(f"{where}: device NIC link is {dev['link']} (address {address}); "
                                 "check the cable and `hccn_tool -i %d -link -g`" % index)
        # Init passes only where the port has no net-detect address (known: the key is there, empty)
        if require_up and "health" in dev and not health_ok(dev["health"], dev.get("netdetect", "unknown")):
            detect = (f", net-detect address {dev['netdetect']} has not answered" if dev.get("netdetect") and
                      str(dev["health"]) == HEALTH_INIT else "")
            raise RankTableError(f"{where}: device network health is {dev['health']} (address {address}{detect}); "
                                 "check `hccn_tool -i %d -net_health -g`" % index)
        if plan is not None:
            if index not in plan:
                raise RankTableError(f"{where}: the device has address {address} but the plan has no address "
                                     "for it (add it to the IP plan or lower ascend_npus_per_node)")
            if plan[index] != str(address):
                raise RankTableError(f"{where}: the plan says {plan[index]} but the device reports {address}; "
                                     "re-run the roce stage (or fix the plan)")
        sdid = dev.get("super_device_id")
        seen[index] = (str(address), None if sdid is None else str(sdid))
    if plan is not None:
        missing = sorted(set(plan) - set(seen))
        if missing:
            raise RankTableError(f"{name} NPU {missing[0]}: planned address {plan[missing[0]]} but the node "
                                 f"reports no such device (devices found: {sorted(seen) or 'none'})")
    if expected is not None and len(seen) != int(expected):
        raise RankTableError(f"{name}: {len(seen)} devices with addresses ({sorted(seen)}) but "
                             f"{expected} expected per server (ascend_npus_per_node, x2 chips on A3)")
    return [(i, *seen[i]) for i in sorted(seen)]


def build_rank_table(servers, version="1.0", devices_per_server=None, super_pod_id="0", require_up=True,
                     planned_only=False):
    """The rank table (a dict) for ``servers``: [{name, host_ip, devices, plan}] in any order.

    ``devices``: the roce stage's ``roce_devices`` of that host ({device_id, address, link, health,
    netdetect?, super_device_id?}; net health Success, or Init where ``netdetect`` is there and empty);
    ``plan``: the planned addresses (list by device index, or None). A device whose
    address differs from the plan, a planned device that is missing, a link that is not UP or a count
    other than ``devices_per_server`` raises RankTableError naming the node and the NPU. Version 1.2
    takes each device's ``super_device_id`` as given (read from the hardware); ``planned_only`` (a
    preview from the plan) marks it ``unread:<server>:<device>`` instead.
    """
    version = str(version)
    if version not in VERSIONS:
        raise RankTableError(f"rank table version {version!r} is not supported (choose one of {', '.join(VERSIONS)})")
    if not servers:
        raise RankTableError("no servers: the inventory group of NPU nodes is empty")
    by_id = {}
    for server in servers:
        host_ip = server.get("host_ip")
        if not host_ip:
            raise RankTableError(f"{server.get('name')}: no host address for server_id (set ansible_host)")
        if str(host_ip) in by_id:
            raise RankTableError(f"{server.get('name')} and {by_id[str(host_ip)].get('name')} have the same "
                                 f"host address {host_ip}")
        by_id[str(host_ip)] = server
    ordered = sorted(by_id, key=server_sort_key)
    server_list, rank, owner = [], 0, {}
    for sid in ordered:
        server = by_id[sid]
        entries = []
        devices = _server_devices(server, devices_per_server, require_up)
        for index, address, sdid in devices:
            if address in owner:
                raise RankTableError(f"{server.get('name', sid)} NPU {index}: device address {address} is also "
                                     f"used by {owner[address]}")
            owner[address] = f"{server.get('name', sid)} NPU {index}"
            entry = {"device_id": str(index), "device_ip": address, "rank_id": str(rank)}
            if version == "1.2":
                if sdid is None and not planned_only:
                    raise RankTableError(
                        f"{server.get('name', sid)} NPU {index}: no super_device_id read from the hardware "
                        "(npu-smi info -t spod-info -i <npu id> -c <chip id>, the SDID line); rank table 1.2 "
                        "needs the one the hardware reports")
                if sdid is None:
                    # a preview from the plan alone: the hardware is not asked, so the value is not known
                    sdid = f"unread:{sid}:{index}"
                entry = {"device_id": str(index), "super_device_id": sdid, "device_ip": address,
                         "rank_id": str(rank)}
            entries.append(entry)
            rank += 1
        server_list.append({"server_id": sid, "host_ip": str(server.get("host_ip")), "device": entries})
    table = {"version": version, "server_count": str(len(server_list)), "server_list": server_list,
             "status": "completed"}
    if version == "1.2":
        # One entry per SuperPoD: each server under its own super_pod_id (read from its hardware, or
        # the setting), pods in ascending id order, servers in server_list order inside each.
        pods = {}
        for s in server_list:
            pod = by_id[s["server_id"]].get("super_pod_id")
            pod = str(super_pod_id if pod in (None, "") else pod)
            pods.setdefault(pod, []).append({"server_id": s["server_id"]})
        order = sorted(pods, key=lambda p: (not p.isdigit(), int(p) if p.isdigit() else 0, p))
        table["super_pod_list"] = [{"super_pod_id": pod, "server_list": pods[pod]} for pod in order]
    check_rank_table(table)
    return table


def rank_table(hostnames, hostvars, version="1.0", devices_per_server=None, host_ip_var="ansible_host",
               devices_var="roce_devices", plan_var="roce_device_addresses", source="hardware",
               super_pod_id="0", require_up=True, super_pod_id_var=None, plans=None):
    """Filter: ``groups['npu_nodes'] | rank_table(hostvars, ...)``.

    source=hardware (default): devices from each host's ``devices_var`` fact, checked against
    ``plan_var`` when the host has it. source=plan: the planned addresses alone (a preview without
    contacting the nodes). Version 1.2: each server's SuperPoD is its ``super_pod_id_var`` host variable
    where set (``rank_table_super_pod_id``: the hardware's, or the setting), else ``super_pod_id``.
    ``plans`` (``{host: plan}``, e.g. the roce_plan filter's ``by_host``), when given, is each host's plan
    instead of its ``plan_var``.
    """
    if source not in ("hardware", "plan"):
        raise RankTableError(f"rank_table: source {source!r} must be 'hardware' or 'plan'")
    servers = []
    for name in hostnames:
        hv = hostvars[name]
        plan = plans.get(name) if plans is not None else (hv.get(plan_var) if plan_var else None)
        devices = hv.get(devices_var) if source == "hardware" else None
        if source == "hardware" and devices is None:
            raise RankTableError(f"{name}: fact {devices_var} is missing: the roce stage reads the device "
                                 "addresses back; run it on this host (or use source='plan' for a preview)")
        if source == "plan" and plan is None:
            raise RankTableError(f"{name}: no planned device addresses in the plans given" if plans is not None
                                 else f"{name}: no planned device addresses ({plan_var}) in the inventory")
        servers.append({"name": name, "host_ip": hv.get(host_ip_var) or name, "devices": devices, "plan": plan,
                        "super_pod_id": hv.get(super_pod_id_var) if super_pod_id_var else None})
    return build_rank_table(servers, version, devices_per_server, super_pod_id, require_up,
                            planned_only=source == "plan")


def _all_strings(value, path="table"):
    if isinstance(value, dict):
        for k, v in value.items():
            _all_strings(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _all_strings(v, f"{path}[{i}]")
    elif not isinstance(value, str):
        raise RankTableError(f"{path} is {value!r} ({type(value).__name__}); every rank table value must be a string")


def check_rank_table(table, servers=None, devices_per_server=None, strict=True):
    """Parse back and check a rank table (JSON text or dict); returns a summary.

    ``strict`` (our own tables): servers in ascending server_id order, every server with a
    ``host_ip``, ranks numbered server by server. ``strict=False`` (a table another tool wrote):
    servers in any order, ``host_ip`` optional, ``container_ip`` allowed (an address), ranks
    0..N-1 each once in any order.

    Checks: valid JSON, version, status completed, every value a string, server_count, unique server
    ids, unique device ids per server, ranks 0..N-1 each once and numbered server by server in
    server_id order, unique device addresses, 1.2: super_device_id everywhere and unique, super_pod_list
    listing every server once. Optional expectations: number of servers, devices per server.
    Summary: {version, servers, devices, ranks, server_ids}.
    """
    if isinstance(table, (str, bytes)):
        try:
            table = json.loads(table)
        except ValueError as e:
            raise RankTableError(f"rank table is not valid JSON ({e})") from None
    if not isinstance(table, dict):
        raise RankTableError("rank table is not a JSON object")
    _all_strings(table)
    version = table.get("version")
    if version not in VERSIONS:
        raise RankTableError(f"rank table version {version!r} is not one of {', '.join(VERSIONS)}")
    if table.get("status") != "completed":
        raise RankTableError(f"rank table status is {table.get('status')!r}, expected 'completed'")
    server_list = table.get("server_list")
    if not isinstance(server_list, list) or not server_list:
        raise RankTableError("rank table has no server_list")
    if table.get("server_count") != str(len(server_list)):
        raise RankTableError(f"server_count is {table.get('server_count')!r} but server_list has {len(server_list)}")
    if servers is not None and len(server_list) != int(servers):
        raise RankTableError(f"rank table lists {len(server_list)} servers, expected {servers}")
    ids = [s.get("server_id") for s in server_list]
    if len(set(ids)) != len(ids):
        raise RankTableError(f"server_id listed twice: {ids}")
    if strict and ids != sorted(ids, key=server_sort_key):
        raise RankTableError(f"servers are not in ascending server_id order: {ids}")
    ranks, addresses, sdids, count = [], {}, set(), 0
    for s in server_list:
        sid = s.get("server_id")
        devices = s.get("device")
        if not sid or (strict and not s.get("host_ip")) or not isinstance(devices, list) or not devices:
            raise RankTableError(f"server {sid!r}: server_id, {'host_ip ' if strict else ''}and a non-empty device "
                                 "list are required")
        for key in ("host_ip", "container_ip"):
            if key in s:
                try:
                    ipaddress.ip_address(s[key])
                except ValueError:
                    raise RankTableError(f"server {sid}: {key} {s[key]!r} is not an IP address") from None
        if devices_per_server is not None and len(devices) != int(devices_per_server):
            raise RankTableError(f"server {sid}: {len(devices)} devices, expected {devices_per_server}")
        dev_ids = set()
        for d in devices:
            for key in ("device_id", "device_ip", "rank_id") + (("super_device_id",) if version == "1.2" else ()):
                if not d.get(key):
                    raise RankTableError(f"server {sid}: a device lacks {key}: {d}")
            if d["device_id"] in dev_ids:
                raise RankTableError(f"server {sid}: device_id {d['device_id']} listed twice")
            dev_ids.add(d["device_id"])
            if d["device_ip"] in addresses:
                raise RankTableError(f"server {sid} device {d['device_id']}: device_ip {d['device_ip']} is also "
                                     f"{addresses[d['device_ip']]}")
            addresses[d["device_ip"]] = f"server {sid} device {d['device_id']}"
            if version == "1.2":
                if d["super_device_id"] in sdids:
                    raise RankTableError(f"server {sid}: super_device_id {d['super_device_id']} listed twice")
                sdids.add(d["super_device_id"])
            try:
                ranks.append(int(d["rank_id"]))
            except ValueError:
                raise RankTableError(f"server {sid}: rank_id {d['rank_id']!r} is not a number") from None
            count += 1
    if (ranks if strict else sorted(ranks)) != list(range(count)):
        raise RankTableError(f"rank_id must run 0..{count - 1} once each"
                             f"{', server by server' if strict else ''}; got {ranks}")
    if version == "1.2":
        pods = table.get("super_pod_list")
        if not isinstance(pods, list) or not pods:
            raise RankTableError("rank table 1.2 has no super_pod_list")
        listed = [e.get("server_id") for p in pods for e in p.get("server_list", [])]
        if sorted(listed) != sorted(ids):
            raise RankTableError(f"super_pod_list lists servers {listed}, server_list has {ids}")
    return {"version": version, "servers": len(server_list), "devices": count, "ranks": count, "server_ids": ids}


def rank_table_check(table, servers=None, devices_per_server=None, strict=True):
    """Filter form of check_rank_table."""
    return check_rank_table(table, servers, devices_per_server, strict)


def read_rank_table(table, servers=None, devices_per_server=None):
    """A rank table another tool wrote (servers in any order, ``container_ip``, no ``host_ip``):
    checked as such (``check_rank_table(strict=False)``); returns the summary."""
    return check_rank_table(table, servers, devices_per_server, strict=False)


def rank_table_node_rank(table, host_ip):
    """node_rank of the server with this address (server_id, host_ip or container_ip): its position in
    the table's server list."""
    if isinstance(table, (str, bytes)):
        table = json.loads(table)
    for i, s in enumerate(table.get("server_list", [])):
        if str(host_ip) in (s.get("server_id"), s.get("host_ip"), s.get("container_ip")):
            return i
    raise RankTableError(f"host {host_ip} is not a server of the rank table")


def rank_table_nodes(table, host_ips):
    """Each node's part of a rank table, by host: ``{host: {"node_rank": i, "devices": [its devices]}}``
    for ``host_ips`` (``{host: address}``), the server found as ``rank_table_node_rank`` finds it. One
    pass over the table for the whole cluster (a node takes its part by key), not one per node."""
    if isinstance(table, (str, bytes)):
        table = json.loads(table)
    index = {}
    for i, s in enumerate(table.get("server_list", [])):
        for key in ("server_id", "host_ip", "container_ip"):
            if s.get(key) is not None:
                index.setdefault(str(s[key]), i)
    out = {}
    for host, host_ip in (host_ips or {}).items():
        i = index.get(str(host_ip))
        if i is None:
            raise RankTableError(f"{host}: host {host_ip} is not a server of the rank table")
        out[host] = {"node_rank": i, "devices": table["server_list"][i].get("device", [])}
    return out


def rank_table_super_device_ids(devices, chips):
    """``devices`` (device_id, address, ...) with each one's ``super_device_id`` from ``chips`` (npu_info's
    chips read with spod_info: the device index is the chip's position, NPU by NPU, chip by chip, as
    ``hccn_tool -i 0..15`` numbers them on A3). A chip without an SDID, or a device without a chip, is an
    error naming the NPU."""
    chips = list(chips or [])
    out = []
    for dev in devices or []:
        index = _device_index(dev.get("device_id"), "super_device_id")
        if index >= len(chips):
            raise RankTableError(f"NPU {index}: npu-smi lists {len(chips)} chips, none for this device")
        sdid = chips[index].get("super_device_id")
        if sdid in (None, ""):
            raise RankTableError(f"NPU {index} (npu {chips[index].get('npu_id')} chip {chips[index].get('chip_id')}): "
                                 "no SDID read (npu_info spod_info=true reads npu-smi info -t spod-info)")
        out.append(dict(dev, super_device_id=str(sdid)))
    return out


def rank_table_super_pod_id(chips, setting="", host=""):
    """This server's super_pod_id for rank table 1.2: ``setting`` (launch_super_pod_id) when given, else
    the ``Super Pod ID`` every chip's ``npu-smi info -t spod-info`` reported (npu_info's chips read with
    spod_info). No value, or chips that disagree, is an error naming the host and what was read."""
    if setting not in (None, ""):
        return str(setting)
    chips = list(chips or [])
    read = [(c.get("npu_id"), c.get("chip_id"), c.get("super_pod_id")) for c in chips]
    missing = [f"NPU {n} chip {c}" for n, c, p in read if p in (None, "")]
    if not chips or missing:
        raise RankTableError(
            f"{host}: npu-smi info -t spod-info printed no Super Pod ID for "
            f"{', '.join(missing) if missing else 'any chip (no chips listed)'}; set launch_super_pod_id for this host")
    values = sorted({str(p) for _n, _c, p in read})
    if len(values) > 1:
        shown = ", ".join(f"NPU {n} chip {c}: {p}" for n, c, p in read)
        raise RankTableError(f"{host}: the chips report different Super Pod IDs ({shown}); one server sits in one "
                             "SuperPoD: check the hardware, or set launch_super_pod_id for this host")
    return values[0]


class FilterModule:
    """HCCL rank table filters."""

    def filters(self):
        return {"rank_table": rank_table, "rank_table_check": rank_table_check, "rank_table_read": read_rank_table,
                "rank_table_node_rank": rank_table_node_rank, "rank_table_nodes": rank_table_nodes,
                "rank_table_super_device_ids": rank_table_super_device_ids,
                "rank_table_super_pod_id": rank_table_super_pod_id}
