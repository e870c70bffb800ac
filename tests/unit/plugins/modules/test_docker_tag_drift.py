"""docker_tag_drift: a tag moved upstream is a change with a diff in check mode and a warning in a run, never a
pull; a node image without a registry digest cannot tell; an engine or registry that cannot be asked is a warning,
not a failure. The engine is a fake on a unix socket (tests/unit/plugins/fake_engine.py) that records every request."""

from __future__ import annotations

from ansible_collections.ascendops.cluster.plugins.modules import docker_tag_drift
from ansible_collections.ascendops.cluster.tests.unit.plugins.fake_engine import (
    IMAGE,
    NEW,
    OLD,
    REPO,
    FakeEngine,
    distribution_index,
    image_inspect,
)


def run(run_module, eng, check_mode=False, **args):
    return run_module(docker_tag_drift.main, {"image": IMAGE, "docker_host": eng.host, "node": "node3", **args},
                      check_mode=check_mode, diff=True)


def only_reads(eng):
    assert all(m == "GET" for m, _p, _h in eng.requests), eng.requests
    assert not any("/images/create" in p or "/tag" in p for _m, p, _h in eng.requests)


def moved_engine():
    return FakeEngine(images={IMAGE: image_inspect([f"{REPO}@{OLD}"])},
                      distribution={IMAGE: (200, distribution_index(NEW))})


def test_a_moved_tag_in_check_mode_is_a_change_with_before_and_after(run_module):
    with moved_engine() as eng:
        r = run(run_module, eng, check_mode=True)
    assert r["changed"] and r["state"] == "moved" and not r.get("failed")
    assert r["diff"] == {"before": f"{IMAGE}: {OLD}\n", "after": f"{IMAGE}: {NEW}\n"}
    assert r["local_digests"] == [OLD] and r["remote_digest"] == NEW
    assert r["warnings"] == []  # the change is the report there
    only_reads(eng)


def test_a_moved_tag_in_a_run_is_a_warning_naming_host_image_digests_and_fix_and_no_change(run_module):
    with moved_engine() as eng:
        r = run(run_module, eng)
    assert not r["changed"] and r["state"] == "moved"
    (warning,) = r["warnings"]
    assert warning.startswith(f"node3: the tag {IMAGE} moved upstream")
    assert OLD in warning and NEW in warning
    assert "image.digest" in warning and "container_runtime_registry_pull=always" in warning
    only_reads(eng)
    assert [p for _m, p, _h in eng.requests] == [f"/images/{IMAGE}/json", f"/distribution/{IMAGE}/json"]


def test_the_same_digest_is_quiet(run_module):
    eng = FakeEngine(images={IMAGE: image_inspect([f"{REPO}@{NEW}"])},
                     distribution={IMAGE: (200, distribution_index(NEW))})
    with eng:
        for check_mode in (True, False):
            r = run(run_module, eng, check_mode=check_mode)
            assert not r["changed"] and r["state"] == "same" and r["warnings"] == []
            assert "diff" not in r


def test_an_image_loaded_from_an_archive_cannot_tell_and_the_registry_is_not_asked(run_module):
    with FakeEngine(images={IMAGE: image_inspect([])}, distribution={IMAGE: (200, distribution_index(NEW))}) as eng:
        r = run(run_module, eng, check_mode=True)
    assert not r["changed"] and r["state"] == "unknown" and r["warnings"] == []
    assert "cannot tell" in r["msg"]
    assert [p for _m, p, _h in eng.requests] == [f"/images/{IMAGE}/json"]


def test_a_node_without_the_image_is_absent_not_drift(run_module):
    with FakeEngine() as eng:
        r = run(run_module, eng, check_mode=True)
    assert not r["changed"] and r["state"] == "absent"


def test_an_unreachable_registry_is_one_warning_naming_host_and_error_not_a_failure(run_module):
    msg = 'Get "https://registry.example.com:5000/v2/": dial tcp 10.0.0.5:5000: connect: no route to host'
    eng = FakeEngine(images={IMAGE: image_inspect([f"{REPO}@{OLD}"])}, distribution={IMAGE: (500, {"message": msg})})
    with eng:
        for check_mode in (True, False):
            r = run(run_module, eng, check_mode=check_mode)
            assert not r.get("failed") and not r["changed"] and r["state"] == "unreachable"
            (warning,) = r["warnings"]
            assert warning.startswith(f"node3: the registry's digest of {IMAGE} cannot be read")
            assert "no route to host" in warning


def test_refused_credentials_are_a_warning_and_sent_only_in_the_request(run_module):
    eng = FakeEngine(images={IMAGE: image_inspect([f"{REPO}@{OLD}"])},
                     distribution={IMAGE: (401, {"message": "unauthorized: authentication required"})})
    with eng:
        r = run(run_module, eng, registry="registry.example.com:5000", username="svc", password="Secret0123")
    assert not r.get("failed") and r["state"] == "unreachable"
    assert "authentication required" in r["warnings"][0] and "Secret0123" not in str(r)
    assert eng.requests[1][2].get("X-Registry-Auth")


def test_an_engine_that_is_down_is_a_warning(run_module, tmp_path):
    r = run_module(docker_tag_drift.main, {"image": IMAGE, "docker_host": f"unix://{tmp_path}/none.sock",
                                           "node": "node3"})
    assert not r.get("failed") and r["state"] == "unreachable"
    assert r["warnings"][0].startswith(f"node3: the engine cannot show {IMAGE}")


def test_a_docker_host_that_is_no_local_socket_is_refused(run_module):
    r = run_module(docker_tag_drift.main, {"image": IMAGE, "docker_host": "tcp://10.0.0.1:2375"})
    assert r["failed"] and "unix:///path" in r["msg"]
