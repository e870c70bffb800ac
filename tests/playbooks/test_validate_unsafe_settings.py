"""Settings that would make the collection touch what it does not own are refused by validate.yml before
any change (issue 41): a control character in any value the user set, a path setting that is / or a
system directory, a container run option outside the allow-list, a shared_storage_path where another file
system is mounted. Each refusal names the host and the variable and leaves every node unchanged (no
marker of the stand-in stage, conftest.py); the sample inventory with the accepted values passes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

# One ansible-playbook run per test (5-10 s each on 2 cores).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_JOB = yaml.safe_load((ROOT / "inventories/sample/group_vars/all/job.yml").read_text())["launch_job"]


def test_a_newline_in_the_image_is_refused_before_it_reaches_the_unit(run_validate):
    run = run_validate({"launch_image": "registry.example/trainer:1\nExecStartPost=/bin/sh -c id"})
    assert run.rc != 0
    assert "a2-node01: refused before any change: launch_image holds a newline at character 27" in run.text
    assert "write each on one line, without control characters" in run.text
    assert run.changed_nodes() == []


def test_a_control_character_in_an_env_value_is_named_and_not_shown(run_validate):
    run = run_validate({"launch_job": {**SAMPLE_JOB, "extra_env": {"WANDB_API_KEY": "s3cr3t\rEVIL=1"}}})
    assert run.rc != 0
    assert "launch_job.extra_env.WANDB_API_KEY holds a carriage return at character 7" in run.text
    assert "s3cr3t" not in run.out
    assert run.changed_nodes() == []


@pytest.mark.parametrize("args, expected", [
    (["--privileged"], "launch_container_extra_args[0]: --privileged is not accepted"),
    (["--shm-size", "64g", "-v", "/:/host"], "launch_container_extra_args[2] -v (/:/host): the host path is /"),
    (["--pid=host"], "launch_container_extra_args[0]: --pid is not accepted"),
    (["--device", "/dev/mem"], "launch_container_extra_args[0]: --device is not accepted"),
])
def test_run_options_outside_the_allow_list_are_refused(run_validate, args, expected):
    run = run_validate({"launch_container_extra_args": args})
    assert run.rc != 0
    assert f"a2-node01: refused before any change: {expected}" in run.text
    assert "See launch_container_extra_args in docs/variables.md" in run.text
    assert run.changed_nodes() == []


@pytest.mark.parametrize("settings, expected", [
    ({"launch_status_dir": "/var/lib"}, "launch_status_dir is the system directory /var/lib itself"),
    ({"ascend_stage_dir": "/var"}, "ascend_stage_dir is the system directory /var itself"),
    ({"cann_stage_dir": "/tmp/"}, "cann_stage_dir is the system directory /tmp itself"),
    ({"container_runtime_data_root": "/"}, "container_runtime_data_root is / : name a directory of its own"),
    ({"launch_job": {**SAMPLE_JOB, "checkpoint_dir": "/home"}},
     "launch_job.checkpoint_dir is the system directory /home itself"),
    ({"shared_storage_type": "existing", "shared_storage_path": "/home"},
     "shared_storage_path is the system directory /home itself"),
    ({"shared_storage_type": "existing", "shared_storage_path": "shared"},
     "shared_storage_path must be an absolute path, is 'shared'"),
])
def test_system_directories_as_path_settings_are_refused(run_validate, settings, expected):
    run = run_validate(settings)
    assert run.rc != 0
    assert "a2-node01" in run.text and expected in run.text
    assert run.changed_nodes() == []


def test_the_accepted_values_pass(run_validate):
    # The simulated cluster's mounts (inventories/sim), an allowed capability, a tab, directories below the system's.
    run = run_validate({
        "launch_container_extra_args": ["--shm-size=64g", "--cap-add", "IPC_LOCK", "-v",
                                        "/etc/ascend-sim:/etc/ascend-sim:ro", "--volume",
                                        "/var/lib/ascend-sim:/var/lib/ascend-sim", "-e", "NCCL_DEBUG=INFO"],
        "launch_status_dir": "/var/lib/ascendops/status", "cann_stage_dir": "/tmp/ascendops-stage",
        "launch_job": {**SAMPLE_JOB, "checkpoint_dir": "/home/ai/ckpt", "extra_env": {"OPTS": "a\tb"}},
        "shared_storage_type": "existing", "shared_storage_path": "/mnt/shared"})
    assert run.rc == 0, run.out
    assert run.changed_nodes() == ["a2-node01", "a2-node02"]


# ---------------------------------------------------------------- the node's mounts (validate_nodes)

NFS = {"shared_storage_type": "nfs", "shared_storage_nfs_server": "nfs1.example",
       "shared_storage_nfs_export": "/export/ascend", "shared_storage_path": "/mnt/ascendops"}


def _shared_storage_validation(mounts):
    """The shared_storage role's validate.yml on the nodes, with their gathered mounts as given (the check reads
    ansible_facts.mounts; the role gathers them only where no earlier setup did)."""
    return [{"name": "Validation of the shared_storage stage", "hosts": "npu_nodes", "gather_facts": False,
             "any_errors_fatal": True, "tasks": [
                 {"name": "Test | The node's mounts",
                  "ansible.builtin.set_fact": {"ansible_facts": {"mounts": mounts}}},
                 {"name": "Validate | Shared storage", "ansible.builtin.include_role": {
                     "name": "ascendops.cluster.shared_storage", "tasks_from": "validate"}}]}]


LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}


def test_a_path_where_another_file_system_is_mounted_is_refused(run_validate):
    mounts = [{"mount": "/", "device": "/dev/vda1", "fstype": "ext4"},
              {"mount": "/mnt/ascendops", "device": "filer:/vol/projects", "fstype": "nfs4"}]
    run = run_validate(NFS, host_vars={"a2-node01": LOCAL, "a2-node02": LOCAL}, skip_nodes=False,
                       validation=_shared_storage_validation(mounts))
    assert run.rc != 0
    assert ("a2-node01: refused before any change: shared_storage_path /mnt/ascendops is already the mount point of "
            "filer:/vol/projects (nfs4), not of nfs1.example:/export/ascend") in run.text
    assert "or shared_storage_type: existing to use the file system mounted there as it is" in run.text
    assert run.changed_nodes() == []


def test_the_same_export_already_mounted_passes(run_validate):
    mounts = [{"mount": "/", "device": "/dev/vda1", "fstype": "ext4"},
              {"mount": "/mnt/ascendops", "device": "nfs1.example:/export/ascend", "fstype": "nfs4"}]
    run = run_validate(NFS, host_vars={"a2-node01": LOCAL, "a2-node02": LOCAL}, skip_nodes=False,
                       validation=_shared_storage_validation(mounts))
    assert run.rc == 0, run.out
    assert run.changed_nodes() == ["a2-node01", "a2-node02"]
