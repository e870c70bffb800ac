#!/usr/bin/env bash
# SIMULATION ONLY. Prepared node images, built once per run so that scenarios starting later in
# the flow do not install the earlier stages again:
#   localhost/ascendops-sim-node:driver = the node image ($SIM_IMAGE) after the collection's
#   preflight and npu_driver stages at the current simulated versions (sim/image/layers/driver.yml).
# The layer is made the way a user would: a node is started from $SIM_IMAGE, the playbook runs
# against it over SSH (as molecule reaches its nodes), the fresh install is verified (what the
# former npu_driver scenario proved: molecule/shared/test_driver_layer.py), the node is stopped and committed. Then the
# image is checked: a node started from it boots with the driver running and npu-smi healthy, the
# same playbook changes nothing (changed=0), and so does its --check --diff. Rebuilt only when its inputs changed (the base image, the
# roles, playbooks and plugins, the simulated packages and versions, this script).
#   usage: sim/image/layers.sh [--force]
#   SIM_DRIVER_IMAGE names the result (default: the :driver tag, or <SIM_IMAGE>-driver for another tag).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
base=${SIM_IMAGE:-localhost/ascendops-sim-node:latest}
if [ -z "${SIM_DRIVER_IMAGE:-}" ]; then
  case "$base" in *:latest) SIM_DRIVER_IMAGE=${base%:latest}:driver ;; *) SIM_DRIVER_IMAGE=$base-driver ;; esac
fi
image=$SIM_DRIVER_IMAGE
cache=${SIM_CACHE:-$repo/.cache/sim}
force=${1:-}
name=${ASCENDOPS_MOLECULE_PREFIX:-ascendops}-layer-driver
export PATH=$repo/.venv/bin:$PATH ANSIBLE_CONFIG=$repo/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH=$repo/.collections ANSIBLE_ROLES_PATH=$repo/roles ANSIBLE_FORCE_COLOR=0
mkdir -p "$cache"

podman image exists "$base" || { echo "layers.sh: $base is missing (sim/image/build.sh)" >&2; exit 1; }
[ -f "$repo/sim/build/packages/current/SHA256SUMS" ] ||
  { echo "layers.sh: no simulated packages (sim/packages/build-all.sh)" >&2; exit 1; }

stamp=$( { podman image inspect --format '{{.Id}}' "$base"
           (cd "$repo" && find roles plugins playbooks sim/image/layers sim/image/layers.sh releases meta \
              molecule/conftest.py molecule/ascend_verify.py molecule/shared/test_driver_layer.py \
              -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum)
           cat "$repo/sim/build/packages/current/SHA256SUMS"; } | sha256sum | cut -c1-16)
if [ "$force" != --force ] && podman image exists "$image" &&
   [ "$(podman image inspect --format '{{ index .Labels "ascendops.sim.layer" }}' "$image")" = "$stamp" ]; then
  echo "layer image $image is up to date ($stamp)"
  exit 0
fi

work=$(mktemp -d)
cleanup() { podman rm -f -t 5 "$name" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

start_node() {  # as molecule's create (molecule/shared/create.yml) starts a node
  podman rm -f -t 5 "$name" >/dev/null 2>&1 || true
  podman run -d --name "$name" --hostname layer-driver --privileged --systemd=always --cgroupns=private \
    --restart=always "$1" /sbin/init >/dev/null
  local state="" i
  for i in $(seq 1 60); do
    state=$(podman exec "$name" systemctl is-system-running --wait 2>/dev/null || true)
    case "$state" in running|degraded) return 0 ;; esac
    sleep 1
  done
  echo "layers.sh: $name did not boot (systemd: ${state:-no answer})" >&2; exit 1
}

# Ansible reaches the node over SSH, as molecule does (.config/molecule/config.yml): pipelining and
# ControlPersist make a task about 0.2 s instead of the podman connection's 0.9. ssh's ProxyCommand
# runs the node's sshd in inetd mode through `podman exec`; the key is molecule's, authorized on the
# node here and removed again before the node is committed.
key=$repo/.cache/molecule/id_ed25519
authorize() {
  [ -f "$key" ] || { mkdir -p -m 700 "$(dirname "$key")"
                     ssh-keygen -q -t ed25519 -N "" -C ascendops-molecule -f "$key"; }
  podman exec -i "$name" sh -c 'umask 077; mkdir -p /root/.ssh; cat > /root/.ssh/authorized_keys' < "$key.pub"
}

converge() {  # the layer's playbook against the node ($1: log name, then extra arguments); prints the recap line
  cat > "$work/hosts.yml" <<INV
all:
  children:
    npu_nodes:
      hosts:
        $name:
          ansible_connection: ssh
          ansible_user: root
          ansible_ssh_private_key_file: $key
          ansible_ssh_common_args: >-
            -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR
            -o ProxyCommand="podman exec -i %h /usr/sbin/sshd -i"
          ansible_python_interpreter: /usr/bin/python3
          sim_repo: $repo
INV
  ansible-playbook -i "$work/hosts.yml" -e "@$here/layers/sim-node.yml" "${@:2}" "$here/layers/driver.yml" \
    >"$cache/layer-driver-$1.log" 2>&1 || { tail -40 "$cache/layer-driver-$1.log"; exit 1; }
  grep -E "^$name +:" "$cache/layer-driver-$1.log"
}

echo "layer $image: converging preflight + npu_driver on a node from $base"
start_node "$base"
authorize
converge build
# The fresh install is what a user checks after the driver stage (versions and install record, the
# runtime user, device nodes, npu-smi, driver then firmware then one reboot, the OS prepared): the
# verifier molecule/shared/test_driver_layer.py, through the same podman backend as molecule's.
printf 'all:\n  hosts:\n    %s: {}\n' "$name" > "$work/verify.yml"
MOLECULE_INVENTORY_FILE=$work/verify.yml MOLECULE_PROJECT_DIRECTORY=$repo \
  pytest -q -p no:cacheprovider --rootdir "$repo" "$repo/molecule/shared/test_driver_layer.py" ||
  { echo "layers.sh: the fresh driver install fails its checks (above)" >&2; exit 1; }
# Host keys are made at first boot of each node, not shared by every node of the image.
podman exec "$name" sh -c 'rm -f /etc/ssh/ssh_host_* /root/.ssh/authorized_keys'
podman stop -t 30 "$name" >/dev/null
podman commit -q --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL=SIGRTMIN+3' \
  --change "LABEL ascendops.sim.layer=$stamp" "$name" "$image.tmp" >/dev/null

echo "layer $image: checking a node started from it"
start_node "$image.tmp"
authorize
state=$(podman exec "$name" ascend-sim state)
python3 - "$state" <<'PY'
import json, sys
st = json.loads(sys.argv[1])
assert st["running"]["driver"] and st["running"]["driver"] == st["installed"]["driver"], st["running"]
assert st["running"]["firmware"] == st["installed"]["firmware"], st["running"]
assert all(n["health"] == "OK" for n in st["npus"].values()), st["npus"]
PY
podman exec "$name" npu-smi info >/dev/null || { echo "layers.sh: npu-smi fails on the prepared node" >&2; exit 1; }
recap=$(converge check)
echo "$recap"
case "$recap" in *" changed=0 "*) ;; *) echo "layers.sh: the prepared node is not converged: $recap" >&2; exit 1 ;; esac
# --check --diff on the converged node: passes and reports nothing to change.
recap=$(converge check-mode --check --diff)
echo "$recap"
case "$recap" in *" changed=0 "*" failed=0 "*) ;; *) echo "layers.sh: --check --diff on the prepared node: $recap" >&2; exit 1 ;; esac
podman tag "$image.tmp" "$image"
podman rmi "$image.tmp" >/dev/null
echo "built $image ($stamp)"
