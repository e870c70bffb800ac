#!/usr/bin/python3
"""SIMULATION ONLY - ascendops stand-in for ascend-docker-runtime; not Huawei software.

An OCI runtime wrapper, as the real one is: Docker runs it in place of ``runc`` (daemon.json
``runtimes.ascend``). On ``create`` (and ``run``) it reads the bundle's ``config.json``; when the
container's environment has ``ASCEND_VISIBLE_DEVICES`` (``0-7``, ``1,3``, ``0-2,4``) it adds
``/dev/davinci<N>`` for each listed NPU plus ``/dev/davinci_manager``, ``/dev/devmm_svm`` and
``/dev/hisi_hdc`` (device nodes and cgroup rules, numbers and owners from the host's nodes) and,
unless ``ASCEND_RUNTIME_OPTIONS`` holds ``NODRV``, bind-mounts read-only every path of
``/etc/ascend-docker-runtime.d/base.list`` that exists on the host. Then it hands over to ``runc``
with the same arguments. Without ``ASCEND_VISIBLE_DEVICES`` the container passes through untouched.
Errors print one ``ascend-docker-runtime: ...`` line on stderr and exit 1 (Docker shows it in its
"OCI runtime create failed" message). ``$ASCEND_SIM_ROOT`` prefixes the host paths it reads (tests).
"""

import json
import os
import re
import stat
import sys

BASE_LIST = "/etc/ascend-docker-runtime.d/base.list"
CONTROL_DEVICES = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")
# runc's global options that take a value (everything before the subcommand)
_GLOBAL_WITH_VALUE = {"--root", "--log", "--log-format", "--criu", "--rootless"}
_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+))?$")


class RuntimeError_(Exception):
    """A container this runtime refuses to create."""


def host_path(path: str) -> str:
    root = os.environ.get("ASCEND_SIM_ROOT", "")
    return root.rstrip("/") + path if root else path


def parse_visible(value: str) -> list[int]:
    """``0-7``, ``1,3``, ``0-2,4`` -> sorted unique NPU ids."""
    ids: set[int] = set()
    for part in value.replace(" ", "").split(","):
        m = _RANGE_RE.match(part)
        if not m:
            raise RuntimeError_(f"ASCEND_VISIBLE_DEVICES={value!r}: {part!r} is not an id or a range (0-7, 1,3, 0-2,4)")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise RuntimeError_(f"ASCEND_VISIBLE_DEVICES={value!r}: range {part} runs backwards")
        ids.update(range(lo, hi + 1))
    return sorted(ids)


def subcommand_and_bundle(argv: list[str]) -> tuple[str | None, str | None]:
    """runc's subcommand and, for create/run, the bundle directory (default: the working directory)."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _GLOBAL_WITH_VALUE:
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        sub = arg
        if sub not in ("create", "run"):
            return sub, None
        rest = argv[i + 1:]
        for j, opt in enumerate(rest):
            if opt in ("--bundle", "-b") and j + 1 < len(rest):
                return sub, rest[j + 1]
            if opt.startswith("--bundle="):
                return sub, opt.split("=", 1)[1]
        return sub, os.getcwd()
    return None, None


def _env(config: dict) -> dict:
    out = {}
    for item in (config.get("process") or {}).get("env") or []:
        key, _, value = item.partition("=")
        out[key] = value
    return out


def _device(path: str) -> dict:
    try:
        st = os.stat(host_path(path))
    except OSError as exc:
        raise RuntimeError_(f"{path} is not present on the host ({exc.strerror}); is the NPU driver loaded?") from exc
    if not stat.S_ISCHR(st.st_mode):
        raise RuntimeError_(f"{path} on the host is not a character device")
    return {"path": path, "type": "c", "major": os.major(st.st_rdev), "minor": os.minor(st.st_rdev),
            "fileMode": stat.S_IMODE(st.st_mode), "uid": st.st_uid, "gid": st.st_gid}


def base_list() -> list[str]:
    try:
        with open(host_path(BASE_LIST), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def edit_config(config: dict) -> bool:
    """Add the devices and mounts ``ASCEND_VISIBLE_DEVICES`` asks for; False when it is not set."""
    env = _env(config)
    visible = env.get("ASCEND_VISIBLE_DEVICES")
    if visible is None or visible.strip() == "":
        return False
    options = {o.strip().upper() for o in env.get("ASCEND_RUNTIME_OPTIONS", "").split(",") if o.strip()}
    wanted = [f"/dev/davinci{i}" for i in parse_visible(visible)] + list(CONTROL_DEVICES)
    devices = [_device(p) for p in wanted]
    linux = config.setdefault("linux", {})
    present = {d.get("path") for d in linux.get("devices") or []}
    linux["devices"] = (linux.get("devices") or []) + [d for d in devices if d["path"] not in present]
    rules = linux.setdefault("resources", {}).setdefault("devices", [])
    for d in devices:
        rules.append({"allow": True, "type": "c", "major": d["major"], "minor": d["minor"], "access": "rwm"})
    if "NODRV" not in options:
        mounted = {m.get("destination") for m in config.get("mounts") or []}
        mounts = config.setdefault("mounts", [])
        for path in base_list():
            if path in mounted or not os.path.exists(host_path(path)):
                continue
            mounts.append({"destination": path, "type": "bind", "source": path,
                           "options": ["rbind", "ro", "nosuid"]})
    return True


def prepare_bundle(bundle: str) -> bool:
    path = os.path.join(bundle, "config.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    if not edit_config(config):
        return False
    tmp = f"{path}.ascend.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(config, f)
    os.replace(tmp, path)
    return True


def main(argv: list[str]) -> int:
    sub, bundle = subcommand_and_bundle(argv)
    if bundle is not None:
        try:
            prepare_bundle(bundle)
        except (RuntimeError_, OSError, ValueError) as exc:
            print(f"ascend-docker-runtime: {exc}", file=sys.stderr)
            return 1
    runc = os.environ.get("ASCEND_SIM_RUNC", "runc")
    os.execvp(runc, [runc] + argv)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
