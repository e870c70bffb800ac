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
  - Reports the NPUs and their chips listed by C(npu-smi info) (name, health, bus id, power,
    temperature, HBM and memory use; one chip per NPU on 910B, two on Atlas A3, where each chip is a
    device of its own for HCCL), the installed NPU driver, firmware, CANN toolkit, CANN kernels and Ascend Docker
    Runtime versions, the install record C(/etc/ascend_install.info), and whether a reboot is
    needed to run what is installed.
  - Works on a bare node (nothing installed, no C(npu-smi)), where everything is reported as not
    installed or unavailable instead of failing.
  - A reboot is reported as required when the installed driver version differs from the running
    one (the C(Version:) of the C(npu-smi info) header), when the driver is installed but
    C(npu-smi) cannot initialise (C(dcmi module initialize failed. ret is -8005)), or when a device
    does not run the installed firmware package (no component reports its version, from C(upgrade-tool)).
    The same rule decides RV(firmware.active).
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
  spod_info:
    description:
      - Atlas A3 - also read every chip's C(npu-smi info -t spod-info -i <npu_id> -c <chip_id>) and add its
        C(SDID) to RV(chips) as C(super_device_id) (with C(super_pod_id), C(super_pod_size), C(server_index)),
        as the rank table 1.2 needs it; read from the hardware, never computed.
      - A chip that does not answer fails the task, naming the command.
    type: bool
    default: false
  pci_devices:
    description:
      - Also count the NPUs on the PCI bus (works before any driver is installed) - this sysfs-shaped
        directory of PCI functions (C(/sys/bus/pci/devices)), each with C(vendor) and C(device) files.
      - An NPU is a Huawei function (vendor C(0x19e5)) whose device id is in O(pci_device_ids); the PCI
        class is not used (a Kunpeng 920 shows its ZIP, SEC and HPRE engines in the NPUs' class C(0x1200)).
      - Not set - RV(pci) is null.
    type: path
  pci_device_ids:
    description:
      - The PCI device ids that are NPUs, for O(pci_devices).
      - Default C(0xd802) (910B, as Huawei's guides count them), C(0xd803) (Atlas A3, Ascend 910_93) and
        C(0xd500) (310P).
    type: list
    elements: str
  health_checks:
    description:
      - Also read each NPU's own health record and HBM ECC counts (C(npu-smi info -t health -i N),
        C(npu-smi info -t ecc -i N)) and judge them into RV(health_checks).
    type: bool
    default: false
  ecc_max_isolated_pages:
    description:
      - With O(health_checks) - isolated HBM pages (single- and double-bit together) a chip may have; more
        is a problem. Negative - not judged. HBM double-bit (uncorrectable) errors are always a problem.
    type: int
    default: 0
  ecc_max_single_bit_errors:
    description:
      - With O(health_checks) - HBM single-bit (corrected) ECC errors a chip may have; more is a problem.
        Negative - not judged.
    type: int
    default: -1
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
      description:
        - Distinct firmware package versions the devices run (from upgrade-tool). A device runs the
          installed package when one of its components reports the package version; otherwise the
          version most of its components report.
      type: list
      elements: str
    active:
      description: Every device runs the installed firmware package (false when nothing could be read).
      type: bool
    stale_devices:
      description: Devices that do not run the installed firmware package.
      type: list
      elements: int
    components:
      description: "Per device and component: C(device_id), C(component_type), C(component) (name or null), C(version)."
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
    active: true
    stale_devices: []
    components: [{device_id: 0, component_type: 0, component: xloader, version: 7.5.0.2.220}]
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
  description: >-
    The CANN kernels package (C(ascend-toolkit/latest/opp_kernel/version.info)): C(installed), C(version) and
    C(required), the C(required_package_*) ranges it declares by package (C(driver), C(toolkit)).
  returned: always
  type: dict
  sample: {installed: true, version: 8.0.0, required: {driver: ">=23.0"}}
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
    - One entry per NPU id of C(npu-smi info), in table order. Values C(-)/C(NA) are null.
    - The values of its first chip, C(health) the worst health of its chips, C(chip_count) and C(phy_ids).
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
      phy_id: 0
      chip_count: 1
      phy_ids: [0]
chips:
  description:
    - One entry per chip row of C(npu-smi info) (the devices HCCL and the rank table count), with the
      values of its NPU row and its chip row.
    - C(phy_id) is the C(Phy-ID) column (A3), else the C(Device) column (310P), else the NPU id where
      each NPU has one chip (910B).
    - With O(spod_info) also C(super_device_id) (the C(SDID) of spod-info), C(super_pod_id),
      C(super_pod_size) and C(server_index), as strings.
  returned: always
  type: list
  elements: dict
  sample:
    - {npu_id: 0, chip_id: 0, phy_id: 0, name: Ascend910, health: OK, bus_id: "0000:9D:00.0"}
    - {npu_id: 0, chip_id: 1, phy_id: 1, name: Ascend910, health: OK, bus_id: "0000:9F:00.0"}
count:
  description: Number of NPUs (distinct NPU ids; 8 on an Atlas 800T A2 and on an Atlas 800T A3).
  returned: always
  type: int
  sample: 8
chip_count:
  description: Number of chips (entries of RV(chips); 16 on an Atlas 800T A3).
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
  description: Chips whose health is not C(OK).
  returned: always
  type: list
  elements: dict
  sample: [{npu_id: 3, chip_id: 0, phy_id: 3, health: Alarm}]
reboot_required:
  description: What is installed (driver or firmware) is not what runs.
  returned: always
  type: bool
reboot_reasons:
  description: Why a reboot is required, one sentence each.
  returned: always
  type: list
  elements: str
health_checks:
  description:
    - With O(health_checks) - C(details) (per NPU C(npu_id), C(health), C(error_code), C(error_info), C(ecc)
      the chips' counts), C(problems) (one sentence per NPU and finding, naming the NPU; an output that
      cannot be read is shown) and C(notes) (reads the tool refused). Empty lists without it.
  returned: always
  type: dict
  sample:
    details: [{npu_id: 0, health: OK, error_code: null, error_info: null, ecc: [{chip_id: 0}]}]
    problems: ["NPU 3 chip 0: 2 HBM double-bit (uncorrectable) ECC errors (npu-smi info -t ecc)"]
    notes: []
pci:
  description:
    - With O(pci_devices) - the NPU functions on the PCI bus, by device id (null without it).
    - C(npus) (C(bus_id), C(device), C(model)), C(count) (their number), C(other_huawei) (Huawei functions
      that are not NPUs, C(bus_id), C(device), C(class)), C(path), C(error) (why the directory could not
      be read, else null).
  returned: always
  type: dict
  sample:
    path: /sys/bus/pci/devices
    count: 8
    npus: [{bus_id: "0000:c1:00.0", device: "0xd802", model: 910B}]
    other_huawei: [{bus_id: "0000:75:00.0", device: "0xa250", class: "0x120000"}]
    error: null
ansible_facts:
  description: The same data under C(ascend_npu).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_install import (  # noqa: E402
    DEFAULT_INSTALL_INFO,
    DEFAULT_INSTALL_PATH,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.npu_info import NpuInfo  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            npu_smi=dict(type="path"),
            install_path=dict(type="path", default=DEFAULT_INSTALL_PATH),
            install_info=dict(type="path", default=DEFAULT_INSTALL_INFO),
            upgrade_tool=dict(type="path"),
            spod_info=dict(type="bool", default=False),
            pci_devices=dict(type="path"),
            pci_device_ids=dict(type="list", elements="str"),
            health_checks=dict(type="bool", default=False),
            ecc_max_isolated_pages=dict(type="int", default=0),
            ecc_max_single_bit_errors=dict(type="int", default=-1),
        ),
        supports_check_mode=True,
    )
    NpuInfo(module).run()


if __name__ == "__main__":
    main()
