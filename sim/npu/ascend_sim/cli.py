"""SIMULATION ONLY - not Huawei software. ``ascend-sim``: the simulated hardware's control CLI.

There is no vendor counterpart; it stands for what the physical machine does (power-on, faults).

  ascend-sim boot
  ascend-sim fault health <npu> <OK|Warning|Alarm|Critical>
  ascend-sim fault link <npu> <up|down>
  ascend-sim fault hccn-busy [count]           (default 1)
  ascend-sim fault tls-certs <npu> <present|absent>
  ascend-sim fault ecc <npu> <double-bit errors> [isolated pages]
  ascend-sim fault port-stat <npu> <counter> <value>   (a hccn_tool -stat -g counter, e.g. roce_rx_err_pkt_num)
  ascend-sim fault clear
  ascend-sim hardware [--npus N] [--model 910B1..910B4] [--hbm-mb MB]
                      [--nic-interface IF|none] [--factory-firmware V]
  ascend-sim state                             (JSON: state + hardware + installed versions)
  ascend-sim events                            (the event log)
"""

import argparse
import json
import sys
import time

from . import boot, events, hardware, hccn, installinfo, netcfg, paths, pci, state


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ascend-sim",
        description="SIMULATION ONLY: control the simulated Ascend NPU hardware of this node.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("boot", help="what a node (re)boot does: activate installed driver/firmware")
    fault = sub.add_parser("fault", help="inject or clear faults")
    fsub = fault.add_subparsers(dest="fault", required=True)
    h = fsub.add_parser("health", help="set the health of one NPU")
    h.add_argument("npu", type=int)
    h.add_argument("status", choices=state.HEALTH_VALUES)
    link = fsub.add_parser("link", help="set the device-NIC link of one NPU")
    link.add_argument("npu", type=int)
    link.add_argument("status", choices=("up", "down"))
    busy = fsub.add_parser("hccn-busy", help="make the next COUNT hccn_tool calls fail as busy")
    busy.add_argument("count", type=int, nargs="?", default=1)
    certs = fsub.add_parser("tls-certs", help="whether one NPU has preset TLS certificates")
    certs.add_argument("npu", type=int)
    certs.add_argument("status", choices=["present", "absent"])
    ecc = fsub.add_parser("ecc", help="HBM ECC counts of one NPU (npu-smi info -t ecc)")
    ecc.add_argument("npu", type=int)
    ecc.add_argument("double_bit", type=int)
    ecc.add_argument("isolated_pages", type=int, nargs="?", default=0)
    port_stat = fsub.add_parser("port-stat", help="set one packet counter of one NPU's port (hccn_tool -stat -g)")
    port_stat.add_argument("npu", type=int)
    port_stat.add_argument("counter")
    port_stat.add_argument("value", type=int)
    fsub.add_parser("clear", help="all NPUs healthy, links up, no ECC errors, zero port counters, no busy hccn_tool")
    hw = sub.add_parser("hardware", help="write /etc/ascend-sim/hardware.json")
    hw.add_argument("--npus", type=int)
    hw.add_argument("--model", choices=hardware.MODELS)
    hw.add_argument("--hbm-mb", type=int)
    hw.add_argument("--nic-interface", help='interface for device IPs, or "none"')
    hw.add_argument("--factory-firmware")
    sub.add_parser("state", help="print the simulator state as JSON")
    sub.add_parser("events", help="print the event log")
    return p


def _check_npu(npu: int, hw: dict) -> None:
    if not 0 <= npu < hw["npu_count"]:
        raise SystemExit(f"ascend-sim: no NPU {npu} (this node has {hw['npu_count']})")


def _link(npu_id: int, status: str, hw: dict) -> None:
    with state.update() as st:
        npu = st["npus"][str(npu_id)]
        if npu["link"] != status:
            # the port's link history (hccn_tool -link_stat -g): the last changes, oldest first
            npu["link_changes"] = (npu.get("link_changes") or [])[-19:] + [[int(time.time()), status.upper()]]
        npu["link"] = status
        ip, mask = npu["ipaddr"], npu["netmask"]
    # A downed port must also stop answering pings from other nodes.
    if hw["nic_interface"] and ip and st["running"]["driver"]:
        try:
            if status == "down":
                netcfg.remove_address(hw["nic_interface"], ip, mask)
            else:
                netcfg.set_address(hw["nic_interface"], None, None, ip, mask)
        except netcfg.NetError as exc:
            print(f"ascend-sim: warning: {exc}", file=sys.stderr)


def _fault(args) -> None:
    hw = hardware.load()
    if args.fault == "health":
        _check_npu(args.npu, hw)
        with state.update() as st:
            st["npus"][str(args.npu)]["health"] = args.status
        events.log_event(f"fault health {args.npu} {args.status}")
    elif args.fault == "link":
        _check_npu(args.npu, hw)
        _link(args.npu, args.status, hw)
        events.log_event(f"fault link {args.npu} {args.status}")
    elif args.fault == "tls-certs":
        _check_npu(args.npu, hw)
        with state.update() as st:
            st["npus"][str(args.npu)]["tls_certs"] = args.status == "present"
        events.log_event(f"fault tls-certs {args.npu} {args.status}")
    elif args.fault == "ecc":
        _check_npu(args.npu, hw)
        if args.double_bit < 0 or args.isolated_pages < 0:
            raise SystemExit("ascend-sim: ECC counts must be >= 0")
        with state.update() as st:
            st["npus"][str(args.npu)]["ecc"] = {"double_bit": args.double_bit, "isolated_pages": args.isolated_pages}
        events.log_event(f"fault ecc {args.npu} {args.double_bit} {args.isolated_pages}")
    elif args.fault == "port-stat":
        _check_npu(args.npu, hw)
        if args.counter not in hccn.STAT_COUNTERS:
            raise SystemExit(f"ascend-sim: hccn_tool -stat -g has no counter {args.counter}")
        if args.value < 0:
            raise SystemExit("ascend-sim: a counter must be >= 0")
        with state.update() as st:
            counters = st["npus"][str(args.npu)].setdefault("port_stat", {})
            counters[args.counter] = args.value
        events.log_event(f"fault port-stat {args.npu} {args.counter} {args.value}")
    elif args.fault == "hccn-busy":
        if args.count < 0:
            raise SystemExit("ascend-sim: count must be >= 0")
        with state.update() as st:
            st["hccn_busy"] = args.count
        events.log_event(f"fault hccn-busy {args.count}")
    else:
        down = [int(k) for k, n in state.load()["npus"].items() if n["link"] != "up"]
        for npu in down:
            _link(npu, "up", hw)
        with state.update() as st:
            for npu in st["npus"].values():
                npu["health"] = "OK"
                npu["link"] = "up"
                npu.pop("ecc", None)
                npu.pop("port_stat", None)
            st["hccn_busy"] = 0
        events.log_event("fault clear")


def _hardware(args) -> None:
    try:
        hw = hardware.load()
    except hardware.HardwareError:
        hw = dict(hardware.DEFAULTS)
    if args.npus is not None:
        hw["npu_count"] = args.npus
    if args.model is not None:
        hw["model"] = args.model
        hw["hbm_mb"] = hardware.HBM_MB[args.model]
    if args.hbm_mb is not None:
        hw["hbm_mb"] = args.hbm_mb
    if args.nic_interface is not None:
        hw["nic_interface"] = None if args.nic_interface.lower() in ("", "none", "null") else args.nic_interface
    if args.factory_firmware is not None:
        hw["factory_firmware"] = args.factory_firmware
    try:
        hardware.save(hw)
    except hardware.HardwareError as exc:
        raise SystemExit(f"ascend-sim: {exc}") from exc
    with state.update():
        pass  # re-normalises the NPU list to the new count
    pci.write(hw)
    if hw["nic_interface"] and not paths.under_sim_root():
        # On a node the interface becomes the NPUs' ports at once (device namespace), as at boot;
        # unit tests (under $ASCEND_SIM_ROOT) must not touch the host's network.
        try:
            netcfg.plug(hw["nic_interface"])
        except netcfg.NetError as exc:
            raise SystemExit(f"ascend-sim: {exc}") from exc
    events.log_event(
        f"hardware npus={hw['npu_count']} model={hw['model']} nic_interface={hw['nic_interface'] or 'none'}"
    )
    print(json.dumps(hw, indent=2, sort_keys=True))


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.command == "boot":
        result = boot.boot()
        print(
            f"ascend-sim: booted: driver={result['running']['driver'] or 'none'} "
            f"firmware={result['running']['firmware'] or 'none'} devices={len(result['devices'])}"
        )
    elif args.command == "fault":
        _fault(args)
    elif args.command == "hardware":
        _hardware(args)
    elif args.command == "state":
        out = state.load()
        out["hardware"] = hardware.load()
        out["installed"] = {
            "driver": installinfo.installed_driver_version(),
            "firmware": installinfo.installed_firmware_version(),
        }
        print(json.dumps(out, indent=2, sort_keys=True))
    else:
        sys.stdout.write(events.read_events())
    return 0
