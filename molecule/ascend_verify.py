"""Shared helpers for the testinfra verifiers of every molecule scenario."""

from pathlib import Path

from ansible_collections.ascendops.cluster.plugins.module_utils import ascend_formats, npu_smi

# The simulated package versions are defined once, in sim/versions.env.
_VERSIONS = ascend_formats.parse_key_value((Path(__file__).resolve().parents[1] / "sim" / "versions.env").read_text())
CURRENT = {k: _VERSIONS[f"SIM_CURRENT_{k.upper()}"] for k in ("driver", "firmware", "cann", "runtime")}
PREVIOUS = {k: _VERSIONS[f"SIM_PREVIOUS_{k.upper()}"] for k in ("driver", "firmware", "cann", "runtime")}
NEXT_CANN, NEWDRIVER_CANN = _VERSIONS["SIM_NEXT_CANN"], _VERSIONS["SIM_NEWDRIVER_CANN"]
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
