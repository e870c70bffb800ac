"""docker_archive_info against archives written in docker save format."""

from __future__ import annotations

import json

from ansible_collections.ascendops.cluster.plugins.modules import docker_archive_info
from ansible_collections.ascendops.cluster.tests.unit.plugins.module_utils.test_docker_archive import (
    CONFIG_ID,
    _archive,
    _podman_style,
)


def test_module_finds_the_wanted_image(run_module, tmp_path):
    path = _podman_style(tmp_path)
    r = run_module(docker_archive_info.main, {"path": path, "image": "localhost/ascendops-trainer"})
    assert not r.get("failed") and r["changed"] is False and r["id"] == CONFIG_ID


def test_module_names_what_the_archive_holds_when_the_image_is_not_there(run_module, tmp_path):
    path = _podman_style(tmp_path, tags=("localhost/other:1",))
    r = run_module(docker_archive_info.main, {"path": path, "image": "localhost/ascendops-trainer:latest"})
    assert r["failed"] and "localhost/other:1" in r["msg"] and "localhost/ascendops-trainer:latest" in r["msg"]


def test_module_fails_cleanly_on_a_missing_file(run_module, tmp_path):
    r = run_module(docker_archive_info.main, {"path": str(tmp_path / "absent.tar")})
    assert r["failed"] and "absent.tar" in r["msg"]


def test_module_returns_the_wanted_images_labels(run_module, tmp_path):
    """The ascendops.release label build-image.sh writes: validate.yml compares it with the release."""
    config = json.dumps({"config": {"Labels": {"ascendops.release": '{"release":"sim"}'}}}).encode()
    path = _archive(tmp_path / "img.tar", [{"Config": "c.json", "RepoTags": ["localhost/ascendops-trainer:latest"]}],
                    {"c.json": config})
    r = run_module(docker_archive_info.main, {"path": path, "image": "localhost/ascendops-trainer:latest"})
    assert not r.get("failed") and r["labels"] == {"ascendops.release": '{"release":"sim"}'}
