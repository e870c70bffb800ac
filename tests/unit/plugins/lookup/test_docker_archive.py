"""Lookup docker_archive through ansible-playbook (in a subprocess, as test_file_sha256.py does): the wanted
image's ID and labels read on the controller, kept in the cache while the archive is unchanged and read
again when it changes, and every problem said in ``error`` rather than failing the task."""

from __future__ import annotations

import json
import os

import pytest
from ansible_collections.ascendops.cluster.tests.unit.plugins.lookup.test_file_sha256 import play
from ansible_collections.ascendops.cluster.tests.unit.plugins.module_utils.test_docker_archive import (
    CONFIG_ID,
    _archive,
    _podman_style,
)

pytestmark = pytest.mark.slow


def lookup(tmp_path, path, image="localhost/ascendops-trainer:latest", cache="cache.json"):
    rc, got = play(tmp_path, f"lookup('ascendops.cluster.docker_archive', '{path}', image='{image}', "
                             f"cache_file='{tmp_path / cache}')")
    assert rc == 0, got
    return got


def test_the_wanted_image_is_read_then_kept_until_the_archive_changes(tmp_path):
    path = _podman_style(tmp_path)
    first = lookup(tmp_path, path)
    assert (first["exists"], first["id"], first["error"], first["cached"]) == (True, CONFIG_ID, None, False)
    assert first["repo_tags"] == ["localhost/ascendops-trainer:latest"]
    assert list(json.loads((tmp_path / "cache.json").read_text())["files"]) == [str(path)]
    again = lookup(tmp_path, path)
    assert (again["id"], again["cached"]) == (CONFIG_ID, True)
    # Another archive written onto the same path (a rebuilt image): read again, not the kept one.
    config = json.dumps({"config": {"Labels": {"ascendops.release": "sim"}}}).encode()
    os.unlink(path)
    _archive(tmp_path / "img.tar", [{"Config": "c.json", "RepoTags": ["localhost/ascendops-trainer:latest"]}],
             {"c.json": config})
    rebuilt = lookup(tmp_path, path)
    assert rebuilt["cached"] is False and rebuilt["id"] != CONFIG_ID
    assert rebuilt["labels"] == {"ascendops.release": "sim"}


def test_problems_are_said_not_raised(tmp_path):
    missing = lookup(tmp_path, tmp_path / "absent.tar")
    assert missing["exists"] is False and missing["id"] is None and "absent.tar is not a file" in missing["error"]
    other = lookup(tmp_path, _podman_style(tmp_path, tags=("localhost/other:1",)))
    assert other["exists"] is True and other["id"] is None
    assert "does not hold the image localhost/ascendops-trainer:latest (it holds: localhost/other:1)" in other["error"]
    (tmp_path / "junk.tar").write_bytes(b"not a tar")
    junk = lookup(tmp_path, tmp_path / "junk.tar")
    assert junk["id"] is None and "cannot be read as a tar archive" in junk["error"]
    # Nothing kept for an archive that could not be read.
    assert str(tmp_path / "junk.tar") not in json.loads((tmp_path / "cache.json").read_text())["files"]


def test_unknown_options_are_refused(tmp_path):
    rc, out = play(tmp_path, f"lookup('ascendops.cluster.docker_archive', '{tmp_path}/x.tar', images='x')")
    assert rc != 0 and "unknown option images" in out
