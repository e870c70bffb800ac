#!/usr/bin/env python3
"""SIMULATION ONLY - stages the payload of one simulated Ascend .run package (used by build.sh).

  stage.py --kind driver|firmware|toolkit|kernels|docker-runtime --version V --arch A
           [--firmware-version F] [--cann-driver-range R] --out STAGE_DIR

CANN packages (toolkit, kernels) carry a version.info at the archive root like the real ones:
``Version=`` (kernels: a build number), ``version_dir=<version>`` and ``required_package_*`` lines
(R, default ">=23.0", is the NPU driver range the package states).

Writes STAGE_DIR (install.sh, ascend_install.py, package.info, the ascend_sim library and, for
the driver, version.info and the tool stand-ins) and prints the package's vendor file name.
"""

import argparse
import json
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NPU = os.path.join(os.path.dirname(HERE), "npu")

TITLES = {
    "driver": "Ascend-hdk-910b-npu-driver",
    "firmware": "Ascend-hdk-910b-npu-firmware",
    "toolkit": "Ascend-cann-toolkit",
    "kernels": "Ascend-cann-kernels-910b",
    "docker-runtime": "Ascend-docker-runtime",
}
# Values of real releases where known; other versions get derived stand-in values.
DRIVER_META = {
    "24.1.rc1": ("7.35.19", "V100R001C15SPC006B220"),
    "23.0.0": ("7.35.13", "V100R001C13SPC001B220"),
}
DRIVER_COMPATIBLE = "[V100R001C30],[V100R001C13],[V100R001C15],[V100R001C17]"
TOOLKIT_INNER = {"8.0.0": "V100R001C20SPC001B251", "8.0.RC3": "V100R001C19SPC001B220"}
VERSION_RE = re.compile(r"^[0-9][0-9A-Za-z.]*$")


def kernels_has_arch(version: str) -> bool:
    # Up to 8.0.RCx the kernels package is arch-independent (..._linux.run); from 8.0.0 it names
    # the arch (..._linux-<arch>.run). Consumers must accept both.
    numbers = [int(n) for n in re.findall(r"\d+", version)[:2]] + [0, 0]
    return (numbers[0], numbers[1]) > (8, 0) or (numbers[0], numbers[1]) == (8, 0) and "RC" not in version.upper()


def file_name(kind: str, version: str, arch: str) -> str:
    title = TITLES[kind]
    if kind == "firmware":
        return f"{title}_{version}.run"
    if kind == "kernels" and not kernels_has_arch(version):
        return f"{title}_{version}_linux.run"
    return f"{title}_{version}_linux-{arch}.run"


def cann_build_number(version: str) -> str:
    """A stand-in build number for a CANN version (real kernels record e.g. Version=8.2.0.0.201)."""
    numbers = [int(n) for n in re.findall(r"\d+", version)][:3]
    numbers += [0] * (3 - len(numbers))
    return ".".join(str(n) for n in numbers) + ".0.201"


def cann_version_info(kind: str, version: str, driver_range: str) -> str:
    build = cann_build_number(version) if kind == "kernels" else version
    lines = [f"Version={build}", f"version_dir={version}", "timestamp=20260101_000000000"]
    if kind == "kernels":
        lines += [f"ops_version={version}", f"adk_version={version}",
                  f'required_package_toolkit_version="{version}"']
    lines.append(f'required_package_driver_version="{driver_range}"')
    return "\n".join(lines) + "\n"


def driver_version_info(version: str, firmware_version: str) -> str:
    hal, inner = DRIVER_META.get(version, ("7.35.19", f"V100R001C{sum(map(ord, version)) % 90 + 10}SPC001B220"))
    fw = firmware_version.split(".")
    fw_max = f"{fw[0]}.{fw[1]}.99" if len(fw) >= 2 else "7.9.99"
    return (
        f"Version={version}\n"
        f"ascendhal_version={hal}\n"
        f"Innerversion={inner}\n"
        f"compatible_version={DRIVER_COMPATIBLE}\n"
        f"compatible_version_fw=[7.0.0,{fw_max}]\n"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kind", required=True, choices=sorted(TITLES))
    p.add_argument("--version", required=True)
    p.add_argument("--arch", required=True, choices=("x86_64", "aarch64"))
    p.add_argument("--firmware-version", default="7.5.0.2.220")
    p.add_argument("--cann-driver-range", default=">=23.0")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    for v in (a.version, a.firmware_version):
        if not VERSION_RE.match(v):
            p.error(f"bad version {v!r}")
    if os.path.exists(a.out):
        shutil.rmtree(a.out)
    os.makedirs(a.out)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(os.path.join(NPU, "ascend_sim"), os.path.join(a.out, "ascend_sim"), ignore=ignore)
    for f in ("install.sh", "ascend_install.py"):
        shutil.copy2(os.path.join(HERE, "payload", f), os.path.join(a.out, f))
    os.chmod(os.path.join(a.out, "install.sh"), 0o755)
    if a.kind == "docker-runtime":
        wrapper = "ascend_docker_runtime.py"
        shutil.copy2(os.path.join(HERE, "payload", wrapper), os.path.join(a.out, wrapper))
    arch = a.arch
    if a.kind == "firmware" or (a.kind == "kernels" and not kernels_has_arch(a.version)):
        arch = None
    pkg = {
        "kind": a.kind,
        "title": TITLES[a.kind],
        "version": a.version,
        "arch": arch,
        "file_name": file_name(a.kind, a.version, a.arch),
        "simulation": True,
    }
    if a.kind == "toolkit":
        pkg["innerversion"] = TOOLKIT_INNER.get(a.version, "V100R001C20SPC001B220")
    if a.kind in ("toolkit", "kernels"):
        pkg["required_driver"] = a.cann_driver_range
        with open(os.path.join(a.out, "version.info"), "w", encoding="utf-8") as f:
            f.write(cann_version_info(a.kind, a.version, a.cann_driver_range))
    if a.kind == "driver":
        drv = os.path.join(a.out, "driver")
        os.makedirs(os.path.join(drv, "tools"))
        with open(os.path.join(drv, "version.info"), "w", encoding="utf-8") as f:
            f.write(driver_version_info(a.version, a.firmware_version))
        for tool in ("hccn_tool", "upgrade-tool"):
            shutil.copy2(os.path.join(NPU, tool), os.path.join(drv, "tools", tool))
        shutil.copy2(os.path.join(NPU, "npu-smi"), os.path.join(a.out, "npu-smi"))
    with open(os.path.join(a.out, "package.info"), "w", encoding="utf-8") as f:
        json.dump(pkg, f, indent=2, sort_keys=True)
        f.write("\n")
    print(pkg["file_name"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
