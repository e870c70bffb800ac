#!/usr/bin/env bash
# SIMULATION ONLY - builds the simulated Huawei Ascend .run packages (real makeself archives with
# the vendor file names; the payloads are ascendops stand-ins, not vendor software).
#   usage: sim/packages/build.sh --out DIR --driver-version V --firmware-version V \
#            --cann-version V --runtime-version V [--arch x86_64|aarch64] [--only KIND[,KIND]]
#            [--cann-driver-range RANGE]
# Writes the five .run files and DIR/SHA256SUMS (sha256sum format). --arch defaults to uname -m.
# --only (driver,firmware,toolkit,kernels,docker-runtime) builds just those and keeps the rest.
# --cann-driver-range: the NPU driver range the CANN packages require (default ">=23.0").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

usage() { sed -n '4,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

out="" dv="" fv="" cv="" rv="" arch=$(uname -m) only="" cdr=">=23.0"
while [ $# -gt 0 ]; do
  case "$1" in
    --out=*) out=${1#*=} ;;
    --driver-version=*) dv=${1#*=} ;;
    --firmware-version=*) fv=${1#*=} ;;
    --cann-version=*) cv=${1#*=} ;;
    --runtime-version=*) rv=${1#*=} ;;
    --arch=*) arch=${1#*=} ;;
    --only=*) only=${1#*=} ;;
    --cann-driver-range=*) cdr=${1#*=} ;;
    --out|--driver-version|--firmware-version|--cann-version|--runtime-version|--arch|--only|--cann-driver-range)
      [ $# -ge 2 ] || usage
      case "$1" in
        --out) out=$2 ;; --driver-version) dv=$2 ;; --firmware-version) fv=$2 ;;
        --cann-version) cv=$2 ;; --runtime-version) rv=$2 ;; --arch) arch=$2 ;; --only) only=$2 ;;
        --cann-driver-range) cdr=$2 ;;
      esac
      shift ;;
    -h|--help) usage ;;
    *) echo "build.sh: unknown argument: $1" >&2; usage ;;
  esac
  shift
done
[ -n "$out" ] && [ -n "$dv" ] && [ -n "$fv" ] && [ -n "$cv" ] && [ -n "$rv" ] || usage
case "$arch" in x86_64|aarch64) ;; *) echo "build.sh: --arch must be x86_64 or aarch64" >&2; exit 2 ;; esac
command -v makeself >/dev/null || { echo "build.sh: makeself is not installed (scripts/host-setup.sh)" >&2; exit 1; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Our header: the installed makeself's, with the vendor-style flag handling (makeself_header.py).
python3 -B "$here/makeself_header.py" "$work/header.sh"
# The Ascend Docker Runtime's header is the vendor's own: it refuses --nox11 and the other makeself options.
python3 -B "$here/makeself_header.py" --runtime "$work/header-runtime.sh"
kinds=(driver firmware toolkit kernels docker-runtime)
if [ -n "$only" ]; then
  IFS=, read -r -a kinds <<< "$only"
  for kind in "${kinds[@]}"; do
    case "$kind" in driver|firmware|toolkit|kernels|docker-runtime) ;;
      *) echo "build.sh: --only: unknown package kind: $kind" >&2; exit 2 ;; esac
  done
else
  # Stale packages of other versions would confuse consumers that glob the directory.
  rm -f "$out"/Ascend-*.run
fi
rm -f "$out/SHA256SUMS"

for kind in "${kinds[@]}"; do
  case "$kind" in
    driver) ver=$dv ;; firmware) ver=$fv ;; toolkit|kernels) ver=$cv ;; docker-runtime) ver=$rv ;;
  esac
  stage="$work/$kind"
  name=$(python3 -B "$here/stage.py" --kind "$kind" --version "$ver" --arch "$arch" \
           --firmware-version "$fv" --cann-driver-range "$cdr" --out "$stage")
  header="$work/header.sh"
  [ "$kind" = docker-runtime ] && header="$work/header-runtime.sh"
  makeself --header "$header" --sha256 --nomd5 --nocrc --nox11 --quiet \
    --tar-quietly --tar-extra "--owner=0 --group=0 --numeric-owner" \
    "$stage" "$out/$name" "${name%.run} (SIMULATION)" ./install.sh >/dev/null
  chmod 0755 "$out/$name"
  echo "built $out/$name"
done
(cd "$out" && sha256sum Ascend-*.run > SHA256SUMS)
