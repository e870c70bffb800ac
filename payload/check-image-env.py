#!/usr/bin/env python3
"""Check that a (base) image's Python and torch fit the trainer's pins, and say what is needed.

Run by build-image.sh inside the base image before the build (and by the Containerfile again):

    python3 check-image-env.py requirements.txt [--torch-from-image]

Exit 0 when the interpreter can take the pinned requirements (requirements.txt holds environment
markers for Python 3.10 and 3.11+), and - with --torch-from-image (TORCH_SPEC="", an Ascend image
keeps its torch and torch_npu) - when the image's torch is >= the minimum transformers needs and
torch_npu, if present, matches torch's major.minor. Otherwise exit 1 with what to change.
Standard library only: it runs on a bare base image.
"""

from __future__ import annotations

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


def main(argv: list[str]) -> int:
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
