"""Helpers for the NPU stand-in and package-builder unit tests (SIMULATION ONLY code under test)."""

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SIM_NPU = REPO / "sim" / "npu"
SIM_PACKAGES = REPO / "sim" / "packages"


def sim_versions(which: str) -> dict:
    """``current`` or ``previous`` package versions: the simulated releases (releases/sim.yml,
    releases/sim-previous.yml), which sim/packages/build-all.sh builds the packages from."""
    import yaml  # the project's virtualenv

    name = {"current": "sim", "previous": "sim-previous"}[which]
    host = yaml.safe_load((REPO / "releases" / f"{name}.yml").read_text())["host"]
    return {"driver": host["driver"], "firmware": host["firmware"], "cann": host["cann_toolkit"],
            "runtime": host["docker_runtime"]}


CURRENT = sim_versions("current")
PREVIOUS = sim_versions("previous")
ARCH = os.uname().machine
OTHER_ARCH = "aarch64" if ARCH == "x86_64" else "x86_64"
PREREQ_TOOLS = ("lspci", "ifconfig", "dkms")
# The stand-ins run "#!/usr/bin/env python3"; use the system interpreter (what the nodes have)
# rather than whatever wrapper comes first on the developer's PATH (pyenv shims cost ~0.1 s a call).
PYTHON3 = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable


def python_bin(directory: Path) -> Path:
    """``directory`` with a python3 link to PYTHON3, to put first on PATH."""
    directory.mkdir(parents=True, exist_ok=True)
    link = directory / "python3"
    if not os.path.lexists(link):
        os.symlink(PYTHON3, link)
    return directory


def build_all(dest: Path) -> subprocess.CompletedProcess:
    """sim/packages/build-all.sh into ``dest`` (current/ and previous/)."""
    dest.mkdir(parents=True, exist_ok=True)
    pybin = python_bin(dest.parent / (dest.name + "-pybin"))
    env = dict(os.environ, ASCEND_SIM_PACKAGES_DIR=str(dest), PATH=f"{pybin}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    env.pop("ASCEND_SIM_ARCH", None)
    r = subprocess.run([str(SIM_PACKAGES / "build-all.sh")], capture_output=True, text=True, env=env, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def build_set(out: Path, versions: dict, arch: str = ARCH, only: str | None = None) -> Path:
    pybin = python_bin(out.parent / (out.name + "-pybin"))
    env = dict(os.environ, PATH=f"{pybin}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    subprocess.run(
        [str(SIM_PACKAGES / "build.sh"), "--out", str(out),
         "--driver-version", versions["driver"], "--firmware-version", versions["firmware"],
         "--cann-version", versions["cann"], "--runtime-version", versions["runtime"], "--arch", arch,
         *(["--only", only] if only else [])],
        check=True, capture_output=True, text=True, env=env,
    )
    return out


@dataclass
class PackageSets:
    current: Path
    previous: Path
    other_arch: Path

    def pkg(self, kind: str, which: str = "current") -> Path:
        prefix = {
            "driver": "Ascend-hdk-910b-npu-driver_",
            "firmware": "Ascend-hdk-910b-npu-firmware_",
            "toolkit": "Ascend-cann-toolkit_",
            "kernels": "Ascend-cann-kernels-910b_",
            "runtime": "Ascend-docker-runtime_",
        }[kind]
        directory = getattr(self, which)
        (match,) = [p for p in directory.iterdir() if p.name.startswith(prefix)]
        return match


def _stub(path: Path, body: str = "exit 0\n") -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


@dataclass
class Node:
    """A simulated node rooted in a temporary directory."""

    root: Path
    env: dict = field(default_factory=dict)
    stub_bin: Path | None = None

    def p(self, real_path: str) -> Path:
        return Path(str(self.root) + real_path)

    def run(self, *cmd, input: str | None = None, env: dict | None = None, timeout: int = 60):
        full_env = dict(self.env)
        if env:
            full_env.update(env)
        return subprocess.run(
            [str(c) for c in cmd], input=input if input is not None else "", capture_output=True,
            text=True, env=full_env, timeout=timeout, cwd=str(self.root),
        )

    def sim(self, *args, **kw):
        return self.run(SIM_NPU / "ascend-sim", *args, **kw)

    def npu_smi(self, *args, **kw):
        return self.run(self.p("/usr/local/bin/npu-smi"), *args, **kw)

    def hccn(self, *args, **kw):
        return self.run(self.p("/usr/local/Ascend/driver/tools/hccn_tool"), *args, **kw)

    def upgrade_tool(self, *args, **kw):
        return self.run(self.p("/usr/local/Ascend/driver/tools/upgrade-tool"), *args, **kw)

    def install(self, package: Path, *args, **kw):
        return self.run(package, *args, **kw)

    def events(self) -> list[str]:
        path = self.p("/var/log/ascend-sim/events.log")
        if not path.exists():
            return []
        return [line.split(" ", 1)[1] for line in path.read_text().splitlines()]

    def install_info(self) -> dict:
        text = self.p("/etc/ascend_install.info").read_text()
        return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)

    def set_users(self, users: dict[str, tuple[int, int]], groups: dict[str, int]) -> None:
        etc = self.p("/etc")
        etc.mkdir(parents=True, exist_ok=True)
        (etc / "passwd").write_text(
            "root:x:0:0:root:/root:/bin/bash\n"
            + "".join(f"{u}:x:{uid}:{gid}::/home/{u}:/bin/bash\n" for u, (uid, gid) in users.items())
        )
        (etc / "group").write_text(
            "root:x:0:\n" + "".join(f"{g}:x:{gid}:\n" for g, gid in groups.items())
        )


def make_node(tmp_path: Path, npus: int = 2, with_user: bool = True, prereqs: bool = True) -> Node:
    root = tmp_path / "root"
    root.mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    stub_bin = tmp_path / "stub-bin"
    python_bin(stub_bin)
    if prereqs:
        for tool in PREREQ_TOOLS:
            _stub(stub_bin / tool)
        (root / "lib" / "modules" / os.uname().release / "build").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "PYTHON"))}
    env.update({
        "ASCEND_SIM_ROOT": str(root),
        "TMPDIR": str(tmp),
        "PATH": f"{stub_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "LC_ALL": "C.UTF-8",
    })
    env.pop("DISPLAY", None)
    node = Node(root=root, env=env, stub_bin=stub_bin)
    if with_user:
        node.set_users({"HwHiAiUser": (1000, 1000)}, {"HwHiAiUser": 1000})
    else:
        node.set_users({}, {})
    if npus != 2:
        r = node.sim("hardware", "--npus", str(npus))
        assert r.returncode == 0, r.stderr
    return node


def stub(path: Path, body: str) -> None:
    _stub(path, body)
