#!/usr/bin/env bash
# Benchmark of the product's daily use (SIMULATION): the no-op re-run of site.yml on a converged,
# training cluster, and site.yml --check --diff, each timed ROUNDS times; prints the median per stage
# and in total, and each run's changed count (a no-op re-run must report changed=0).
#   scripts/bench-rerun.sh [--nodes 4] [--npus 2] [--rounds 3] [--keep] [--profile]
# Brings up the simulated cluster (make sim-up), converges it with site.yml (the debug job trains on
# every node), caps the simulated trainer (a CPU stand-in for NPU work) at 5 % of a CPU per cgroup so
# the controller is not starved, then times. --keep leaves the cluster up. Results also in
# .cache/bench/rerun-<N>nodes.json and rerun-check-<N>nodes.json. --profile adds one no-op run
# with ansible.posix.profile_tasks (per-task seconds) logged to .cache/bench/profile-<N>nodes.log.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
nodes=4; npus=2; rounds=3; keep=0; profile=0
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --npus) npus=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --profile) profile=1; shift ;;
    *) echo "bench-rerun.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
export PATH=$repo/.venv/bin:$PATH ANSIBLE_CONFIG=$repo/ansible.cfg
out=$repo/.cache/bench
mkdir -p "$out"
make -s sim-down >/dev/null 2>&1 || true
make -s sim-up NODES="$nodes" NPUS="$npus"
make -s sim-data payload-image >/dev/null
echo "bench-rerun: converging $nodes node(s) x $npus NPU(s) with site.yml (log: $out/converge.log)"
t0=$(date +%s)
ansible-playbook site.yml -i inventories/sim >"$out/converge.log" 2>&1 ||
  { tail -30 "$out/converge.log"; exit 1; }
echo "bench-rerun: converged in $(( $(date +%s) - t0 )) s"
# SIMULATION ONLY: the trainer's processes at nice 19 (a real NPU job does not load the host CPUs).
ansible npu_nodes -i inventories/sim -m ansible.builtin.shell \
  -a 'pgrep -f ascendops_trainer | xargs -r renice -n 19 -p >/dev/null; echo reniced' >/dev/null
# SIMULATION ONLY: nice alone did not keep the CPU stand-in off the controller: each node is a cgroup of its
# own (its trainer a cgroup below it), and the kernel shares the CPUs between cgroups before a process's nice
# counts inside one (a 4-node no-op took 52-65 s while the ranks trained at nice 19, 33-43 s with this cap,
# about 30 s once the job completed). So the trainer's cgroups get a CPU quota of 5 % of a CPU each while
# the runs are timed (cgroup v1 cpu.cfs_quota_us, v2 cpu.max), lifted again at the end.
trainer_cgroups() {
  local pid cg
  for pid in $(pgrep -f ascendops_trainer); do
    cg=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print $3}' "/proc/$pid/cgroup" 2>/dev/null || true)
    if [ -n "$cg" ] && [ -d "/sys/fs/cgroup/cpu$cg" ]; then echo "/sys/fs/cgroup/cpu$cg"; continue; fi
    cg=$(awk -F: '$1 == "0" {print $3}' "/proc/$pid/cgroup" 2>/dev/null || true)
    if [ -n "$cg" ] && [ -e "/sys/fs/cgroup$cg/cpu.max" ]; then echo "/sys/fs/cgroup$cg"; fi
  done | sort -u
}
trainer_quota() {  # trainer_quota 5000 | trainer_quota max
  local d n=0
  for d in $(trainer_cgroups); do
    if [ -e "$d/cpu.cfs_quota_us" ]; then
      echo "$([ "$1" = max ] && echo -1 || echo "$1")" >"$d/cpu.cfs_quota_us" && n=$((n + 1))
    else
      echo "$1 100000" >"$d/cpu.max" && n=$((n + 1))
    fi
  done 2>/dev/null
  echo "$n"
}
capped=$(trainer_quota 5000)
echo "bench-rerun: the simulated trainer's CPU quota set to 5 % of a CPU in $capped cgroup(s)"
trap 'trainer_quota max >/dev/null' EXIT
python -m ascendops_cli.timing -i inventories/sim --rounds "$rounds" --json "$out/rerun-${nodes}nodes.json"
python -m ascendops_cli.timing -i inventories/sim --rounds "$rounds" --check \
  --json "$out/rerun-check-${nodes}nodes.json"
if [ "$profile" = 1 ]; then
  # One more no-op run with the task profiler: the slowest tasks, for the next tuning step.
  ANSIBLE_CALLBACKS_ENABLED=ascendops.cluster.preload,ansible.posix.profile_tasks PROFILE_TASKS_TASK_OUTPUT_LIMIT=60 \
    ansible-playbook site.yml -i inventories/sim >"$out/profile-${nodes}nodes.log" 2>&1 || true
  echo "bench-rerun: task profile of a no-op run in $out/profile-${nodes}nodes.log"
fi
[ "$keep" = 1 ] || sim/cluster.sh down
