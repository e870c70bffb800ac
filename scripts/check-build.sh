#!/usr/bin/env bash
# Builds the collection artifact and checks it holds the collection and nothing of the test
# harness, the simulator, the ascendops CLI (a pip package of its own) or unreleased changelog fragments
# (galaxy.yml build_ignore).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/build
rm -rf "$out"; mkdir -p "$out"
(cd "$repo" && ansible-galaxy collection build --force --output-path "$out" >/dev/null)
tarball=$(ls "$out"/ascendops-cluster-*.tar.gz)
list=$(tar -tzf "$tarball")
bad=$(grep -E '^(sim|molecule|tests|scripts|cli|changelogs/fragments|\.venv|\.cache|\.collections|\.ci|\.git|\.config|inventories/sim)(/|$)|^payload/tests/|^conftest\.py$|^ansible\.cfg$' <<<"$list" || true)
if [ -n "$bad" ]; then echo "artifact holds files it must not:"; echo "$bad" | head -20; exit 1; fi
for must in MANIFEST.json FILES.json README.md LICENSE; do
  grep -qx "$must" <<<"$list" || { echo "artifact lacks $must"; exit 1; }
done
echo "collection artifact ok: $(basename "$tarball"), $(wc -l <<<"$list") entries"
