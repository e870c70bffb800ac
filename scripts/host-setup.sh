#!/usr/bin/env bash
# Host set-up for ascendops development, CI and the simulated cluster.
# Installs the Debian packages the toolchain needs when they are missing and writes a podman
# configuration that works on these hosts: runc (crun fails on hybrid cgroups), cgroupfs, and
# default ulimits no higher than the hard limits of this shell. Safe to re-run.
set -euo pipefail

need=()
for pair in podman:podman runc:runc debootstrap:debootstrap makeself:makeself ssh:openssh-client \
            ip:iproute2 rsync:rsync; do
  cmd=${pair%%:*}; pkg=${pair##*:}
  command -v "$cmd" >/dev/null 2>&1 || need+=("$pkg")
done
# aardvark/netavark or CNI plugins are needed for podman networks with fixed addresses.
[ -d /usr/lib/cni ] || [ -x /usr/libexec/podman/netavark ] || need+=(containernetworking-plugins)
dpkg -s uidmap >/dev/null 2>&1 || need+=(uidmap)
if [ ${#need[@]} -gt 0 ]; then
  echo "host-setup: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# Containers get at most 16384 for both: runc refused higher nproc values on these hosts even
# below `ulimit -Hu` (seen: 20000 ok, 40000 refused with "error setting rlimit type 6").
hard_n=$(ulimit -Hn); hard_u=$(ulimit -Hu)
[ "$hard_n" = unlimited ] && hard_n=1048576
[ "$hard_u" = unlimited ] && hard_u=65536
nofile=$(( hard_n < 16384 ? hard_n : 16384 ))
nproc=$(( hard_u < 16384 ? hard_u : 16384 ))

conf_dir=/etc/containers
[ "$(id -u)" -eq 0 ] || conf_dir="$HOME/.config/containers"
mkdir -p "$conf_dir"
want=$(cat <<CONF
# Written by ascendops scripts/host-setup.sh
[containers]
default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=${nproc}:${nproc}"]
pids_limit = 0

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
)
if [ ! -f "$conf_dir/containers.conf" ] || [ "$(cat "$conf_dir/containers.conf")" != "$want" ]; then
  printf '%s\n' "$want" > "$conf_dir/containers.conf"
  echo "host-setup: wrote $conf_dir/containers.conf"
fi
podman info --format '{{.Host.OCIRuntime.Name}} {{.Host.CgroupManager}}' >/dev/null
