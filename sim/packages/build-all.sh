#!/usr/bin/env bash
# SIMULATION ONLY - builds the two simulated Ascend package sets the simulated cluster uses
# (the entry point of `make packages`), with the versions of the simulated releases:
#   sim/build/packages/current   releases/sim.yml's host driver, firmware, CANN, Ascend Docker Runtime
#   sim/build/packages/previous  releases/sim-previous.yml's (what the upgrade tests start from)
#   sim/build/packages/cann-next       sim/packages/cann-sets.yml next: toolkit + kernels only, needs driver >= the
#                                      current one (upgrade)
#   sim/build/packages/cann-newdriver  cann-sets.yml newdriver: toolkit + kernels only, needs a driver newer than
#                                      any (refusal)
#   sim/build/packages/runtime-eula    cann-sets.yml eula: the Ascend Docker Runtime only, a version that asks for
#                                      the EULA (container_runtime: refused, then answered)
# A set is rebuilt only when its inputs (sim/packages, sim/npu stand-ins, versions, arch) changed.
#   usage: sim/packages/build-all.sh [--force]
#   ASCEND_SIM_ARCH overrides uname -m; ASCEND_SIM_PACKAGES_DIR overrides sim/build/packages.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
arch=${ASCEND_SIM_ARCH:-$(uname -m)}
force=${1:-}
dest=${ASCEND_SIM_PACKAGES_DIR:-$repo/sim/build/packages}
# PyYAML reads the release files: the project's virtualenv (make puts it on PATH), else python3.
py=${PYTHON:-python3}
[ -n "${PYTHON:-}" ] || [ ! -x "$repo/.venv/bin/python" ] || py=$repo/.venv/bin/python
get() { "$py" "$repo/sim/yaml-get.py" "$@"; }
release_set() {  # driver firmware CANN runtime of a release file, one per line
  get "$1" host.driver host.firmware host.cann_toolkit host.docker_runtime
}
current=$(release_set "$repo/releases/sim.yml")
previous=$(release_set "$repo/releases/sim-previous.yml")
cann_sets=$(get "$here/cann-sets.yml" next.cann newdriver.cann newdriver.min_driver eula.docker_runtime)
{ read -r SIM_CURRENT_DRIVER; read -r SIM_CURRENT_FIRMWARE; read -r SIM_CURRENT_CANN; read -r SIM_CURRENT_RUNTIME; } \
  <<< "$current"
{ read -r SIM_PREVIOUS_DRIVER; read -r SIM_PREVIOUS_FIRMWARE; read -r SIM_PREVIOUS_CANN; read -r SIM_PREVIOUS_RUNTIME; } \
  <<< "$previous"
{ read -r SIM_NEXT_CANN; read -r SIM_NEWDRIVER_CANN; read -r SIM_NEWDRIVER_MIN_DRIVER; read -r SIM_EULA_RUNTIME; } <<< "$cann_sets"

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
build_set runtime-eula "$SIM_CURRENT_DRIVER" "$SIM_CURRENT_FIRMWARE" "$SIM_CURRENT_CANN" "$SIM_EULA_RUNTIME" \
  docker-runtime
