#!/usr/bin/env bash
# `make test`: every check, each timed; all run even when one fails, so a single CI run shows every
# failure. Exit status is non-zero if any step failed.
# The image builds (debootstrap and pip downloads, podman build and commit: mostly network and disk)
# run in the background beside the checks (mostly CPU) and log to .cache/test/images.log, printed
# when they are done; the molecule scenarios start once both are. TEST_SERIAL=1 runs every step one
# after another (the order below).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export PATH=$repo/.venv/bin:$PATH ANSIBLE_CONFIG=$repo/ansible.cfg
declare -a rows; failed=0
step() {
  local name=$1; shift
  local start; start=$(date +%s)
  echo; echo "=== $name: $*"
  if "$@"; then r=passed; else r=FAILED; failed=$((failed + 1)); fi
  rows+=("$(printf '%-22s %-7s %5ss' "$name" "$r" "$(( $(date +%s) - start ))")")
}
images() {  # the node image, the simulated packages, the prepared node image, the trainer image
  step sim-image sim/image/build.sh
  step packages sim/packages/build-all.sh
  # Prepared node images (sim/image/layers.sh): scenarios that start after the driver stage use
  # localhost/ascendops-sim-node:driver instead of installing the driver again.
  step sim-layers sim/image/layers.sh
  # The trainer image archive the cluster scenario delivers to its nodes (reused while unchanged).
  step trainer-image payload/build-image.sh
}
checks() {
  step ruff ruff check .
  step yamllint yamllint -s .
  step ansible-lint ansible-lint --profile production
  step sanity scripts/sanity.sh
  step collection-build scripts/check-build.sh
  step argument-specs scripts/check-argument-specs.py
  step sample-inventory scripts/check-inventory-sample.sh
  step pytest pytest tests
  step pytest-payload pytest payload/tests
}
start=$(date +%s)
if [ "${TEST_SERIAL:-0}" = 1 ]; then
  checks
  images
else
  mkdir -p .cache/test
  log=.cache/test/images.log
  rm -f .cache/test/images.rows
  echo "=== images: building in the background (log: $log)"
  ( rows=(); failed=0; images; printf '%s\n' "${rows[@]}" > .cache/test/images.rows; exit $(( failed > 0 )) ) \
    >"$log" 2>&1 &
  images_pid=$!
  checks
  echo; echo "=== waiting for the image builds"
  wait "$images_pid"
  cat "$log"
  if [ -f .cache/test/images.rows ]; then
    mapfile -t -O "${#rows[@]}" rows < .cache/test/images.rows
    failed=$(( failed + $(grep -c ' FAILED ' .cache/test/images.rows) ))
  else
    rows+=("$(printf '%-22s %-7s' images FAILED)"); failed=$((failed + 1))
  fi
fi
echo; echo "=== checks and images done after $(( $(date +%s) - start ))s"
# Every molecule scenario; MOLECULE_SKIP="roce cluster" leaves scenarios out (scripts/molecule-all.sh).
step molecule scripts/molecule-all.sh
echo
echo "make test timing summary (images: built beside the checks)"
printf '%s\n' "${rows[@]}"
echo "total $(( $(date +%s) - start ))s"
echo "$(( ${#rows[@]} - failed )) passed, $failed failed"
exit $(( failed > 0 ))
