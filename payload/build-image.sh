#!/usr/bin/env bash
# Build the trainer image with podman and save it as a tarball (for `podman load` on the nodes).
#
#   payload/build-image.sh [OUT_TAR]          default OUT_TAR: .cache/payload/ascendops-trainer.tar
#
# Environment:
#   BASE_IMAGE   base image (default localhost/ascendops-sim-base:bookworm; an Ascend PyTorch image on real clusters)
#   TORCH_SPEC   torch to install (default torch==2.13.0+cpu from WHEEL_DIR; "" keeps the base image's torch)
#   WHEEL_DIR    local wheel directory mounted into the build (default /opt/wheels)
#   PYTHON       interpreter in the base image (default python3)
#   IMAGE_TAG    tag of the built image (default localhost/ascendops-trainer:latest)
#   FORCE        1: rebuild even when an image of the same inputs (label ascendops.payload.stamp) exists
#   CA_BUNDLE    CA bundle pip should trust inside the build (default: $PIP_CERT or $SSL_CERT_FILE when
#                set, i.e. the host's bundle, needed behind a TLS-inspecting proxy; "none" to disable)
#   RELEASE      release the image is built from (a name in releases/ or a manifest path, e.g.
#                910b-cann8.2.rc1 for real NPUs): base image, torch, torch_npu, replacement pins, image tag
#                and the ascendops.release label come from it (release-build-args.py). Unset: "sim" when
#                BASE_IMAGE and TORCH_SPEC are the defaults (the CPU image), else none (no label).
#   ARCH         aarch64 | x86_64 of the nodes, for RELEASE (default: this machine's)
#   HOST_PYTHON  Python with PyYAML that renders RELEASE (default: the repository's .venv, else python3)
# Nothing is pulled (--pull=never): the base image must already be in local storage. PyPI is used for
# the pinned Python dependencies.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${1:-.cache/payload/ascendops-trainer.tar}
SIM_BASE=localhost/ascendops-sim-base:bookworm
SIM_TORCH=torch==2.13.0+cpu
if [ -z "${RELEASE:-}" ] && [ "${BASE_IMAGE:-$SIM_BASE}" = "$SIM_BASE" ] && [ "${TORCH_SPEC-$SIM_TORCH}" = "$SIM_TORCH" ]; then
    RELEASE=sim
fi
BASE_IMAGE=${BASE_IMAGE:-$SIM_BASE}
TORCH_SPEC=${TORCH_SPEC-$SIM_TORCH}
WHEEL_DIR=${WHEEL_DIR:-/opt/wheels}
user_tag=${IMAGE_TAG:-}
user_python=${PYTHON:-}
TORCH_NPU_SPEC="" PIN_SPECS="" TORCH_INDEX_URL="" RELEASE_LABEL=""
if [ -n "${RELEASE:-}" ]; then
    HOST_PYTHON=${HOST_PYTHON:-python3}
    [ -x "$HERE/../.venv/bin/python" ] && [ "$HOST_PYTHON" = python3 ] && HOST_PYTHON="$HERE/../.venv/bin/python"
    if ! settings=$("$HOST_PYTHON" "$HERE/release-build-args.py" "$RELEASE" ${ARCH:+"$ARCH"}); then
        echo "build-image.sh: cannot build the image of release $RELEASE (see the lines above)" >&2
        exit 2
    fi
    # IMAGE_TAG BASE_IMAGE PYTHON TORCH_SPEC TORCH_NPU_SPEC PIN_SPECS TORCH_INDEX_URL RELEASE_LABEL (shell-quoted)
    eval "$settings"
    echo "build-image.sh: release $RELEASE: base $BASE_IMAGE, $TORCH_SPEC ${TORCH_NPU_SPEC:-(no torch_npu)}, pins: $PIN_SPECS"
fi
IMAGE_TAG=${user_tag:-${IMAGE_TAG:-localhost/ascendops-trainer:latest}}
PYTHON=${user_python:-${PYTHON:-python3}}

if ! podman image exists "$BASE_IMAGE"; then
    echo "build-image.sh: base image $BASE_IMAGE is not in local podman storage (nothing is pulled)" >&2
    exit 2
fi
# Content hash of what goes into the image (the payload's files, the base image, the torch spec): an
# image with the same stamp is reused (FORCE=1 rebuilds), and saved again when OUT is missing or was
# saved from other inputs (OUT.stamp: an archive left from an older build is never taken as current).
stamp=$( { (cd "$HERE" && find Containerfile requirements.txt check-image-env.py container-entrypoint.sh \
              pyproject.toml README.md src -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 |
            sort -z | xargs -0 sha256sum)
          podman image inspect --format '{{.Id}}' "$BASE_IMAGE"; echo "$TORCH_SPEC ${PYTHON:-python3}"
          echo "$TORCH_NPU_SPEC|$PIN_SPECS|$TORCH_INDEX_URL|$RELEASE_LABEL"; } |
        sha256sum | cut -c1-16)
if [ "${FORCE:-0}" != 1 ] && podman image exists "$IMAGE_TAG" &&
   [ "$(podman image inspect --format '{{ index .Labels "ascendops.payload.stamp" }}' "$IMAGE_TAG")" = "$stamp" ]; then
    echo "trainer image $IMAGE_TAG is up to date ($stamp)"
    if [ -s "$OUT" ] && [ "$(cat "$OUT.stamp" 2>/dev/null)" = "$stamp" ]; then exit 0; fi
    mkdir -p "$(dirname "$OUT")"
    podman save --output "$OUT.tmp" "$IMAGE_TAG" && mv -f "$OUT.tmp" "$OUT"
    echo "$stamp" > "$OUT.stamp"
    echo "saved $IMAGE_TAG to $OUT"
    exit 0
fi
# Preflight in the base image: its Python (and, with TORCH_SPEC="", its torch/torch_npu) against the pins.
check_args=()
[ -z "$TORCH_SPEC" ] && check_args+=(--torch-from-image)
if ! podman run --rm --pull=never --entrypoint "${PYTHON:-python3}" --volume "$HERE:/payload:ro" \
        "$BASE_IMAGE" /payload/check-image-env.py /payload/requirements.txt "${check_args[@]}"; then
    echo "build-image.sh: the base image $BASE_IMAGE does not fit the trainer's pins (see the lines above)" >&2
    exit 2
fi
CA_BUNDLE=${CA_BUNDLE:-${PIP_CERT:-${SSL_CERT_FILE:-}}}
volumes=()
build_args=()
if [ -n "$CA_BUNDLE" ] && [ "$CA_BUNDLE" != none ] && [ -f "$CA_BUNDLE" ]; then
    volumes+=(--volume "$(readlink -f "$CA_BUNDLE"):/etc/ascendops-build-ca.crt:ro")
    build_args+=(--build-arg "BUILD_CA=/etc/ascendops-build-ca.crt")
fi
if [ -d "$WHEEL_DIR" ]; then
    volumes+=(--volume "$WHEEL_DIR:/opt/wheels:ro")
elif [[ "$TORCH_SPEC" == *+cpu* ]] && [ -z "$TORCH_INDEX_URL" ]; then
    echo "build-image.sh: $TORCH_SPEC needs the wheel directory $WHEEL_DIR" >&2
    exit 2
fi

podman build --pull=never \
    --file "$HERE/Containerfile" \
    --build-arg "PYTHON=${PYTHON:-python3}" \
    --build-arg "BASE_IMAGE=$BASE_IMAGE" \
    --build-arg "TORCH_SPEC=$TORCH_SPEC" \
    --build-arg "TORCH_NPU_SPEC=$TORCH_NPU_SPEC" \
    --build-arg "PIN_SPECS=$PIN_SPECS" \
    --build-arg "TORCH_INDEX_URL=$TORCH_INDEX_URL" \
    --build-arg "RELEASE_LABEL=$RELEASE_LABEL" \
    "${build_args[@]}" \
    "${volumes[@]}" \
    --label "ascendops.payload.stamp=$stamp" \
    --label "ascendops.release=$RELEASE_LABEL" \
    --tag "$IMAGE_TAG" \
    "$HERE"

mkdir -p "$(dirname "$OUT")"
rm -f "$OUT.tmp"
podman save --output "$OUT.tmp" "$IMAGE_TAG"
mv -f "$OUT.tmp" "$OUT"
echo "$stamp" > "$OUT.stamp"
echo "saved $IMAGE_TAG to $OUT"
