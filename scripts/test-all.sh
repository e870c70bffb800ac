#!/usr/bin/env bash
# `make test`: every check, each timed; all run even when one fails, so a single CI run shows every
# failure. Exit status is non-zero if any step failed.
# Two lanes on the machine's cores: the checks (ruff ... pytest, one CPU core most of the time) in
# the foreground; in the background the image builds (debootstrap and pip downloads, podman build
# and commit: mostly network and disk), the simulated cluster's keeper check, and then, once they
# passed, the molecule scenarios. The scenarios wait in one queue (.cache/test/molecule-queue, the
# longest first) that two workers share (scripts/molecule-all.sh, MOLECULE_QUEUE): the background
# lane's from the start, the foreground lane's once its checks are done, so the cores the checks
# leave are not idle while the scenarios run (each scenario's nodes, networks and volumes are its
# own). The background lane logs to .cache/test/lane.log, printed when both lanes are done.
# TEST_SERIAL=1 runs every step one after another (checks, images, molecule, one worker).
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
# A step in the background (its output to its log only, printed when it is waited for): step_bg NAME CMD...,
# then step_wait NAME adds its row and its result. With TEST_SERIAL=1 it is an ordinary step.
declare -A bg_pids
step_bg() {
  local name=$1
  if [ "${TEST_SERIAL:-0}" = 1 ]; then step "$@"; return; fi
  ( rows=(); failed=0; step "$@" >"$steps/$name.out" 2>&1
    printf '%s\n' "${rows[@]}" > "$steps/$name.row"; exit "$failed" ) &
  bg_pids[$name]=$!
}
step_wait() {
  local name=$1
  [ "${TEST_SERIAL:-0}" = 1 ] && return
  wait "${bg_pids[$name]}" || failed=$((failed + 1))
  cat "$steps/$name.out"
  if [ -s "$steps/$name.row" ]; then rows+=("$(cat "$steps/$name.row")")
  else rows+=("$(printf '%-22s %-7s' "$name" FAILED)"); fi
}
images() {  # the node image, the simulated packages, the prepared node image, the trainer image
  step sim-image sim/image/build.sh
  step packages sim/packages/build-all.sh
  # The trainer image archive the cluster scenario delivers to its nodes (reused while unchanged), built
  # beside the driver layer: it mostly waits on PyPI and the disk, the driver layer on Ansible (CPU). On a
  # fresh 2-core machine the first scenario then started 292 s into the run instead of 341 (2026-12-07).
  step_bg trainer-image payload/build-image.sh
  # Prepared node images (sim/image/layers.sh): scenarios that start after the driver stage use
  # localhost/ascendops-sim-node:driver instead of installing the driver again.
  step sim-layers sim/image/layers.sh
  # The debug Llama's data set (as `make sim-data`), made once here rather than in the first scenario that
  # needs it (cluster, upgrade: two of them could run at once).
  step sim-data env HF_HUB_OFFLINE=1 python sim/data/debug-data.py
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
# The simulated cluster of `make sim` (sim/cluster.sh) through an idle period and a node restart: its cgroup
# keeper keeps every node reachable on a cgroup-v1 host, and `down` stops it. Before any scenario: its control
# run (no keeper) must not meet the keeper of a molecule run, which would mend its nodes too.
keeper_check() { step sim-keeper scripts/check-sim-keeper.sh; }
queue=$repo/.cache/test/molecule-queue
rm -f "$queue" "$queue.lock"
make_queue() {  # every scenario but those in MOLECULE_SKIP, the longest first (so the two workers end close together)
  local skip=" ${MOLECULE_SKIP-} " s
  { for s in cluster upgrade slurm; do [ -f "molecule/$s/molecule.yml" ] && echo "$s"; done
    for f in molecule/*/molecule.yml; do basename "$(dirname "$f")"; done; } |
    awk '!seen[$0]++' | while read -r s; do [[ "$skip" == *" $s "* ]] || echo "$s"; done > "$queue.tmp"
  # The SSH key of the scenarios (molecule/shared/create.yml makes it when missing): made once, before two
  # scenarios could start at the same moment.
  [ -f .cache/molecule/id_ed25519 ] || { mkdir -p -m 0700 .cache/molecule &&
    ssh-keygen -q -t ed25519 -N "" -C ascendops-molecule -f .cache/molecule/id_ed25519; }
  mv -f "$queue.tmp" "$queue"  # the queue appears whole: the other worker waits for it
}
worker() { step "$1" env MOLECULE_QUEUE="$queue" scripts/molecule-all.sh; }
start=$(date +%s)
if [ "${TEST_SERIAL:-0}" = 1 ]; then
  checks
  images
  keeper_check
  step_wait trainer-image
  make_queue
  worker molecule
else
  mkdir -p .cache/test
  log=.cache/test/lane.log
  rm -f .cache/test/lane.rows
  echo "=== images, then molecule: in the background (log: $log)"
  ( rows=(); failed=0
    images
    # The keeper check while the trainer image builds; the scenarios need the node images, the packages, the
    # trainer image and the data.
    images_failed=$failed
    if [ "$images_failed" = 0 ]; then keeper_check; fi
    before=$failed; step_wait trainer-image; images_failed=$(( images_failed + failed - before ))
    if [ "$images_failed" = 0 ]; then make_queue; worker molecule
    else rows+=("$(printf '%-22s %-7s' molecule 'SKIPPED (an image build failed)')"); failed=$((failed + 1)); fi
    printf '%s\n' "${rows[@]}" > .cache/test/lane.rows; exit $(( failed > 0 )) ) >"$log" 2>&1 &
  lane_pid=$!
  # The molecule lane is the longer one (about 55 of the run's 56 minutes against 26 for the checks, with one
  # worker): the checks run at lower CPU priority so that they take the cores molecule leaves idle rather than
  # slowing it down.
  renice -n 10 -p $$ >/dev/null 2>&1 || true
  checks
  echo; echo "=== checks done after $(( $(date +%s) - start ))s; the second molecule worker starts once the queue is there"
  # The second worker, at the priority the scenarios need (the checks ran at 10; lowering it back needs root,
  # else it stays at 10 and takes what the first worker leaves). Started only while scenarios are queued.
  renice -n 0 -p $$ >/dev/null 2>&1 || true
  while [ ! -e "$queue" ] && kill -0 "$lane_pid" 2>/dev/null; do sleep 5; done
  if [ -s "$queue" ]; then worker molecule-2; fi
  echo; echo "=== after $(( $(date +%s) - start ))s; waiting for the images and molecule lane"
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
echo "make test timing summary (checks, then the second molecule worker, in one lane; images, the keeper check, then the first molecule worker in the other)"
printf '%s\n' "${rows[@]}"
echo "total $(( $(date +%s) - start ))s"
echo "$(( ${#rows[@]} - failed )) passed, $failed failed"
for row in "${rows[@]}"; do
  read -r name result _ <<<"$row"
  # (both molecule workers' scenarios write their JUnit files under junit/molecule/<scenario>)
  [ "$result" = FAILED ] && python3 scripts/failure-digest.py "$name" "$steps/$name.log" --junit "$junit/${name%-2}"
done
# Scenarios that failed once and passed when run again (scripts/molecule-all.sh).
[ -f .cache/test/flaky ] && cat .cache/test/flaky
exit $(( failed > 0 ))
