"""upgrade verifier: both nodes at the current release (installed and running), each node's install
history (the first node upgraded once and left alone after the failed run; the second: firmware and
driver installed, the NPU fault at that reboot, rolled back to the previous release, upgraded again),
the rollback record, the failed run's message, and the job resumed from the checkpoint it stopped at.
node2 is dead at verify time (side_effect killed it): what is read on it comes from what converge
read there at its end (tasks/snapshot.yml); node3, added after the upgrade, is checked at the current
release (test_scale.py has the rest)."""

import json
import os
import pathlib
from types import SimpleNamespace

import pytest
from ascend_verify import CURRENT, PREVIOUS, events, installs, key_values, npu_table

EPHEMERAL = pathlib.Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", ""))
STATUS = "/var/lib/ascendops/status/debug-llama.json"
RECORD = "/var/lib/ascendops/upgrade/previous.json"


def first(node):
    return node.endswith("-upgrade-node1")


def killed(node):
    return node.endswith("-upgrade-node2")


def added(node):
    return node.endswith("-upgrade-node3")


def saved(name):
    return (EPHEMERAL / name).read_text()


class Snapshot:
    """A node as converge read it at its end (tasks/snapshot.yml): answers the verifier's questions the
    way testinfra's host does (file, run, service), from that read. A path or command it did not read
    is a KeyError naming it (add it to the snapshot's lists in converge.yml)."""

    def __init__(self, node):
        self._data = json.loads(saved(f"snapshot-{node}.json"))

    def file(self, path):
        stat = self._data["stat"][path]
        return SimpleNamespace(exists=stat["exists"], is_symlink=stat.get("islnk", False),
                               is_directory=stat.get("isdir", False), linked_to=stat.get("lnk_source"),
                               content_string=self._data["text"].get(path))

    def run(self, command):
        result = self._data["commands"][command]
        return SimpleNamespace(rc=result["rc"], stdout=result["stdout"], stderr=result["stderr"])

    def service(self, name):
        return SimpleNamespace(is_running=self.run(f"systemctl is-active {name}").rc == 0)


@pytest.fixture()
def upgraded(node):
    """node1 and node2, the nodes the upgrade moved from the previous release."""
    if added(node):
        pytest.skip("node3 joined after the upgrade, at the current release (test_scale.py)")
    return node


@pytest.fixture()
def node_host(node, host):
    """The node to read: node1 and node3 now, node2 as converge left it (it is dead now)."""
    return Snapshot(node) if killed(node) else host


@pytest.fixture()
def upgraded_host(upgraded, node_host):
    return node_host


def test_the_killed_node_was_read_whole_while_the_job_ran(node):
    if not killed(node):
        pytest.skip("only node2 was killed")
    data = json.loads(saved(f"snapshot-{node}.json"))
    assert {c: r["rc"] for c, r in data["commands"].items()} == {
        "npu-smi info": 0, "journalctl -u ascendops-train -o cat --no-pager": 0,
        "systemctl is-active ascendops-train": 0}
    assert [p for p, s in data["stat"].items() if not s["exists"]] == []
    assert set(data["text"]) == {p for p, s in data["stat"].items() if s.get("isreg")}


def test_the_current_release_is_installed_and_running(node, node_host, expected_npus):
    # node3 too: add_node.yml installed it at the day 2 inventory's release, sim.
    host = node_host
    assert key_values(host, "/usr/local/Ascend/driver/version.info")["Version"] == CURRENT["driver"]
    assert key_values(host, "/usr/local/Ascend/firmware/version.info")["Version"] == CURRENT["firmware"]
    version, npus = npu_table(host)
    assert version == CURRENT["driver"]
    assert len(npus) == expected_npus and all(n["health"] == "OK" for n in npus)
    latest = host.file("/usr/local/Ascend/ascend-toolkit/latest")
    assert latest.is_symlink and CURRENT["cann"] in latest.linked_to
    # The previous CANN stays installed beside it on the upgraded nodes (what a rollback points latest back
    # to); node3 never had it.
    assert host.file(f"/usr/local/Ascend/ascend-toolkit/{PREVIOUS['cann']}").is_directory is not added(node)
    runtime = host.file("/usr/local/Ascend/Ascend-Docker-Runtime/ascend_docker_runtime_install.info")
    assert f"version=v{CURRENT['runtime']}" in runtime.content_string


def test_each_node_installed_what_the_plan_said_in_the_vendors_order(upgraded_host, upgraded):
    node = upgraded
    done = [(c, v) for c, v, mode in installs(upgraded_host)]
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


def test_the_fault_was_on_the_second_node_alone_and_the_run_said_so(upgraded):
    node = upgraded
    log = " ".join(saved("run-upgrade-fault.log").split())
    assert "rc=2" in log
    assert f"{node} failed" in log if not first(node) else f"{node} failed" not in log
    assert "NPU 1 Critical" in log and "rolled back, stopped" in log and "The job stays stopped" in log
    events_then = saved(f"events-fault-{node}.log")
    assert ("fault health 1 Critical" in events_then) is not first(node)


def test_the_failed_run_left_the_first_node_upgraded_and_the_second_rolled_back(upgraded):
    node = upgraded
    then = json.loads(saved(f"versions-fault-{node}.json"))
    want = CURRENT if first(node) else PREVIOUS
    assert (then["driver"], then["driver_running"], then["firmware"], then["cann_toolkit"]) == (
        want["driver"], want["driver"], want["firmware"], want["cann"])
    assert want["runtime"] in then["docker_runtime"]


def test_the_first_node_was_left_alone_after_the_failed_run(upgraded_host, upgraded):
    node = upgraded
    at_fault = [line.split(" ", 1)[1] for line in saved(f"events-fault-{node}.log").splitlines() if " " in line]
    now = events(upgraded_host)
    assert now[:len(at_fault)] == at_fault
    later = now[len(at_fault):]
    if first(node):
        assert not [e for e in later if e.startswith(("install ", "boot ", "uninstall "))], later
    else:
        assert any(e.startswith(f"install driver {CURRENT['driver']}") for e in later), later


def test_the_rollback_target_was_recorded_once_at_the_first_run(upgraded_host):
    record = json.loads(upgraded_host.file(RECORD).content_string)
    assert record["release"] == "sim"
    prev = record["previous"]
    assert (prev["driver"], prev["firmware"], prev["cann_toolkit"]) == (
        PREVIOUS["driver"], PREVIOUS["firmware"], PREVIOUS["cann"])
    assert PREVIOUS["runtime"] in prev["docker_runtime"]
    assert record["job_user_stopped"] is False


def test_the_job_resumed_from_the_checkpoint_it_stopped_at(upgraded_host, upgraded):
    node = upgraded
    stopped = json.loads(saved(f"status-stopped-{node}.json"))
    resumed = json.loads(saved(f"status-resumed-{node}.json"))
    assert stopped["state"] == "stopped" and stopped["last_checkpoint_step"] == stopped["step"]
    assert resumed["started_at"] > stopped["started_at"]
    assert resumed["step"] > stopped["last_checkpoint_step"]
    now = json.loads(upgraded_host.file(STATUS).content_string)
    assert now["state"] == "running" and now["step"] >= resumed["step"]
    assert upgraded_host.service("ascendops-train").is_running
    log = upgraded_host.run("journalctl -u ascendops-train -o cat --no-pager")
    assert "resumed from" in log.stdout
