#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: npu_info
short_description: Gather facts about the Ascend NPUs of a node and the vendor software installed
version_added: "0.1.0"
description:
  - Reports the NPUs listed by C(npu-smi info) (name, health, bus id, power, temperature, HBM and
    memory use), the installed NPU driver, firmware, CANN toolkit, CANN kernels and Ascend Docker
    Runtime versions, the install record C(/etc/ascend_install.info), and whether a reboot is
    needed to run what is installed.
  - Works on a bare node (nothing installed, no C(npu-smi)), where everything is reported as not
    installed or unavailable instead of failing.
  - A reboot is reported as required when the installed driver version differs from the running
    one (the C(Version:) of the C(npu-smi info) header), when the driver is installed but
    C(npu-smi) cannot initialise (C(dcmi module initialize failed. ret is -8005)), or when a device
    runs none of its components at the installed firmware version (from C(upgrade-tool)).
  - Runs only read-only commands; never changes anything.
  - The result is also set as the fact C(ascend_npu).
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
  - ascendops.cluster.attributes.facts
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
options:
  npu_smi:
    description:
      - Path of the C(npu-smi) binary (a bare name is looked up like the default).
      - Default is C(npu-smi) found on E(PATH), else C(/usr/local/bin/npu-smi) or C(/usr/local/sbin/npu-smi).
    type: path
  install_path:
    description:
      - Ascend install path (the C(--install-path) the packages were installed with).
    type: path
    default: /usr/local/Ascend
  install_info:
    description:
      - The Ascend install record written by the driver and firmware packages.
    type: path
    default: /etc/ascend_install.info
  upgrade_tool:
    description:
      - Path of the firmware C(upgrade-tool) used to query the running firmware versions.
      - Default is C(<install_path>/driver/tools/upgrade-tool).
    type: path
notes:
  - C(npu-smi) talks to the driver; a C(-8020) error means another process holds the devices.
seealso:
  - module: ascendops.cluster.ascend_package
"""

EXAMPLES = r"""
- name: Gather NPU facts
  ascendops.cluster.npu_info:
  register: npu

- name: Reboot when the installed driver or firmware is not the running one
  ansible.builtin.reboot:
  when: npu.reboot_required

- name: All eight NPUs must be healthy
  ansible.builtin.assert:
    that:
      - ansible_facts.ascend_npu.count == 8
      - ansible_facts.ascend_npu.healthy
    fail_msg: "Unhealthy NPUs: {{ ansible_facts.ascend_npu.unhealthy }}"

- name: Use a driver installed under another path
  ascendops.cluster.npu_info:
    install_path: /opt/Ascend
    npu_smi: /usr/local/bin/npu-smi
"""

RETURN = r"""
driver:
  description: The NPU driver.
  returned: always
  type: dict
  contains:
    installed: {description: A driver version.info was found., type: bool}
    version: {description: Installed version (C(Version) of version.info)., type: str}
    running_version: {description: Running driver version from the C(npu-smi info) header., type: str}
    install_path: {description: Install path where the driver was found., type: str}
    info: {description: All keys of the driver version.info., type: dict}
  sample:
    installed: true
    version: 24.1.rc1
    running_version: 24.1.rc1
    install_path: /usr/local/Ascend
    info: {Version: 24.1.rc1, ascendhal_version: 7.35.19}
firmware:
  description: The NPU firmware.
  returned: always
  type: dict
  contains:
    installed: {description: A firmware version.info was found., type: bool}
    version: {description: Installed firmware version., type: str}
    running_versions:
      description: Distinct firmware component versions the devices run (from upgrade-tool).
      type: list
      elements: str
    components:
      description: "Per device and component: C(device_id), C(component_type), C(version)."
      type: list
      elements: dict
    install_path: {description: Install path where the firmware was found., type: str}
    info: {description: All keys of the firmware version.info., type: dict}
    error:
      description: Why the running versions could not be read (null when they were, or when no tool is present).
      type: str
  sample:
    installed: true
    version: 7.5.0.2.220
    running_versions: [7.5.0.2.220]
    components: [{device_id: 0, component_type: 0, version: 7.5.0.2.220}]
    install_path: /usr/local/Ascend
    info: {Version: 7.5.0.2.220}
    error: null
toolkit:
  description: The CANN toolkit, read through the C(ascend-toolkit/latest) link.
  returned: always
  type: dict
  contains:
    installed: {description: The toolkit install record was found., type: bool}
    version: {description: Installed CANN version., type: str}
    path: {description: Resolved directory of C(ascend-toolkit/latest)., type: str}
    arch: {description: Architecture of the installed toolkit., type: str}
    info: {description: All keys of ascend_toolkit_install.info., type: dict}
  sample: {installed: true, version: 8.0.0, path: /usr/local/Ascend/ascend-toolkit/8.0.0, arch: aarch64, info: {}}
kernels:
  description: The CANN kernels package (C(ascend-toolkit/latest/opp_kernel/version.info)).
  returned: always
  type: dict
  sample: {installed: true, version: 8.0.0}
docker_runtime:
  description: The Ascend Docker Runtime (C(Ascend-Docker-Runtime/version.info)).
  returned: always
  type: dict
  sample: {installed: false, version: null}
install_info:
  description: Keys of the install record (empty when the file is missing).
  returned: always
  type: dict
  sample: {UserName: HwHiAiUser, UserGroup: HwHiAiUser, Driver_Install_Type: full}
npu_smi:
  description: State of the C(npu-smi) tool.
  returned: always
  type: dict
  contains:
    available: {description: C(npu-smi info) ran and its table was parsed., type: bool}
    path: {description: The binary used (null when not found)., type: str}
    version: {description: The npu-smi version from the header., type: str}
    error: {description: Why it is not available (null when it is)., type: str}
    error_code: {description: "The C(ret is N) code of a dcmi error (e.g. -8005, -8020), else null.", type: int}
  sample: {available: true, path: /usr/local/bin/npu-smi, version: 24.1.rc1, error: null, error_code: null}
npus:
  description:
    - One entry per NPU chip row pair of C(npu-smi info). Values C(-)/C(NA) are null.
    - Keys C(phy_id) (A3) or C(device_id) (310P) appear on models that print them.
  returned: always
  type: list
  elements: dict
  sample:
    - npu_id: 0
      name: 910B1
      health: OK
      power_w: 88.4
      temp_c: 46
      hugepages_used: 0
      hugepages_total: 0
      chip_id: 0
      bus_id: "0000:C1:00.0"
      aicore_pct: 0
      memory_used_mb: 0
      memory_total_mb: 0
      hbm_used_mb: 4175
      hbm_total_mb: 65536
count:
  description: Number of entries in RV(npus).
  returned: always
  type: int
  sample: 8
names:
  description: Distinct NPU names, in device order.
  returned: always
  type: list
  elements: str
  sample: [910B1]
model:
  description: The NPU name when all NPUs share one, else null.
  returned: always
  type: str
  sample: 910B1
healthy:
  description: At least one NPU is listed and all report health C(OK).
  returned: always
  type: bool
unhealthy:
  description: NPUs whose health is not C(OK).
  returned: always
  type: list
  elements: dict
  sample: [{npu_id: 3, chip_id: 0, health: Alarm}]
reboot_required:
  description: What is installed (driver or firmware) is not what runs.
  returned: always
  type: bool
reboot_reasons:
  description: Why a reboot is required, one sentence each.
  returned: always
  type: list
  elements: str
ansible_facts:
  description: The same data under C(ascend_npu).
  returned: always
  type: dict
"""

import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_formats import (  # noqa: E402
    get_key,
    parse_npu_smi_error,
    parse_npu_smi_info,
    parse_upgrade_tool_versions,
    read_key_value_file,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_install import (  # noqa: E402
    DEFAULT_INSTALL_INFO,
    DEFAULT_INSTALL_PATH,
    RUN_ENV,
    read_installed,
    stdin_from_devnull,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_version import (  # noqa: E402
    version_key,
    versions_equal,
)

NPU_SMI_DIRS = ["/usr/local/bin", "/usr/local/sbin"]


def _last_line(*texts):
    for text in texts:
        lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
        if lines:
            return lines[-1]
    return None


def _is_executable(path):
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def _run(module, cmd):
    with stdin_from_devnull():
        return module.run_command(cmd, environ_update=RUN_ENV)


def _sorted_versions(values):
    unique = []
    for v in values:
        if v not in unique:
            unique.append(v)
    try:
        return sorted(unique, key=version_key)
    except ValueError:
        return sorted(unique)


def query_npu_smi(module, path_option):
    state = {"available": False, "path": None, "version": None, "driver_version": None,
             "error": None, "error_code": None, "npus": []}
    if path_option and os.sep not in path_option:
        path_option = module.get_bin_path(path_option, opt_dirs=NPU_SMI_DIRS) or path_option
    if path_option:
        if not _is_executable(path_option):
            state["error"] = f"npu-smi not found or not executable at {path_option}"
            return state
        path = path_option
    else:
        path = module.get_bin_path("npu-smi", opt_dirs=NPU_SMI_DIRS)
        if not path:
            state["error"] = "npu-smi not found on PATH or in {}".format(", ".join(NPU_SMI_DIRS))
            return state
    state["path"] = path
    rc, out, err = _run(module, [path, "info"])
    dcmi = parse_npu_smi_error(f"{out}\n{err}")
    if dcmi:
        state["error"] = dcmi["line"]
        state["error_code"] = dcmi["code"]
        return state
    if rc != 0:
        state["error"] = f"npu-smi info failed (rc={rc}): {_last_line(err, out) or 'no output'}"
        return state
    try:
        parsed = parse_npu_smi_info(out)
    except ValueError as exc:
        state["error"] = f"cannot parse npu-smi info output: {exc}"
        return state
    state.update(available=True, version=parsed["npu_smi_version"],
                 driver_version=parsed["driver_version"], npus=parsed["npus"])
    return state


def query_firmware(module, tool):
    """(components, error) from upgrade-tool; ([], None) when the tool is absent."""
    if not _is_executable(tool):
        return [], None
    rc, out, err = _run(module, [tool, "--device_index", "-1", "--component", "-1", "--version"])
    components = parse_upgrade_tool_versions(out)
    if components:
        return components, None
    dcmi = parse_npu_smi_error(f"{out}\n{err}")
    if dcmi:
        return [], dcmi["line"]
    return [], f"upgrade-tool reported no component version (rc={rc}): {_last_line(err, out) or 'no output'}"


def reboot_reasons(driver, firmware, smi):
    reasons = []
    if driver["installed"]:
        not_loaded = smi["error_code"] == -8005 or "dcmi module initialize failed" in (smi["error"] or "").lower()
        if not_loaded:
            reasons.append(
                f"driver {driver['version']} is installed but npu-smi cannot initialise ({smi['error']}): "
                "the driver is not loaded; reboot to load it")
        elif driver["running_version"] and driver["version"] and \
                not versions_equal(driver["version"], driver["running_version"]):
            reasons.append(f"installed driver {driver['version']} differs from the running driver "
                           f"{driver['running_version']}; reboot to load it")
    if firmware["installed"] and firmware["version"] and firmware["components"]:
        per_device = {}
        for comp in firmware["components"]:
            per_device.setdefault(comp["device_id"], []).append(comp["version"])
        stale = sorted(dev for dev, versions in per_device.items()
                       if not any(versions_equal(firmware["version"], v) for v in versions))
        if stale:
            running = _sorted_versions([v for dev in stale for v in per_device[dev]])
            devices = ",".join(str(d) for d in stale)
            reasons.append(
                f"installed firmware {firmware['version']} is not running on device(s) {devices} "
                f"(running {', '.join(running)}); reboot to activate it")
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

    smi = query_npu_smi(module, params["npu_smi"])

    if not upgrade_tool:
        upgrade_tool = os.path.join(drv["install_path"], "driver", "tools", "upgrade-tool")
    components, fw_error = ([], None)
    if drv["installed"]:
        components, fw_error = query_firmware(module, upgrade_tool)

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
        "running_versions": _sorted_versions([c["version"] for c in components]),
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
    smi.pop("driver_version")
    names = []
    for npu in npus:
        if npu.get("name") and npu["name"] not in names:
            names.append(npu["name"])
    unhealthy = [{"npu_id": n.get("npu_id"), "chip_id": n.get("chip_id"), "health": n.get("health")}
                 for n in npus if str(n.get("health") or "").upper() != "OK"]
    reasons = reboot_reasons(driver, firmware, smi)

    return {
        "driver": driver,
        "firmware": firmware,
        "toolkit": toolkit,
        "kernels": {"installed": kn["installed"], "version": kn["version"]},
        "docker_runtime": {"installed": rt["installed"], "version": rt["version"]},
        "install_info": dict(install_info),
        "npu_smi": smi,
        "npus": npus,
        "count": len(npus),
        "names": names,
        "model": names[0] if len(names) == 1 else None,
        "healthy": bool(npus) and not unhealthy,
        "unhealthy": unhealthy,
        "reboot_required": bool(reasons),
        "reboot_reasons": reasons,
    }


def main():
    module = AnsibleModule(
        argument_spec=dict(
            npu_smi=dict(type="path"),
            install_path=dict(type="path", default=DEFAULT_INSTALL_PATH),
            install_info=dict(type="path", default=DEFAULT_INSTALL_INFO),
            upgrade_tool=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    facts = gather(module)
    result = dict(changed=False, ansible_facts={"ascend_npu": facts})
    result.update(facts)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
