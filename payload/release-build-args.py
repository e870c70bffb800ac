#!/usr/bin/env python3
"""Print the trainer image's build settings for a release, as shell assignments for build-image.sh.

    release-build-args.py RELEASE [ARCH]     RELEASE: a name in releases/ or a manifest path;
                                             ARCH: aarch64 | x86_64 (default: this machine's)

Prints IMAGE_TAG, BASE_IMAGE, PYTHON, TORCH_SPEC, TORCH_NPU_SPEC, PIN_SPECS, TORCH_INDEX_URL and
RELEASE_LABEL (shell-quoted), after checking the release against its own rules (torch_npu <-> torch
<-> CANN per releases/_torch_npu.yml, numpy/protobuf in CANN's range). Runs on the controller with
the project's virtualenv (PyYAML); the logic is plugins/module_utils/ascend_release.py.
"""

from __future__ import annotations

import os
import platform
import shlex
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(REPO, ".collections")
LINK = os.path.join(COLLECTIONS, "ansible_collections", "ascendops", "cluster")


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    if not os.path.lexists(LINK):
        os.makedirs(os.path.dirname(LINK), exist_ok=True)
        os.symlink(os.path.join("..", "..", ".."), LINK)
    sys.path.insert(0, COLLECTIONS)
    from ansible_collections.ascendops.cluster.plugins.module_utils import ascend_release as r

    arch = argv[1] if len(argv) > 1 else {"arm64": "aarch64", "amd64": "x86_64"}.get(
        platform.machine().lower(), platform.machine().lower())
    try:
        release = r.load_release(argv[0], os.path.join(REPO, "releases"))
        problems = r.check_release(release)
        if problems:
            for p in problems:
                print(f"release-build-args: {p['msg']}", file=sys.stderr)
            return 1
        plan = r.image_build(release, arch)
    except r.ReleaseError as exc:
        print(f"release-build-args: {exc}", file=sys.stderr)
        return 1
    print(f"IMAGE_TAG={shlex.quote(plan['image'])}")
    for key, value in plan["build_args"].items():
        print(f"{key}={shlex.quote(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
