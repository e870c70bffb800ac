#!/usr/bin/env bash
# ansible-test sanity, offline. ansible-test needs the collection at
# .../ansible_collections/<namespace>/<name>, so the tracked files are copied there first; its venv
# bootstrap (normally a get-pip.py download) uses scripts/ansible-test-get-pip.py instead.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
venv=$repo/.venv
work=$repo/.cache/ansible-test/ansible_collections/ascendops/cluster
pip_version=$("$venv/bin/python" - <<'PY'
import re, pathlib, ansible_test
src = pathlib.Path(ansible_test.__file__).parent / "_internal/python_requirements.py"
print(re.search(r"pip='([0-9.]+)'", src.read_text()).group(1))
PY
)
cache=$HOME/.ansible/test/cache
mkdir -p "$cache"
cp "$repo/scripts/ansible-test-get-pip.py" "$cache/get_pip_${pip_version//./_}.py"

rm -rf "$work"; mkdir -p "$work"
# The collection's Ansible content only: the simulator, the trainer, the ascendops CLI and the harness
# are checked by ruff and pytest, not by Ansible's module rules (galaxy.yml keeps most of them out of the artifact).
(cd "$repo" && git ls-files -co --exclude-standard -z -- . ':!sim' ':!payload' ':!cli' ':!tests/cli' ':!molecule' ':!tests/sim' \
   ':!scripts' ':!tests/scripts' ':!inventories/sim' ':!conftest.py' ':!.config' | rsync -a --from0 --files-from=- ./ "$work/")
cd "$work"
git init -q . && git add -A >/dev/null 2>&1  # ansible-test lists files through git when present
py=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
PATH=$venv/bin:$PATH exec ansible-test sanity --venv --python "$py" --color no "$@"
