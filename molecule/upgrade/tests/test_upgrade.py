"""upgrade verifier: both nodes at the current release (installed and running), each node's install
history (the first node upgraded once and left alone after the failed run; the second: firmware and
driver installed, the NPU fault at that reboot, rolled back to the previous release, upgraded again),
the rollback record, the failed run's message, and the job resumed from the checkpoint it stopped at."""

import json
import os
import pathlib

from ascend_verify import CURRENT, PREVIOUS, events, installs, key_values, npu_table

EPHEMERAL = pathlib.Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", ""))
STATUS = "/var/lib/ascendops/status/debug-llama.json"
RECORD = "/var/lib/ascendops/upgrade/previous.json"


def first(node):
    return node.endswith("node1")


def saved(name):
    return (EPHEMERAL / name).read_text()


def test_the_current_release_is_installed_and_running(host, expected_npus):
    assert key_values(host, "/usr/local/Ascend/driver/version.info")["Version"] == CURRENT["driver"]
    assert key_values(host, "/usr/local/Ascend/firmware/version.info")["Version"] == CURRENT["firmware"]
    version, npus = npu_table(host)
    assert version == CURRENT["driver"]
    assert len(npus) == expected_npus and all(n["health"] == "OK" for n in npus)
    latest = host.file("/usr/local/Ascend/ascend-toolkit/latest")
    assert latest.is_symlink and CURRENT["cann"] in latest.linked_to
    # The previous CANN stays installed beside it (what a rollback points latest back to).
    assert host.file(f"/usr/local/Ascend/ascend-toolkit/{PREVIOUS['cann']}").is_directory
    runtime = host.file("/usr/local/Ascend/Ascend-Docker-Runtime/ascend_docker_runtime_install.info")
    assert f"version=v{CURRENT['runtime']}" in runtime.content_string


def test_each_node_installed_what_the_plan_said_in_the_vendors_order(host, node):
    done = [(c, v) for c, v, mode in installs(host)]
    up = [("firmware", CURRENT["firmware"]), ("driver", CURRENT["driver"]), ("toolkit", CURRENT["cann"]),
          ("kernels", CURRENT["cann"]), ("docker-runtime", CURRENT["runtime"])]
    start = done.index(up[0])
    if first(node):
        # Upgraded once, in the vendor's order, and left alone after.
        assert done[start:] == up, done
        return
    # The second node: firmware then driver at the current release, then the NPU fault at that reboot
    # stopped its install (no CANN, no runtime); the rollback reinstalled firmware and driver at the
    # previous release (CANN and the runtime had not changed); the re-run upgraded it in the vendor's order.
    assert done[start:start + 2] == up[:2], done
    after = done[start + 2:]
    rerun = after.index(up[0])
    rollback, again = after[:rerun], after[rerun:]
    assert sorted(rollback) == sorted([("firmware", PREVIOUS["firmware"]), ("driver", PREVIOUS["driver"])]), done
    assert again == up, done


def test_the_fault_was_on_the_second_node_alone_and_the_run_said_so(node):
    log = " ".join(saved("upgrade-fault.log").split())
    assert "rc=2" in log
    assert f"{node} failed" in log if not first(node) else f"{node} failed" not in log
    assert "NPU 1 Critical" in log and "rolled back, stopped" in log and "The job stays stopped" in log
    events_then = saved(f"events-fault-{node}.log")
    assert ("fault health 1 Critical" in events_then) is not first(node)


def test_the_failed_run_left_the_first_node_upgraded_and_the_second_rolled_back(node):
    then = json.loads(saved(f"versions-fault-{node}.json"))
    want = CURRENT if first(node) else PREVIOUS
    assert (then["driver"], then["driver_running"], then["firmware"], then["cann_toolkit"]) == (
        want["driver"], want["driver"], want["firmware"], want["cann"])
    assert want["runtime"] in then["docker_runtime"]


def test_the_first_node_was_left_alone_after_the_failed_run(host, node):
    then = [line.split(" ", 1)[1] for line in saved(f"events-fault-{node}.log").splitlines() if " " in line]
    now = events(host)
    assert now[:len(then)] == then
    later = now[len(then):]
    if first(node):
        assert not [e for e in later if e.startswith(("install ", "boot ", "uninstall "))], later
    else:
        assert any(e.startswith(f"install driver {CURRENT['driver']}") for e in later), later


def test_the_rollback_target_was_recorded_once_at_the_first_run(host):
    record = json.loads(host.file(RECORD).content_string)
    assert record["release"] == "sim"
    prev = record["previous"]
    assert (prev["driver"], prev["firmware"], prev["cann_toolkit"]) == (
        PREVIOUS["driver"], PREVIOUS["firmware"], PREVIOUS["cann"])
    assert PREVIOUS["runtime"] in prev["docker_runtime"]
    assert record["job_user_stopped"] is False


def test_the_job_resumed_from_the_checkpoint_it_stopped_at(host, node):
    stopped = json.loads(saved(f"status-stopped-{node}.json"))
    resumed = json.loads(saved(f"status-resumed-{node}.json"))
    assert stopped["state"] == "stopped" and stopped["last_checkpoint_step"] == stopped["step"]
    assert resumed["started_at"] > stopped["started_at"]
    assert resumed["step"] > stopped["last_checkpoint_step"]
    now = json.loads(host.file(STATUS).content_string)
    assert now["state"] == "running" and now["step"] >= resumed["step"]
    assert host.service("ascendops-train").is_running
    log = host.run("journalctl -u ascendops-train -o cat --no-pager")
    assert "resumed from" in log.stdout
