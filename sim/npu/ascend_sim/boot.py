"""SIMULATION ONLY - not Huawei software. What a (re)boot of a simulated Ascend node does.

``ascend-sim boot`` runs from ``ascend-sim-boot.service`` at every start of a node container:
- running driver := installed driver (``<path>/driver/version.info``, None when not installed);
  running firmware := installed firmware when one is installed (otherwise the NPUs keep what
  they run: the factory firmware at first);
- the pending-reboot list is cleared;
- the device nodes are created (driver installed) or removed (no driver);
- the device-NIC configuration is re-applied from ``/etc/hccn.conf`` (``address_N``, ``netmask_N``,
  ``netdetect_N``, ``gateway_N``): configuration that only lived in the device is gone after a
  reboot, as on real hardware; the TLS switch, health and link faults persist;
- inside a container, as root and not under ``$ASCEND_SIM_ROOT``: a fresh boot id (see
  ``_fresh_boot_id``);
- one event ``boot driver=<v|none> firmware=<v|none>``.
"""

import os
import subprocess
import sys
import uuid

from . import devices, events, hardware, installinfo, netcfg, paths, pci, state


def _hccn_conf(npu_count: int) -> dict:
    conf = installinfo.read_kv_file(paths.HCCN_CONF)
    out = {}
    for i in range(npu_count):
        entry = {}
        for key, conf_key in (("ipaddr", "address"), ("netmask", "netmask"),
                              ("netdetect", "netdetect"), ("gateway", "gateway")):
            value = conf.get(f"{conf_key}_{i}")
            entry[key] = value if value and netcfg.valid_ip(value) else None
        if entry["ipaddr"] and entry["netmask"]:
            try:
                netcfg.netmask_prefix(entry["netmask"])
            except netcfg.NetError:
                entry["ipaddr"] = entry["netmask"] = None
        else:
            entry["ipaddr"] = entry["netmask"] = None
        # tls_enable_N (real 8-NPU nodes carry it): the TLS switch, on a device with certificates
        if conf.get(f"tls_enable_{i}") in ("0", "1"):
            entry["tls"] = int(conf[f"tls_enable_{i}"])
        out[str(i)] = entry
    return out


def apply_hccn_conf(warn=lambda msg: print(f"ascend-sim: warning: {msg}", file=sys.stderr)) -> dict:
    """Re-apply /etc/hccn.conf to every device (``hccn_tool -a -cfg recovery``); the NPUs' address
    state as a boot leaves it."""
    hw = hardware.load()
    conf = _hccn_conf(hw["npu_count"])
    with state.update() as st:
        old_addrs = {k: (n["ipaddr"], n["netmask"]) for k, n in st["npus"].items() if n["ipaddr"]}
        for key, npu in st["npus"].items():
            npu.update({k: v for k, v in conf[key].items() if k != "tls" or npu["tls_certs"]})
        npus = st["npus"]
    if hw["nic_interface"]:
        _apply_nic(hw["nic_interface"], old_addrs, npus, warn)
    events.log_event("hccn recovery")
    return npus


def _fresh_boot_id(warn) -> None:
    """Give the container a boot id of its own.

    Containers share the host kernel, so /proc/sys/kernel/random/boot_id stays the same when a
    node container restarts. Ansible's reboot module decides that a host has rebooted when that
    boot id changes, so every container start gets a new uuid bind-mounted over it.
    """
    if paths.under_sim_root() or os.geteuid() != 0 or not os.path.exists("/run/.containerenv"):
        return
    try:
        os.makedirs(os.path.dirname(paths.BOOT_ID_FILE), exist_ok=True)
        with open(paths.BOOT_ID_FILE, "w", encoding="utf-8") as f:
            f.write(f"{uuid.uuid4()}\n")
        os.chmod(paths.BOOT_ID_FILE, 0o444)
        done = subprocess.run(
            ["mount", "--bind", paths.BOOT_ID_FILE, paths.KERNEL_BOOT_ID],
            capture_output=True, text=True, check=False,
        )
        if done.returncode != 0:
            warn(f"could not bind-mount a fresh boot id: {done.stderr.strip()}")
    except OSError as exc:
        warn(f"could not write a fresh boot id: {exc}")


def boot(warn=lambda msg: print(f"ascend-sim: warning: {msg}", file=sys.stderr)) -> dict:
    hw = hardware.load()
    pci.write(hw)
    info = installinfo.read_install_info()
    driver = installinfo.installed_driver_version()
    firmware = installinfo.installed_firmware_version()
    conf = _hccn_conf(hw["npu_count"])
    with state.update() as st:
        old_addrs = {k: (n["ipaddr"], n["netmask"]) for k, n in st["npus"].items() if n["ipaddr"]}
        st["running"]["driver"] = driver
        if firmware:
            st["running"]["firmware"] = firmware
        st["pending_reboot"] = []
        st["boot_count"] += 1
        for key, npu in st["npus"].items():
            if driver:
                npu.update({k: v for k, v in conf[key].items() if k != "tls" or npu["tls_certs"]})
            else:
                npu.update(dict.fromkeys(state.NET_KEYS))
        result = {"running": dict(st["running"]), "npus": st["npus"]}
    if driver:
        result["devices"] = devices.create(hw["npu_count"], info)
    else:
        devices.remove_all()
        result["devices"] = {}
    iface = hw["nic_interface"]
    if iface:
        _apply_nic(iface, old_addrs, result["npus"], warn)
    _fresh_boot_id(warn)
    events.log_event(
        f"boot driver={result['running']['driver'] or 'none'} "
        f"firmware={result['running']['firmware'] or 'none'}"
    )
    return result


def _apply_nic(iface: str, old_addrs: dict, npus: dict, warn) -> None:
    wanted = {(n["ipaddr"], n["netmask"]) for n in npus.values() if n["ipaddr"] and n["link"] == "up"}
    try:
        netcfg.plug(iface)
        for ip, mask in set(old_addrs.values()) - wanted:
            netcfg.remove_address(iface, ip, mask)
        for ip, mask in sorted(wanted):
            netcfg.set_address(iface, None, None, ip, mask)
    except netcfg.NetError as exc:
        warn(str(exc))
