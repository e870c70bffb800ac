"""Smoke verifier: the simulated node is a systemd host Ansible can manage."""

import json


def test_systemd_is_pid1_and_running(host):
    assert host.process.get(pid=1).comm == "systemd"
    state = host.run("systemctl is-system-running").stdout.strip()
    assert state in ("running", "degraded"), state
    assert host.service("ssh").is_running


def test_simulated_hardware_present_but_no_driver(host):
    # SIMULATION ONLY: the simulated hardware answers, the vendor software is not there yet.
    state = json.loads(host.check_output("ascend-sim state"))
    assert state["hardware"]["npu_count"] == 2 and state["hardware"]["model"] == "910B1"
    assert state["installed"]["driver"] is None and state["running"]["driver"] is None
    assert not host.file("/usr/local/Ascend/driver/version.info").exists
    assert not host.exists("npu-smi")


def test_module_result_written_by_converge(host):
    seen = json.loads(host.file("/root/smoke-npu.json").content_string)
    assert seen == {"count": 0, "driver_installed": False, "os": "Debian 12"}


def test_docker_runs_containers_inside_the_node(host):
    assert host.service("docker").is_running
    out = host.check_output("docker run --rm smoke-tiny:1 /usr/bin/echo hello-from-a-container")
    assert out.strip() == "hello-from-a-container"
