#!/usr/bin/env python3
"""SIMULATION ONLY - not Huawei software. The install logic of the simulated Ascend .run packages.

Embedded in every package built by ``sim/packages/build.sh`` next to ``package.info`` and the
``ascend_sim`` library; ``install.sh`` runs it with the flags makeself passed through. It follows
the installer rules of ``docs/sim-contract.md`` (flags, refusals, messages, exit codes, files
written) and honours ``$ASCEND_SIM_ROOT`` like the rest of the simulator.

Also installed next to the driver tools and the firmware scripts so that
``<path>/driver/script/uninstall.sh`` and ``<path>/firmware/script/uninstall.sh`` can run it with
``--sim-uninstall=driver|firmware``.
"""

import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

from ascend_sim import accounts, devices, events, hardware, installinfo, paths, state  # noqa: E402

DEFAULT_USER = "HwHiAiUser"
DKMS_FAILED = "Dkms install failed, details in : var/log/ascend_seclog/ascend_install.log."
DKMS_PROMPT = "Do you want to try build driver after input kernel absolute path? [y/n]"
DRIVER_OK = "Driver package installed successfully! Reboot needed for installation/upgrade to take effect!"
DRIVER_NOW = "Driver package installed successfully! The new version takes effect immediately."
FIRMWARE_CHIPS = "The firmware of [{chips}] chips are successfully upgraded."
FIRMWARE_OK = (
    "Firmware package installed successfully! Reboot now or after driver installation "
    "for the installation/upgrade to take effect."
)

KINDS = {
    "driver": {"title": "Ascend-hdk-910b-npu-driver", "tag": "Driver", "actions": ("full", "upgrade"),
               "root": True},
    "firmware": {"title": "Ascend-hdk-910b-npu-firmware", "tag": "Firmware", "actions": ("full", "upgrade"),
                 "root": True},
    "toolkit": {"title": "Ascend-cann-toolkit", "tag": "Toolkit", "actions": ("install", "upgrade"),
                "root": False},
    "kernels": {"title": "Ascend-cann-kernels-910b", "tag": "Kernels", "actions": ("install", "upgrade"),
                "root": False},
    "docker-runtime": {"title": "Ascend-docker-runtime", "tag": "Docker-Runtime",
                       "actions": ("install", "upgrade", "uninstall"), "root": True},
}
RUNTIME_SCENES = ("docker", "containerd", "isula")
# the firmware installer takes only --full / --upgrade (and the path and makeself options); the
# docker runtime's help has no user flags either
NO_USER_FLAGS = ("firmware", "docker-runtime")
OPERATION_LOG = "/var/log/ascend_seclog/operation.log"
# The v6 runtime's default mount list (mind-cluster ascend-docker-runtime build/base.list)
BASE_LIST = """\
/usr/local/Ascend/driver/lib64
/usr/local/Ascend/driver/include
/usr/local/dcmi
/usr/local/bin/npu-smi
/var/queue_schedule
"""
# The runtime's options by version (its run_main.sh help: docs/sim-contract.md cites each): 5.x takes no
# --install-scene; 6.0.RC3 added it and --config-file-path; 26.1.0 dropped --ce and asks for the EULA first.
# Any other argument: "[ERROR] failed, Unsupported parameters: <arg>" (5.x; lower case from 6.0.RC3), the help, rc 1.
RUNTIME_OPTIONS = ("--install", "--upgrade", "--uninstall", "--install-path", "--quiet", "--install-type", "--version")
RUNTIME_SCENE_FROM = "6.0.rc3"
RUNTIME_EULA_FROM = "26.1.0"
EULA_QUESTION = "Do you accept the EULA to install Ascend-docker-runtime?[Y/N]"
# The vendor's installer asks again for ever on end of input; the stand-in gives up after this many (SIMULATION
# ONLY: a test that starts it unanswered ends instead of hanging) and says so.
EULA_MAX_ASKS = 50


def runtime_options(version: str) -> tuple:
    opts = RUNTIME_OPTIONS
    if _vkey(version) >= _vkey(RUNTIME_SCENE_FROM):
        opts += ("--install-scene", "--config-file-path")
    if _vkey(version) < _vkey(RUNTIME_EULA_FROM):
        opts += ("--ce",)
    return opts


def runtime_unsupported(version: str, arg: str) -> str:
    word = "Unsupported" if _vkey(version) < _vkey(RUNTIME_SCENE_FROM) else "unsupported"
    return f" failed, {word} parameters: {arg}"


def ask_eula() -> bool:
    """The 26.1.0 installer's question, answered on stdin (Y: accepted, N: declined); asked again otherwise."""
    print(EULA_QUESTION, flush=True)
    for _ in range(EULA_MAX_ASKS):
        line = sys.stdin.readline()
        answer = line.strip()
        if answer in ("Y", "y"):
            print("[INFO] user accepted EULA", flush=True)
            return True
        if answer in ("N", "n"):
            print("[INFO] install cancelled, user declined EULA", flush=True)
            return False
        print(EULA_QUESTION, flush=True)
    raise Failure(f" SIMULATION: no answer after {EULA_MAX_ASKS} questions (the vendor's installer asks for ever)")


class UsageError(Exception):
    """Bad command line: [ERROR] line, then the usage."""


class Failure(Exception):
    """Refused or failed: one [ERROR] line, exit 1."""


class Run:
    """One installer run: options, console and install-log output."""

    def __init__(self, kind: str, version: str, quiet: bool = False):
        self.kind = kind
        self.meta = KINDS[kind]
        self.version = version
        self.quiet = quiet
        self.log_lines: list[str] = []

    def _stamp(self, level: str, msg: str) -> str:
        now = time.strftime("%Y-%m-%d %H:%M:%S")
        return f"[{self.meta['tag']}] [{now}] [{level}]{msg}"

    def info(self, msg: str) -> None:
        line = self._stamp("INFO", msg)
        self.log_lines.append(line)
        if not self.quiet:
            print(line, flush=True)

    def say(self, msg: str) -> None:
        """A result line: stamped like the rest without --quiet, plain with it (always printed)."""
        line = self._stamp("INFO", msg)
        self.log_lines.append(line)
        print(msg if self.quiet else line, flush=True)

    def begin(self, what: str) -> None:
        """The opening lines of a non-quiet vendor run."""
        self.info(f"Start time: {time.strftime('%Y-%m-%d %H:%M:%S')}")
        self.info(f"LogFile: {paths.INSTALL_LOG}")
        self.info(f"OperationLogFile: {OPERATION_LOG}")
        self.info(what)

    def progress(self, steps=(10, 30, 60, 100)) -> None:
        for pct in steps:
            self.info(f"upgradePercentage:{pct}%")

    def detail(self, msg: str) -> None:
        """Only in the install log."""
        self.log_lines.append(self._stamp("INFO", msg))

    def error(self, msg: str) -> None:
        self.log_lines.append(self._stamp("ERROR", msg))
        print(f"[ERROR]{msg}", flush=True)

    def flush_log(self) -> None:
        path = paths.host_path(paths.INSTALL_LOG)
        paths.ensure_parent(path)
        with open(path, "a", encoding="utf-8") as f:
            for line in self.log_lines:
                f.write(line + "\n")
        self.log_lines = []


# ----------------------------------------------------------------------------- helpers

def usage(kind: str) -> str:
    meta = KINDS[kind]
    actions = " | ".join(f"--{a}" for a in meta["actions"])
    lines = [
        f"Usage: ./{meta['title']}_<version>_linux-<arch>.run [makeself options] {actions} [options]",
        "Options:",
        "  --install-path=<path>        install directory (default /usr/local/Ascend)",
    ]
    if kind not in NO_USER_FLAGS:
        lines += [
            "  --install-username=<user>    run user (with --install-usergroup; default HwHiAiUser)",
            "  --install-usergroup=<group>  run group (with --install-username; default HwHiAiUser)",
            "  --install-for-all            let all users use the installed software",
        ]
    lines.append("  --quiet                      no interaction, errors only")
    if kind == "docker-runtime":
        lines.append("  --install-scene=<docker|containerd|isula>  container engine (default docker)")
    if kind not in NO_USER_FLAGS:
        lines.append("  --upgrade cannot be combined with --install-username, --install-usergroup, --install-for-all")
    return "\n".join(lines)


def parse(argv: list[str], kind: str, version: str = "") -> dict:
    meta = KINDS[kind]
    opts = {"actions": [], "user": None, "group": None, "for_all": False, "path": None,
            "quiet": False, "scene": None}
    for arg in argv:
        name, eq, value = arg.partition("=")
        if kind == "docker-runtime" and name not in runtime_options(version):
            raise UsageError(runtime_unsupported(version, arg))
        if kind in NO_USER_FLAGS and name in ("--install-username", "--install-usergroup", "--install-for-all"):
            raise UsageError(f"Unsupported parameter: {arg}")
        if not eq and name.startswith("--") and name[2:] in meta["actions"]:
            opts["actions"].append(name[2:])
        elif eq and name == "--install-username":
            opts["user"] = value
        elif eq and name == "--install-usergroup":
            opts["group"] = value
        elif eq and name == "--install-path":
            opts["path"] = value
        elif eq and name == "--install-scene" and kind == "docker-runtime":
            opts["scene"] = value
        elif eq and name in ("--install-type", "--ce") and kind == "docker-runtime":
            raise Failure(f"{arg} is not supported by the simulator (Atlas 800T A2 and docker only).")
        elif not eq and name == "--install-for-all":
            opts["for_all"] = True
        elif not eq and name in ("--quiet", "--nox11"):
            opts["quiet"] = opts["quiet"] or name == "--quiet"
        else:
            raise UsageError(f"Unsupported parameter: {arg}")
    for key, flag in (("user", "--install-username"), ("group", "--install-usergroup"),
                      ("path", "--install-path"), ("scene", "--install-scene")):
        if opts[key] == "":
            raise UsageError(f"The value of {flag}= is empty")
    if not opts["actions"]:
        raise UsageError(
            "No operation specified. Use one of: " + ", ".join(f"--{a}" for a in meta["actions"]) + "."
        )
    return opts


def which(tool: str) -> str | None:
    return shutil.which(tool)


def write_text(real_path: str, text: str, mode: int = 0o644) -> None:
    path = paths.host_path(real_path)
    paths.ensure_parent(path)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def copy_lib(dest_real_dir: str) -> None:
    """Copy the simulator library and this installer to ``dest_real_dir`` (a real path)."""
    dest = paths.host_path(dest_real_dir)
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    os.makedirs(dest, mode=0o755)
    shutil.copytree(os.path.join(HERE, "ascend_sim"), os.path.join(dest, "ascend_sim"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(os.path.join(HERE, "ascend_install.py"), os.path.join(dest, "ascend_install.py"))
    for base, dirs, files in os.walk(dest):
        for d in dirs:
            os.chmod(os.path.join(base, d), 0o755)
        for f in files:
            os.chmod(os.path.join(base, f), 0o644)


def uninstall_script(kind: str, install_path: str, lib_rel: str) -> str:
    return f"""#!/bin/bash
# SIMULATION ONLY - ascendops stand-in for the vendor's {kind} uninstall.sh; not Huawei software.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
exec python3 -B "$here/{lib_rel}/ascend_install.py" --sim-uninstall={kind} --install-path={install_path} "$@"
"""


def check_user(run: Run, user: str, group: str) -> None:
    if accounts.user(user) is None:
        raise Failure(
            f"The user {user} does not exist. Create the user and group before installing "
            f"(default {DEFAULT_USER}), or pass --install-username=<user> --install-usergroup=<group>."
        )
    if accounts.group(group) is None:
        raise Failure(
            f"The group {group} does not exist. Create the user and group before installing "
            f"(default {DEFAULT_USER}), or pass --install-username=<user> --install-usergroup=<group>."
        )
    if not accounts.user_in_group(user, group):
        raise Failure(f"The user {user} does not belong to the group {group}.")
    run.detail(f"Install user: {user}, group: {group}")


def check_arch(pkg: dict) -> None:
    arch = pkg.get("arch")
    machine = os.uname().machine
    if arch and arch != machine:
        raise Failure(
            f"The architecture of the package ({arch}) does not match the system architecture ({machine})."
        )


# ----------------------------------------------------------------------------- driver

def driver_prerequisites(run: Run, opts: dict) -> None:
    missing = [tool for tool in ("lspci", "ifconfig") if which(tool) is None]
    if missing:
        raise Failure("The list of missing tools: " + "".join(f"{t}," for t in missing))
    kernel = os.uname().release
    build = f"/lib/modules/{kernel}/build"
    problems = []
    if which("dkms") is None:
        problems.append("dkms is not installed (apt-get install dkms)")
    if not os.path.isdir(paths.host_path(build)):
        problems.append(f"kernel headers not found: {build} (apt-get install linux-headers-{kernel})")
    if not problems:
        run.detail(f"dkms and kernel headers for {kernel} found")
        return
    for problem in problems:
        run.log_lines.append(run._stamp("ERROR", problem))
    if opts["quiet"]:
        raise Failure(DKMS_FAILED)
    print(DKMS_PROMPT, flush=True)
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise Failure(DKMS_FAILED)
    print("Please input the kernel absolute path:", flush=True)
    kpath = sys.stdin.readline().strip()
    if not kpath.startswith("/") or not os.path.isdir(paths.host_path(kpath)) or which("dkms") is None:
        run.log_lines.append(run._stamp("ERROR", f"cannot build the driver against {kpath!r}"))
        raise Failure(DKMS_FAILED)
    run.detail(f"building the driver against {kpath}")


def install_driver(run: Run, pkg: dict, opts: dict, mode: str, path: str) -> int:
    drv = f"{path}/driver"
    installed = installinfo.installed_driver_version(path)
    if mode == "full" and installed:
        raise Failure(
            f"The driver package (version {installed}) is already installed in {path}. "
            "Use --upgrade to upgrade it."
        )
    if mode == "upgrade" and not installed:
        raise Failure(f"The driver package is not installed in {path}. Use --full to install it.")
    driver_prerequisites(run, opts)
    run.begin(f"{'Upgrade' if mode == 'upgrade' else 'Installation'} of driver {pkg['version']} begins, "
              f"install path {path}")
    run.info("driver install type: DKMS")
    host_drv = paths.host_path(drv)
    if os.path.isdir(host_drv):
        shutil.rmtree(host_drv)
    shutil.copytree(os.path.join(HERE, "driver"), host_drv)
    os.chmod(host_drv, 0o755)
    for name in ("lib64", "include", "kernel"):
        os.makedirs(os.path.join(host_drv, name), mode=0o755, exist_ok=True)
    copy_lib(f"{drv}/tools/.ascend_sim")
    for tool in ("hccn_tool", "upgrade-tool"):
        os.chmod(os.path.join(host_drv, "tools", tool), 0o755)
    os.chmod(os.path.join(host_drv, "version.info"), 0o444)
    write_text(f"{drv}/script/uninstall.sh", uninstall_script("driver", path, "../tools/.ascend_sim"), 0o755)
    with open(os.path.join(HERE, "npu-smi"), encoding="utf-8") as f:
        npu_smi = f.read().replace("@ASCEND_SIM_LIBDIR@", f"{drv}/tools/.ascend_sim")
    write_text(paths.NPU_SMI, npu_smi, 0o755)
    write_text(f"{paths.DCMI_DIR}/dcmi_interface_api.h",
               "/* SIMULATION placeholder for the vendor's DCMI header (ascendops simulated cluster). */\n")
    info = installinfo.read_install_info()
    if mode == "full":
        updates = {
            "UserName": opts["run_user"],
            "UserGroup": opts["run_group"],
            "Driver_Install_Type": "full",
            "Driver_Install_Path_Param": path,
            "Driver_Install_For_All": "yes" if opts["for_all"] else "no",
        }
    else:
        updates = {
            "UserName": info.get("UserName", opts["run_user"]),
            "UserGroup": info.get("UserGroup", opts["run_group"]),
            "Driver_Install_Type": "upgrade",
            "Driver_Install_Path_Param": path,
            "Driver_Install_For_All": info.get("Driver_Install_For_All", "no"),
        }
    installinfo.update_install_info(updates)
    run.progress()
    if start_driver_now(mode, pkg["version"]):
        run.info(f"Driver {pkg['version']} loaded; the devices started")
        run.say(DRIVER_NOW)
        return 0
    state.mark_pending("driver")
    run.info(f"Driver {pkg['version']} files installed; the running driver changes at the next reboot")
    run.say(DRIVER_OK)
    return 0


def start_driver_now(mode: str, version: str) -> bool:
    """A fresh install on a node where no driver runs loads the driver and starts the devices at
    once (the vendor's "takes effect immediately"). An upgrade, or a fresh install while an
    uninstalled driver still runs, waits for a reboot ("Reboot needed ..."); so does every driver
    install on simulated hardware with ``"driver_starts_at_install": false`` (stand-in only)."""
    hw = hardware.load()
    if mode != "full" or not hw.get("driver_starts_at_install", True):
        return False
    with state.update() as st:
        if st["running"].get("driver"):
            return False
        st["running"]["driver"] = version
    devices.create(hw["npu_count"], installinfo.read_install_info())
    events.log_event(f"load driver={version}")
    return True


# ----------------------------------------------------------------------------- firmware

def install_firmware(run: Run, pkg: dict, opts: dict, mode: str, path: str) -> int:
    driver_path = installinfo.read_install_info().get("Driver_Install_Path_Param") or path
    if not installinfo.installed_driver_version(driver_path):
        raise Failure("The driver package is not installed. Install the driver package before the firmware package.")
    installed = installinfo.installed_firmware_version(path)
    if mode == "full" and installed:
        raise Failure(
            f"The firmware package (version {installed}) is already installed in {path}. "
            "Use --upgrade to upgrade it."
        )
    if mode == "upgrade" and not installed:
        raise Failure(f"The firmware package is not installed in {path}. Use --full to install it.")
    run.begin(f"{'Upgrade' if mode == 'upgrade' else 'Installation'} of firmware {pkg['version']} begins")
    fw = f"{path}/firmware"
    host_fw = paths.host_path(fw)
    if os.path.isdir(host_fw):
        shutil.rmtree(host_fw)
    os.makedirs(host_fw, mode=0o755)
    write_text(f"{fw}/version.info", f"Version={pkg['version']}\n", 0o444)
    copy_lib(f"{fw}/script/.ascend_sim")
    write_text(f"{fw}/script/uninstall.sh", uninstall_script("firmware", path, ".ascend_sim"), 0o755)
    installinfo.update_install_info({
        "Firmware_Install_Type": "upgrade" if mode == "upgrade" else "full",
        "Firmware_Install_Path_Param": path,
    })
    state.mark_pending("firmware")
    run.progress()
    run.info(f"Firmware {pkg['version']} written to the NPUs; active after the next reboot")
    run.say(FIRMWARE_CHIPS.format(chips=hardware.load()["npu_count"]))
    run.say(FIRMWARE_OK)
    return 2 if mode == "upgrade" else 0


# ----------------------------------------------------------------------------- CANN

def toolkit_version(path: str, arch: str | None) -> str | None:
    """The version of the toolkit ``latest`` points at (None: no toolkit)."""
    latest = paths.host_path(f"{path}/ascend-toolkit/latest")
    if not os.path.lexists(latest):
        return None
    return toolkit_dir_version(f"{path}/ascend-toolkit/latest", arch) or "unknown"


def toolkit_dir_version(real_dir: str, arch: str | None) -> str | None:
    candidates = [arch] if arch else []
    candidates += ["aarch64", "x86_64"]
    for a in candidates:
        info = installinfo.read_kv_file(f"{real_dir}/{a}-linux/ascend_toolkit_install.info")
        if info.get("version"):
            return info["version"]
    return None


def _vkey(version: str) -> tuple:
    """Order of the simulator's own version strings (numbers, rcN): zeros before a qualifier or the
    end do not count, rcN sorts before the release."""
    out: list = []
    for part in version.lower().replace("-", ".").split(".") + ["~end"]:
        if not part.isdigit():
            while out and out[-1] == (2, 0):
                out.pop()
        if part == "~end":
            out.append((1, 0))
        elif part.isdigit():
            out.append((2, int(part)))
        elif part.startswith("rc") and part[2:].isdigit():
            out.append((0, int(part[2:])))
        else:
            raise ValueError(version)
    return tuple(out)


def driver_in_range(driver: str, spec: str) -> bool:
    """Whether ``driver`` satisfies ``spec`` (">=24.1.rc1", ">=7.6, <=8.2"); unknown strings pass."""
    try:
        have = _vkey(driver)
        for bound in spec.strip('"').split(","):
            bound = bound.strip()
            op = next((o for o in (">=", "<=", ">", "<", "==") if bound.startswith(o)), "==")
            want = _vkey(bound[len(op):] if bound.startswith(op) else bound)
            if not {">=": have >= want, "<=": have <= want, ">": have > want, "<": have < want,
                    "==": have == want}[op]:
                return False
    except ValueError:
        return True
    return True


def check_driver(pkg: dict) -> None:
    """CANN refuses to install where an installed NPU driver is outside the range it requires."""
    spec = pkg.get("required_driver")
    driver = installinfo.installed_driver_version(
        installinfo.read_install_info().get("Driver_Install_Path_Param") or paths.DEFAULT_INSTALL_PATH)
    if not spec or not driver:
        # CANN installs without a driver (build hosts, containers); the range binds an installed one
        return
    if not driver_in_range(driver, spec):
        raise Failure(
            f"The installed NPU driver version {driver} does not match the version {pkg['title']} "
            f"{pkg['version']} requires ({spec}). Upgrade the driver first."
        )


def package_version_info() -> str:
    with open(os.path.join(HERE, "version.info"), encoding="utf-8") as f:
        return f.read()


SET_ENV = """\
# SIMULATION ONLY - ascendops stand-in for the CANN toolkit's set_env.sh; not Huawei software.
export ASCEND_TOOLKIT_HOME={tk}/latest
export LD_LIBRARY_PATH=${{ASCEND_TOOLKIT_HOME}}/lib64:${{ASCEND_TOOLKIT_HOME}}/lib64/plugin/opskernel:\
${{ASCEND_TOOLKIT_HOME}}/lib64/plugin/nnengine:\
${{ASCEND_TOOLKIT_HOME}}/opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/$(arch):$LD_LIBRARY_PATH
export LD_LIBRARY_PATH=${{ASCEND_TOOLKIT_HOME}}/tools/aml/lib64:${{ASCEND_TOOLKIT_HOME}}/tools/aml/lib64/plugin:\
$LD_LIBRARY_PATH
export PYTHONPATH=${{ASCEND_TOOLKIT_HOME}}/python/site-packages:\
${{ASCEND_TOOLKIT_HOME}}/opp/built-in/op_impl/ai_core/tbe:$PYTHONPATH
export PATH=${{ASCEND_TOOLKIT_HOME}}/bin:${{ASCEND_TOOLKIT_HOME}}/compiler/ccec_compiler/bin:\
${{ASCEND_TOOLKIT_HOME}}/tools/ccec_compiler/bin:$PATH
export ASCEND_AICPU_PATH=${{ASCEND_TOOLKIT_HOME}}
export ASCEND_OPP_PATH=${{ASCEND_TOOLKIT_HOME}}/opp
export TOOLCHAIN_HOME=${{ASCEND_TOOLKIT_HOME}}/toolkit
export ASCEND_HOME_PATH=${{ASCEND_TOOLKIT_HOME}}
"""


def install_toolkit(run: Run, pkg: dict, opts: dict, mode: str, path: str) -> int:
    """--install puts a version beside the installed ones (refused when that version is there) and
    points ``latest`` at it; --upgrade replaces the version ``latest`` points at."""
    arch = pkg["arch"]
    tk = f"{path}/ascend-toolkit"
    ver = pkg["version"]
    installed = toolkit_version(path, arch)
    host_tk = paths.host_path(tk)
    host_ver = os.path.join(host_tk, ver)
    same = toolkit_dir_version(f"{tk}/{ver}", arch)
    if mode == "install" and same:
        raise Failure(
            f"Ascend-cann-toolkit (version {same}) is already installed in {tk}/{ver}. Use --upgrade to upgrade it."
        )
    if mode == "upgrade" and not installed:
        raise Failure(f"Ascend-cann-toolkit is not installed in {tk}. Use --install to install it.")
    check_driver(pkg)
    old_target = os.readlink(os.path.join(host_tk, "latest")) if installed else None
    if os.path.isdir(host_ver):
        shutil.rmtree(host_ver)
    for sub in ("bin", "lib64", "include", "opp", "toolkit", "python/site-packages", "compiler/ccec_compiler/bin",
                f"{arch}-linux", "tools"):
        os.makedirs(os.path.join(host_ver, sub), mode=0o755, exist_ok=True)
    write_text(
        f"{tk}/{ver}/{arch}-linux/ascend_toolkit_install.info",
        f"package_name=Ascend-cann-toolkit\nversion={ver}\nversion_dir={ver}\ninnerversion={pkg['innerversion']}\n"
        f"arch={arch}\nos=linux\npath={tk}/{ver}/{arch}-linux\n",
    )
    write_text(f"{tk}/{ver}/version.info", package_version_info())
    # version.cfg as CANN 8.0 writes it (docs/sim-contract.md): each component's build and the release.
    build = next((line.split("=", 1)[1].strip() for line in package_version_info().splitlines()
                  if line.startswith("Version=")), ver)
    write_text(f"{tk}/{ver}/version.cfg", "# version: 1.0\n" + "".join(
        f"{c}_running_version=[{build}:{ver}]\n" for c in ("runtime", "compiler", "hccl", "opp", "toolkit")))
    tmp_link = os.path.join(host_tk, f".latest.{os.getpid()}")
    os.symlink(ver, tmp_link)
    os.replace(tmp_link, os.path.join(host_tk, "latest"))
    write_text(f"{tk}/set_env.sh", SET_ENV.format(tk=tk))
    if mode == "upgrade" and old_target and old_target != ver and "/" not in old_target:
        shutil.rmtree(os.path.join(host_tk, old_target), ignore_errors=True)
        run.info(f"Removed Ascend-cann-toolkit {old_target}")
    msg = f"Ascend-cann-toolkit {'upgrade' if mode == 'upgrade' else 'install'} success"
    run.info(f"{msg}, version {ver}, path {tk}/{ver}")
    if run.quiet:
        print(f"[INFO] {msg}", flush=True)
    return 0


def install_kernels(run: Run, pkg: dict, opts: dict, mode: str, path: str) -> int:
    tk_version = toolkit_version(path, pkg.get("arch"))
    if not tk_version:
        raise Failure(
            f"Ascend-cann-toolkit is not installed in {path}/ascend-toolkit. "
            "Install the toolkit before the kernels package."
        )
    if tk_version != pkg["version"]:
        raise Failure(
            f"The kernels package version {pkg['version']} does not match the installed "
            f"Ascend-cann-toolkit version {tk_version}."
        )
    vinfo = f"{path}/ascend-toolkit/latest/opp_kernel/version.info"
    record = installinfo.read_kv_file(vinfo)
    installed = record.get("version_dir") or record.get("Version")
    if mode == "install" and installed:
        raise Failure(f"Ascend-cann-kernels-910b (version {installed}) is already installed. Use --upgrade.")
    if mode == "upgrade" and not installed:
        raise Failure("Ascend-cann-kernels-910b is not installed. Use --install to install it.")
    check_driver(pkg)
    kdir = paths.host_path(f"{path}/ascend-toolkit/latest/opp/built-in/op_impl/ai_core/tbe/kernel/ascend910b")
    os.makedirs(kdir, mode=0o755, exist_ok=True)
    # Version= is a build number; version_dir the package version (as real kernels record it)
    write_text(vinfo, package_version_info())
    msg = f"Ascend-cann-kernels-910b {'upgrade' if mode == 'upgrade' else 'install'} success"
    run.info(f"{msg}, version {pkg['version']}")
    if run.quiet:
        print(f"[INFO] {msg}", flush=True)
    return 0


# ----------------------------------------------------------------------------- docker runtime

DAEMON_JSON = "/etc/docker/daemon.json"


def _load_daemon_json() -> dict:
    path = paths.host_path(DAEMON_JSON)
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise Failure(f"{DAEMON_JSON} is not valid JSON ({exc}); fix it and run the installer again.") from exc
    if not isinstance(data, dict):
        raise Failure(f"{DAEMON_JSON} is not a JSON object.")
    return data


def _save_daemon_json(data: dict) -> None:
    # the vendor's installer leaves daemon.json mode 0600 (run_main.sh: chmod 600)
    write_text(DAEMON_JSON, json.dumps(data, indent=4) + "\n", 0o600)


RUNTIME_RECORD = "ascend_docker_runtime_install.info"


def runtime_record(rt: str) -> str | None:
    """The installed runtime's version as recorded (``version=v6.0.0``), or None."""
    try:
        with open(paths.host_path(f"{rt}/{RUNTIME_RECORD}"), encoding="utf-8") as f:
            for line in f:
                key, eq, value = line.strip().partition("=")
                if eq and key == "version":
                    return value
    except OSError:
        return None
    return None


# The OCI runtime wrapper (ascend_docker_runtime.py beside this file) and the helpers the real
# package installs next to it; the hook, cli and destroy stand-ins do nothing (the wrapper edits
# config.json itself).
RUNTIME_WRAPPER = "ascend_docker_runtime.py"
RUNTIME_HELPER = """#!/bin/sh
# SIMULATION ONLY - ascendops stand-in for {name}; not Huawei software. Does nothing.
exit 0
"""
RUNTIME_HELPERS = ("ascend-docker-hook", "ascend-docker-cli", "ascend-docker-destroy")


def install_runtime(run: Run, pkg: dict, opts: dict, mode: str, path: str) -> int:
    rt = f"{path}/Ascend-Docker-Runtime"
    installed = runtime_record(rt)
    scene = opts["scene"] or "docker"
    if scene not in RUNTIME_SCENES:
        raise UsageError(f"Unsupported install scene: {scene}")
    if scene != "docker":
        raise Failure(f"--install-scene={scene} is not supported by the simulator (only docker).")
    if mode in ("install", "upgrade") and _vkey(pkg["version"]) >= _vkey(RUNTIME_EULA_FROM) and not ask_eula():
        return 0  # the vendor's exits 0 after a declined EULA, having installed nothing
    # a second --install (of any version) is accepted silently, as the vendor's installer does
    if mode in ("upgrade", "uninstall") and not installed:
        raise Failure("Ascend-docker-runtime is not installed. Use --install to install it.")
    daemon = _load_daemon_json()
    if mode == "uninstall":
        runtimes = daemon.get("runtimes")
        if isinstance(runtimes, dict):
            runtimes.pop("ascend", None)
            if not runtimes:
                daemon.pop("runtimes")
        if daemon.get("default-runtime") == "ascend":
            daemon.pop("default-runtime")
        _save_daemon_json(daemon)
        shutil.rmtree(paths.host_path(rt), ignore_errors=True)
        shutil.rmtree(paths.host_path("/etc/ascend-docker-runtime.d"), ignore_errors=True)
        run.info("Ascend-docker-runtime uninstall success; restart docker to take effect")
        if run.quiet:
            print("[INFO] Ascend-docker-runtime uninstall success", flush=True)
        return 0
    host_rt = paths.host_path(rt)
    if os.path.isdir(host_rt):
        shutil.rmtree(host_rt)
    with open(os.path.join(HERE, RUNTIME_WRAPPER), encoding="utf-8") as f:
        write_text(f"{rt}/ascend-docker-runtime", f.read(), 0o755)
    for helper in RUNTIME_HELPERS:
        write_text(f"{rt}/{helper}", RUNTIME_HELPER.format(name=helper), 0o755)
    machine = os.uname().machine
    write_text(f"{rt}/{RUNTIME_RECORD}",
               f"version=v{pkg['version']}\narch={machine}\nos=linux\npath={rt}\n"
               f"build=Ascend-docker-runtime_{pkg['version']}-{machine}\n"
               "a500=n\na500a2=n\na200=n\na200isoc=n\na200ia2=n\n", 0o640)
    write_text("/etc/ascend-docker-runtime.d/base.list", BASE_LIST, 0o440)
    runtimes = daemon.get("runtimes")
    if not isinstance(runtimes, dict):
        runtimes = {}
    runtimes["ascend"] = {"path": f"{rt}/ascend-docker-runtime", "runtimeArgs": []}
    daemon["runtimes"] = runtimes
    daemon["default-runtime"] = "ascend"
    _save_daemon_json(daemon)
    msg = f"Ascend-docker-runtime {'upgrade' if mode == 'upgrade' else 'install'} success"
    run.info(f"{msg}, version {pkg['version']}; restart docker to take effect")
    if run.quiet:
        print(f"[INFO] {msg}", flush=True)
    return 0


INSTALLERS = {
    "driver": install_driver,
    "firmware": install_firmware,
    "toolkit": install_toolkit,
    "kernels": install_kernels,
    "docker-runtime": install_runtime,
}


# ----------------------------------------------------------------------------- entry points

def install(argv: list[str], pkg: dict) -> int:
    kind = pkg["kind"]
    run = Run(kind, pkg["version"], quiet="--quiet" in argv)
    run.detail(f"Start: {KINDS[kind]['title']} {pkg['version']} {' '.join(argv)}")
    mode = "none"
    try:
        opts = parse(argv, kind, pkg["version"])
        if len(set(opts["actions"])) > 1:
            raise Failure("Only one of " + ", ".join(f"--{a}" for a in opts["actions"]) + " can be used.")
        mode = opts["actions"][0]
        if mode == "upgrade" and (opts["user"] or opts["group"] or opts["for_all"]):
            raise Failure(
                "--upgrade cannot be used together with --install-username, --install-usergroup "
                "or --install-for-all."
            )
        if (opts["user"] is None) != (opts["group"] is None):
            raise Failure("--install-username and --install-usergroup must be used together.")
        path = opts["path"]
        if path is None and mode != "full" and mode != "install":
            info = installinfo.read_install_info()
            key = {"driver": "Driver_Install_Path_Param", "firmware": "Firmware_Install_Path_Param"}.get(kind)
            path = info.get(key) if key else None
        path = os.path.normpath(path or paths.DEFAULT_INSTALL_PATH)
        if not path.startswith("/"):
            raise Failure(f"--install-path must be an absolute path: {path}")
        if KINDS[kind]["root"] and not paths.under_sim_root() and os.geteuid() != 0:
            raise Failure("The installation requires root (run it as root or with sudo).")
        if opts["user"]:
            opts["run_user"], opts["run_group"] = opts["user"], opts["group"]
        elif kind == "driver" and mode == "upgrade":
            info = installinfo.read_install_info()
            opts["run_user"] = info.get("UserName", DEFAULT_USER)
            opts["run_group"] = info.get("UserGroup", DEFAULT_USER)
        else:
            opts["run_user"] = opts["run_group"] = DEFAULT_USER
        if mode != "uninstall" and kind != "docker-runtime":
            check_user(run, opts["run_user"], opts["run_group"])
        check_arch(pkg)
        rc = INSTALLERS[kind](run, pkg, opts, mode, path)
    except UsageError as exc:
        run.error(str(exc))
        print(usage(kind))
        rc = 1
    except Failure as exc:
        run.error(str(exc))
        rc = 1
    run.detail(f"End: rc={rc}")
    run.flush_log()
    events.log_event(f"install {kind} {pkg['version']} mode={mode} rc={rc}")
    return rc


def uninstall(kind: str, path: str) -> int:
    run = Run(kind, "")
    if not paths.under_sim_root() and os.geteuid() != 0:
        run.error("The uninstallation requires root (run it as root or with sudo).")
        run.flush_log()
        return 1
    if kind == "driver":
        version = installinfo.installed_driver_version(path) or "unknown"
        shutil.rmtree(paths.host_path(f"{path}/driver"), ignore_errors=True)
        for real in (paths.NPU_SMI,):
            if os.path.lexists(paths.host_path(real)):
                os.remove(paths.host_path(real))
        shutil.rmtree(paths.host_path(paths.DCMI_DIR), ignore_errors=True)
        installinfo.update_install_info({}, remove_prefix="Driver_")
        message = "Driver package uninstalled successfully! Reboot needed for uninstallation to take effect!"
    else:
        version = installinfo.installed_firmware_version(path) or "unknown"
        shutil.rmtree(paths.host_path(f"{path}/firmware"), ignore_errors=True)
        installinfo.update_install_info({}, remove_prefix="Firmware_")
        message = "Firmware package uninstalled successfully! The firmware on the NPUs is not changed."
    state.mark_pending(kind)
    run.version = version
    run.info(f"Uninstalled {kind} {version} from {path}")
    run.flush_log()
    print(message, flush=True)
    events.log_event(f"uninstall {kind} {version} rc=0")
    return 0


def main(argv: list[str]) -> int:
    os.umask(0o022)
    if argv and argv[0].startswith("--sim-uninstall="):
        kind = argv[0].partition("=")[2]
        path = paths.DEFAULT_INSTALL_PATH
        for arg in argv[1:]:
            if arg.startswith("--install-path="):
                path = arg.partition("=")[2]
            else:
                print(f"[ERROR]Unsupported parameter: {arg}")
                return 1
        if kind not in ("driver", "firmware"):
            print(f"[ERROR]Unsupported parameter: {argv[0]}")
            return 1
        return uninstall(kind, path)
    with open(os.path.join(HERE, "package.info"), encoding="utf-8") as f:
        pkg = json.load(f)
    return install(argv, pkg)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
