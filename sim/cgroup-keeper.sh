#!/usr/bin/env bash
# SIMULATION ONLY (test harness). On cgroup v1 hosts with podman's cgroupfs manager, starting or
# rebooting one systemd node container removes the name=systemd cgroup folders of the other running
# nodes (libpod_parent/libpod-<id>); `podman exec` into those nodes then fails ("error adding pid ...
# cgroup.procs: no such file") although the nodes run on. Multi-node scenarios need several nodes at
# once, so while they run this loop puts back any missing folder of a running simulated node.
# Nothing happens on cgroup v2 hosts or where the hierarchy is absent.
#   usage: sim/cgroup-keeper.sh   (runs until killed; scripts/molecule-all.sh starts and stops one for the
#   scenarios, sim/cluster.sh up one for the simulated cluster's life, which sim/cluster.sh down stops)
set -u
root=/sys/fs/cgroup/systemd/libpod_parent
n=0 ids=""
while true; do
  if [ -d "$root" ]; then
    # Refresh the list of nodes every ~2 s; check their folders every 50 ms.
    if [ $((n % 40)) -eq 0 ]; then
      ids=$(podman ps -q --no-trunc --filter label=owner=molecule 2>/dev/null
            podman ps -q --no-trunc --filter label=ascendops.sim.node 2>/dev/null)
    fi
    for id in $ids; do
      [ -d "$root/libpod-$id" ] || mkdir -p "$root/libpod-$id" 2>/dev/null
    done
  fi
  n=$((n + 1))
  sleep 0.05
done
