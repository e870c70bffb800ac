"""module_utils/image_digest.py: the engine's answers read (image inspect's RepoDigests, the registry's
descriptor of a single-arch manifest and of a multi-arch index), the comparison, and the socket transport
against a fake engine."""

from __future__ import annotations

import base64
import json
import os
import socket
import tempfile

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils import image_digest as d
from ansible_collections.ascendops.cluster.tests.unit.plugins.fake_engine import (
    IMAGE,
    NEW,
    OLD,
    PLATFORM,
    REPO,
    FakeEngine,
    distribution_index,
    distribution_manifest,
    image_inspect,
)

# An Engine API 1.30 answer (docker 17.06, the route's first version) as its reference printed it: capitalized keys.
OLD_ENGINE_ANSWER = json.loads(
    '{"Descriptor":{"MediaType":"application/vnd.docker.distribution.manifest.v2+json",'
    '"Digest":"sha256:c0537ff6a5218ef531ece93d4984efc99bbf3f7497c0a7726c88e2bb7584dc96","Size":3987495,"URLs":""},'
    '"Platforms":[{"Architecture":"amd64","OS":"linux","OSVersion":"","OSFeatures":"","Variant":"","Features":""}]}')


def test_the_registry_digest_of_an_index_and_of_a_single_manifest():
    # multi-arch tag: the descriptor is the index's (what a pull by tag records in RepoDigests), not a platform's
    assert d.parse_distribution(distribution_index(NEW)) == NEW
    assert d.parse_distribution(distribution_manifest(OLD)) == OLD
    assert d.parse_distribution(OLD_ENGINE_ANSWER) == \
        "sha256:c0537ff6a5218ef531ece93d4984efc99bbf3f7497c0a7726c88e2bb7584dc96"


@pytest.mark.parametrize("answer", [None, [], {}, {"Descriptor": "x"}, {"Descriptor": {"mediaType": "m"}},
                                    {"Descriptor": {"digest": "latest"}}])
def test_an_answer_without_a_digest_is_an_engine_error(answer):
    with pytest.raises(d.EngineError):
        d.parse_distribution(answer)


def test_repository_of_a_reference_as_repo_digests_name_it():
    assert d.repository(IMAGE) == REPO  # the registry's port is not a tag
    assert d.repository("registry.example.com:5000/ascendops/trainer") == REPO
    assert d.repository(f"{IMAGE}@{OLD}") == REPO
    assert d.repository("docker.io/library/ubuntu:22.04") == "ubuntu"
    assert d.repository("docker.io/ascendhub/cann:8.0") == "ascendhub/cann"
    assert d.repository("ubuntu") == "ubuntu"


def test_local_digests_keep_the_images_repository_only():
    repo_digests = [f"{REPO}@{OLD}", f"mirror.example.com/trainer@{NEW}", f"{REPO}@{OLD}", "garbage", 7]
    assert d.local_digests(IMAGE, repo_digests) == [OLD]
    assert d.local_digests("docker.io/library/ubuntu:22.04", [f"ubuntu@{NEW}"]) == [NEW]
    assert d.local_digests(IMAGE, []) == []
    assert d.local_digests(IMAGE, None) == []
    assert d.parse_image_inspect(image_inspect([f"{REPO}@{OLD}"])) == [f"{REPO}@{OLD}"]
    assert d.parse_image_inspect(image_inspect(None)) == []  # docker 18.09 writes null for a loaded image


def test_compare_same_moved_and_cannot_tell():
    assert d.compare([OLD], OLD) == "same"
    assert d.compare([OLD], NEW) == "moved"
    # pulled by two digests of the repository (the tag moved to an index holding the same platform image)
    assert d.compare([OLD, NEW], NEW) == "same"
    # loaded from a docker save archive: no RepoDigests, nothing to compare with
    assert d.compare([], NEW) == "unknown"
    # a platform manifest's digest is not the index digest a pull by tag records
    assert d.compare([PLATFORM], NEW) == "moved"


def test_registry_auth_is_the_clis_base64url_json_and_none_when_anonymous():
    assert d.registry_auth("", "", "registry.example.com") is None
    header = d.registry_auth("svc", "s3cr/t+?", "registry.example.com:5000")
    assert "+" not in header and "/" not in header
    assert json.loads(base64.urlsafe_b64decode(header)) == {
        "username": "svc", "password": "s3cr/t+?", "serveraddress": "registry.example.com:5000"}


def test_reads_through_the_engine_socket_send_only_gets_and_the_credentials():
    eng = FakeEngine(images={IMAGE: image_inspect([f"{REPO}@{OLD}"])},
                     distribution={IMAGE: (200, distribution_index(NEW))})
    with eng:
        assert d.read_local(eng.host, IMAGE) == [f"{REPO}@{OLD}"]
        assert d.read_local(eng.host, "registry.example.com:5000/other:1") is None  # 404: no such image
        assert d.read_remote(eng.host, IMAGE, auth="abc") == NEW
    assert [(m, p) for m, p, _h in eng.requests] == [
        ("GET", f"/images/{IMAGE}/json"), ("GET", "/images/registry.example.com:5000/other:1/json"),
        ("GET", f"/distribution/{IMAGE}/json")]
    assert eng.requests[2][2].get("X-Registry-Auth") == "abc"
    assert "X-Registry-Auth" not in eng.requests[0][2]


def test_registry_errors_relayed_by_the_engine_are_engine_errors_with_its_message():
    msg = ('Get "https://registry.example.com:5000/v2/": dial tcp: lookup registry.example.com on '
           '127.0.0.53:53: no such host')
    eng = FakeEngine(distribution={IMAGE: (500, {"message": msg}),
                                   "registry.example.com:5000/private:1": (401, {"message": (
                                       'Head "https://registry.example.com:5000/v2/private/manifests/1": '
                                       'no basic auth credentials')})})
    with eng:
        with pytest.raises(d.EngineError, match="no such host") as err:
            d.read_remote(eng.host, IMAGE)
        assert err.value.status == 500
        with pytest.raises(d.EngineError, match="no basic auth credentials"):
            d.read_remote(eng.host, "registry.example.com:5000/private:1")
        with pytest.raises(d.EngineError, match="manifest unknown"):
            d.read_remote(eng.host, "registry.example.com:5000/gone:1")


def test_an_engine_that_is_not_there_or_does_not_answer_is_an_engine_error():
    with tempfile.TemporaryDirectory(prefix="eng") as tmp:
        with pytest.raises(d.EngineError, match="cannot be reached"):
            d.read_local(f"unix://{tmp}/docker.sock", IMAGE)
        path = os.path.join(tmp, "mute.sock")
        mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mute.bind(path)
        mute.listen(1)  # accepts, never answers
        try:
            with pytest.raises(d.EngineError, match="within 1 s"):
                d.read_remote(f"unix://{path}", IMAGE, timeout=1)
        finally:
            mute.close()


def test_only_a_local_socket_is_accepted():
    assert d.socket_path("unix:///var/run/docker.sock") == "/var/run/docker.sock"
    for bad in ("tcp://10.0.0.1:2375", "unix://", "/var/run/docker.sock"):
        with pytest.raises(ValueError, match="unix:///path"):
            d.socket_path(bad)
