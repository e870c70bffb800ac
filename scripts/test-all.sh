#!/usr/bin/env bash
# `make test`: every check, in order, each timed; all run even when one fails, so a single CI
# run shows every failure. Exit status is non-zero if any step failed.
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
step ruff ruff check .
step yamllint yamllint -s .
step ansible-lint ansible-lint --profile production
step sanity scripts/sanity.sh
step collection-build scripts/check-build.sh
step argument-specs scripts/check-argument-specs.py
step sample-inventory scripts/check-inventory-sample.sh
step pytest pytest tests
step pytest-payload pytest payload/tests
step sim-image sim/image/build.sh
step packages sim/packages/build-all.sh
# Prepared node images (sim/image/layers.sh): scenarios that start after the driver stage use
# localhost/ascendops-sim-node:driver instead of installing the driver again.
step sim-layers sim/image/layers.sh
# The trainer image archive the cluster scenario delivers to its nodes (reused while unchanged).
step trainer-image payload/build-image.sh
# Every molecule scenario; MOLECULE_SKIP="roce cluster" leaves scenarios out (scripts/molecule-all.sh).
step molecule scripts/molecule-all.sh
echo
echo "make test timing summary"
printf '%s\n' "${rows[@]}"
echo "$(( ${#rows[@]} - failed )) passed, $failed failed"
exit $(( failed > 0 ))
