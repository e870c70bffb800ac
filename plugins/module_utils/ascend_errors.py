# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""HCCL, CANN and npu-smi error codes users hit most: what each means, what to do, and the layer it
points at. One table for every reader (the launch stage's failure messages, log triage).

Sources: the HCCL guide's error-code list and FAQ, users' reports (ascend-facts.md, "Second round of
corrections"). Layers, from the bottom up: hardware, driver, device_network, hccl, trainer.
"""

from __future__ import annotations

import re

LAYERS = ("hardware", "driver", "device_network", "hccl", "trainer")

# code: (layer, meaning, fix, secondary). secondary: a symptom a rank reports when ANOTHER rank or
# node failed first (a timeout waiting for a peer), so the node that reports it is often not the culprit.
ERROR_CODES = {
    "EI0002": ("hccl", "HCCL notify wait timeout: a rank stopped taking part in a collective",
               "look for the rank that died or hung first; raise HCCL_EXEC_TIMEOUT for long steps", True),
    "EI0006": ("hccl", "HCCL socket timeout: a rank did not reach HCCL init (or the device network) within "
               "HCCL_CONNECT_TIMEOUT",
               "check that every node started the job, that device NICs ping each other (roce stage), "
               "and raise HCCL_CONNECT_TIMEOUT for large clusters", True),
    "EI0008": ("hccl", "CANN versions differ between the nodes",
               "install the same CANN version everywhere (cann stage)", False),
    "EI0009": ("hccl", "HCCL transport init failed: the ranks could not set up their links",
               "check device-NIC links and addresses (roce stage: hccn_tool -link -g, the ping matrix) and "
               "that the rank table matches the device NICs", False),
    "EI0014": ("hccl", "invalid rank table (RANK_TABLE_FILE): content or path wrong",
               "regenerate the rank table with the launch stage; check RANK_TABLE_FILE inside the container", False),
    "EJ0001": ("driver", "HCCP init failed: a previous training process still holds the devices",
               "stop leftover training processes (npu-smi info process table), wait ~10 s, start again", False),
    "EJ0002": ("device_network", "device NIC port down",
               "check the port's link (hccn_tool -i N -link -g), cable and switch port", False),
    "EJ0004": ("device_network", "the rank table's device IP differs from the device NIC's address",
               "re-run the roce stage (addresses from the plan) and regenerate the rank table", False),
    "-8005": ("driver", "dcmi initialize failed: the NPU driver is not running",
              "check the driver (npu-smi info; reboot pending after an install?) and the /dev/davinci* devices",
              False),
    "-8020": ("driver", "the device is used by another process (or container)",
              "stop the other process holding the NPU (npu-smi info process table)", False),
}
CODE_RE = re.compile(r"(?<![\w-])(E[IJ]\d{4}|-80\d\d)(?!\w)")


def find_codes(line):
    """Known codes in one line, in order."""
    return [c for c in CODE_RE.findall(str(line)) if c in ERROR_CODES]


def explain(code):
    """{code, layer, meaning, fix, secondary} of a known code, None for an unknown one."""
    if code not in ERROR_CODES:
        return None
    layer, meaning, fix, secondary = ERROR_CODES[code]
    return {"code": code, "layer": layer, "meaning": meaning, "fix": fix, "secondary": secondary}
