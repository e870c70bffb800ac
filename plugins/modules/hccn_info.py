#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hccn_info
short_description: Read the device NICs (RoCE ports) of every Ascend NPU of a node, and ping from them
version_added: "0.1.0"
description:
  - For every device (default - one per C(/dev/davinciN) node the driver created) reports the link
    status (C(-link -g)), net health (C(-net_health -g)), speed (C(-speed -g)), address, netmask,
    gateway, net-detect address and TLS switch, read with hccn_tool.
  - Optionally pings addresses from given devices (C(-ping -g address X)) and reports the packets
    received per ping (a ping with loss is reported, never failed).
  - Read-only. Fails, naming the tool's message, when hccn_tool cannot talk to the devices (driver
    not installed or not running).
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
  - ascendops.cluster.hccn_tool
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  devices:
    description: Device indexes to read (C(hccn_tool -i)). Default is every C(/dev/davinciN).
    type: list
    elements: int
  phy_ids:
    description:
      - Physical chip id of each device index (from npu-smi, e.g. RV(ascendops.cluster.npu_info#module:npus[].phy_id)
        on Atlas A3); a missing or null entry means the device index.
    type: list
    elements: str
    default: []
  ping:
    description:
      - Pings to run, each a dict with C(address) (to ping) and C(device) (the device index to ping
        from; default - the entry's C(device_id), so the entries of an IP plan ping the same index).
      - Other keys (e.g. C(host)) are returned unchanged in RV(pings).
    type: list
    elements: dict
    default: []
  ping_count:
    description: Packets per ping (C(pkt)); unset uses hccn_tool's default (3).
    type: int
  status:
    description:
      - Read each device's status (RV(devices)). V(false) only pings (RV(devices) is then empty), for a
        caller that has just read the ports (M(ascendops.cluster.hccn) with O(ascendops.cluster.hccn#module:status)).
    type: bool
    default: true
  stat:
    description:
      - With O(status), also read each port's packet statistics (C(hccn_tool -i N -stat -g), one more command per
        device) into the C(stat) key of RV(devices). V(false) runs no such command.
    type: bool
    default: false
seealso:
  - module: ascendops.cluster.hccn
"""

EXAMPLES = r"""
- name: Read every device NIC and ping a peer from NPU 0
  ascendops.cluster.hccn_info:
    ping:
      - {device: 0, address: 29.1.137.213}
  register: nics

- name: Every link must be up
  ansible.builtin.assert:
    that: nics.devices | rejectattr('link', 'equalto', 'UP') | list | length == 0
"""

RETURN = r"""
devices:
  description:
    - One entry per device, in the order asked (none with O(status=false)).
    - "C(speed_mbps) is null where hccn_tool prints C(Speed: Unknown!) (a port without a link)."
    - C(optical) is C(hccn_tool -optical -g) read (C(present), C(tx_power_mw) and C(rx_power_mw) per lane, the
      module's C(tx_power_low_mw) / C(rx_power_low_mw), C(tx_los), C(rx_los)) and C(link_stat) is
      C(hccn_tool -link_stat -g) read (C(up_count), C(down_count), C(downs_ago_s) - seconds before the tool's
      current time of each recorded link-down); each null with the reason in C(optical_error) /
      C(link_stat_error) where the tool refused the read or its output could not be read.
    - With O(stat), C(stat) is C(hccn_tool -stat -g) read (every counter the tool prints, by name, as an
      integer - cumulative since the driver started or the last C(-stat -c)), null with the reason in
      C(stat_error) likewise; without O(stat) neither key is there.
  returned: always
  type: list
  elements: dict
  sample:
    - device_id: "0"
      phy_id: "0"
      address: 29.1.137.205
      netmask: 255.255.0.0
      gateway: 29.1.0.1
      netdetect: 29.1.0.1
      tls: false
      link: UP
      health: Success
      speed_mbps: 200000
      optical: {present: true, tx_power_mw: [4.4035], rx_power_mw: [1.0189], tx_power_low_mw: 0.2818,
                rx_power_low_mw: 0.1445, tx_los: "0x0", rx_los: "0x0"}
      optical_error: null
      link_stat: {up_count: 2, down_count: null, downs_ago_s: [63378]}
      link_stat_error: null
      stat: {mac_tx_mac_pause_num: 0, mac_rx_pfc_pri4_pkt_num: 1532, mac_rx_bad_pkt_num: 0,
             mac_rx_fcs_err_pkt_num: 0, roce_rx_err_pkt_num: 0, roce_tx_err_pkt_num: 0}
      stat_error: null
pings:
  description:
    - One entry per ping asked (the entry's own keys, plus the result).
    - A ping the tool refuses with C(Link status is down) is a failed ping (C(ok=false), nothing
      received) with C(link_down=true) and C(error), not a failure of the module.
  returned: always
  type: list
  elements: dict
  sample:
    - {device: "0", address: 29.1.137.213, transmitted: 3, received: 3, loss_pct: 0.0, ok: true}
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.hccn_tool import (  # noqa: E402
    DEFAULT_HCCN_TOOL,
    HccnInfoTask,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            devices=dict(type="list", elements="int"),
            phy_ids=dict(type="list", elements="str", default=[]),
            ping=dict(type="list", elements="dict", default=[]),
            ping_count=dict(type="int"),
            status=dict(type="bool", default=True),
            stat=dict(type="bool", default=False),
            hccn_tool=dict(type="path", default=DEFAULT_HCCN_TOOL),
            missing_msg=dict(type="str"),
            retries=dict(type="int", default=10),
            delay=dict(type="float", default=1.0),
        ),
        supports_check_mode=True,
    )
    HccnInfoTask(module).run()


if __name__ == "__main__":
    main()
