"""validate.yml refuses bad shared storage settings before any change, naming the variable."""

from __future__ import annotations

import pytest

# One ansible-playbook run per test (5-10 s each on 2 cores).
pytestmark = pytest.mark.slow


def test_nfs_without_its_export_is_refused_naming_the_variable(run_validate):
    run = run_validate({"shared_storage_type": "nfs", "shared_storage_nfs_server": "nfs1.example"})
    assert run.rc != 0
    assert ("a2-node01: shared storage settings refused before any change: shared_storage_nfs_export must be "
            "the absolute path the server exports (is '')") in run.text
    assert run.changed_nodes() == []


def test_an_unknown_type_is_named_by_the_argument_spec_check(run_validate):
    run = run_validate({"shared_storage_type": "gpfs"})
    assert run.rc != 0
    assert "value of shared_storage_type must be one of: none, nfs, lustre, existing, got: gpfs" in run.text
    assert "set these variables as roles/shared_storage/meta/argument_specs.yml describes" in run.text
    assert run.changed_nodes() == []


def test_a_relative_path_is_named(run_validate):
    run = run_validate({"shared_storage_type": "existing", "shared_storage_path": "shared"})
    assert run.rc != 0
    assert "shared_storage_path must be an absolute path, is 'shared'" in run.text
    assert run.changed_nodes() == []


def test_lustre_without_a_nid_names_the_mgs_setting(run_validate):
    run = run_validate({"shared_storage_type": "lustre", "shared_storage_lustre_mgs": "10.0.0.1",
                        "shared_storage_lustre_fsname": "lfs01"})
    assert run.rc != 0
    assert "shared_storage_lustre_mgs must name the MGS NID(s)" in run.text
    assert run.changed_nodes() == []


LUSTRE_REPO = {"shared_storage_type": "lustre", "shared_storage_lustre_mgs": "10.0.0.1@o2ib",
               "shared_storage_lustre_fsname": "lfs01", "shared_storage_lustre_repo_url": "https://repo.example/lustre"}


def test_a_lustre_repository_without_a_key_is_refused(run_validate):
    run = run_validate(LUSTRE_REPO)
    assert run.rc != 0
    assert ("shared_storage_lustre_repo_url is https://repo.example/lustre but shared_storage_lustre_repo_key_url is "
            "empty") in run.text and "shared_storage_lustre_repo_unsigned: true" in run.text
    assert run.changed_nodes() == []


def test_a_lustre_repository_without_a_key_passes_when_unsigned_is_set(run_validate):
    run = run_validate({**LUSTRE_REPO, "shared_storage_lustre_repo_unsigned": True})
    assert run.rc == 0, run.out


def test_good_nfs_settings_pass(run_validate):
    run = run_validate({"shared_storage_type": "nfs", "shared_storage_nfs_server": "nfs1.example",
                        "shared_storage_nfs_export": "/export/ascend"})
    assert run.rc == 0, run.out
    assert run.changed_nodes() == ["a2-node01", "a2-node02"]
