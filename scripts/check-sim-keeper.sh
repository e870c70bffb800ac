#!/usr/bin/env bash
# SIMULATION ONLY. Checks that a simulated cluster brought up by sim/cluster.sh (as `make sim` does) stays
# reachable for its whole life on a cgroup-v1 host: sim/cluster.sh up starts the cgroup keeper
# (sim/cgroup-keeper.sh), it runs detached while the cluster idles, a node restart (the trigger: starting or
# rebooting one node removes the other nodes' name=systemd cgroup folders) does not cut `podman exec` or SSH into
# the others, and sim/cluster.sh down stops the keeper. A control run without the keeper (SIM_CGROUP_KEEPER=0)
# must lose a node on such a host, so the check can tell. On a cgroup-v2 host the keeper is not needed: the
# check says so and only checks the cluster after the idle period.
#   scripts/check-sim-keeper.sh      SIM_KEEPER_IDLE_S (default 20): the idle period, in seconds (the keeper looks
#   every 50 ms: 20 s are some 400 of its rounds, and the `up` that started it has long exited)
# Uses its own node names, networks and state (SIM_PREFIX ascend-keeper), never the `make sim` cluster's.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export SIM_PREFIX=ascend-keeper SIM_MGMT_SUBNET=10.89.78 SIM_ROCE_SUBNET=192.168.178
export SIM_STATE=$repo/.cache/sim-keeper-check
idle=${SIM_KEEPER_IDLE_S:-20}
failed=0 passed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAILED: $*"; failed=$((failed + 1)); }
down() { sim/cluster.sh down >/dev/null 2>&1 || true; }
trap down EXIT
v1=false
if [ -d /sys/fs/cgroup/systemd ] && [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]; then v1=true; fi

reachable() {  # $1 node: podman exec and SSH (how Ansible reaches it) both answer
  local ip
  podman exec "$SIM_PREFIX-$1" true 2>/dev/null || return 1
  ip=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["_meta"]["hostvars"][sys.argv[2]]["ansible_host"])' \
       "$SIM_STATE/inventory.json" "$1")
  ssh -i "$SIM_STATE/id_ed25519" -o BatchMode=yes -o ConnectTimeout=5 -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "root@$ip" true
}
keeper_pid() { cat "$SIM_STATE/cgroup-keeper.pid" 2>/dev/null || true; }
# A live keeper (an exited one may linger as a zombie where nothing reaps it: its cmdline is empty).
keeper_alive() { [ -n "$1" ] && grep -q cgroup-keeper "/proc/$1/cmdline" 2>/dev/null; }

if $v1; then
  # Control: without the keeper, restarting node2 cuts node1 off (the failure `make sim` users saw).
  down
  SIM_CGROUP_KEEPER=0 sim/cluster.sh up --nodes 2 --npus 1 >/dev/null
  podman restart "$SIM_PREFIX-node2" >/dev/null
  sleep 3
  if podman exec "$SIM_PREFIX-node1" true 2>/dev/null; then
    echo "note: without the keeper this host kept node1 reachable after node2's restart (nothing to prevent here)"
  else
    ok "control: without the keeper, node1 is unreachable after node2 restarted"
  fi
  down
else
  echo "note: cgroup v2 host: sim/cluster.sh starts no keeper; checking the cluster after the idle period only"
fi

sim/cluster.sh up --nodes 2 --npus 1
pid=$(keeper_pid)
if $v1; then
  if keeper_alive "$pid"; then ok "the keeper runs (PID $pid) after up"
  else bad "no keeper running after sim/cluster.sh up"; fi
fi
echo "idle for ${idle}s, then node2 restarts, then idle again"
sleep "$idle"
podman restart "$SIM_PREFIX-node2" >/dev/null
sleep "$(( idle / 2 > 3 ? idle / 2 : 3 ))"
# node2 boots again (systemd, sshd): up to 60 s; node1 was never down and must answer at once.
for _ in $(seq 1 60); do reachable node2 2>/dev/null && break; sleep 1; done
for n in node1 node2; do
  if reachable "$n"; then ok "$n answers podman exec and SSH after the idle period and node2's restart"
  else bad "$n does not answer podman exec or SSH after the idle period and node2's restart"; fi
done
sim/cluster.sh down
trap - EXIT
if keeper_alive "$pid"; then bad "the keeper (PID $pid) still runs after sim/cluster.sh down"
elif $v1; then ok "sim/cluster.sh down stopped the keeper"; fi
echo "$passed passed, $failed failed"
exit $(( failed > 0 ))
