#!/usr/bin/env bash
# SIMULATION ONLY. Brings the simulated Ascend cluster up or down: N privileged podman containers
# running systemd, each a "server" with its own hostname, a fixed address on a management network
# (Ansible reaches it over SSH with a generated key, like a real server), a second network that
# stands in for the RoCE fabric of the device NICs, a volume for /var/lib/docker so a container
# engine can run inside, and one named volume mounted at the same path in every node: the nodes'
# shared file system for the job's data and checkpoints (inventories/sim: shared_storage_type
# existing at /mnt/ascendops; open to every user and sticky, like /tmp).
# The simulated hardware (NPU count and model) is written into each node. `down` removes all of it.
#
#   sim/cluster.sh up [--nodes N] [--npus M] [--model 910B1]
#   sim/cluster.sh down
#   sim/cluster.sh status
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
image=${SIM_IMAGE:-localhost/ascendops-sim-node:latest}
state=${SIM_STATE:-$repo/.cache/sim}
prefix=${SIM_PREFIX:-ascend-sim}
mgmt_net=${prefix}-mgmt
roce_net=${prefix}-roce
mgmt_cidr=${SIM_MGMT_SUBNET:-10.89.10}     # nodes: .11, .12, ...
roce_cidr=${SIM_ROCE_SUBNET:-192.168.100}  # node interfaces .2..; device IPs from the IP plan
key=$state/id_ed25519
shared_vol=${prefix}-shared
shared_path=/mnt/ascendops   # inventories/sim/group_vars/npu_nodes/shared_storage.yml names it

nodes=2; npus=2; model=910B1
cmd=${1:-}; shift || true
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --npus) npus=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

# The cgroup keeper (sim/cgroup-keeper.sh) for the cluster's life: on a cgroup-v1 host, starting or rebooting
# one node removes the other nodes' name=systemd cgroup folders, after which `podman exec` into them fails
# (seen about an hour after `make sim`). `up` starts one (detached, its PID in $state), `down` stops it.
keeper_pid=$state/cgroup-keeper.pid
keeper_running() {
  local pid
  pid=$(cat "$keeper_pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q cgroup-keeper "/proc/$pid/cmdline" 2>/dev/null
}
keeper_start() {  # SIM_CGROUP_KEEPER=0: none (to show what it prevents)
  [ "${SIM_CGROUP_KEEPER:-1}" != 0 ] || return 0
  [ -d /sys/fs/cgroup/systemd ] && [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ] || return 0
  keeper_running && return 0
  mkdir -p "$state"
  setsid "$here/cgroup-keeper.sh" </dev/null >"$state/cgroup-keeper.log" 2>&1 &
  echo $! > "$keeper_pid"
  echo "cgroup keeper started (PID $(cat "$keeper_pid"), stopped by sim/cluster.sh down)"
}
keeper_stop() {
  local i
  if keeper_running; then
    kill "$(cat "$keeper_pid")" 2>/dev/null || true
    for i in $(seq 1 50); do keeper_running || break; sleep 0.1; done
  fi
  rm -f "$keeper_pid"
}

node_names() { podman ps -a --filter "label=ascendops.sim.node" --format '{{.Names}}' | sort; }

down() {
  for n in $(node_names); do podman rm -f -t 5 "$n" >/dev/null; done
  for v in $(podman volume ls --filter "label=ascendops.sim.node" --format '{{.Name}}'); do
    podman volume rm -f "$v" >/dev/null
  done
  for net in "$mgmt_net" "$roce_net"; do
    podman network exists "$net" && podman network rm -f "$net" >/dev/null
  done
  rm -f "$state/inventory.json"
  keeper_stop
  # Ansible's fact cache (ansible.cfg: .cache/facts, 10 minutes) still holds the removed nodes' facts:
  # a node brought up again under the same name has other interfaces (podman's ethN order varies), and
  # the launch stage took gloo's interface from the stale facts (the 4-node pre-flight failed).
  # (file names: the host name, after a prefix some ansible-core versions add, e.g. s1_node2)
  [ -d "$repo/.cache/facts" ] && find "$repo/.cache/facts" -maxdepth 1 -type f -regex '.*[_/]node[0-9]+' -delete
  echo "simulated cluster removed"
}

wait_ssh() {
  local ip=$1 i
  for i in $(seq 1 60); do
    if ssh -i "$key" -o BatchMode=yes -o ConnectTimeout=2 -o StrictHostKeyChecking=no \
         -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "root@$ip" true 2>/dev/null; then
      return 0
    fi
    sleep 1
  done
  echo "node $ip did not answer on SSH within 60 s" >&2
  return 1
}

up() {
  "$repo/scripts/host-setup.sh"
  "$here/image/build.sh"
  mkdir -p "$state"
  [ -f "$key" ] || ssh-keygen -q -t ed25519 -N '' -C ascendops-sim -f "$key"
  podman network exists "$mgmt_net" ||
    podman network create --subnet "$mgmt_cidr.0/24" --label ascendops.sim.node "$mgmt_net" >/dev/null
  podman network exists "$roce_net" ||
    podman network create --subnet "$roce_cidr.0/24" --label ascendops.sim.node "$roce_net" >/dev/null
  podman volume exists "$shared_vol" ||
    podman volume create --label ascendops.sim.node=shared "$shared_vol" >/dev/null
  keeper_start
  local i name ip iface hosts=()
  for i in $(seq 1 "$nodes"); do
    name=node$i; ip=$mgmt_cidr.$((10 + i))
    if ! podman container exists "$prefix-$name"; then
      podman volume exists "$prefix-$name-docker" ||
        podman volume create --label ascendops.sim.node="$name" "$prefix-$name-docker" >/dev/null
      # A private cgroup namespace: Docker inside the node cannot mount the host's cgroup v1 tree.
      podman run -d --name "$prefix-$name" --hostname "$name" --privileged --cgroupns=private \
        --label ascendops.sim.node="$name" --restart=always \
        --network "$mgmt_net:ip=$ip" --network "$roce_net:ip=$roce_cidr.$((1 + i))" \
        -v "$prefix-$name-docker:/var/lib/docker" \
        -v "$shared_vol:$shared_path" \
        "$image" >/dev/null
    fi
    if ! podman exec "$prefix-$name" mountpoint -q "$shared_path"; then
      echo "$prefix-$name has no shared file system at $shared_path (made by an older sim/cluster.sh): make sim-down, then up again" >&2
      exit 1
    fi
    # A site exports its file system writable for the job's user; here open to all, sticky (the
    # runtime user is made later, by the preflight stage).
    podman exec "$prefix-$name" chmod 1777 "$shared_path"
    podman exec -i "$prefix-$name" sh -c 'install -d -m 0700 /root/.ssh && cat > /root/.ssh/authorized_keys' < "$key.pub"
    # The interface on the device-NIC network becomes the simulated device NICs' fabric: found by its
    # address (podman does not keep --network order: eth1 was once the management network, which the
    # stand-in then took over, and SSH never answered). Gone already when the node was up before.
    iface=$(podman exec "$prefix-$name" ip -o -4 addr show to "$roce_cidr.$((1 + i))/32" | awk '{print $2; exit}')
    podman exec "$prefix-$name" ascend-sim hardware --npus "$npus" --model "$model" \
      ${iface:+--nic-interface "$iface"} >/dev/null
    # SIMULATION ONLY, for the trainer's container (inventories/sim/group_vars/all/launch.yml mounts both):
    # the rank shim (sim/rank-device: each simulated rank holds its /dev/davinciN, the stand-in's busy
    # rule) and the stand-in state's lock open to the job's user (npu-smi takes a shared lock to read it).
    podman exec "$prefix-$name" rm -rf /opt/ascend-sim-rank
    podman cp "$here/rank-device" "$prefix-$name:/opt/ascend-sim-rank"
    podman exec "$prefix-$name" sh -c 'chmod -R a+rX /opt/ascend-sim-rank && mkdir -p /var/lib/ascend-sim &&
      touch /var/lib/ascend-sim/state.lock && chmod 0666 /var/lib/ascend-sim/state.lock'
    hosts+=("$name=$ip")
  done
  write_inventory "${hosts[@]}"
  for i in $(seq 1 "$nodes"); do wait_ssh "$mgmt_cidr.$((10 + i))"; done
  printf 'SIM_NODES=%s\nSIM_NPUS=%s\nSIM_MODEL=%s\n' "$nodes" "$npus" "$model" > "$state/cluster.env"
  echo "simulated cluster up: $nodes nodes x $npus NPUs ($model), shared file system $shared_path (volume $shared_vol); inventory inventories/sim"
}

# The cluster's nodes for inventories/sim (its nodes.py reads this file; git ignores .cache).
write_inventory() {
  python3 - "$state/inventory.json" "$@" <<'PY'
import json, sys
out, pairs = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
inv = {"npu_nodes": {"hosts": [n for n, _ in pairs]},
       "_meta": {"hostvars": {n: {"ansible_host": ip} for n, ip in pairs}}}
with open(out + ".tmp", "w", encoding="utf-8") as f:
    json.dump(inv, f, indent=2)
PY
  mv "$state/inventory.json.tmp" "$state/inventory.json"
}

status() {
  podman ps -a --filter "label=ascendops.sim.node" --format '{{.Names}}  {{.Status}}  {{.Networks}}'
}

case "$cmd" in
  up) up ;;
  down) down ;;
  status) status; if keeper_running; then echo "cgroup keeper: PID $(cat "$keeper_pid")"; fi ;;
  *) sed -n '2,12p' "$0"; exit 2 ;;
esac
