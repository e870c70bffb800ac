"""SIMULATION ONLY - not Huawei software. Stand-in for ``hccn_tool`` (Ascend device-NIC tool).

Supported (``hccn_tool -i N ...``): ``-ip -s address A netmask M``, ``-ip -g``, ``-netdetect -s
address D``, ``-netdetect -g``, ``-gateway -s gateway G``, ``-gateway -g``, ``-tls -s enable 0|1``,
``-tls -g``, ``-link -g``, ``-net_health -g``, ``-speed -g``, ``-optical -g``, ``-link_stat -g``,
``-stat -g``, ``-ping -g address X [pkt N]``,
``-dscp_to_tc -s dscp D tc T`` / ``-dscp_to_tc -g [dscp D]``, ``-prio_tc -g``, ``-pfc -s priority
p0,...,p7`` / ``-pfc -g``, ``-mtu -s size N`` / ``-mtu -g``; and ``hccn_tool -a -cfg recovery``,
which re-applies ``/etc/hccn.conf`` to every device (as a boot does).
Set commands print ``Cmd executed successfully!``. A device without preset TLS certificates
(``ascend-sim fault tls-certs N absent``) answers ``-tls -g`` and ``-tls -s`` with ``No certificate
found, please set certs firstly!`` (exit 1). Configuration lives in the simulator state
(the device), never in ``/etc/hccn.conf``: that file is written by the administrator (the roles)
and re-applied by ``ascend-sim boot`` at every boot, as the driver does on real hardware.

``-stat -g`` prints every counter the real tool prints, zero, except those ``ascend-sim fault port-stat N
COUNTER VALUE`` raised (``fault clear`` zeroes them again).

A port whose link is down (``ascend-sim fault link N down``) answers ``-prio_tc -g`` and ``-pfc -g``
with ``Link status is down`` (exit 1) and ``-speed -g`` with ``Speed: Unknown!``, as real 910B nodes do.

Like the real tool, a second hccn_tool running at the same time on a node fails with
``hccn_tool is busy, please try again`` (exit 1); ``ascend-sim fault hccn-busy [count]`` injects the
same failure for the next ``count`` calls. Callers must serialise per node and retry.
"""

import fcntl
import os
import time

from . import netcfg, paths, state
from .boot import apply_hccn_conf
from .devices import open_dcmi

OK = "Cmd executed successfully!"
NO_CERT = "No certificate found, please set certs firstly!"
BUSY = "hccn_tool is busy, please try again"
# 200G ports on Atlas 800T A2 (facts, third round: a third-party fault-injection report on 910B nodes)
SPEED = "Speed: 200000 Mb/s"
# Real 910B ports without a link (facts, third round; MindCluster's own hccn_tool wrapper handles it)
SPEED_UNKNOWN = "Speed: Unknown!"
# A QoS read (-prio_tc -g / -pfc -g) on a port whose link is down: real 910B nodes exit non-zero with
# "Link status is down" (facts, third round); the exit code 1 and this being the whole output are assumed
LINK_DOWN = "Link status is down"
# Reads the tool refuses on a down port (facts, third round: -prio_tc -g and -pfc -g)
_REFUSED_WHEN_DOWN = ("-prio_tc", "-pfc")

USAGE = """Usage: hccn_tool -i <device_id> <command> [-s|-g] [key value ...]
  -ip -s address <ip> netmask <mask> | -ip -g
  -netdetect -s address <ip>         | -netdetect -g
  -gateway -s gateway <ip>           | -gateway -g
  -tls -s enable <0|1>               | -tls -g
  -dscp_to_tc -s dscp <0-63> tc <0-3> | -dscp_to_tc -g [dscp <0-63>]
  -prio_tc -g
  -pfc -s priority <p0,...,p7>        | -pfc -g
  -mtu -s size <68-9702>             | -mtu -g
  -link -g | -net_health -g | -speed -g | -optical -g | -link_stat -g | -stat -g
  -ping -g address <ip> [pkt <count>]
hccn_tool -a -cfg recovery"""

_SPEC = {
    ("-ip", "-s"): ("address", "netmask"),
    ("-ip", "-g"): (),
    ("-netdetect", "-s"): ("address",),
    ("-netdetect", "-g"): (),
    ("-gateway", "-s"): ("gateway",),
    ("-gateway", "-g"): (),
    ("-tls", "-s"): ("enable",),
    ("-tls", "-g"): (),
    ("-link", "-g"): (),
    ("-net_health", "-g"): (),
    ("-speed", "-g"): (),
    ("-optical", "-g"): (),
    ("-link_stat", "-g"): (),
    ("-stat", "-g"): (),
    ("-ping", "-g"): ("address",),
    ("-dscp_to_tc", "-s"): ("dscp", "tc"),
    ("-dscp_to_tc", "-g"): (),
    ("-prio_tc", "-g"): (),
    ("-pfc", "-s"): ("priority",),
    ("-pfc", "-g"): (),
    ("-mtu", "-s"): ("size",),
    ("-mtu", "-g"): (),
}
_OPTIONAL = {("-ping", "-g"): ("pkt",), ("-dscp_to_tc", "-g"): ("dscp",)}


def _int_in(value: str, low: int, high: int) -> int | None:
    return int(value) if value.isdigit() and low <= int(value) <= high else None


def _bits(value: str) -> list[int] | None:
    parts = value.split(",")
    if len(parts) != 8 or any(p not in ("0", "1") for p in parts):
        return None
    return [int(p) for p in parts]


class UsageError(Exception):
    pass


def parse(argv: list[str]) -> tuple[int, str, str, dict]:
    if len(argv) < 4 or argv[0] != "-i" or not argv[1].isdigit():
        raise UsageError("missing or invalid -i <device_id>")
    device = int(argv[1])
    cmd, mode, rest = argv[2], argv[3], argv[4:]
    if (cmd, mode) not in _SPEC:
        raise UsageError(f"unsupported command {cmd} {mode}")
    if len(rest) % 2:
        raise UsageError("parameters must be key value pairs")
    params = dict(zip(rest[::2], rest[1::2], strict=True))
    required = _SPEC[(cmd, mode)]
    allowed = set(required) | set(_OPTIONAL.get((cmd, mode), ()))
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise UsageError(f"unknown parameter {unknown[0]}")
    missing = [k for k in required if k not in params]
    if missing:
        raise UsageError(f"missing parameter {missing[0]}")
    return device, cmd, mode, params


def net_health(hw: dict, npu: dict) -> str:
    if npu["link"] != "up":
        return "Fault"
    if not npu["ipaddr"] or not npu["netmask"] or not npu["netdetect"]:
        return "Init"
    if hw["nic_interface"]:
        try:
            reachable = netcfg.real_ping(npu["ipaddr"], npu["netdetect"], 1) > 0
        except netcfg.NetError:
            reachable = False
    else:
        reachable = netcfg.same_subnet(npu["ipaddr"], npu["netmask"], npu["netdetect"])
    return "Success" if reachable else "Fault"


# `-optical -g` as MindCluster Ascend FaultDiag's user guide prints it ("Collecting Logs Before Training and
# Inference"; its sample elides lines with "..."): a working module's values; a port whose link is down
# (a pulled or broken fibre) receives no light.
OPTICAL = """optical info:
present              : present
Tx Power             : 4.4035 mW
Rx Power             : {rx} mW
Vcc High Thres       : 3465.00 mV
Vcc Low Thres        : 3135.00 mV
Temp High Thres      : 70 C
Temp Low Thres       : 0 C
TxPower High Thres   : 3.5481 mW
TxPower Low Thres    : 0.2818 mW
RxPower High Thres   : 3.5481 mW
RxPower Low Thres    : 0.1445 mW
Tx Bias              : 7.9360 mA
Tx Los Flag          : 0x0
Rx Los Flag          : {los}
Tx LoL Flag          : 0x0
Rx LoL Flag          : {los}"""


def optical(npu: dict) -> str:
    up = npu["link"] == "up"
    return OPTICAL.format(rx="1.0189" if up else "0.0000", los="0x0" if up else "0xff")


def link_stat(device: int, npu: dict) -> str:
    """`-link_stat -g` as the same guide prints it: the current time, the link-up count and the recorded
    changes, newest first (the simulator records the changes `ascend-sim fault link` makes)."""
    changes = npu.get("link_changes") or []
    fmt = "%a %b %e %H:%M:%S %Y"
    lines = [f"[device {device}]current time        : {time.strftime(fmt)}",
             f"[device {device}]link up count       : {1 + sum(1 for _t, s in changes if s == 'UP')}",
             f"[device {device}]link change records :"]
    lines += [f"[device {device}]    {time.strftime(fmt, time.localtime(t))}    LINK {s}" for t, s in reversed(changes)]
    return "\n".join(lines)


# `-stat -g`: the counters in the order hccn_tool's own source prints them on 910B (hicann/driver,
# src/custom/network/hccn/ascend910B/hccn_tool/tool.c, tool_display_stat_info; the 910B build defines
# HCCN_TOOL_SHOW_EXT_STAT, so mac_rx_fcs_err_pkt_num and roce_ecn_db_num are printed), after the title
# "packet statistics:", one "name:count" line each (MindCluster FaultDiag's user guide shows the same lines).
STAT_COUNTERS = (
    ["mac_tx_mac_pause_num", "mac_rx_mac_pause_num", "mac_tx_pfc_pkt_num"]
    + [f"mac_tx_pfc_pri{p}_pkt_num" for p in range(8)]
    + ["mac_rx_pfc_pkt_num"]
    + [f"mac_rx_pfc_pri{p}_pkt_num" for p in range(8)]
    + ["mac_tx_total_pkt_num", "mac_tx_total_oct_num", "mac_tx_bad_pkt_num", "mac_tx_bad_oct_num",
       "mac_rx_total_pkt_num", "mac_rx_total_oct_num", "mac_rx_bad_pkt_num", "mac_rx_bad_oct_num",
       "mac_rx_fcs_err_pkt_num",
       "roce_rx_rc_pkt_num", "roce_rx_all_pkt_num", "roce_rx_err_pkt_num", "roce_tx_rc_pkt_num",
       "roce_tx_all_pkt_num", "roce_tx_err_pkt_num", "roce_cqe_num", "roce_rx_cnp_pkt_num", "roce_tx_cnp_pkt_num",
       "roce_unexpected_ack_num", "roce_out_of_order_num", "roce_verification_err_num", "roce_qp_status_err_num",
       "roce_new_pkt_rty_num", "roce_ecn_db_num",
       "nic_tx_all_pkg_num", "nic_tx_all_oct_num", "nic_rx_all_pkg_num", "nic_rx_all_oct_num"]
)


def port_stat(npu: dict) -> str:
    """`-stat -g`: the title, then every counter (zero unless `ascend-sim fault port-stat` raised it)."""
    raised = npu.get("port_stat") or {}
    return "\n".join(["packet statistics:"] + [f"{name}:{int(raised.get(name, 0))}" for name in STAT_COUNTERS])


def ping(hw: dict, st: dict, device: int, target: str, count: int) -> str:
    npu = st["npus"][str(device)]
    received = 0
    if npu["link"] == "up" and npu["ipaddr"]:
        if hw["nic_interface"]:
            received = netcfg.real_ping(npu["ipaddr"], target, count)
        else:
            local = {
                n["ipaddr"] for n in st["npus"].values() if n["ipaddr"] and n["link"] == "up"
            }
            received = count if target in local else 0
    received = min(received, count)
    lines = [f"device {device} PING {target}"]
    for seq in range(count):
        if seq < received:
            lines.append(f"recv seq={seq},time={0.052 + seq * 0.011:.6f}ms")
        else:
            lines.append(f"recv time out seq={seq}")
    loss = 100.0 * (count - received) / count
    lines.append(f"{count} packets transmitted, {received} received, {loss:.2f}% packet loss")
    return "\n".join(lines)


def _busy_lock():
    path = paths.host_path(paths.HCCN_LOCK)
    paths.ensure_parent(path)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _set(hw: dict, device: int, cmd: str, params: dict) -> str | None:
    """Apply a set command; returns an error message or None."""
    with state.update() as st:
        npu = st["npus"][str(device)]
        if cmd == "-ip":
            ip, mask = params["address"], params["netmask"]
            if not netcfg.valid_ip(ip):
                return f"Invalid ip address: {ip}"
            try:
                netcfg.netmask_prefix(mask)
            except netcfg.NetError:
                return f"Invalid netmask: {mask}"
            if hw["nic_interface"]:
                try:
                    netcfg.set_address(hw["nic_interface"], npu["ipaddr"], npu["netmask"], ip, mask)
                except netcfg.NetError as exc:
                    return str(exc)
            npu["ipaddr"], npu["netmask"] = ip, mask
        elif cmd == "-netdetect":
            if not netcfg.valid_ip(params["address"]):
                return f"Invalid netdetect address: {params['address']}"
            npu["netdetect"] = params["address"]
        elif cmd == "-gateway":
            if not netcfg.valid_ip(params["gateway"]):
                return f"Invalid gateway: {params['gateway']}"
            npu["gateway"] = params["gateway"]
        elif cmd == "-tls":
            if not npu["tls_certs"]:
                return NO_CERT
            if params["enable"] not in ("0", "1"):
                return f"Invalid tls enable value: {params['enable']} (0:disable, 1:enable)"
            npu["tls"] = int(params["enable"])
        elif cmd == "-dscp_to_tc":
            dscp, tc = _int_in(params["dscp"], 0, 63), _int_in(params["tc"], 0, 3)
            if dscp is None:
                return "The value of dscp you input is out of the valid range!"
            if tc is None:
                return "The value of tc you input is out of the valid range!"
            npu["dscp_tc"][str(dscp)] = tc
        elif cmd == "-pfc":
            bits = _bits(params["priority"])
            if bits is None:
                return f"Invalid pfc priority value: {params['priority']} (eight 0/1 values, priority 0..7)"
            npu["pfc"] = bits
        elif cmd == "-mtu":
            size = _int_in(params["size"], 68, 9702)
            if size is None:
                return "The value of mtu you input is out of the valid range!"
            npu["mtu"] = size
    return None


def _get(hw: dict, st: dict, device: int, cmd: str, params: dict) -> tuple[int, str]:
    npu = st["npus"][str(device)]
    if cmd == "-ip":
        return 0, f"ipaddr:{npu['ipaddr'] or ''}\nnetmask:{npu['netmask'] or ''}"
    if cmd == "-netdetect":
        return 0, f"netdetect address: {npu['netdetect'] or ''}"
    if cmd == "-gateway":
        return 0, f"default gateway:{npu['gateway'] or ''}, Iface:eth{device}"
    if cmd == "-tls":
        if not npu["tls_certs"]:
            return 1, NO_CERT
        return 0, (
            f"dev_id:{device}, tls switch[{npu['tls']}](0:disable, 1:enable), "
            "tls preconfigured[1](0:non-preset, 1:preset), tls alarm time threshold[60]days"
        )
    if cmd == "-link":
        return 0, f"link status: {'UP' if npu['link'] == 'up' else 'DOWN'}"
    if cmd in _REFUSED_WHEN_DOWN and npu["link"] != "up":
        return 1, LINK_DOWN
    if cmd == "-dscp_to_tc":
        # Output lines assumed (no vendor sample): the field names of the tool's help table
        if "dscp" in params:
            dscp = _int_in(params["dscp"], 0, 63)
            if dscp is None:
                return 1, "The value of dscp you input is out of the valid range!"
            wanted = [dscp]
        else:
            wanted = list(range(64))
        return 0, "\n".join(f"dscp:{d} tc:{npu['dscp_tc'].get(str(d), 0)}" for d in wanted)
    if cmd == "-prio_tc":
        # No vendor sample: the `map t0,...,t7` line public fault-injection scripts grep; the line assumed
        return 0, "prio_tc map " + ",".join(str(t) for t in npu["prio_tc"])
    if cmd == "-pfc":
        # Huawei's CANN troubleshooting guide (PFC mismatches): a title, the priorities, 0/1 per priority
        return 0, "PFC configuration:\npriority   0 1 2 3 4 5 6 7\nenabled    " + " ".join(str(b) for b in npu["pfc"])
    if cmd == "-mtu":
        # No vendor sample: public fault-injection scripts grep `mtu:[0-9]+`; the line assumed
        return 0, f"mtu:{npu['mtu']}"
    if cmd == "-net_health":
        return 0, f"net health status: {net_health(hw, npu)}"
    if cmd == "-speed":
        return 0, SPEED if npu["link"] == "up" else SPEED_UNKNOWN
    if cmd == "-optical":
        return 0, optical(npu)
    if cmd == "-link_stat":
        return 0, link_stat(device, npu)
    if cmd == "-stat":
        return 0, port_stat(npu)
    if cmd == "-ping":
        target = params["address"]
        if not netcfg.valid_ip(target):
            return 1, f"Invalid ping address: {target}"
        pkt = params.get("pkt", "3")
        if not pkt.isdigit() or not 1 <= int(pkt) <= 1000:
            return 1, f"Invalid pkt value: {pkt}"
        try:
            return 0, ping(hw, st, device, target, int(pkt))
        except netcfg.NetError as exc:
            return 1, str(exc)
    raise AssertionError(cmd)


def recovery() -> int:
    """``hccn_tool -a -cfg recovery``: every device's address, netmask, netdetect and gateway
    from ``/etc/hccn.conf`` (what a boot re-applies)."""
    opened = open_dcmi(0)
    if opened is None:
        return 1
    apply_hccn_conf()
    print(OK)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["-a"]:
        if argv != ["-a", "-cfg", "recovery"]:
            print("Parameter error: -a supports only -cfg recovery")
            print(USAGE)
            return 1
        lock = _busy_lock()
        if lock is None:
            print(BUSY)
            return 1
        try:
            return recovery()
        finally:
            os.close(lock)
    try:
        device, cmd, mode, params = parse(argv)
    except UsageError as exc:
        print(f"Parameter error: {exc}")
        print(USAGE)
        return 1
    lock = _busy_lock()
    if lock is None:
        print(BUSY)
        return 1
    try:
        with state.update() as st:
            injected = st["hccn_busy"] > 0
            if injected:
                st["hccn_busy"] -= 1
        if injected:
            print(BUSY)
            return 1
        opened = open_dcmi(device)
        if opened is None:
            return 1
        hw, st = opened
        if mode == "-s":
            error = _set(hw, device, cmd, params)
            if error:
                print(error)
                return 1
            print(OK)
            return 0
        rc, text = _get(hw, st, device, cmd, params)
        print(text)
        return rc
    finally:
        os.close(lock)

