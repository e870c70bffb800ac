#!/usr/bin/env bash
# Runs every molecule scenario (or those named as arguments) one after another and prints a
# per-scenario timing summary. Exit status is non-zero if any scenario failed.
# MOLECULE_QUEUE=<file> (make test's two workers, scripts/test-all.sh): the scenarios are instead taken one
# at a time from that file (one name a line, the first line first, under a lock), until it is empty; two
# runs of this script on one queue share the scenarios between them (each scenario's nodes, networks and
# volumes are its own: molecule/*/molecule.yml).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export PATH=$repo/.venv/bin:$PATH ANSIBLE_CONFIG=$repo/ansible.cfg
# The prepared node image (sim/image/layers.sh) the scenarios after the driver stage start from:
# named after SIM_IMAGE the way layers.sh names it.
if [ -z "${SIM_DRIVER_IMAGE:-}" ]; then
  base=${SIM_IMAGE:-localhost/ascendops-sim-node:latest}
  case "$base" in *:latest) SIM_DRIVER_IMAGE=${base%:latest}:driver ;; *) SIM_DRIVER_IMAGE=$base-driver ;; esac
  export SIM_DRIVER_IMAGE
fi
queue=${MOLECULE_QUEUE:-}
if [ -n "$queue" ]; then scenarios=()
elif [ $# -gt 0 ]; then scenarios=("$@"); else
  # MOLECULE_SKIP: scenarios to leave out, separated by spaces (none by default: every scenario runs).
  skip=" ${MOLECULE_SKIP-} "
  mapfile -t scenarios < <(for f in molecule/*/molecule.yml; do
    s=$(basename "$(dirname "$f")"); [[ "$skip" == *" $s "* ]] || echo "$s"; done)
fi
declare -a rows; failed=0 ran=0
# Each scenario's output also goes to .cache/test/molecule/<scenario>.log. A scenario that fails is
# run once more (MOLECULE_RETRY=0: not): one that then passes counts as passed but is reported as
# flaky, here and at the end of `make test` (.cache/test/flaky: why its first run failed), so an
# intermittent failure is seen without costing the whole run.
logs=$repo/.cache/test/molecule
mkdir -p "$logs"
flaky=$repo/.cache/test/flaky
# A worker of a shared queue appends to the record (make test emptied it); a run of its own starts it anew.
[ -n "$queue" ] || rm -f "$flaky"
# Ansible's junit callback (.config/molecule/config.yml enables it for every scenario) writes one JUnit
# file per ansible-playbook run, nested runs included, into .cache/test/junit/molecule/<scenario>:
# scripts/failure-digest.py reads the failed tasks from there. Emptied before each run, so it holds the
# scenario's latest run only.
junit=$repo/.cache/test/junit/molecule
run_scenario() {  # $1 scenario, $2 log
  rm -rf "${junit:?}/$1"; mkdir -p "$junit/$1"
  molecule test -s "$1" 2>&1 | tee "$2"
}
# Multi-node scenarios: keep the running nodes' cgroup folders (see sim/cgroup-keeper.sh).
"$repo/sim/cgroup-keeper.sh" &
keeper=$!
trap 'kill "$keeper" 2>/dev/null' EXIT
next_scenario() {  # prints the next scenario: the queue's first line (taken off it) or the next argument
  if [ -z "$queue" ]; then
    [ "$ran" -lt "${#scenarios[@]}" ] && printf '%s' "${scenarios[$ran]}"
    return 0
  fi
  (flock 9; s=$(head -n 1 "$queue" 2>/dev/null); [ -n "$s" ] && sed -i 1d "$queue"; printf '%s' "$s") 9>>"$queue.lock"
}
while s=$(next_scenario) && [ -n "$s" ]; do
  ran=$((ran + 1))
  start=$(date +%s)
  echo "=== molecule scenario: $s"
  if run_scenario "$s" "$logs/$s.log"; then result=passed
  elif [ "${MOLECULE_RETRY:-1}" != 0 ]; then
    echo "=== molecule scenario: $s failed; why:"
    python3 "$repo/scripts/failure-digest.py" "$s" "$logs/$s.log" --junit "$junit/$s" | tee "$logs/$s.first"
    echo "=== molecule scenario: $s, once more"
    if run_scenario "$s" "$logs/$s.retry.log"; then
      result=flaky
      { echo "molecule scenario $s failed, then passed once more; the first run's failure:"
        cat "$logs/$s.first"; } >> "$flaky"
    else
      result=FAILED; failed=$((failed + 1)); cp "$logs/$s.retry.log" "$logs/$s.log"
    fi
  else result=FAILED; failed=$((failed + 1)); fi
  rows+=("$(printf '%-28s %-7s %5ss' "$s" "$result" "$(( $(date +%s) - start ))")")
done
echo
echo "molecule timing summary"
printf '%s\n' "${rows[@]}"
echo "$(( ran - failed )) passed, $failed failed"
[ -f "$flaky" ] && cat "$flaky"
exit $(( failed > 0 ))
