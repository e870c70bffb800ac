#!/usr/bin/env bash
# Benchmark of the controller's cluster-wide work (no node is contacted): builds inventory-only
# clusters from inventories/sample (N hosts, 8 NPUs each, roce_address_offset 10 + 8 i in the sample's
# 10.20.0.0/16 device subnet, management addresses in 198.18.0.0/15, the benchmarking range, which no
# node answers) and times, per size:
#   plan      ansible-playbook playbooks/plan.yml (the IP plan, its validation, the rank table preview)
#   validate  ansible-playbook playbooks/validate.yml --skip-tags validate_nodes: every check of site.yml
#             that needs no node (the controller play, every role's settings against its argument spec,
#             every role's validate_checks.yml without the tasks tagged validate_nodes, the release
#             checks); no task of it connects to a node (no module runs on one: only action plugins that
#             run on the controller, set_fact, assert, validate_argument_spec)
# and prints one JSON line per size ({"hosts", "plan_s", "plan_ms_per_host", "plan_cpu_s", "validate_s",
# "validate_ms_per_host", "validate_cpu_s"}; *_cpu_s: user + system seconds of ansible-playbook and its
# forks, steadier than the wall time on a machine shared with other work), then one line with the growth
# ratios between consecutive sizes.
#   scripts/bench-scale.sh [--sizes 64,256,1024,4096] [--forks 16] [--keep DIR] [--profile] [--only plan|validate]
# --profile adds ansible.posix.profile_tasks to each run (logs in the work directory, kept with --keep);
# --only runs one of the two (the other's columns are null, and so are their ratios).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
sizes=64,256,1024,4096; forks=16; keep=""; profile=0; only=
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) sizes=$2; shift 2 ;;
    --forks) forks=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --profile) profile=1; shift ;;
    --only) only=$2; shift 2 ;;
    *) echo "bench-scale.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ $sizes =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "bench-scale.sh: --sizes takes numbers separated by commas" >&2; exit 2; }
[[ $forks =~ ^[0-9]+$ ]] || { echo "bench-scale.sh: --forks takes a number" >&2; exit 2; }
[[ $only =~ ^(|plan|validate)$ ]] || { echo "bench-scale.sh: --only takes plan or validate" >&2; exit 2; }
export PATH=$repo/.venv/bin:$PATH ANSIBLE_CONFIG=$repo/ansible.cfg
work=${keep:-$(mktemp -d)}
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
# Facts of the generated hosts in a cache of their own (none are gathered; nothing left in .cache/facts).
export ANSIBLE_CACHE_PLUGIN_CONNECTION=$work/facts
callbacks=ascendops.cluster.preload
[ "$profile" = 0 ] || callbacks=$callbacks,ansible.posix.profile_tasks

make_inventory() {  # make_inventory N DIR
  local n=$1 dir=$2
  rm -rf "$dir"
  mkdir -p "$dir"
  cp -r inventories/sample/group_vars "$dir/"
  python3 - "$n" "$dir/hosts.yml" "$dir/group_vars/all/job.yml" <<'EOF'
import re
import sys
n, path, job = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if not 1 <= n <= 8190:
    sys.exit("bench-scale.sh: a size must be 1..8190 hosts (8 device addresses each in one /16)")
# The sample's global batch (512) divides by the ranks of 64 nodes at most: the launch checks refuse it on a
# larger cluster. The smallest multiple of micro batch x ranks (N x 8) that is at least the sample's.
with open(job, encoding="utf-8") as f:
    text = f.read()
micro = re.search(r"(?m)^  micro_batch_size: (\d+)$", text)
ranks = 8 * n * (int(micro.group(1)) if micro else 1)
text, found = re.subn(r"(?m)^(  global_batch_size: )(\d+)$",
                      lambda m: f"{m.group(1)}{-(-int(m.group(2)) // ranks) * ranks}", text)
if found != 1:
    sys.exit(f"bench-scale.sh: no 'global_batch_size: N' line in {job}")
with open(job, "w", encoding="utf-8") as f:
    f.write(text)
with open(path, "w", encoding="utf-8") as out:
    out.write("---\nall:\n  children:\n    npu_nodes:\n      hosts:\n")
    for i in range(n):
        mgmt = 18 * 256 * 256 + 1 + i  # 198.18.0.1 onwards
        out.write(f"        a2-node{i + 1:05d}:\n"
                  f"          ansible_host: 198.{mgmt >> 16 & 255}.{mgmt >> 8 & 255}.{mgmt & 255}\n"
                  f"          roce_address_offset: {10 + 8 * i}\n")
EOF
}

run_timed() {  # run_timed LOG ARGS...: prints "WALL CPU" in seconds; the log keeps the output
  # CPU: user + system time of ansible-playbook and its forks, which other work on a shared machine
  # changes much less than the wall time.
  local log=$1
  shift
  if ! ANSIBLE_CALLBACKS_ENABLED=$callbacks python3 - "$log" ansible-playbook -f "$forks" "$@" <<'EOF'
import resource
import subprocess
import sys
import time

log, cmd = sys.argv[1], sys.argv[2:]
t0 = time.monotonic()
with open(log, "w", encoding="utf-8") as out:
    rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{time.monotonic() - t0:.2f} {use.ru_utime + use.ru_stime:.2f}")
sys.exit(rc)
EOF
  then
    echo "bench-scale.sh: failed: ansible-playbook $* (log: $log)" >&2
    tail -20 "$log" >&2
    return 1
  fi
}

results=()
IFS=, read -r -a list <<<"$sizes"
for n in "${list[@]}"; do
  inv=$work/inventory-$n
  make_inventory "$n" "$inv"
  plan="nan nan"; validate="nan nan"
  [ "$only" = validate ] || plan=$(run_timed "$work/plan-$n.log" playbooks/plan.yml -i "$inv/hosts.yml")
  [ "$only" = plan ] ||
    validate=$(run_timed "$work/validate-$n.log" playbooks/validate.yml -i "$inv/hosts.yml" --skip-tags validate_nodes)
  # "WALL CPU" each: two arguments each, unquoted on purpose ("nan nan" for a run left out by --only)
  # shellcheck disable=SC2086
  line=$(python3 -c '
import json, math, sys
n, plan, plan_cpu, validate, validate_cpu = int(sys.argv[1]), *map(float, sys.argv[2:])
def num(x):
    return None if math.isnan(x) else x
def ms(x):
    return None if math.isnan(x) else round(x * 1000 / n, 1)
print(json.dumps({"hosts": n, "plan_s": num(plan), "plan_ms_per_host": ms(plan), "plan_cpu_s": num(plan_cpu),
                  "validate_s": num(validate), "validate_ms_per_host": ms(validate),
                  "validate_cpu_s": num(validate_cpu)}))
' "$n" $plan $validate)
  echo "$line"
  results+=("$line")
done
printf '%s\n' "${results[@]}" | python3 -c '
import json, sys
rows = [json.loads(line) for line in sys.stdin if line.strip()]
def ratio(a, b, key):
    return None if a[key] is None or b[key] is None else round(b[key] / a[key], 2)
growth = []
for a, b in zip(rows, rows[1:]):
    growth.append({"from_hosts": a["hosts"], "to_hosts": b["hosts"], "hosts_ratio": round(b["hosts"] / a["hosts"], 2),
                   "plan_ratio": ratio(a, b, "plan_s"), "plan_cpu_ratio": ratio(a, b, "plan_cpu_s"),
                   "validate_ratio": ratio(a, b, "validate_s"), "validate_cpu_ratio": ratio(a, b, "validate_cpu_s")})
print(json.dumps({"growth": growth}))
'
