#!/usr/bin/env python3
"""Check that a (base) image's Python and torch fit the trainer's pins, and say what is needed.

Run by build-image.sh inside the base image before the build (and by the Containerfile again):

    python3 check-image-env.py requirements.txt [--torch-from-image]

Exit 0 when the interpreter can take the pinned requirements (requirements.txt holds environment
markers for Python 3.10 and 3.11+), and - with --torch-from-image (TORCH_SPEC="", an Ascend image
keeps its torch and torch_npu) - when the image's torch is >= the minimum transformers needs and
torch_npu, if present, matches torch's major.minor. Otherwise exit 1 with what to change.
Standard library only: it runs on a bare base image.

    python check-image-env.py --release /opt/ascendops/release.json [--ascend-path /usr/local/Ascend]

In the built image (the Containerfile runs it last): every pin of the release the image is built from
(its ascendops.release label: Python, torch, torch_npu, DeepSpeed, transformers, numpy, protobuf and
the extra pins, as installed distributions; the image's CANN from its install record, when the release
names one; numpy and protobuf within CANN's range). Prints one JSON line
{"ok", "release", "checks": [{"component", "expected", "found", "ok"}], "problems": [...],
"cann_driver_range": the host driver range the image's CANN declares, or null}; exit 1 on a problem.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

MIN_PYTHON = (3, 10)
MIN_TORCH = (2, 6)  # transformers 5 needs torch >= 2.6


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text.split("+")[0])[:3])


def _pinned_torch(requirements: str) -> str | None:
    with open(requirements) as f:
        for line in f:
            m = re.match(r"^torch==([\w.+]+)", line.strip())
            if m:
                return m.group(1)
    return None


def _probe(code: str) -> str | None:
    """Run `code` in a fresh interpreter (torch_npu may abort the process without CANN's env).
    torch's device-backend autoload is off: importing torch must not need CANN's set_env.sh."""
    env = {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    return proc.stdout.strip() if proc.returncode == 0 else None


def check(requirements: str, torch_from_image: bool) -> list[str]:
    problems: list[str] = []
    py = sys.version_info[:2]
    print(f"check-image-env: Python {sys.version.split()[0]} ({sys.executable})")
    if py < MIN_PYTHON:
        problems.append(f"Python {py[0]}.{py[1]} is too old: the trainer needs Python >= "
                        f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]} (pick an Ascend PyTorch image with Python 3.10 or 3.11, "
                        "or set PYTHON= to another interpreter in the image)")
    try:
        import ensurepip  # noqa: F401
        import venv  # noqa: F401
    except ImportError:
        print("check-image-env: no venv/ensurepip here; the Containerfile installs python3-venv with apt-get")
    if not torch_from_image:
        pinned = _pinned_torch(requirements)
        print(f"check-image-env: torch {pinned} will be installed (TORCH_SPEC)")
        return problems
    torch_v = _probe("import torch; print(torch.__version__)")
    if torch_v is None:
        problems.append("TORCH_SPEC is empty (keep the image's torch) but `import torch` fails in the base image: "
                        "use an Ascend PyTorch image (CANN + torch + torch_npu) or set TORCH_SPEC=torch==<version>")
        return problems
    print(f"check-image-env: torch {torch_v} in the image")
    if _version(torch_v)[:2] < MIN_TORCH:
        problems.append(f"the image's torch {torch_v} is older than {MIN_TORCH[0]}.{MIN_TORCH[1]}, which "
                        "transformers 5 needs: use an Ascend PyTorch image with torch >= 2.6 and its torch_npu")
    npu_v = _probe("import importlib.metadata as m; print(m.version('torch_npu'))")
    if npu_v is None:
        print("check-image-env: no torch_npu in the image (CUDA/CPU image?)")
    else:
        print(f"check-image-env: torch_npu {npu_v}")
        if _version(npu_v)[:2] != _version(torch_v)[:2]:
            problems.append(f"torch_npu {npu_v} is built for torch {'.'.join(map(str, _version(npu_v)[:2]))}, "
                            f"but the image has torch {torch_v}: their major.minor must match")
    return problems


# ------------------------------------------------------------------ the built image against its release

_SPEC_RE = re.compile(r"^\s*(>=|<=|==|!=|>|<|~=)?\s*([\w.+!-]+)\s*$")


def _release_tuple(text: str) -> tuple[int, ...]:
    """Numbers of a version's release part (``2.6.0+cpu`` -> (2, 6, 0); ``2.4.0.post2`` -> (2, 4, 0)),
    trailing zeros dropped so that 2.0 == 2.0.0."""
    public = str(text).split("+")[0].lower()
    nums = []
    for part in public.split("."):
        if not part.isdigit():
            break
        nums.append(int(part))
    while nums and nums[-1] == 0:
        nums.pop()
    return tuple(nums)


def same_release(a: str | None, b: str | None) -> bool:
    """Two Python package versions name the same release, local tags (``+cpu``) aside."""
    if a is None or b is None:
        return a is b
    return str(a).split("+")[0].lower() == str(b).split("+")[0].lower()


def in_spec(version: str, spec: str) -> bool:
    """``version`` inside ``spec`` (``">=1.19.2, <2.0"``): packaging when present, else by release numbers."""
    try:
        from packaging.specifiers import SpecifierSet
        from packaging.version import Version

        return Version(version) in SpecifierSet(spec)
    except ImportError:
        pass
    v = _release_tuple(version)
    for part in spec.split(","):
        m = _SPEC_RE.match(part)
        if not m:
            return False
        op, bound = m.group(1) or "==", _release_tuple(m.group(2))
        ok = {">=": v >= bound, "<=": v <= bound, ">": v > bound, "<": v < bound, "==": v == bound,
              "!=": v != bound, "~=": v >= bound}[op]
        if not ok:
            return False
    return True


def installed(dist: str) -> str | None:
    import importlib.metadata as md

    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def _record(path: str) -> dict[str, str]:
    """key=value lines of a vendor record (keys lower-case, quotes removed); {} when unreadable."""
    out: dict[str, str] = {}
    try:
        with open(path, errors="replace") as handle:
            for line in handle:
                key, sep, value = line.strip().partition("=")
                if sep and key.strip():
                    out[key.strip().lower()] = value.strip().strip("\"'")
    except OSError:
        pass
    return out


def _toolkit_dir(ascend_path: str) -> tuple[str | None, str | None]:
    """(the image's CANN version from its toolkit install record, that toolkit's directory), found
    through the ``latest``/``cann`` links first (up to 8.3 ``ascend-toolkit/latest/<arch>-linux/``,
    from 8.5 ``cann-<ver>/`` with the record under ``cann/<arch>-linux/`` or ``<arch>-linux/``)."""
    bases = [os.path.join(ascend_path, "ascend-toolkit", "latest"), os.path.join(ascend_path, "cann")]
    bases += sorted(glob.glob(os.path.join(ascend_path, "cann-*")))
    bases += sorted(glob.glob(os.path.join(ascend_path, "ascend-toolkit", "*")))
    for base in bases:
        for pattern in ("*-linux", os.path.join("cann", "*-linux")):
            for record in sorted(glob.glob(os.path.join(base, pattern, "ascend_toolkit_install.info"))):
                version = _record(record).get("version")
                if version:
                    return version, base
    return None, None


def image_cann(ascend_path: str) -> str | None:
    """The image's CANN version (its toolkit install record), or None."""
    return _toolkit_dir(ascend_path)[0]


def image_cann_driver_range(ascend_path: str) -> str | None:
    """The driver range the image's CANN declares (``required_package_driver_version`` of its
    kernels/ops ``opp_kernel/version.info``): the host's driver must be inside it."""
    _version, base = _toolkit_dir(ascend_path)
    if not base:
        return None
    return _record(os.path.join(base, "opp_kernel", "version.info")).get("required_package_driver_version") or None


def check_release(release: dict, ascend_path: str = "/usr/local/Ascend") -> dict:
    """Every pin of ``release`` (the image label's JSON) against this interpreter and image."""
    checks: list[dict] = []

    def add(component, expected, found, ok, rule=""):
        checks.append({"component": component, "expected": expected, "found": found, "ok": bool(ok),
                       **({"rule": rule} if rule else {})})

    py = f"{sys.version_info[0]}.{sys.version_info[1]}"
    add("python", release.get("python"), py, release.get("python") in (None, py))
    for comp, dist in (("torch", "torch"), ("torch_npu", "torch_npu"), ("deepspeed", "deepspeed"),
                       ("transformers", "transformers"), ("numpy", "numpy"), ("protobuf", "protobuf")):
        want, have = release.get(comp), installed(dist)
        add(comp, want, have, same_release(want, have))
    for dist, want in sorted((release.get("pins") or {}).items()):
        have = installed(dist)
        add(dist, want, have, same_release(want, have))
    torch, npu = installed("torch"), installed("torch_npu")
    if torch and npu:
        add("torch_npu build", _release_tuple(torch)[:2], _release_tuple(npu)[:2],
            _release_tuple(torch)[:2] == _release_tuple(npu)[:2], "torch_npu is built for one torch major.minor")
    cann_want, cann_have = release.get("cann"), image_cann(ascend_path)
    add("cann", cann_want, cann_have,
        (cann_have is None) if cann_want is None else (str(cann_have or "").lower() == str(cann_want).lower()),
        "the image's CANN install record (ascend_toolkit_install.info)")
    if cann_want:
        for dist, spec in sorted((release.get("cann_python") or {}).items()):
            have = installed(dist)
            add(f"{dist} for CANN", spec, have, bool(have) and in_spec(have, spec),
                f"CANN {cann_want}'s Python dependency list")
    problems = [f"{c['component']}: expected {c['expected']}, found {c['found']}"
                + (f" ({c['rule']})" if c.get("rule") else "") for c in checks if not c["ok"]]
    return {"ok": not problems, "release": release.get("release"), "checks": checks, "problems": problems,
            "cann_driver_range": image_cann_driver_range(ascend_path)}


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--release" and len(argv) >= 2:
        ascend_path = argv[argv.index("--ascend-path") + 1] if "--ascend-path" in argv[2:] else "/usr/local/Ascend"
        try:
            with open(argv[1]) as handle:
                release = json.load(handle)
        except (OSError, ValueError) as exc:
            print(json.dumps({"ok": False, "release": None, "checks": [],
                              "problems": [f"cannot read the release {argv[1]}: {exc}"]}))
            return 1
        result = check_release(release, ascend_path)
        print(json.dumps(result, sort_keys=True))
        return 0 if result["ok"] else 1
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(argv[0], "--torch-from-image" in argv[1:])
    for p in problems:
        print(f"check-image-env: ERROR: {p}", file=sys.stderr)
    if not problems:
        print("check-image-env: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
