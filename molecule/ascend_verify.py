"""Shared helpers for the testinfra verifiers of every molecule scenario."""

from pathlib import Path

import yaml
from ansible_collections.ascendops.cluster.plugins.module_utils import ascend_formats, npu_smi

_REPO = Path(__file__).resolve().parents[1]


def _release_versions(name):
    """{driver, firmware, cann, runtime} of a simulated release (releases/sim.yml, releases/sim-previous.yml)."""
    host = yaml.safe_load((_REPO / "releases" / f"{name}.yml").read_text())["host"]
    return {"driver": host["driver"], "firmware": host["firmware"], "cann": host["cann_toolkit"],
            "runtime": host["docker_runtime"]}


# The simulated package versions: the simulated releases, and the cann scenario's CANN-only sets.
CURRENT = _release_versions("sim")
PREVIOUS = _release_versions("sim-previous")
_CANN_SETS = yaml.safe_load((_REPO / "sim" / "packages" / "cann-sets.yml").read_text())
NEXT_CANN, NEWDRIVER_CANN = _CANN_SETS["next"]["cann"], _CANN_SETS["newdriver"]["cann"]
DEVICE_NODES = ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]


def key_values(host, path):
    """A vendor key=value file on the node, parsed by the collection's own parser."""
    f = host.file(path)
    assert f.exists, f"{path} is missing"
    return ascend_formats.parse_key_value(f.content_string)


def events(host):
    """The simulator's event log (SIMULATION ONLY): one action a line, timestamp first."""
    f = host.file("/var/log/ascend-sim/events.log")
    if not f.exists:
        return []
    return [line.split(" ", 1)[1] for line in f.content_string.splitlines() if " " in line]


def installs(host):
    """Install events in order, as (component, version, mode) tuples."""
    out = []
    for e in events(host):
        words = e.split()
        if words[0] == "install" and len(words) >= 4:
            out.append((words[1], words[2], words[3].split("=", 1)[1]))
    return out


def npu_table(host):
    """`npu-smi info` on the node: (running driver version, NPUs parsed by column headers)."""
    cmd = host.run("npu-smi info")
    assert cmd.rc == 0, cmd.stdout + cmd.stderr
    table = npu_smi.parse_npu_smi_info(cmd.stdout)
    return table["driver_version"], table["npus"]
