#!/bin/bash
# SIMULATION ONLY - ascendops stand-in for the install script inside a Huawei Ascend .run package;
# not vendor software. makeself runs it from the extracted directory with the vendor flags
# (--full, --upgrade, --install, --uninstall, --install-path=..., --quiet, ...).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec python3 -B "$here/ascend_install.py" "$@"
