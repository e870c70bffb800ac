"""SIMULATION ONLY - not Huawei software. Stand-in for ``upgrade-tool`` (firmware query only).

``upgrade-tool --device_index <-1|N> --component <-1|N> --version`` prints, per device,
``Get component version(<running firmware>) succeed for deviceId(N), componentType(C).``
The version is the firmware *running* on the NPUs: an installed but not yet activated firmware
package shows up only after ``ascend-sim boot`` (a reboot). Flashing is not simulated here; the
firmware package installer does it.
"""

from .devices import open_dcmi

USAGE = "Usage: upgrade-tool --device_index <-1|id> --component <-1|type> --version"


def _int_arg(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def main(argv: list[str]) -> int:
    opts: dict[str, str] = {}
    flags: set[str] = set()
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("--device_index", "--component") and i + 1 < len(argv):
            opts[arg] = argv[i + 1]
            i += 2
        elif arg == "--version":
            flags.add(arg)
            i += 1
        else:
            print(f"Invalid parameter: {arg}")
            print(USAGE)
            return 1
    device = _int_arg(opts.get("--device_index", ""))
    component = _int_arg(opts.get("--component", ""))
    if "--version" not in flags or device is None or component is None or device < -1 or component < -1:
        print(USAGE)
        return 1
    opened = open_dcmi(device)
    if opened is None:
        return 1
    hw, st = opened
    devices = range(hw["npu_count"]) if device == -1 else [device]
    ctype = 0 if component == -1 else component
    version = st["running"]["firmware"]
    for dev in devices:
        print(f"Get component version({version}) succeed for deviceId({dev}), componentType({ctype}).")
    return 0
