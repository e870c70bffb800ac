#!/usr/bin/env bash
# SIMULATION ONLY - builds the two simulated Ascend package sets the simulated cluster uses
# (the entry point of `make packages`):
#   sim/build/packages/current   driver 24.1.rc1, firmware 7.5.0.2.220, CANN 8.0.0,  runtime 6.0.0
#   sim/build/packages/previous  driver 23.0.0,   firmware 7.1.0.11.220, CANN 8.0.RC3, runtime 5.0.0
#   sim/build/packages/cann-next       CANN 8.1.RC1 toolkit + kernels only, needs driver >=24.1.rc1 (upgrade)
#   sim/build/packages/cann-newdriver  CANN 8.2.RC1 toolkit + kernels only, needs driver >=25.0.rc1 (refusal)
# A set is rebuilt only when its inputs (sim/packages, sim/npu stand-ins, versions, arch) changed.
#   usage: sim/packages/build-all.sh [--force]
#   ASCEND_SIM_ARCH overrides uname -m; ASCEND_SIM_PACKAGES_DIR overrides sim/build/packages.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
arch=${ASCEND_SIM_ARCH:-$(uname -m)}
force=${1:-}
dest=${ASCEND_SIM_PACKAGES_DIR:-$repo/sim/build/packages}

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

build_set current 24.1.rc1 7.5.0.2.220 8.0.0 6.0.0
build_set previous 23.0.0 7.1.0.11.220 8.0.RC3 5.0.0
build_set cann-next 24.1.rc1 7.5.0.2.220 8.1.RC1 6.0.0 toolkit,kernels ">=24.1.rc1"
build_set cann-newdriver 24.1.rc1 7.5.0.2.220 8.2.RC1 6.0.0 toolkit,kernels ">=25.0.rc1"
