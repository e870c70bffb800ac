"""The launch role's unit and environment templates, rendered with plain Jinja2 (as Ansible does)."""

from pathlib import Path

import jinja2
import pytest

TEMPLATES = Path(__file__).resolve().parents[3] / "roles" / "launch" / "templates"


def render(name, **extra):
    devices = [{"device_id": str(i), "device_ip": f"29.1.1.{i + 1}", "rank_id": str(2 + i)} for i in range(2)]
    values = {
        "ansible_managed": "managed", "inventory_hostname": "node2", "launch_container_engine": "docker",
        "launch_job_dir": "/etc/ascendops", "launch_image": "localhost/ascendops-trainer:latest",
        "launch_install_path": "/usr/local/Ascend", "launch_hccl_connect_timeout": 600,
        "launch_hccl_exec_timeout": 1800, "launch_hccl_buffsize": 200, "launch_master_port": 29500,
        "launch_start_limit_interval_s": 3600, "launch_start_limit_burst": 5, "launch_restart_sec": 20,
        "launch_stop_timeout_s": 600,
        "__launch_job": {"name": "run1", "data_path": "/data/tokens", "checkpoint_dir": "/data/ckpt",
                         "run_dir": "/data/run", "hf_model_dir": None, "extra_env": {"B": "2", "A": "1"}},
        "__launch_container_name": "ascendops-train", "__launch_node_rank": 1, "__launch_nnodes": 2,
        "__launch_my_devices": devices, "__launch_master_addr": "10.0.0.9", "__launch_host_ip": "10.0.0.10",
        "__launch_device_nodes": ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"],
        "__mounts": ["/usr/local/Ascend/driver", "/usr/local/bin/npu-smi"],
        "__launch_env_file": "/etc/ascendops/ascendops.env", "__launch_config_file": "/etc/ascendops/job.yaml",
        "__launch_rank_table_file": "/etc/ascendops/rank_table.json",
    }
    values.update(extra)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, keep_trailing_newline=True)
    return env.get_template(name).render(**values)


def test_unit_runs_the_container_with_exactly_the_nodes_npus_and_no_privileges():
    unit = render("ascendops-train.service.j2")
    lines = [line.strip().rstrip("\\").strip() for line in unit.splitlines()]
    assert [x for x in lines if x.startswith("--device")] == [
        "--device /dev/davinci0", "--device /dev/davinci1", "--device /dev/davinci_manager",
        "--device /dev/devmm_svm", "--device /dev/hisi_hdc"]
    assert "--privileged" not in unit and "--network host" in unit
    assert "--volume /usr/local/Ascend/driver:/usr/local/Ascend/driver:ro" in lines
    assert "--volume /data/tokens:/data/tokens:ro" in lines
    assert "--volume /data/ckpt:/data/ckpt" in lines and "--volume /data/run:/data/run" in lines
    assert "torchrun --nnodes 2 --node_rank 1" in unit and "--nproc_per_node 2 --master_addr 10.0.0.9" in unit
    for setting in ("Restart=on-failure", "StartLimitBurst=5", "TimeoutStopSec=630", "Requires=docker.service",
                    "ExecStop=/usr/bin/docker stop --time 600 ascendops-train"):
        assert setting in unit
    # every continuation line of ExecStart ends with a backslash, the last one does not
    start = unit.split("ExecStart=", 1)[1].split("\nExecStop=", 1)[0].splitlines()
    assert all(line.endswith("\\") for line in start[:-1]) and not start[-1].endswith("\\")


def test_unit_mounts_a_model_directory_read_only_when_one_is_given():
    unit = render("ascendops-train.service.j2", __launch_job={
        "name": "run1", "data_path": "/data/tokens", "checkpoint_dir": "/data/ckpt", "run_dir": "/data/ckpt",
        "hf_model_dir": "/models/llama3", "extra_env": {}})
    assert "--volume /models/llama3:/models/llama3:ro" in unit
    assert unit.count("/data/ckpt:/data/ckpt") == 1


@pytest.mark.parametrize("cann", [{}, {"cann_toolkit_home": "/usr/local/Ascend/cann-8.0.0",
                                       "cann_set_env": "/usr/local/Ascend/ascend-toolkit/set_env.sh"}])
def test_environment_file_is_plain_key_value_lines(cann):
    text = render("ascendops.env.j2", **cann)
    pairs = dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))
    assert pairs["RANK_TABLE_FILE"] == "/etc/ascendops/rank_table.json"
    assert pairs["HCCL_IF_IP"] == "10.0.0.10" and pairs["MASTER_ADDR"] == "10.0.0.9"
    assert (pairs["NODE_RANK"], pairs["NNODES"], pairs["NPROC_PER_NODE"]) == ("1", "2", "2")
    assert pairs["HCCL_CONNECT_TIMEOUT"] == "600" and pairs["HCCL_BUFFSIZE"] == "200"
    assert list(pairs)[-2:] == ["A", "B"]  # extra env, sorted
    assert ("ASCEND_TOOLKIT_HOME" in pairs) == bool(cann)
    assert not any('"' in v or "'" in v for v in pairs.values())
