"""The container_runtime role's image delivery (tasks/image.yml) from a registry without a pinned digest, on this
machine as a local node: a fake engine socket (tests/unit/plugins/fake_engine.py) that holds the image under its
name (read through community.docker.docker_image_info) and whose registry now serves another digest for the tag,
and a fake `docker` CLI on PATH that records any call (the role makes none here).
`--check --diff` reports the moved tag as a change with both digests (what `ascendops drift` lists); a run warns,
naming the host, the image, both digests and the fix, changes nothing and pulls nothing. An unreachable registry
warns and the run goes on; the archive path and container_runtime_registry_drift_check=false never ask."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_collections.ascendops.cluster.tests.unit.plugins.fake_engine import (
    IMAGE,
    IMAGE_ID,
    NEW,
    OLD,
    REPO,
    FakeEngine,
    distribution_index,
    image_inspect,
)

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TASK = "Container runtime | Report a registry tag moved since the node pulled it (read-only, never pulled)"


def run_image_tasks(tmp_path, engine, *args, **settings):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    calls = tmp_path / "docker-calls"
    # The image is read through the engine's API (community.docker): the CLI must not be asked at all.
    (bin_dir / "docker").write_text(
        "#!/bin/sh\n"
        f"echo \"$*\" >> '{calls}'\n"
        "echo \"fake docker: unexpected $*\" >&2; exit 3\n")
    (bin_dir / "docker").chmod(0o755)
    (tmp_path / "inv.yml").write_text(yaml.safe_dump({"all": {"children": {"npu_nodes": {"hosts": {"node3": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}))
    role_vars = {"container_runtime_image_source": "registry", "container_runtime_image": IMAGE,
                 "container_runtime_image_digest": "", "container_runtime_registry_pull": "missing",
                 "__container_runtime_docker_host": engine.host, **settings}
    (tmp_path / "pb.yml").write_text(yaml.safe_dump([{
        "name": "The container_runtime role's image delivery on a local node", "hosts": "npu_nodes",
        "gather_facts": False,
        "tasks": [{"name": "Container runtime | image.yml", "ansible.builtin.include_role": {
            "name": "ascendops.cluster.container_runtime", "tasks_from": "image"}, "vars": role_vars}]}],
        sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               PATH=f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "inv.yml"),
                           str(tmp_path / "pb.yml"), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    docker_calls = calls.read_text().splitlines() if calls.exists() else []
    calls.unlink(missing_ok=True)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split()), docker_calls


def moved():
    return FakeEngine(images={IMAGE: image_inspect([f"{REPO}@{OLD}"])},
                      distribution={IMAGE: (200, distribution_index(NEW))})


def drift_task(out):
    """What the drift task printed (its diff and status), up to the next task."""
    return out.split(f"{TASK}]", 1)[1].split(" TASK [", 1)[0]


def no_pull(docker_calls, engine):
    assert docker_calls == []
    assert engine.requests and all(m == "GET" for m, _p, _h in engine.requests), engine.requests
    # the role's own read of the image (docker_image_info) came first
    assert ("GET", "/images/json") in [(m, p) for m, p, _h in engine.requests]


def test_check_mode_reports_the_moved_tag_as_a_change_with_both_digests(tmp_path):
    with moved() as eng:
        rc, out, calls = run_image_tasks(tmp_path, eng, "--check", "--diff")
    assert rc == 0, out
    task = drift_task(out)
    assert f"-{IMAGE}: {OLD} +{IMAGE}: {NEW} changed: [node3]" in task, out
    assert "changed=1" in out
    no_pull(calls, eng)


def test_a_run_warns_naming_host_image_digests_and_fix_and_changes_nothing(tmp_path):
    with moved() as eng:
        rc, out, calls = run_image_tasks(tmp_path, eng)
    assert rc == 0, out
    assert f"[WARNING]: node3: the tag {IMAGE} moved upstream: the node runs {OLD}, the registry now has {NEW}" in out
    assert "container_runtime_registry_pull=always" in out
    assert "changed=0" in out and "failed=0" in out
    no_pull(calls, eng)
    # after docker_image_info's reads, the drift check's two: the image, then the registry's digest of its tag
    assert [p for _m, p, _h in eng.requests][-2:] == [f"/images/{IMAGE}/json", f"/distribution/{IMAGE}/json"]
    assert [p for _m, p, _h in eng.requests][:3] == ["/version", "/images/json", f"/images/{IMAGE_ID}/json"]


def test_an_unreachable_registry_warns_once_and_the_run_goes_on(tmp_path):
    msg = 'Get "https://registry.example.com:5000/v2/": dial tcp: lookup registry.example.com: no such host'
    with FakeEngine(images={IMAGE: image_inspect([f"{REPO}@{OLD}"])},
                    distribution={IMAGE: (500, {"message": msg})}) as eng:
        rc, out, calls = run_image_tasks(tmp_path, eng)
    assert rc == 0, out
    assert out.count("[WARNING]: node3: the registry's digest of") == 1
    assert "no such host" in out and "changed=0" in out and "failed=0" in out
    no_pull(calls, eng)


@pytest.mark.parametrize("settings", [{"container_runtime_registry_drift_check": False},
                                      {"container_runtime_image_digest": OLD},
                                      {"container_runtime_registry_pull": "always"}])
def test_no_registry_query_when_off_pinned_or_pulled_anyway(tmp_path, settings):
    with moved() as eng:
        rc, out, _calls = run_image_tasks(tmp_path, eng, "--check", **settings)
    assert rc == 0, out
    assert not any(p.startswith("/distribution/") for _m, p, _h in eng.requests)
    assert "skipping: [node3]" in drift_task(out)
