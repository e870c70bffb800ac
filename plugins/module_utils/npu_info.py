# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The work of the npu_info module: what is installed (install records), what runs (npu-smi,
upgrade-tool) and whether the node needs a reboot, as one ``ascend_npu`` fact."""

from __future__ import annotations

import os

from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_formats import (
    RecordError,
    get_key,
    read_key_value_file,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_install import (
    read_installed,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_node import (
    driver_reboot_reason,
    firmware_reboot_reason,
    query_firmware,
    query_npu_smi,
    query_spod_info,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.cann_info import parse_required
from ansible_collections.ascendops.cluster.plugins.module_utils.npu_smi import (
    NpuSmiFormatError,
    ecc_problems,
    parse_npu_smi_ecc,
    parse_npu_smi_health,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.pci_devices import (
    PciReadError,
    npu_functions,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.upgrade_tool import firmware_status
from ansible_collections.ascendops.cluster.plugins.module_utils.vendor_command import vendor_runner

NPU_SMI_DIRS = ["/usr/local/bin", "/usr/local/sbin"]


def _is_executable(path):
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def find_npu_smi(module, path_option):
    """(path or None, error or None)."""
    if path_option and os.sep not in path_option:
        path_option = module.get_bin_path(path_option, opt_dirs=NPU_SMI_DIRS) or path_option
    if path_option:
        if not _is_executable(path_option):
            return None, f"npu-smi not found or not executable at {path_option}"
        return path_option, None
    path = module.get_bin_path("npu-smi", opt_dirs=NPU_SMI_DIRS)
    if not path:
        return None, "npu-smi not found on PATH or in {}".format(", ".join(NPU_SMI_DIRS))
    return path, None


def reboot_reasons(driver, firmware, smi):
    reasons = []
    if driver["installed"]:
        reason = driver_reboot_reason(driver["version"], dict(smi, driver_version=driver["running_version"]))
        if reason:
            reasons.append(reason)
    if firmware["installed"]:
        reason = firmware_reboot_reason(firmware["version"], firmware["components"])
        if reason:
            reasons.append(reason)
    return reasons


def gather(module):
    params = module.params
    install_path = params["install_path"]
    install_info = read_key_value_file(params["install_info"]) or {}
    upgrade_tool = params["upgrade_tool"]

    drv = read_installed("driver", install_path, install_info)
    fw = read_installed("firmware", install_path, install_info)
    tk = read_installed("toolkit", install_path, install_info)
    kn = read_installed("kernels", install_path, install_info)
    rt = read_installed("docker_runtime", install_path, install_info)

    run = vendor_runner(module)
    smi_path, smi_error = find_npu_smi(module, params["npu_smi"])
    smi = query_npu_smi(run, smi_path)
    if smi_error:
        smi["error"] = smi_error

    if not upgrade_tool:
        upgrade_tool = os.path.join(drv["install_path"], "driver", "tools", "upgrade-tool")
    components, fw_error = ([], None)
    if drv["installed"] and _is_executable(upgrade_tool):
        components, fw_error = query_firmware(run, upgrade_tool)
    status = firmware_status(components, fw["version"] if fw["installed"] else None)

    driver = {
        "installed": drv["installed"],
        "version": drv["version"],
        "running_version": smi["driver_version"],
        "install_path": drv["install_path"] if drv["installed"] else None,
        "info": drv["info"],
    }
    firmware = {
        "installed": fw["installed"],
        "version": fw["version"],
        "running_versions": status["running_versions"],
        "active": status["active"],
        "stale_devices": status["stale_devices"],
        "components": components,
        "install_path": fw["install_path"] if fw["installed"] else None,
        "info": fw["info"],
        "error": fw_error,
    }
    toolkit = {
        "installed": tk["installed"],
        "version": tk["version"],
        "path": tk["path"],
        "arch": get_key(tk["info"], "arch"),
        "info": tk["info"],
    }

    npus = smi.pop("npus")
    chips = smi.pop("chips")
    spod_error = None
    if params.get("spod_info") and smi["available"]:
        # Atlas A3: each chip's super_device_id (SDID) as the hardware reports it, for rank table 1.2
        spod, spod_error = query_spod_info(run, smi_path, chips)
        if spod_error:
            module.fail_json(msg=f"cannot read the super_device_id of every chip: {spod_error}; on Atlas A3 "
                                 "npu-smi answers spod-info for every NPU and chip (npu-smi info -m lists them)")
        for chip, info in zip(chips, spod):
            chip.update({k: info[k] for k in ("super_device_id", "super_pod_id", "super_pod_size", "server_index")
                         if k in info})
    smi.pop("driver_version")
    names = []
    for npu in npus:
        if npu.get("name") and npu["name"] not in names:
            names.append(npu["name"])
    unhealthy = [{"npu_id": c.get("npu_id"), "chip_id": c.get("chip_id"), "phy_id": c.get("phy_id"),
                  "health": c.get("health")}
                 for c in chips if str(c.get("health") or "").upper() != "OK"]
    reasons = reboot_reasons(driver, firmware, smi)
    health = {"details": [], "problems": [], "notes": []}
    if params.get("health_checks") and smi["available"]:
        details, problems, notes = health_report(
            run, smi_path, [n.get("npu_id") for n in npus], params.get("ecc_max_isolated_pages", 0),
            params.get("ecc_max_single_bit_errors", -1))
        health = {"details": details, "problems": problems, "notes": notes}

    return {
        "health_checks": health,
        "pci": read_pci(module),
        "driver": driver,
        "firmware": firmware,
        "toolkit": toolkit,
        # required: the required_package_* ranges its version.info declares (the release checks' driver range)
        "kernels": {"installed": kn["installed"], "version": kn["version"], "required": parse_required(kn["info"])},
        "docker_runtime": {"installed": rt["installed"], "version": rt["version"]},
        "install_info": dict(install_info),
        "npu_smi": smi,
        "npus": npus,
        "chips": chips,
        "count": len(npus),
        "chip_count": len(chips),
        "names": names,
        "model": names[0] if len(names) == 1 else None,
        "healthy": bool(npus) and not unhealthy,
        "unhealthy": unhealthy,
        "reboot_required": bool(reasons),
        "reboot_reasons": reasons,
    }


def health_report(run, path, npu_ids, max_isolated_pages=0, max_single_bit=-1):
    """Each NPU's own health record and HBM ECC (``npu-smi info -t health -i N``, ``-t ecc -i N``):
    (details, problems, notes). ``details``: ``[{npu_id, health, error_code, error_info, ecc}]``;
    ``problems``: one sentence per NPU and finding, naming the NPU (health not OK with its error code,
    ``ecc_problems``, an output that cannot be read, shown); ``notes``: reads the tool refused (rc != 0)."""
    details, problems, notes = [], [], []
    for npu in npu_ids:
        entry = {"npu_id": npu}
        for kind in ("health", "ecc"):
            cmd = [path, "info", "-t", kind, "-i", str(npu)]
            rc, out, err = run(cmd)
            if rc != 0:
                notes.append(f"NPU {npu}: {' '.join(cmd[1:])} failed (rc={rc}): "
                             f"{(err or out or 'no output').strip()[:300]}")
                continue
            try:
                if kind == "health":
                    entry.update(parse_npu_smi_health(out))
                else:
                    entry["ecc"] = parse_npu_smi_ecc(out)
            except NpuSmiFormatError as exc:
                problems.append(f"NPU {npu}: {exc}")
        if entry.get("health") and str(entry["health"]).upper() != "OK":
            code = ", ".join(v for v in (entry.get("error_code"), entry.get("error_info")) if v)
            problems.append(f"NPU {npu}: health {entry['health']}" + (f" (error {code})" if code else "")
                            + " (npu-smi info -t health)")
        problems.extend(f"NPU {npu} {finding} (npu-smi info -t ecc)"
                        for finding in ecc_problems(entry.get("ecc") or [], max_isolated_pages, max_single_bit))
        details.append(entry)
    return details, problems, notes


def read_pci(module):
    """The NPUs the PCI bus shows (option pci_devices; None when not asked): by device id, not class."""
    params = module.params
    root = params.get("pci_devices")
    if not root:
        return None
    ids = params.get("pci_device_ids")
    try:
        found = npu_functions(root, ids or None)
    except ValueError as exc:
        module.fail_json(msg=f"pci_device_ids: {exc}")
    except PciReadError as exc:
        return {"path": root, "npus": [], "other_huawei": [], "count": 0, "error": str(exc)}
    return dict(found, path=root, count=len(found["npus"]), error=None)


class NpuInfo:
    """One npu_info run: gather, then exit with the facts."""

    def __init__(self, module):
        self.module = module

    def run(self):
        try:
            facts = gather(self.module)
        except RecordError as exc:
            self.module.fail_json(msg=f"cannot read an installed package's version record: {exc}")
        result = dict(changed=False, ansible_facts={"ascend_npu": facts})
        result.update(facts)
        self.module.exit_json(**result)
