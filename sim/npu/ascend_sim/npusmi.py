"""SIMULATION ONLY - not Huawei software. Stand-in for ``npu-smi`` (Ascend 910B).

Supported: ``npu-smi info`` (the 910B table: two lines per NPU, then the process table),
``npu-smi info -l``, ``npu-smi info -t topo``, ``npu-smi info -t health|ecc -i <id> [-c 0]`` (MindCluster
FaultDiag's guide: ``Health Status``, ``Error Code``, ``Error Information``; the ECC counts),
``npu-smi info -t usages|common -i <id> [-c 0]`` (the 910B
``Key : Value`` layouts, values from the simulated load: an NPU whose ``/dev/davinciN`` a process holds is
busy) and ``npu-smi info -t spod-info -i <id> -c <chip>``
(the Atlas A3 super-pod identity: ``SDID``, ``Super Pod Size``, ``Super Pod ID``, ``Server Index``;
the values come from hardware.json ``super_pod_id`` / ``server_index``, SDID = server index x 65536 +
NPU id x 2 + chip: SIMULATION ONLY, assumed numbering). The header shows the npu-smi (installed driver
package) version and ``Version:`` the *running* driver version. Before the first boot after a
fresh driver install (no ``/dev/davinci_manager``) every query prints
``dcmi module initialize failed. ret is -8005`` and exits 1, like the real tool.
"""

import os
import re
import sys

from . import hardware, installinfo, paths
from .devices import open_dcmi

BORDER_TOP = "+" + "-" * 96 + "+"
BORDER_COLS = "+" + "-" * 27 + "+" + "-" * 15 + "+" + "-" * 52 + "+"
BORDER_ROWS = "+" + "=" * 27 + "+" + "=" * 15 + "+" + "=" * 52 + "+"
HEADER_1 = "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|"
HEADER_2 = "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"
_DAVINCI_PATH = re.compile(r"/dev/davinci(\d+)$")
PROC_HEADER = "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |"

USAGE = """Usage: npu-smi info [-l | -t topo | -t usages|common|health|ecc -i <id> [-c <chip_id>]
                     | -t spod-info -i <id> -c <chip_id>]
  info            Show the NPU summary table.
  info -l         Show the NPU list.
  info -t topo    Show the topology between NPUs.
  info -t usages -i <id>    Show the usage rates of one NPU.
  info -t common -i <id>    Show the common information (usage, frequency, temperature, power) of one NPU.
  info -t health -i <id>    Show the health of one NPU (status, error code).
  info -t ecc -i <id>       Show the ECC error counts and isolated pages of one NPU.
  info -t spod-info -i <id> -c <chip_id>    Show the super pod information of one chip.
(SIMULATION stand-in: other npu-smi commands are not simulated.)"""


def _usage_pair(used, total) -> str:
    return f"{str(used):<5}/ {total}"


def _telemetry(npu: int) -> tuple[str, int, int]:
    power = 88.4 + (npu * 37 % 23) / 10
    temp = 46 + npu * 3 % 7
    hbm_used = 4175 + npu * 13 % 41
    return f"{power:.1f}", temp, hbm_used


# The simulated load of a busy NPU (one that a process holds): SIMULATION ONLY, assumed figures.
BUSY_AICORE_PCT = 87
BUSY_EXTRA_POWER_W = 210.0
BUSY_EXTRA_TEMP_C = 17
# AI cores per model: 910B1 prints 25 (gpustack issue 2135, a 910B1's -t common); the others assumed.
AICORE_COUNT = {"910B1": 25, "910B2": 24, "910B3": 20, "910B4": 20}
AICORE_FREQ_MHZ = 1800
AICORE_IDLE_FREQ_MHZ = 800


def load(hw: dict, npu: int, holders: dict[int, list[tuple[int, str]]]) -> dict:
    """What the NPU reports now: idle telemetry, plus the assumed load of each process holding it."""
    power, temp, hbm_used = _telemetry(npu)
    held = len(holders.get(npu, []))
    busy = held > 0
    return {
        "aicore_pct": BUSY_AICORE_PCT if busy else 0,
        "hbm_used_mb": min(hw["hbm_mb"], hbm_used + held * PROCESS_MEMORY_MB),
        "power_w": f"{float(power) + (BUSY_EXTRA_POWER_W if busy else 0):.1f}",
        "temp_c": temp + (BUSY_EXTRA_TEMP_C if busy else 0),
        "busy": busy,
    }


def _kv(key: str, value) -> str:
    return f"\t{key:<31}: {value}"


def format_usages(hw: dict, npu: int, holders: dict) -> str:
    """``npu-smi info -t usages -i N`` in the 910B layout: head, values, then ``Chip ID`` closing the chip."""
    cur = load(hw, npu, holders)
    hbm_pct = round(cur["hbm_used_mb"] * 100 / hw["hbm_mb"])
    lines = [_kv("NPU ID", npu), _kv("Chip Count", 1), "",
             _kv("DDR Capacity(MB)", 0), _kv("DDR Usage Rate(%)", 0), _kv("DDR Hugepages Total(page)", 0),
             _kv("DDR Hugepages Usage Rate(%)", 0), _kv("HBM Capacity(MB)", hw["hbm_mb"]),
             _kv("HBM Usage Rate(%)", hbm_pct), _kv("Aicore Usage Rate(%)", cur["aicore_pct"]),
             _kv("Aivector Usage Rate(%)", cur["aicore_pct"] // 3), _kv("Aicpu Usage Rate(%)", 0),
             _kv("Ctrlcpu Usage Rate(%)", 3 if cur["busy"] else 0), _kv("DDR Bandwidth Usage Rate(%)", 0),
             _kv("HBM Bandwidth Usage Rate(%)", 41 if cur["busy"] else 0), _kv("Chip ID", 0)]
    return "\n".join(lines) + "\n"


def format_common(hw: dict, npu: int, holders: dict) -> str:
    """``npu-smi info -t common -i N`` in the 910B layout: ``Chip ID`` opens the chip, then the mcu block."""
    cur = load(hw, npu, holders)
    hbm_pct = round(cur["hbm_used_mb"] * 100 / hw["hbm_mb"])
    lines = [_kv("NPU ID", npu), _kv("Chip Count", 1), "",
             _kv("Chip ID", 0), _kv("Memory Usage Rate(%)", 0), _kv("HBM Usage Rate(%)", hbm_pct),
             _kv("Aicore Usage Rate(%)", cur["aicore_pct"]), _kv("Aicore Freq(MHZ)", AICORE_FREQ_MHZ),
             _kv("Aicore curFreq(MHZ)", AICORE_FREQ_MHZ if cur["busy"] else AICORE_IDLE_FREQ_MHZ),
             _kv("Aicore Count", AICORE_COUNT.get(hw["model"], 24)), _kv("Temperature(C)", cur["temp_c"]),
             _kv("NPU Real-time Power(W)", cur["power_w"]), "",
             _kv("Chip Name", "mcu"), _kv("Temperature(C)", cur["temp_c"] - 8)]
    return "\n".join(lines) + "\n"


def _device_query(argv: list[str]) -> tuple[str, int | None, str | None] | None:
    """``info -t usages|common|health|ecc -i <id> [-c <chip>]`` -> (type, id, error); None when not such a query."""
    if len(argv) < 3 or argv[1] != "-t" or argv[2] not in ("usages", "common", "health", "ecc"):
        return None
    rest = argv[3:]
    if len(rest) not in (2, 4) or rest[0] != "-i" or (len(rest) == 4 and rest[2] != "-c"):
        return argv[2], None, f"Error: the command needs -i <id>: npu-smi info -t {argv[2]} -i <id> [-c <chip_id>]"
    if not rest[1].isdigit() or (len(rest) == 4 and not rest[3].isdigit()):
        return argv[2], None, "Error: the id must be a non-negative integer."
    if len(rest) == 4 and rest[3] != "0":
        return argv[2], None, f"Error: the device id {rest[1]} or chip id {rest[3]} is invalid."
    return argv[2], int(rest[1]), None


def format_info(hw: dict, st: dict, tool_version: str) -> str:
    running = st["running"]["driver"] or ""
    lines = [
        BORDER_TOP,
        f"| npu-smi {tool_version:<24} Version: {running:<53}|",
        BORDER_COLS,
        HEADER_1,
        HEADER_2,
        BORDER_ROWS,
    ]
    holders = npu_processes(hw["npu_count"])
    for i in range(hw["npu_count"]):
        npu = st["npus"][str(i)]
        cur = load(hw, i, holders)
        lines.append(
            f"| {i:<6}{hw['model']:<20}| {npu['health']:<14}| {cur['power_w']:<12}{cur['temp_c']:<18}"
            f"{_usage_pair(0, 0):<21}|"
        )
        lines.append(
            f"| {0:<26}| {hardware.bus_id(i):<14}| {cur['aicore_pct']:<12}{_usage_pair(0, 0):<18}"
            f"{_usage_pair(cur['hbm_used_mb'], hw['hbm_mb']):<21}|"
        )
        lines.append(BORDER_ROWS)
    lines.append(BORDER_COLS)
    lines.append(PROC_HEADER)
    lines.append(BORDER_ROWS)
    for i in range(hw["npu_count"]):
        if not holders.get(i):
            lines.append(f"| {'No running processes found in NPU ' + str(i):<95}|")
        for pid, name in holders.get(i, []):
            lines.append(f"| {i:<8}{0:<18}| {pid:<14}| {name[:24]:<25}| {PROCESS_MEMORY_MB:<24}|")
        lines.append(BORDER_ROWS)
    return "\n".join(lines) + "\n"


# The HBM a listed process holds: SIMULATION ONLY, a fixed assumed figure (nothing is allocated).
PROCESS_MEMORY_MB = 3072


def npu_processes(npu_count: int) -> dict[int, list[tuple[int, str]]]:
    """Processes holding an NPU, as the driver knows them: here every process of the node with
    ``/dev/davinciN`` open (read from ``/proc/<pid>/fd``). {npu: [(pid, name)]}, pids ascending."""
    proc = paths.host_path("/proc")
    out: dict[int, list[tuple[int, str]]] = {}
    try:
        pids = sorted(int(p) for p in os.listdir(proc) if p.isdigit())
    except OSError:
        return out
    for pid in pids:
        fd_dir = os.path.join(proc, str(pid), "fd")
        try:
            targets = {os.readlink(os.path.join(fd_dir, fd)) for fd in os.listdir(fd_dir)}
            with open(os.path.join(proc, str(pid), "comm"), encoding="utf-8") as f:
                name = f.read().strip()
        except OSError:
            continue  # gone, or not ours to read
        for target in targets:
            m = _DAVINCI_PATH.search(target)
            if m and int(m.group(1)) < npu_count:
                out.setdefault(int(m.group(1)), []).append((pid, name))
    return out


def format_list(hw: dict) -> str:
    lines = [f"\t{'Total Count':<31}: {hw['npu_count']}", ""]
    for i in range(hw["npu_count"]):
        lines += [
            f"\t{'NPU ID':<31}: {i}",
            f"\t{'Product Name':<31}: IT21PDDA01",
            f"\t{'Serial Number':<31}: 102{hw['model'][-2:]}SIM{i:07d}",
            f"\t{'Chip Count':<31}: 1",
            "",
        ]
    return "\n".join(lines) + "\n"


def cpu_affinity(npu: int, npu_count: int) -> str:
    # Kunpeng 920 (192 cores, 4 NUMA nodes of 48): NPUs spread evenly over the NUMA nodes.
    per_node = max(1, (npu_count + 3) // 4)
    node = min(3, npu // per_node)
    start = node * 48 + 24 * (npu % per_node % 2)
    return f"{start}-{start + 23}"


def format_topo(hw: dict) -> str:
    n = hw["npu_count"]
    width = 11
    lines = [" " * width + "".join(f"{'NPU' + str(j):<{width}}" for j in range(n)) + "CPU Affinity"]
    for i in range(n):
        cells = "".join(f"{('X' if i == j else 'HCCS'):<{width}}" for j in range(n))
        lines.append(f"{'NPU' + str(i):<{width}}{cells}{cpu_affinity(i, n)}")
    lines += [
        "",
        "Legend:",
        "",
        "  X    = Self",
        "  SYS  = Path traversing PCIe and NUMA nodes. Nodes are connected through SMP, such as QPI, UPI.",
        "  PHB  = Path traversing PCIe and the PCIe host bridge of a CPU.",
        "  PIX  = Path traversing a single PCIe switch",
        "  PXB  = Path traversing multipul PCIe switches",
        "  HCCS = Connection traversing HCCS.",
        "  NA   = Unknown relationship.",
    ]
    return "\n".join(lines) + "\n"


# The NPU's health as MindCluster Ascend FaultDiag's user guide prints `npu-smi info -i 0 -c 0 -t health`
# ("Collecting Logs Before Training and Inference"); the error code of an unhealthy NPU is assumed.
ASSUMED_ERROR_CODE = "80E01801"


def format_health(st: dict, npu: int) -> str:
    health = st["npus"][str(npu)]["health"]
    code, info = ("NA", "NA") if health == "OK" else (ASSUMED_ERROR_CODE, "node type=SOC, sensor type=Temperature")
    return (f"        Health Status                  : {health}\n"
            f"        Error Code                     : {code}\n"
            f"        Error Information              : {info}\n")


# `npu-smi info -i 0 -t ecc` as the same guide prints it; the counts are those injected with
# `ascend-sim fault ecc <npu> <double-bit errors> [isolated pages]` (0 on a healthy NPU).
def format_ecc(st: dict, npu: int) -> str:
    ecc = st["npus"][str(npu)].get("ecc") or {}
    rows = [("NPU ID", npu), ("Chip Count", 1), None,
            ("DDR Single Bit Error Count", 0), ("DDR Double Bit Error Count", 0),
            ("DDR Single Bit Aggregate Total Err Cnt", 0), ("DDR Double Bit Aggregate Total Err Cnt", 0),
            ("DDR Single Bit Isolated Pages Count", 0), ("DDR Double Bit Isolated Pages Count", 0),
            ("HBM Single Bit Error Count", 0), ("HBM Double Bit Error Count", ecc.get("double_bit", 0)),
            ("HBM Single Bit Aggregate Total Err Cnt", 0),
            ("HBM Double Bit Aggregate Total Err Cnt", ecc.get("double_bit", 0)),
            ("HBM Single Bit Isolated Pages Count", 0),
            ("HBM Double Bit Isolated Pages Count", ecc.get("isolated_pages", 0)), ("Chip ID", 0)]
    return "".join("\n" if row is None else f"        {row[0]:<40} : {row[1]}\n" for row in rows)


def format_spod_info(hw: dict, npu: int, chip: int) -> str:
    sdid = int(hw.get("server_index", 0)) * 65536 + npu * 2 + chip
    return (f"SDID                           : {sdid}\n"
            f"Super Pod Size                 : {hw.get('super_pod_size', 48)}\n"
            f"Super Pod ID                   : {hw.get('super_pod_id', 0)}\n"
            f"Server Index                   : {hw.get('server_index', 0)}\n")


def _spod_args(argv: list[str]) -> tuple[int, int] | None:
    if len(argv) == 7 and argv[1:3] == ["-t", "spod-info"] and argv[3] == "-i" and argv[5] == "-c" \
            and argv[4].isdigit() and argv[6].isdigit():
        return int(argv[4]), int(argv[6])
    return None


def main(argv: list[str]) -> int:
    if argv in ([], ["-h"], ["--help"]):
        print(USAGE)
        return 0 if argv else 1
    spod = _spod_args(argv) if argv and argv[0] == "info" else None
    if spod is not None:
        opened = open_dcmi()
        if opened is None:
            return 1
        hw, _st = opened
        npu, chip = spod
        if npu >= hw["npu_count"] or chip != 0:
            print(f"Error: the device id {npu} or chip id {chip} is invalid.")
            return 1
        sys.stdout.write(format_spod_info(hw, npu, chip))
        return 0
    query = _device_query(argv) if argv and argv[0] == "info" else None
    if query is not None:
        kind, npu, error = query
        if error:
            print(error)
            return 1
        opened = open_dcmi(npu)
        if opened is None:
            return 1
        hw, st = opened
        if kind in ("health", "ecc"):
            sys.stdout.write(format_health(st, npu) if kind == "health" else format_ecc(st, npu))
            return 0
        holders = npu_processes(hw["npu_count"])
        sys.stdout.write((format_usages if kind == "usages" else format_common)(hw, npu, holders))
        return 0
    if argv[0] != "info" or argv[1:] not in ([], ["-l"], ["-t", "topo"]):
        print(f"Error: unsupported command: npu-smi {' '.join(argv)}")
        print(USAGE)
        return 1
    opened = open_dcmi()
    if opened is None:
        return 1
    hw, st = opened
    if argv[1:] == ["-l"]:
        sys.stdout.write(format_list(hw))
    elif argv[1:] == ["-t", "topo"]:
        sys.stdout.write(format_topo(hw))
    else:
        tool_version = installinfo.installed_driver_version() or st["running"]["driver"]
        sys.stdout.write(format_info(hw, st, tool_version))
    return 0
