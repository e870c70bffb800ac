#!/usr/bin/env bash
# SIMULATION ONLY - builds the two simulated Ascend package sets the simulated cluster uses
# (the entry point of `make packages`), with the versions of sim/versions.env:
#   sim/build/packages/current   SIM_CURRENT_{DRIVER,FIRMWARE,CANN,RUNTIME}
#   sim/build/packages/previous  SIM_PREVIOUS_{DRIVER,FIRMWARE,CANN,RUNTIME}
#   sim/build/packages/cann-next       SIM_NEXT_CANN toolkit + kernels only, needs driver >= the current one (upgrade)
#   sim/build/packages/cann-newdriver  SIM_NEWDRIVER_CANN toolkit + kernels only, needs a driver newer than any (refusal)
# A set is rebuilt only when its inputs (sim/packages, sim/npu stand-ins, versions, arch) changed.
#   usage: sim/packages/build-all.sh [--force]
#   ASCEND_SIM_ARCH overrides uname -m; ASCEND_SIM_PACKAGES_DIR overrides sim/build/packages.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
arch=${ASCEND_SIM_ARCH:-$(uname -m)}
force=${1:-}
dest=${ASCEND_SIM_PACKAGES_DIR:-$repo/sim/build/packages}
# shellcheck source=../versions.env
. "$repo/sim/versions.env"

inputs=$( (cd "$repo" && find sim/packages sim/npu/ascend_sim sim/npu/npu-smi sim/npu/hccn_tool \
             sim/npu/upgrade-tool -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 |
           sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-64)

build_set() {
  local name=$1 dv=$2 fv=$3 cv=$4 rv=$5 only=${6:-} range=${7:->=23.0}
  local out=$dest/$name
  local stamp
  stamp=$(printf '%s %s %s %s %s %s %s %s %s\n' "$inputs" "$arch" "$dv" "$fv" "$cv" "$rv" "$only" "$range" \
            "$(makeself --version)" |
          sha256sum | cut -c1-64)
  if [ "$force" != --force ] && [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ] &&
     [ -f "$out/SHA256SUMS" ] && (cd "$out" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1); then
    echo "packages/$name is up to date"
    return 0
  fi
  rm -f "$out/.stamp"
  [ -z "$only" ] || rm -f "$out"/Ascend-*.run
  "$here/build.sh" --out "$out" --driver-version "$dv" --firmware-version "$fv" \
    --cann-version "$cv" --runtime-version "$rv" --arch "$arch" --cann-driver-range "$range" \
    ${only:+--only "$only"}
  printf '%s\n' "$stamp" > "$out/.stamp"
}

build_set current "$SIM_CURRENT_DRIVER" "$SIM_CURRENT_FIRMWARE" "$SIM_CURRENT_CANN" "$SIM_CURRENT_RUNTIME"
build_set previous "$SIM_PREVIOUS_DRIVER" "$SIM_PREVIOUS_FIRMWARE" "$SIM_PREVIOUS_CANN" "$SIM_PREVIOUS_RUNTIME"
build_set cann-next "$SIM_CURRENT_DRIVER" "$SIM_CURRENT_FIRMWARE" "$SIM_NEXT_CANN" "$SIM_CURRENT_RUNTIME" \
  toolkit,kernels ">=$SIM_CURRENT_DRIVER"
build_set cann-newdriver "$SIM_CURRENT_DRIVER" "$SIM_CURRENT_FIRMWARE" "$SIM_NEWDRIVER_CANN" "$SIM_CURRENT_RUNTIME" \
  toolkit,kernels ">=$SIM_NEWDRIVER_MIN_DRIVER"
