"""Image archives in docker save format (plugins/module_utils/docker_archive.py), and the module."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.docker_archive import (
    DockerArchiveError,
    normalize_reference,
    read_archive,
)

CONFIG = json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": []}}).encode()
CONFIG_ID = "sha256:" + hashlib.sha256(CONFIG).hexdigest()


def _archive(path, manifest, files, mode="w"):
    with tarfile.open(path, mode) as tar:
        for name, data in {"manifest.json": json.dumps(manifest).encode(), **files}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def _podman_style(tmp_path, tags=("localhost/ascendops-trainer:latest",), mode="w", name="img.tar"):
    hexid = CONFIG_ID.split(":")[1]
    return _archive(tmp_path / name, [{"Config": f"{hexid}.json", "RepoTags": list(tags), "Layers": ["l/layer.tar"]}],
                    {f"{hexid}.json": CONFIG, "l/layer.tar": b""}, mode)


def test_podman_save_layout_id_is_the_config_digest(tmp_path):
    assert read_archive(_podman_style(tmp_path)) == [
        {"id": CONFIG_ID, "repo_tags": ["localhost/ascendops-trainer:latest"], "layers": 1, "labels": {}}]


def test_oci_style_config_path_and_gzip(tmp_path):
    # docker 25+ writes blobs/sha256/<hex> paths; a compressed archive loads too
    hexid = CONFIG_ID.split(":")[1]
    path = _archive(tmp_path / "img.tar.gz", [{"Config": f"blobs/sha256/{hexid}", "RepoTags": ["a:1"]}],
                    {f"blobs/sha256/{hexid}": CONFIG}, "w:gz")
    assert read_archive(path)[0]["id"] == CONFIG_ID


def test_id_comes_from_the_bytes_not_the_file_name(tmp_path):
    path = _archive(tmp_path / "img.tar", [{"Config": "0000.json", "RepoTags": []}], {"0000.json": CONFIG})
    assert read_archive(path)[0]["id"] == CONFIG_ID


@pytest.mark.parametrize("manifest, files, says", [
    (None, {}, "no manifest.json"),
    ([], {}, "lists no image"),
    ([{"RepoTags": ["a:1"]}], {}, "has no Config"),
    ([{"Config": "x.json"}], {}, "no x.json"),
])
def test_not_an_image_archive(tmp_path, manifest, files, says):
    if manifest is None:
        path = str(tmp_path / "plain.tar")
        with tarfile.open(path, "w") as tar:
            info = tarfile.TarInfo("hello")
            tar.addfile(info, io.BytesIO(b""))
    else:
        path = _archive(tmp_path / "img.tar", manifest, files)
    with pytest.raises(DockerArchiveError, match=says):
        read_archive(path)


def test_not_a_tar(tmp_path):
    (tmp_path / "x.tar").write_text("hello")
    with pytest.raises(DockerArchiveError, match="cannot be read as a tar"):
        read_archive(str(tmp_path / "x.tar"))


@pytest.mark.parametrize("ref, norm", [("ubuntu", "ubuntu:latest"), ("docker.io/library/ubuntu:22.04", "ubuntu:22.04"),
                                       ("localhost:5000/a/b", "localhost:5000/a/b:latest"),
                                       ("localhost/ascendops-trainer:latest", "localhost/ascendops-trainer:latest")])
def test_normalize_reference(ref, norm):
    assert normalize_reference(ref) == norm
