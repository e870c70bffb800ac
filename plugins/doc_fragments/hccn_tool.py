# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options every module that drives hccn_tool takes (hccn, hccn_info)."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  hccn_tool:
    description: Path of hccn_tool.
    type: path
    default: /usr/local/Ascend/driver/tools/hccn_tool
  missing_msg:
    description:
      - The failure message when O(hccn_tool) is missing or not executable (nothing is read or changed then),
        for a role's own refusal naming the host and its setting. Unset names the path and asks for the NPU driver.
    type: str
  retries:
    description: How often a call answered with C(hccn_tool is busy) is retried.
    type: int
    default: 10
  delay:
    description: Seconds between retries of a busy hccn_tool.
    type: float
    default: 1.0
"""
