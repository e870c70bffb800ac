#!/usr/bin/env bash
# `make test` step: the changelog fragments (changelogs/fragments/) pass `antsibull-changelog lint`, and
# CHANGELOG.md is what antsibull-changelog generates from them. `--write` writes CHANGELOG.md again.
#
# The next release is not cut yet, so CHANGELOG.md is generated in a throw-away copy (galaxy.yml, meta,
# plugins, roles and changelogs of this working tree under ansible_collections/<namespace>/<name>):
# `antsibull-changelog release` there moves the fragments into that copy's changelogs/changelog.yaml and
# writes its CHANGELOG.md; only that CHANGELOG.md comes back (or is compared). The fragments here stay.
# The version is galaxy.yml's; the release date is fixed (CHANGELOG.md does not print it, and a date
# of the day would make the copy's changelog.yaml differ from run to run). The plugin and module lists
# come from ansible-doc on the copy, so a new plugin also needs `--write`.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export PATH=$repo/.venv/bin:$PATH
write=0
case "${1:-}" in
  --write) write=1 ;;
  "") ;;
  *) echo "usage: $0 [--write]" >&2; exit 2 ;;
esac

antsibull-changelog lint

galaxy_field() {  # a top-level scalar of galaxy.yml
  python3 -c 'import sys, yaml; print(yaml.safe_load(open("galaxy.yml"))[sys.argv[1]])' "$1"
}
namespace=$(galaxy_field namespace)
name=$(galaxy_field name)
version=$(galaxy_field version)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
copy=$tmp/ansible_collections/$namespace/$name
mkdir -p "$copy"
cp -a galaxy.yml meta plugins roles "$copy"/
mkdir -p "$copy/changelogs"
cp -a changelogs/config.yaml changelogs/fragments "$copy/changelogs/"
# A release already recorded here (changelogs/changelog.yaml) is the base the fragments add to.
if [ -f changelogs/changelog.yaml ]; then cp -a changelogs/changelog.yaml "$copy/changelogs/"; fi
find "$copy" -name __pycache__ -prune -exec rm -rf {} +

# The copy's own Ansible settings only: not this checkout's ansible.cfg (its collections path and
# callbacks) and no collection copy under ~/.ansible standing in for the one under test.
(
  cd "$copy"
  unset ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH ANSIBLE_COLLECTIONS_PATHS
  export ANSIBLE_HOME=$tmp/ansible-home
  # ansible-doc warns about each filter without its own documentation; the log keeps them in case
  # the release fails.
  if ! antsibull-changelog release --version "$version" --date 2000-01-01 >"$tmp/release.log" 2>&1; then
    cat "$tmp/release.log" >&2
    echo "check-changelog: antsibull-changelog release failed in a copy of the tree (log above)" >&2
    exit 1
  fi
)

if [ "$write" = 1 ]; then
  if cmp -s "$copy/CHANGELOG.md" CHANGELOG.md; then
    echo "CHANGELOG.md is current"
  else
    cp "$copy/CHANGELOG.md" CHANGELOG.md
    echo "CHANGELOG.md written from changelogs/fragments/"
  fi
  exit 0
fi
if ! diff -u CHANGELOG.md "$copy/CHANGELOG.md"; then
  echo "check-changelog: CHANGELOG.md is not what changelogs/fragments/ generate (diff above):" \
    "run scripts/check-changelog.sh --write and commit it" >&2
  exit 1
fi
echo "CHANGELOG.md is current"
