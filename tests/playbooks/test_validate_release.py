"""The release checks of validate.yml (roles/ascend/tasks/release_validate.yml) on the controller: a bad
release or versions the nodes of one run would not share are refused before any change, naming the host,
the component, both versions and the vendor's rule."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_a_driver_set_for_one_node_only_is_refused_before_any_change(run_validate):
    run = run_validate(host_vars={"a2-node02": {"npu_driver_version": "25.0.rc1.1"}})
    assert run.rc != 0
    assert ("driver would differ between the nodes of this run: 24.1.rc1 on a2-node01; 25.0.rc1.1 on a2-node02 "
            "(release 910b-cann8.0.0, npu_driver_version set for some nodes only") in run.text
    assert run.changed_nodes() == []


def test_a_version_set_for_every_node_passes(run_validate):
    run = run_validate({"cann_version": "8.0.0"})
    assert run.rc == 0, run.out
    assert run.changed_nodes() == ["a2-node01", "a2-node02"]


def test_a_release_whose_torch_npu_does_not_pair_with_its_torch_is_refused(run_validate, tmp_path):
    releases = tmp_path / "releases"
    releases.mkdir()
    shutil.copy(ROOT / "releases" / "_torch_npu.yml", releases)
    data = yaml.safe_load((ROOT / "releases" / "910b-cann8.2.rc1.yml").read_text())
    data["name"] = "bad-pair"
    data["image"]["torch"] = "2.5.1"
    (releases / "bad-pair.yml").write_text(yaml.safe_dump(data))
    run = run_validate({"ascend_release": "bad-pair", "ascend_releases_dir": str(releases)})
    assert run.rc != 0
    assert "Release bad-pair (ascend_release" in run.text
    assert "torch 2.5.1 does not match torch_npu 2.6.0, which is built for torch 2.6.0" in run.text
    assert run.changed_nodes() == []


def test_an_unknown_release_names_the_known_ones(run_validate):
    run = run_validate({"ascend_release": "910b-cann9.9"})
    assert run.rc != 0
    assert "ascend_release: no release '910b-cann9.9'" in run.text
    assert "known: 910b-cann8.0.0, 910b-cann8.2.rc1" in run.text
    assert run.changed_nodes() == []


def _archive_with_label(tmp_path, release_name):
    """A docker-save archive of localhost/ascendops-trainer:latest labelled as build-image.sh labels it."""
    import io
    import json
    import tarfile

    from ansible_collections.ascendops.cluster.plugins.filter.release import release_load
    from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_release import image_label

    config = json.dumps({"config": {"Labels": {"ascendops.release": image_label(release_load(release_name))}}}).encode()
    manifest = json.dumps([{"Config": "c.json", "RepoTags": ["localhost/ascendops-trainer:latest"]}]).encode()
    path = tmp_path / "trainer.tar"
    with tarfile.open(path, "w") as tar:
        for name, data in (("manifest.json", manifest), ("c.json", config)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _container_runtime_validation():
    return [{"name": "Validation of the container_runtime stage", "hosts": "npu_nodes", "gather_facts": False,
             "any_errors_fatal": True, "tasks": [{"name": "Validate | Container runtime",
                                                  "ansible.builtin.include_role": {
                                                      "name": "ascendops.cluster.container_runtime",
                                                      "tasks_from": "validate"}}]}]


LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}


@pytest.mark.parametrize("release, refused", [("910b-cann8.0.0", True), ("sim", False)])
def test_an_image_archive_built_from_another_release_is_refused_before_any_change(run_validate, tmp_path, release,
                                                                                  refused):
    archive = _archive_with_label(tmp_path, "sim")
    run = run_validate({"ascend_release": release, "container_runtime_ascend_runtime": False,
                        "container_runtime_ascend_default": False, "container_runtime_image_archive": str(archive)},
                       host_vars={"a2-node01": LOCAL, "a2-node02": LOCAL}, skip_nodes=False,
                       validation=_container_runtime_validation())
    if refused:
        assert run.rc != 0
        assert ("a2-node01: image localhost/ascendops-trainer:latest was built with release sim but release "
                "910b-cann8.0.0 names 910b-cann8.0.0") in run.text
        assert f"(the image archive {archive}, container_runtime_image_archive; refused before any change)" in run.text
        assert run.changed_nodes() == []
    else:
        assert run.rc == 0, run.out[-3000:]
        assert run.changed_nodes() == ["a2-node01", "a2-node02"]
