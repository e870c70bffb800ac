#!/usr/bin/env bash
# SIMULATION ONLY. Builds the simulated Ascend node image: Debian 12 with systemd as PID 1, sshd
# and python3, made with debootstrap from Debian's archive and imported into podman (no container
# registry is reachable). The NPU stand-ins (sim/npu) are copied in as /opt/ascend-sim.
# Re-running is cheap: the rootfs tarball is cached and the image is rebuilt only when missing or
# when the stand-ins changed.
#   usage: sim/image/build.sh [--force]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
image=${SIM_IMAGE:-localhost/ascendops-sim-node:latest}
cache=${SIM_CACHE:-$repo/.cache/sim}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
force=${1:-}
mkdir -p "$cache"
rootfs_tar=$cache/rootfs-bookworm.tar

# Content hash of everything that goes into the final layer, so a change rebuilds the image.
stamp=$( (cd "$repo" && find sim/image sim/npu -type f ! -name '*.pyc' -print0 | sort -z |
          xargs -0 sha256sum) | sha256sum | cut -c1-16)

if [ "$force" != --force ] && podman image exists "$image" &&
   [ "$(podman image inspect --format '{{ index .Labels "ascendops.sim.stamp" }}' "$image")" = "$stamp" ]; then
  echo "sim image $image is up to date ($stamp)"
  exit 0
fi

if [ ! -s "$rootfs_tar" ] || [ "$force" = --force ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  echo "debootstrap bookworm into $work (a few minutes)"
  debootstrap --variant=minbase \
    --include=systemd,systemd-sysv,dbus,openssh-server,python3,python3-apt,sudo,iproute2,iputils-ping,procps,ca-certificates,gnupg,kmod,less,curl,tar,gzip,xz-utils,file,locales \
    bookworm "$work/rootfs" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
    { tail -20 "$cache/debootstrap.log"; exit 1; }
  chroot "$work/rootfs" apt-get clean
  rm -rf "$work/rootfs/var/lib/apt/lists/"*
  tar -C "$work/rootfs" -cf "$rootfs_tar.tmp" .
  mv "$rootfs_tar.tmp" "$rootfs_tar"
fi

base=localhost/ascendops-sim-base:bookworm
if ! podman image exists "$base" || [ "$force" = --force ]; then
  podman import --change 'CMD ["/sbin/init"]' "$rootfs_tar" "$base" >/dev/null
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp -a "$here/Containerfile" "$here/rootfs" "$ctx/"
mkdir -p "$ctx/ascend-sim"
cp -a "$repo/sim/npu/." "$ctx/ascend-sim/" 2>/dev/null || true
podman build --build-arg BASE="$base" --label "ascendops.sim.stamp=$stamp" -t "$image" "$ctx" >"$cache/build.log" 2>&1 ||
  { tail -30 "$cache/build.log"; exit 1; }
echo "built $image ($stamp)"
