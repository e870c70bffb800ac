#!/usr/bin/env bash
# `make test`: every check, each timed; all run even when one fails, so a single CI run shows every
# failure. Exit status is non-zero if any step failed.
# Two lanes on the machine's cores: the checks (ruff ... pytest, one CPU core most of the time) in
# the foreground; in the background the image builds (debootstrap and pip downloads, podman build
# and commit: mostly network and disk) and then, once they passed, every molecule scenario (one at a
# time: two scenarios at once break each other's nodes). The background lane logs to
# .cache/test/lane.log, printed when both lanes are done. TEST_SERIAL=1 runs every step one after
# another (checks, images, molecule).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export PATH=$repo/.venv/bin:$PATH ANSIBLE_CONFIG=$repo/ansible.cfg
declare -a rows; failed=0
# Each step's output also goes to .cache/test/steps/<step>.log, and the JUnit files of the steps that
# write them to .cache/test/junit/<step>/ (pytest's --junitxml; Ansible's junit callback in every
# molecule scenario, .config/molecule/config.yml): after the summary, a few lines for each failed step
# say why (scripts/failure-digest.py), where CI's kept tail shows them.
steps=.cache/test/steps
junit=.cache/test/junit
rm -rf "$steps" "$junit" .cache/test/flaky; mkdir -p "$steps" "$junit"
step() {
  local name=$1; shift
  local start; start=$(date +%s)
  echo; echo "=== $name: $*"
  if "$@" 2>&1 | tee "$steps/$name.log"; then r=passed; else r=FAILED; failed=$((failed + 1)); fi
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
  # ANSIBLE_HOME of its own: offline, ansible-lint does not install this collection but reads
  # ~/.ansible/collections first, where molecule's runs leave a copy of the tree they ran (an older one,
  # in a checkout that moved on); here the collection resolves from this tree (.collections).
  step ansible-lint env ANSIBLE_HOME="$repo/.cache/ansible-lint-home" ansible-lint --profile production
  step sanity scripts/sanity.sh
  step collection-build scripts/check-build.sh
  step argument-specs scripts/check-argument-specs.py
  # Every module, filter, lookup and callback (found in plugins/, not listed by hand) has a doc ansible-doc renders.
  step ansible-doc scripts/check-ansible-doc.py
  step docs-current scripts/gen-docs.py --check
  step changelog scripts/check-changelog.sh
  step sample-inventory scripts/check-inventory-sample.sh
  step pytest pytest tests --junitxml="$junit/pytest/results.xml"
  step pytest-payload pytest payload/tests --junitxml="$junit/pytest-payload/results.xml"
}
molecule_all() {
  # Every molecule scenario; MOLECULE_SKIP="roce cluster" leaves scenarios out (scripts/molecule-all.sh).
  step molecule scripts/molecule-all.sh
  # The simulated cluster of `make sim` (sim/cluster.sh) through an idle period and a node restart: its cgroup
  # keeper keeps every node reachable on a cgroup-v1 host, and `down` stops it.
  step sim-keeper scripts/check-sim-keeper.sh
}
start=$(date +%s)
if [ "${TEST_SERIAL:-0}" = 1 ]; then
  checks
  images
  molecule_all
else
  mkdir -p .cache/test
  log=.cache/test/lane.log
  rm -f .cache/test/lane.rows
  echo "=== images, then molecule: in the background (log: $log)"
  ( rows=(); failed=0
    images
    # The scenarios need the node images, the packages and the trainer image.
    if [ "$failed" = 0 ]; then molecule_all
    else rows+=("$(printf '%-22s %-7s' molecule 'SKIPPED (an image build failed)')"); failed=$((failed + 1)); fi
    printf '%s\n' "${rows[@]}" > .cache/test/lane.rows; exit $(( failed > 0 )) ) >"$log" 2>&1 &
  lane_pid=$!
  # The molecule lane is the longer one (about 55 of the run's 56 minutes against 26 for the checks): the checks
  # run at lower CPU priority so that they take the cores molecule leaves idle rather than slowing it down.
  renice -n 10 -p $$ >/dev/null 2>&1 || true
  checks
  echo; echo "=== checks done after $(( $(date +%s) - start ))s; waiting for the images and molecule lane"
  # What the lane logged so far, then the rest as it comes, until the lane ends.
  tail -n +1 -f --pid="$lane_pid" "$log"
  wait "$lane_pid"
  if [ -f .cache/test/lane.rows ]; then
    mapfile -t -O "${#rows[@]}" rows < .cache/test/lane.rows
    failed=$(( failed + $(grep -c -e ' FAILED ' -e ' SKIPPED ' .cache/test/lane.rows) ))
  else
    rows+=("$(printf '%-22s %-7s' images-and-molecule FAILED)"); failed=$((failed + 1))
  fi
fi
echo
echo "make test timing summary (checks in one lane; images then molecule in the other)"
printf '%s\n' "${rows[@]}"
echo "total $(( $(date +%s) - start ))s"
echo "$(( ${#rows[@]} - failed )) passed, $failed failed"
for row in "${rows[@]}"; do
  read -r name result _ <<<"$row"
  [ "$result" = FAILED ] && python3 scripts/failure-digest.py "$name" "$steps/$name.log" --junit "$junit/$name"
done
# Scenarios that failed once and passed when run again (scripts/molecule-all.sh).
[ -f .cache/test/flaky ] && cat .cache/test/flaky
exit $(( failed > 0 ))
