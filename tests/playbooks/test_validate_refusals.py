"""Bad inventories are refused by validate.yml before any change, naming what the user wrote.

Each test runs validate.yml and then a stand-in stage (conftest.py) against inventories/sample with
the test's settings over it: a refusal must fail the run, name the host, the user's setting, its
value and the fix, and leave every node unchanged (no marker). The sample itself passes and reaches
the stand-in stage, so the marker check can fail.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest
import yaml

# One ansible-playbook run per test (5-10 s each on 2 cores).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# The sample's job, changed by each test.
SAMPLE_JOB = yaml.safe_load((ROOT / "inventories/sample/group_vars/all/job.yml").read_text())["launch_job"]


def job(**changes):
    return {**SAMPLE_JOB, **changes}


def test_the_sample_inventory_passes_and_reaches_the_next_stage(run_validate):
    run = run_validate()
    assert run.rc == 0, run.out
    assert run.changed_nodes() == ["a2-node01", "a2-node02"]


def test_a_global_batch_the_ranks_do_not_divide_is_refused_before_any_change(run_validate):
    # 2 nodes x 8 NPUs x micro batch 2 = 32 sequences per micro-step; 500 is no multiple of 32.
    run = run_validate({"launch_job": job(global_batch_size=500, micro_batch_size=2)})
    assert run.rc != 0
    assert "a2-node01: launch_job is refused before any change" in run.text
    assert ("launch_job.global_batch_size (500) is not divisible by launch_job.micro_batch_size (2) x ranks "
            "(2 nodes in npu_nodes x 8 per node: ascend_npus_per_node 8) (16) = 32") in run.text
    assert "pick a global batch that is a multiple of 32 (the nearest: 480 or 512)" in run.text
    assert run.changed_nodes() == []


def test_the_ranks_follow_the_devices_per_node_the_user_set(run_validate):
    # 512 divides by 2 x 8 x 1 but not by 2 x 3 x 1 = 6 ranks.
    run = run_validate({"ascend_npus_per_node": 3, "npu_driver_expected_npus": 3})
    assert run.rc != 0
    assert "x ranks (2 nodes in npu_nodes x 3 per node: ascend_npus_per_node 3) (6) = 6" in run.text
    assert "(the nearest: 510 or 516)" in run.text
    assert run.changed_nodes() == []


def test_the_presets_default_batch_sizes_are_checked_when_the_job_leaves_them_out(run_validate):
    # The debug preset's 8 sequences per step (micro batch 2) cannot spread over 16 ranks.
    small = {k: v for k, v in job(preset="debug").items() if k not in ("global_batch_size", "micro_batch_size")}
    run = run_validate({"launch_job": small})
    assert run.rc != 0
    assert "launch_job.global_batch_size (unset: preset debug's default) (8)" in run.text
    assert run.changed_nodes() == []


def test_an_unknown_preset_names_the_preset_and_the_valid_ones_only(run_validate):
    run = run_validate({"launch_job": job(preset="llama3-7b")})
    assert run.rc != 0
    assert ("unknown model preset 'llama3-7b'; choose one of: debug, llama3-8b, llama3-70b for launch_job.preset"
            in run.text)
    # Not every rule of launch_job: only what is wrong.
    assert "absolute path" not in run.text and "zero_stage" not in run.text
    assert run.changed_nodes() == []


@pytest.mark.parametrize("config,expected", [
    ({"optim": {"lr": 0}}, "launch_job.config.optim.lr must be > 0, got 0"),
    ({"train": {"precision": "fp16"}}, "launch_job.config.train.precision must be one of auto, bf16, fp32, got 'fp16'"),
    ({"optim": {"lrr": 1e-4}}, "unknown config key 'launch_job.config.optim.lrr'; did you mean "
                               "'launch_job.config.optim.lr'?"),
    ({"train": {"micro_batch_size": 3}}, "launch_job.global_batch_size (512) is not divisible by "
                                         "launch_job.config.train.micro_batch_size (3)"),
])
def test_the_trainers_own_rules_apply_to_the_config_the_user_merges(run_validate, config, expected):
    run = run_validate({"launch_job": job(config=config)})
    assert run.rc != 0
    assert expected in run.text
    assert run.changed_nodes() == []


# ---------------------------------------------------------------- collection-wide ascend_* settings


def test_a_mirror_without_its_url_names_the_collection_wide_settings(run_validate):
    run = run_validate({"ascend_package_source": "mirror"})
    assert run.rc != 0
    assert ("a2-node01: ascend_package_source is mirror but ascend_mirror_url (its default) is empty: "
            "set ascend_mirror_url to the mirror's base URL (or ascend_package_source: controller)") in run.text
    assert "npu_driver_package_source" not in run.text and "npu_driver_mirror_url" not in run.text
    assert run.changed_nodes() == []


def test_a_role_only_package_source_names_the_role_variable(run_validate):
    run = run_validate({"cann_package_source": "http"})
    assert run.rc != 0
    # The role's argument spec check (validate.yml, before the packages are looked at) names it.
    assert "value of cann_package_source must be one of: controller, mirror, got: http" in run.text
    assert "set these variables as roles/cann/meta/argument_specs.yml describes" in run.text
    assert run.changed_nodes() == []


@pytest.mark.parametrize("setting,value,expected", [
    ("ascend_npus_per_node", 0, "ascend_npus_per_node must be a whole number >= 1 (the NPUs npu-smi shows on every "
                                "node), is 0."),
    ("ascend_npus_per_node", "eight", "argument 'ascend_npus_per_node' is of type str and we were unable to convert "
                                      "to int"),
    ("ascend_server_model", "a2", "value of ascend_server_model must be one of: 910b, a3, got: a2"),
    ("ascend_rdma_dscp", 64, "ascend_rdma_dscp must be 0..63 (a DSCP), is 64"),
])
def test_bad_collection_wide_values_are_named_as_the_user_wrote_them(run_validate, setting, value, expected):
    run = run_validate({setting: value})
    assert run.rc != 0
    assert expected in run.text
    # Named before any role variable derived from them is checked.
    assert "launch_devices_per_server" not in run.text and "roce_devices_per_node" not in run.text
    assert run.changed_nodes() == []


@pytest.mark.parametrize("role,setting,value,expected", [
    ("container_runtime", "container_runtime_live_restore", "maybe", "to bool"),
    ("cann", "cann_remove_old_versions", "perhaps", "to bool"),
    ("shared_storage", "shared_storage_nfs_hard", "sometimes", "to bool"),
    ("launch", "launch_master_port", "abc", "to int"),
])
def test_every_roles_settings_are_checked_against_its_argument_spec_before_any_change(
        run_validate, role, setting, value, expected):
    # Before, these four roles' specs were checked only when their own stage began (after the earlier
    # stages had changed the nodes), and a bad launch_master_port drew a message listing every launch rule.
    run = run_validate({setting: value})
    assert run.rc != 0
    assert f"argument '{setting}' is of type str and we were unable to convert {expected}" in run.text
    assert "a2-node01" in run.text and f"set these variables as roles/{role}/meta/argument_specs.yml" in run.text
    assert run.changed_nodes() == []


def test_devices_per_node_double_on_a3_for_every_stage(run_validate):
    # 2 A3 nodes x 8 NPUs x 2 chips: 32 ranks (the rank table, the RoCE plan and the batch rule agree).
    run = run_validate({"ascend_server_model": "a3", "launch_job": job(global_batch_size=528)},
                       host_vars={"a2-node02": {"roce_address_offset": 40}})
    assert run.rc != 0
    assert ("x ranks (2 nodes in npu_nodes x 16 per node: ascend_npus_per_node 8 x 2 chips (ascend_server_model a3)) "
            "(32) = 32") in run.text
    assert run.changed_nodes() == []


def test_the_roce_plan_counts_the_same_devices_per_node_on_a3(run_validate):
    # The sample's offsets (10 and 20) are 10 apart: enough for 8 NPUs, too few for 16 chips.
    run = run_validate({"ascend_server_model": "a3"})
    assert run.rc != 0
    assert "a2-node02 NPU 0: address 10.20.0.20 is also used by a2-node01 NPU 10" in run.text
    assert run.changed_nodes() == []


def test_a3_with_a_batch_the_chips_divide_passes(run_validate):
    run = run_validate({"ascend_server_model": "a3", "launch_job": job(global_batch_size=512)},
                       host_vars={"a2-node02": {"roce_address_offset": 40}})
    assert run.rc == 0, run.out
    assert run.changed_nodes() == ["a2-node01", "a2-node02"]


# ---------------------------------------------------------------- the package directory (read on the controller)

def _npu_driver_validation(include_vars=None):
    """The npu_driver role's validate.yml on the nodes, reached over a local connection: its first node
    check (facts) reads this machine; the package checks read the controller."""
    task = {"name": "Validate | NPU driver", "ansible.builtin.include_role": {
        "name": "ascendops.cluster.npu_driver", "tasks_from": "validate"}}
    if include_vars:
        task["vars"] = include_vars
    return [{"name": "Validation of the npu_driver stage", "hosts": "npu_nodes", "gather_facts": False,
             "any_errors_fatal": True, "tasks": [task]}]


LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}


def test_a_missing_package_directory_names_the_setting_and_the_path(run_validate, tmp_path):
    missing = tmp_path / "no-such-packages"
    run = run_validate({"ascend_package_dir": str(missing)}, host_vars={"a2-node01": LOCAL, "a2-node02": LOCAL},
                       skip_nodes=False, validation=_npu_driver_validation())
    assert run.rc != 0
    assert (f"a2-node01: ascend_package_dir is {missing}, but that directory is not on the controller. Put the .run "
            "packages and their sha256sum manifest there") in run.text
    assert "or set ascend_package_dir to the directory that holds them" in run.text
    assert "could not find or access" not in run.text.lower()  # the raw lookup error of before
    assert run.changed_nodes() == []


def test_a_directory_without_the_manifest_names_the_role_setting_the_user_wrote(run_validate, tmp_path):
    empty = tmp_path / "driver-packages"
    empty.mkdir()
    run = run_validate({"npu_driver_package_dir": str(empty)}, host_vars={"a2-node01": LOCAL, "a2-node02": LOCAL},
                       skip_nodes=False, validation=_npu_driver_validation())
    assert run.rc != 0
    assert (f"npu_driver_package_dir is {empty}, but that directory holds no SHA256SUMS (ascend_package_manifest)"
            in run.text)
    assert "could not find or access" not in run.text.lower()  # the raw lookup error of before
    assert run.changed_nodes() == []


def test_with_a_manifest_the_check_passes_and_the_packages_are_looked_up(run_validate, tmp_path):
    """The directory check lets a good directory through: the run goes on to the manifest's content."""
    pkgs = tmp_path / "packages"
    pkgs.mkdir()
    (pkgs / "SHA256SUMS").write_text("")
    run = run_validate({"ascend_package_dir": str(pkgs)}, host_vars={"a2-node01": LOCAL, "a2-node02": LOCAL},
                       skip_nodes=False, validation=_npu_driver_validation())
    assert run.rc != 0
    assert "is not listed in SHA256SUMS of " + str(pkgs) in run.text
    assert "that directory" not in run.text
    assert run.changed_nodes() == []


def test_a_role_setting_given_as_include_vars_is_named_too(run_validate, tmp_path):
    """Set where hostvars cannot see it (include_role vars, as molecule scenarios do): its value differs."""
    missing = tmp_path / "elsewhere"
    run = run_validate(host_vars={"a2-node01": LOCAL, "a2-node02": LOCAL}, skip_nodes=False,
                       validation=_npu_driver_validation({"npu_driver_package_dir": str(missing)}))
    assert run.rc != 0
    assert f"a2-node01: npu_driver_package_dir is {missing}, but that directory is not on the controller" in run.text
    assert "or set npu_driver_package_dir to the directory" in run.text
    assert run.changed_nodes() == []


def _packages_validation(packages):
    """The shared package check (roles/ascend/tasks/packages_validate.yml) on the nodes, for these files."""
    return [{"name": "Validation of the package files", "hosts": "npu_nodes", "gather_facts": False,
             "any_errors_fatal": True, "tasks": [{
                 "name": "Validate | Packages", "ansible.builtin.include_role": {
                     "name": "ascendops.cluster.ascend", "tasks_from": "packages_validate"},
                 "vars": {"__common_packages": list(packages)}}]}]


def _repository(tmp_path, name="Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-aarch64.run"):
    """A package in a site's store and a package directory whose manifest lists it (the file not there yet)."""
    store = tmp_path / "store"
    store.mkdir()
    (store / name).write_bytes(b"#!/bin/sh\necho a vendor package\n")
    pkgs = tmp_path / "packages"
    pkgs.mkdir()
    digest = hashlib.sha256((store / name).read_bytes()).hexdigest()
    (pkgs / "SHA256SUMS").write_text(f"{digest}  {name}\n")
    return store, pkgs, name


def test_a_package_that_is_a_symbolic_link_is_checked_through_the_link(run_validate, tmp_path):
    store, pkgs, name = _repository(tmp_path)
    (pkgs / name).symlink_to(store / name)
    run = run_validate({"ascend_package_dir": str(pkgs)}, host_vars={"a2-node01": LOCAL, "a2-node02": LOCAL},
                       skip_nodes=False, validation=_packages_validation([name]))
    assert run.rc == 0, run.out
    assert run.changed_nodes() == ["a2-node01", "a2-node02"]


def test_a_link_whose_target_differs_from_the_manifest_is_corrupt(run_validate, tmp_path):
    store, pkgs, name = _repository(tmp_path)
    (pkgs / name).symlink_to(store / name)
    (store / name).write_bytes(b"truncated")
    run = run_validate({"ascend_package_dir": str(pkgs)}, host_vars={"a2-node01": LOCAL, "a2-node02": LOCAL},
                       skip_nodes=False, validation=_packages_validation([name]))
    assert run.rc != 0
    assert f"a2-node01: {pkgs}/{name} (ascend_package_dir) is corrupt: its sha256 is" in run.text
    assert "Fetch the package again (or fix SHA256SUMS)" in run.text
    assert run.changed_nodes() == []


def test_a_dangling_link_names_the_host_the_file_where_it_points_and_the_fix(run_validate, tmp_path):
    store, pkgs, name = _repository(tmp_path)
    (pkgs / name).symlink_to(store / "moved-away.run")
    run = run_validate({"ascend_package_dir": str(pkgs)}, host_vars={"a2-node01": LOCAL, "a2-node02": LOCAL},
                       skip_nodes=False, validation=_packages_validation([name]))
    assert run.rc != 0
    assert (f"a2-node01: {pkgs}/{name} (ascend_package_dir) is a symbolic link to {store}/moved-away.run, which "
            "does not exist (a dangling link). Point the link at the package file "
            f"(ln -sfn /path/to/{name} {pkgs}/{name}), or put the package itself there.") in run.text
    assert "Error while resolving" not in run.text and "has no attribute" not in run.text
    assert run.changed_nodes() == []


def test_a_package_the_release_pins_with_another_sha256_is_refused_naming_both(run_validate, tmp_path):
    """The release's pin (releases/<name>.yml: packages) against a manifest that agrees with its package (both
    replaced, as a compromised mirror would serve them)."""
    store, pkgs, name = _repository(tmp_path)
    (pkgs / name).write_bytes((store / name).read_bytes())
    served = hashlib.sha256((pkgs / name).read_bytes()).hexdigest()
    releases = tmp_path / "releases"
    releases.mkdir()
    for src in (ROOT / "releases").glob("*.yml"):
        (releases / src.name).write_text(src.read_text())
    data = yaml.safe_load((releases / "910b-cann8.0.0.yml").read_text())
    data["packages"] = {name: "0" * 64}
    (releases / "910b-cann8.0.0.yml").write_text(yaml.safe_dump(data))
    run = run_validate({"ascend_package_dir": str(pkgs), "ascend_release": "910b-cann8.0.0",
                        "ascend_releases_dir": str(releases)},
                       host_vars={"a2-node01": LOCAL, "a2-node02": LOCAL}, skip_nodes=False,
                       validation=_packages_validation([name]))
    assert run.rc != 0
    assert (f"a2-node01: {name} is listed in SHA256SUMS of {pkgs} with sha256 {served}, but the release "
            f"910b-cann8.0.0 pins {'0' * 64}") in run.text
    assert run.changed_nodes() == []


def _release_with(tmp_path, **host):
    """The releases directory with 910b-cann8.0.0 changed (host versions)."""
    releases = tmp_path / "releases"
    releases.mkdir(exist_ok=True)
    for src in (ROOT / "releases").glob("*.yml"):
        (releases / src.name).write_text(src.read_text())
    data = yaml.safe_load((releases / "910b-cann8.0.0.yml").read_text())
    data["host"].update(host)
    (releases / "910b-cann8.0.0.yml").write_text(yaml.safe_dump(data))
    return {"ascend_release": "910b-cann8.0.0", "ascend_releases_dir": str(releases)}


def test_a_runtime_that_asks_for_the_eula_is_refused_naming_the_setting(run_validate, tmp_path):
    # (the sample pins the runtime's version as a site may: the release's and a site's pin are refused alike)
    run = run_validate({**_release_with(tmp_path, docker_runtime="26.1.0"),
                        "container_runtime_ascend_runtime_version": "26.1.0"})
    assert run.rc != 0
    assert "the Ascend Docker Runtime 26.1.0 (Ascend-docker-runtime_26.1.0_linux-" in run.text
    assert "set ascend_accept_eula: true" in run.text and "refused before any change" in run.text
    assert run.changed_nodes() == []


def test_an_accepted_eula_passes_validation(run_validate, tmp_path):
    run = run_validate({**_release_with(tmp_path, docker_runtime="26.1.0"), "ascend_accept_eula": True,
                        "container_runtime_ascend_runtime_version": "26.1.0"})
    assert run.rc == 0, run.out
    assert run.changed_nodes() == ["a2-node01", "a2-node02"]


@pytest.mark.parametrize("settings,expected", [
    ({"slurm_dbd_password": "short#secret"}, "slurm_dbd_password: 16 to 128 characters without #, quotes, backslash"),
    ({"slurm_dbd_password": "a long enough secret"}, "slurm_dbd_password: 16 to 128 characters without #"),
    ({"slurm_dbd_port": 80}, "slurm_dbd_port: 80 is not a port from 1024 to 65535"),
    ({"slurm_mariadb_buffer_pool_size": "lots"}, "slurm_mariadb_buffer_pool_size: lots (a number with K, M or G"),
])
def test_slurm_accounting_settings_are_refused_before_any_change(run_validate, settings, expected):
    run = run_validate({"launch_scheduler": "slurm", "slurm_manage": True, "slurm_accounting": True, **settings})
    assert run.rc != 0
    assert "Slurm settings refused before any change" in run.text and expected in run.text
    # The password is never printed, not even the one refused.
    assert "short#secret" not in run.text and "a long enough secret" not in run.text
    assert run.changed_nodes() == []


def test_slurm_with_accounting_passes_the_controller_side_validation(run_validate):
    # No facts in a controller-only validation: the host-name checks wait for the nodes (not an error).
    run = run_validate({"launch_scheduler": "slurm", "slurm_manage": True, "slurm_accounting": True,
                        "slurm_dbd_password": "Abcdefgh12345678%:"})
    assert run.rc == 0, run.out[-3000:]
    assert run.changed_nodes() == ["a2-node01", "a2-node02"]


def test_a_negative_roce_stat_max_errors_is_refused_naming_it(run_validate):
    run = run_validate({"roce_stat_max_errors": -5})
    assert run.rc != 0
    assert "roce_stat_max_errors a whole number 0 or more (is -5" in run.text and "a2-node01" in run.text
    assert run.changed_nodes() == []


def test_an_image_timeout_below_one_second_is_refused_naming_it(run_validate):
    run = run_validate({"container_runtime_image_timeout": 0})
    assert run.rc != 0
    assert "container_runtime_image_timeout >= 1 (is 0)" in run.text and "a2-node01" in run.text
    assert run.changed_nodes() == []
