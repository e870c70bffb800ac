"""SIMULATION ONLY - not Huawei software. Stand-in for ``upgrade-tool`` (firmware query only).

``upgrade-tool --device_index <-1|N> --component <-1|N> --version`` prints its output wrapped
in ``{`` ... ``}``: per device and component a line
``Get component version(<version>) succeed for deviceId(N), componentType(C).`` followed by a
JSON-ish line with unquoted values ``{"device_id":N, "component":nve, "version":1.83.10.1.248}``.
Each device has several components: ``nve`` carries its own numbering, the main ones (``xloader``,
``m3fw``, ``uefi``) report the firmware package version *running* on the NPUs: an installed but
not yet activated firmware package shows up only after ``ascend-sim boot`` (a reboot). Flashing
is not simulated here; the firmware package installer does it.
"""

from .devices import open_dcmi

# (component type, name); None = the running firmware package version
COMPONENTS = ((0, "nve", "1.83.10.1.248"), (3, "xloader", None), (8, "m3fw", None), (9, "uefi", None))

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
    comps = [c for c in COMPONENTS if component in (-1, c[0])]
    if not comps:
        print(f"Get component version failed for componentType({component}).")
        return 1
    print("{")
    for dev in devices:
        for ctype, name, own in comps:
            version = own or st["running"]["firmware"]
            print(f"Get component version({version}) succeed for deviceId({dev}), componentType({ctype}).")
            print(f'\t{{"device_id":{dev}, "component":{name}, "version":{version}}}')
    print("}")
    return 0
