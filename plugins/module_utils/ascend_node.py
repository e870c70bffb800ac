# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an Ascend node runs, next to what is installed: the node's own view of whether a reboot
is needed. Shared by the ``npu_info`` and ``ascend_package`` modules so they never disagree.

* running driver: the ``Version:`` of the ``npu-smi info`` header; a driver that is installed
  while npu-smi cannot initialise (``dcmi module initialize failed. ret is -8005``) is not loaded;
* running firmware: ``upgrade-tool ... --version``, judged by
  ``upgrade_tool.firmware_status`` (one rule for "firmware X runs").

Commands run through a ``run(argv) -> (rc, stdout, stderr)`` callable given by the module.
"""

from __future__ import annotations

from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_version import versions_equal
from ansible_collections.ascendops.cluster.plugins.module_utils.npu_smi import (
    NpuSmiFormatError,
    parse_npu_smi_error,
    parse_npu_smi_info,
    parse_npu_smi_spod_info,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.upgrade_tool import (
    firmware_status,
    parse_upgrade_tool_versions,
)

UPGRADE_TOOL_QUERY = ["--device_index", "-1", "--component", "-1", "--version"]


def last_line(*texts):
    for text in texts:
        lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
        if lines:
            return lines[-1]
    return None


def query_npu_smi(run, path):
    """Run ``npu-smi info`` at ``path`` (None: not found). Returns ``{available, path, version,
    driver_version, error, error_code, npus, chips}``."""
    state = {"available": False, "path": path, "version": None, "driver_version": None,
             "error": None, "error_code": None, "npus": [], "chips": []}
    if not path:
        return state
    rc, out, err = run([path, "info"])
    dcmi = parse_npu_smi_error(f"{out}\n{err}")
    if dcmi:
        state["error"] = dcmi["line"]
        state["error_code"] = dcmi["code"]
        return state
    if rc != 0:
        state["error"] = f"npu-smi info failed (rc={rc}): {last_line(err, out) or 'no output'}"
        return state
    try:
        parsed = parse_npu_smi_info(out)
    except ValueError as exc:
        state["error"] = f"cannot parse npu-smi info output: {exc}"
        return state
    state.update(available=True, version=parsed["npu_smi_version"], driver_version=parsed["driver_version"],
                 npus=parsed["npus"], chips=parsed["chips"])
    return state


def query_spod_info(run, path, chips):
    """``npu-smi info -t spod-info -i <npu_id> -c <chip_id>`` for every chip of ``chips`` (Atlas A3):
    (``[{npu_id, chip_id, super_device_id, super_pod_id, super_pod_size, server_index}]``, error).
    The first chip that cannot be read ends the query with an error naming the command."""
    out = []
    for chip in chips:
        cmd = [path, "info", "-t", "spod-info", "-i", str(chip.get("npu_id")), "-c", str(chip.get("chip_id") or 0)]
        rc, stdout, stderr = run(cmd)
        try:
            if rc != 0:
                raise NpuSmiFormatError(last_line(stderr, stdout) or "no output")
            info = parse_npu_smi_spod_info(stdout)
        except NpuSmiFormatError as exc:
            return out, f"{' '.join(cmd[1:])} (rc={rc}): {exc}"
        out.append(dict(info, npu_id=chip.get("npu_id"), chip_id=chip.get("chip_id") or 0))
    return out, None


def query_firmware(run, tool):
    """(components, error) from upgrade-tool at ``tool``; ([], None) when ``tool`` is None."""
    if not tool:
        return [], None
    rc, out, err = run([tool] + UPGRADE_TOOL_QUERY)
    components = parse_upgrade_tool_versions(out)
    if components:
        return components, None
    dcmi = parse_npu_smi_error(f"{out}\n{err}")
    if dcmi:
        return [], dcmi["line"]
    return [], f"upgrade-tool reported no component version (rc={rc}): {last_line(err, out) or 'no output'}"


def driver_reboot_reason(installed_version, smi):
    """Why the installed driver is not the running one (a sentence), or None."""
    if not installed_version:
        return None
    error = smi.get("error") or ""
    if smi.get("error_code") == -8005 or "dcmi module initialize failed" in error.lower():
        return (f"driver {installed_version} is installed but npu-smi cannot initialise ({error}): "
                "the driver is not loaded; reboot to load it")
    running = smi.get("driver_version")
    if running and not versions_equal(installed_version, running):
        return (f"installed driver {installed_version} differs from the running driver {running}; "
                "reboot to load it")
    return None


def firmware_reboot_reason(installed_version, components):
    """Why the installed firmware does not run (a sentence), or None (also when nothing was read)."""
    if not installed_version or not components:
        return None
    status = firmware_status(components, installed_version)
    if not status["stale_devices"]:
        return None
    running = []
    for dev in status["stale_devices"]:
        if status["devices"][dev] not in running:
            running.append(status["devices"][dev])
    devices = ",".join(str(d) for d in status["stale_devices"])
    return (f"installed firmware {installed_version} is not running on device(s) {devices} "
            f"(running {', '.join(running)}); reboot to activate it")
