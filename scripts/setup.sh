#!/usr/bin/env bash
# One set-up for development, CI and the simulated cluster: host packages and podman settings
# (scripts/host-setup.sh), then .venv with the pinned toolchain (requirements.txt) and the trainer's
# dependencies (payload/requirements.txt), then the link that lets Ansible resolve this clone as the
# collection ascendops.cluster. Re-running does nothing when nothing changed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
"$repo/scripts/host-setup.sh"

python=${PYTHON:-}
if [ -z "$python" ]; then
  for p in python3.11 "$HOME/.pyenv/versions/3.11.7/bin/python3" python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      python=$p; break
    fi
  done
fi
[ -n "$python" ] || { echo "setup: Python 3.11 is required (ansible-core 2.19, torch 2.13 wheel)" >&2; exit 1; }

# pip warns about each missing local index folder: keep its real errors, drop that noise.
pipq() { "$@" 2> >(grep -v 'is ignored' >&2); }

stamp=.venv/.ascendops-stamp
want=$(cat requirements.txt payload/requirements.txt cli/pyproject.toml 2>/dev/null | sha256sum | cut -c1-16)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  pipq .venv/bin/pip install -q -r requirements.txt
  if [ -f payload/requirements.txt ]; then
    # torch first: deepspeed's setup imports it, so deepspeed builds without isolation.
    grep -E '^(torch|numpy)==' payload/requirements.txt > .venv/pre-payload.txt || true
    pipq .venv/bin/pip install -q -r .venv/pre-payload.txt
    DS_BUILD_OPS=0 pipq .venv/bin/pip install -q --no-build-isolation -r payload/requirements.txt
    pipq .venv/bin/pip install -q --no-deps --no-build-isolation -e payload
  fi
  # The `ascendops` console script (drift report), on the ansible-runner pinned above.
  pipq .venv/bin/pip install -q --no-deps --no-build-isolation -e cli
  .venv/bin/python -c 'import ansible, molecule, pytest' || { echo "setup: toolchain install failed" >&2; exit 1; }
  echo "$want" > "$stamp"
fi

mkdir -p .collections/ansible_collections/ascendops
ln -sfn ../../.. .collections/ansible_collections/ascendops/cluster
echo "setup: ready (.venv, podman, collection link)"
