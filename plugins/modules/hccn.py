#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hccn
short_description: Configure the device NICs (RoCE ports) of Ascend NPUs with hccn_tool
version_added: "0.1.0"
description:
  - Sets the address and netmask, default gateway, net-detect address and TLS switch of one
    device NIC through C(hccn_tool -i DEVICE), the way the vendor documents it
    (C(-ip -s address A netmask M), C(-gateway -s gateway G), C(-netdetect -s address D),
    C(-tls -s enable 0|1)).
  - Reads the current values first (C(-ip -g), C(-gateway -g), C(-netdetect -g), C(-tls -g)) and
    sets only what differs, then reads them back.
  - Retries while hccn_tool answers C(hccn_tool is busy, please try again); any other failure
    fails the task with the tool's own message.
  - "RDMA QoS of the port: O(rdma_dscp) is mapped to the traffic class of O(rdma_priority)
    (read from C(-prio_tc -g)) with C(-dscp_to_tc -s dscp D tc T), PFC is switched on for that
    priority with C(-pfc -s priority p0,...,p7) (the other priorities as they are), and the port
    MTU is set with C(-mtu -s size N). Each is read first (C(-dscp_to_tc -g dscp D), C(-pfc -g),
    C(-mtu -g)), set only when it differs and read back."
  - "A port whose link is down answers the QoS reads with C(Link status is down) (non-zero exit):
    the port is recorded (C(qos_link_down) in RV(ports), RV(devices), RV(before) and RV(after); its
    QoS values null), nothing of its QoS is set, and a later run sets it once the link is up. Its
    speed, printed C(Speed: Unknown!), is null. A C(Link status is down) failure of any other
    command names the cable, optics or switch port, not the driver."
  - "A device without preset TLS certificates answers C(-tls -g) with C(No certificate found, please
    set certs firstly!); its TLS is off there (not an error)."
  - "With O(ports), every port of the node in one call (one task instead of one per NPU): every port
    is read before any is set, so a driver that does not answer changes nothing; only a port that
    differs is set and read back. O(status) also reads each port's link, net health and speed
    (C(-link -g), C(-net_health -g), C(-speed -g); again after a change) and returns RV(devices) in
    the shape of M(ascendops.cluster.hccn_info), so a caller needs no second read."
  - Options left unset are not managed. The settings live in the device; keeping them across
    reboots is the job of C(/etc/hccn.conf) (the C(ascendops.cluster.roce) role writes it).
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
  - ascendops.cluster.hccn_tool
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  device:
    description:
      - The device index passed to C(hccn_tool -i) (logical NPU chip id, 0-7 on a 910B server).
      - One of O(device) and O(ports) is required.
    type: int
  ports:
    description:
      - Every port to manage, each with its own O(device), O(address), O(netmask), O(gateway),
        O(netdetect) and O(tls) (same meaning as the top-level options); O(rdma_dscp),
        O(rdma_priority) and O(mtu) apply to every port.
      - Results per port in RV(ports), the diff one entry per changed port.
    type: list
    elements: dict
    suboptions:
      device:
        description: The device index (C(hccn_tool -i)).
        type: int
        required: true
      address:
        description: IPv4 address of the device NIC. Needs O(ports[].netmask).
        type: str
      netmask:
        description: Dotted netmask of the device NIC. Needs O(ports[].address).
        type: str
      gateway:
        description: Default gateway of the device NIC.
        type: str
      netdetect:
        description: Net-detect address.
        type: str
      tls:
        description: TLS switch of the device NIC.
        type: bool
  status:
    description:
      - With O(ports), also read each port's link, net health and speed and return RV(devices).
    type: bool
    default: false
  stat:
    description:
      - With O(ports) and O(status), also read each port's packet statistics (C(hccn_tool -i N -stat -g), one
        more command per port) into the C(stat) key of RV(devices), as M(ascendops.cluster.hccn_info) does.
    type: bool
    default: false
  conf_file:
    description:
      - With O(ports), also merge every port's settings into this file (C(/etc/hccn.conf), from which
        the boot and the vendor's recovery C(hccn_tool -a -cfg recovery) restore the ports) - per
        device C(address_N), C(netmask_N), C(netdetect_N) and C(gateway_N) when given,
        C(send_arp_status_N) and C(tls_enable_N). Every other line the site has stays; a managed key's
        value is replaced in place. The file is root's, mode C(0644), written only when it differs
        (its diff is one more entry of the task's diff). Unset - the file is not managed.
    type: path
  send_arp_status:
    description: The C(send_arp_status_N) value written to O(conf_file) for each port.
    type: int
    default: 1
  phy_ids:
    description:
      - With O(status), the physical chip id of each device index (as for M(ascendops.cluster.hccn_info));
        a missing or empty entry means the device index.
    type: list
    elements: str
    default: []
  address:
    description: IPv4 address of the device NIC. Needs O(netmask).
    type: str
  netmask:
    description: Dotted netmask of the device NIC. Needs O(address).
    type: str
  gateway:
    description: Default gateway of the device NIC.
    type: str
  netdetect:
    description: Net-detect address (probed for the net health status), usually the gateway.
    type: str
  tls:
    description: TLS switch of the device NIC (vendor advice for multi-node training is off).
    type: bool
  rdma_dscp:
    description:
      - DSCP of the job's RDMA traffic (0-63), mapped to the traffic class of O(rdma_priority).
      - Needs O(rdma_priority).
    type: int
  rdma_priority:
    description: Priority (0-7) of the job's RDMA traffic; PFC is switched on for it. Needs O(rdma_dscp).
    type: int
  mtu:
    description: MTU of the device port (68-9702).
    type: int
notes:
  - hccn_tool calls on one host collide; run one task per host at a time (no async on the same host).
seealso:
  - module: ascendops.cluster.hccn_info
"""

EXAMPLES = r"""
- name: Every port of the node in one task, with RDMA QoS, reporting link and health too
  ascendops.cluster.hccn:
    ports:
      - {device: 0, address: 29.1.137.205, netmask: 255.255.0.0, gateway: 29.1.0.1, netdetect: 29.1.0.1, tls: false}
      - {device: 1, address: 29.1.137.206, netmask: 255.255.0.0, gateway: 29.1.0.1, netdetect: 29.1.0.1, tls: false}
    rdma_dscp: 26
    rdma_priority: 3
    mtu: 9000
    status: true
  register: nics

- name: Address NPU 0's device NIC, TLS off
  ascendops.cluster.hccn:
    device: 0
    address: 29.1.137.205
    netmask: 255.255.0.0
    gateway: 29.1.0.1
    netdetect: 29.1.0.1
    tls: false

- name: RDMA QoS of NPU 0's port (DSCP 33 to the class of priority 4, PFC on priority 4, MTU 9000)
  ascendops.cluster.hccn:
    device: 0
    rdma_dscp: 33
    rdma_priority: 4
    mtu: 9000
"""

RETURN = r"""
device:
  description: The device index.
  returned: with O(device)
  type: int
  sample: 0
conf_changed:
  description: With O(conf_file), whether the file was (or, in check mode, would be) written or its owner or mode set.
  returned: with O(conf_file)
  type: bool
ports:
  description:
    - With O(ports), per port C(device), C(before), C(after) and C(commands) (as below).
    - C(qos_link_down=true) on a port whose link is down (its QoS not read and not set).
  returned: with O(ports)
  type: list
  elements: dict
  sample: [{device: 0, before: {}, after: {}, commands: []}]
devices:
  description:
    - With O(ports) and O(status), each port as read from the hardware (after the changes; in check
      mode, as it is) in the shape of M(ascendops.cluster.hccn_info)'s C(devices).
    - "C(speed_mbps) is null where hccn_tool prints C(Speed: Unknown!); C(qos_link_down=true) where the
      port refused the QoS reads (link down)."
    - C(optical), C(link_stat) (and with O(stat), C(stat)) and their C(_error) keys as in
      M(ascendops.cluster.hccn_info).
  returned: with O(ports) and O(status)
  type: list
  elements: dict
  sample:
    - {device_id: "0", phy_id: "0", address: 29.1.137.205, netmask: 255.255.0.0, gateway: 29.1.0.1,
       netdetect: 29.1.0.1, tls: false, link: UP, health: Success, speed_mbps: 100000}
before:
  description:
    - Settings read before any change (C(tls) as a bool; unset values null).
    - With the QoS options also C(rdma_dscp_tc) (the class O(rdma_dscp) maps to), C(rdma_priority_tc)
      (the class of O(rdma_priority)), C(pfc) (eight 0/1 values) and C(mtu); on a port whose link is
      down these are null, with C(qos_link_down=true) and C(qos_error) (the tool's answer).
  returned: with O(device)
  type: dict
  sample: {address: null, netmask: null, gateway: null, netdetect: null, tls: true}
after:
  description: Settings read back after the change (in check mode, what they would be).
  returned: with O(device)
  type: dict
  sample: {address: 29.1.137.205, netmask: 255.255.0.0, gateway: 29.1.0.1, netdetect: 29.1.0.1, tls: false}
commands:
  description: The hccn_tool set commands run (or, in check mode, that would run).
  returned: always
  type: list
  elements: str
  sample: ["-i 0 -ip -s address 29.1.137.205 netmask 255.255.0.0", "-i 0 -tls -s enable 0"]
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.hccn_tool import (  # noqa: E402
    DEFAULT_HCCN_TOOL,
    HccnTask,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            device=dict(type="int"),
            ports=dict(type="list", elements="dict", options=dict(
                device=dict(type="int", required=True),
                address=dict(type="str"),
                netmask=dict(type="str"),
                gateway=dict(type="str"),
                netdetect=dict(type="str"),
                tls=dict(type="bool"),
            ), required_together=[["address", "netmask"]]),
            status=dict(type="bool", default=False),
            stat=dict(type="bool", default=False),
            conf_file=dict(type="path"),
            send_arp_status=dict(type="int", default=1),
            phy_ids=dict(type="list", elements="str", default=[]),
            address=dict(type="str"),
            netmask=dict(type="str"),
            gateway=dict(type="str"),
            netdetect=dict(type="str"),
            tls=dict(type="bool"),
            rdma_dscp=dict(type="int"),
            rdma_priority=dict(type="int"),
            mtu=dict(type="int"),
            hccn_tool=dict(type="path", default=DEFAULT_HCCN_TOOL),
            missing_msg=dict(type="str"),
            retries=dict(type="int", default=10),
            delay=dict(type="float", default=1.0),
        ),
        required_together=[["address", "netmask"], ["rdma_dscp", "rdma_priority"]],
        required_one_of=[["device", "ports"]],
        required_by={"conf_file": "ports"},
        mutually_exclusive=[["device", "ports"], ["ports", "address"], ["ports", "gateway"], ["ports", "netdetect"],
                            ["ports", "tls"]],
        supports_check_mode=True,
    )
    HccnTask(module).run()


if __name__ == "__main__":
    main()
