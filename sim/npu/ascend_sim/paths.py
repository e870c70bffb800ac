"""SIMULATION ONLY - not Huawei software. Every absolute path of the simulator goes through here.

``host_path("/etc/hccn.conf")`` prefixes ``$ASCEND_SIM_ROOT`` (default empty), so the stand-ins and
the installers can run on a development host inside a temporary directory during unit tests.
Paths *recorded* in files (version.info, set_env.sh, daemon.json...) stay the real, unprefixed ones.
"""

import os

ROOT_ENV = "ASCEND_SIM_ROOT"

# Stand-in only (see docs/sim-contract.md).
HARDWARE_JSON = "/etc/ascend-sim/hardware.json"
STATE_JSON = "/var/lib/ascend-sim/state.json"
STATE_LOCK = "/var/lib/ascend-sim/state.lock"
HCCN_LOCK = "/var/lib/ascend-sim/hccn_tool.lock"
EVENTS_LOG = "/var/log/ascend-sim/events.log"
BOOT_ID_FILE = "/run/ascend-sim/boot_id"
KERNEL_BOOT_ID = "/proc/sys/kernel/random/boot_id"

# Real vendor paths.
INSTALL_INFO = "/etc/ascend_install.info"
INSTALL_LOG = "/var/log/ascend_seclog/ascend_install.log"
HCCN_CONF = "/etc/hccn.conf"
DEFAULT_INSTALL_PATH = "/usr/local/Ascend"
NPU_SMI = "/usr/local/bin/npu-smi"
DCMI_DIR = "/usr/local/dcmi"


def root() -> str:
    """The simulation root ("" on a simulated node, a temporary directory in unit tests)."""
    return os.environ.get(ROOT_ENV, "").rstrip("/")


def under_sim_root() -> bool:
    return root() != ""


def host_path(path: str) -> str:
    """Where the real absolute ``path`` lives for this process: ``$ASCEND_SIM_ROOT`` + path."""
    if not path.startswith("/"):
        raise ValueError(f"not an absolute path: {path!r}")
    return root() + path


def ensure_parent(path: str) -> None:
    """Create the parent directory of an already prefixed path."""
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
