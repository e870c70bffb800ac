"""cluster verifier: rank table vs the simulated device addresses, systemd unit, the trainer
container's devices and mounts, the training log (loss fell, checkpoint written, resumed after a
rank was killed), and the collective pre-flight report."""

import json
import os

from ansible_collections.ascendops.cluster.plugins.filter.launch import key_value_lines, train_progress
from ansible_collections.ascendops.cluster.plugins.filter.rank_table import check_rank_table

EPHEMERAL = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "")
JOB_DIR = "/etc/ascendops"
HCCN_TOOL = "/usr/local/Ascend/driver/tools/hccn_tool"
CHECKPOINTS = "/var/lib/ascendops/checkpoints"


def env(host):
    return key_value_lines(host.file(f"{JOB_DIR}/ascendops.env").content_string)


def table(host):
    return json.loads(host.file(f"{JOB_DIR}/rank_table.json").content_string)


def log(host):
    return host.check_output("journalctl -u ascendops-train -o cat --no-pager")


def test_rank_table_is_a_checked_regular_file(host, expected_npus):
    f = host.file(f"{JOB_DIR}/rank_table.json")
    assert f.is_file and not f.is_symlink
    assert f.mode == 0o644 and f.user == "root"
    summary = check_rank_table(f.content_string, servers=2, devices_per_server=expected_npus)
    assert summary["ranks"] == 2 * expected_npus and summary["version"] == "1.0"


def test_rank_table_holds_this_nodes_device_addresses_as_the_hardware_reports_them(host, expected_npus):
    e = env(host)
    mine = table(host)["server_list"][int(e["NODE_RANK"])]
    assert mine["server_id"] == mine["host_ip"] == e["HCCL_IF_IP"]
    for dev in mine["device"]:
        out = host.check_output(f"{HCCN_TOOL} -i {dev['device_id']} -ip -g")
        assert f"ipaddr:{dev['device_ip']}" in out.replace(" ", "")
    assert [d["device_id"] for d in mine["device"]] == [str(i) for i in range(expected_npus)]


def test_every_node_has_the_same_rank_table_and_the_first_server_is_the_master(host):
    e = env(host)
    t = table(host)
    assert e["MASTER_ADDR"] == t["server_list"][0]["host_ip"]
    assert e["NNODES"] == "2" and e["NPROC_PER_NODE"] == "2"
    assert e["RANK_TABLE_FILE"] == f"{JOB_DIR}/rank_table.json"
    for key in ("HCCL_CONNECT_TIMEOUT", "HCCL_BUFFSIZE", "HCCL_IF_IP"):
        assert e[key]
    ranks = [d["rank_id"] for d in t["server_list"][int(e["NODE_RANK"])]["device"]]
    first = int(e["NODE_RANK"]) * 2
    assert ranks == [str(first), str(first + 1)]


def test_systemd_unit_restarts_a_dead_rank_a_bounded_number_of_times(host):
    svc = host.service("ascendops-train")
    assert svc.is_enabled and svc.is_running
    unit = host.file("/etc/systemd/system/ascendops-train.service").content_string
    assert "Restart=on-failure" in unit
    assert "StartLimitBurst=" in unit and "TimeoutStopSec=" in unit
    assert "--privileged" not in unit and "--network host" in unit


def test_container_has_exactly_the_npu_devices_and_read_only_driver_mounts(host, expected_npus):
    info = json.loads(host.check_output("docker inspect ascendops-train"))[0]
    hc = info["HostConfig"]
    assert hc["Privileged"] is False and hc["NetworkMode"] == "host"
    devices = sorted(d["PathOnHost"] for d in hc["Devices"])
    assert devices == sorted([f"/dev/davinci{i}" for i in range(expected_npus)]
                             + ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"])
    mounts = {m["Destination"]: m for m in info["Mounts"]}
    assert mounts["/usr/local/Ascend/driver"]["RW"] is False
    assert mounts[JOB_DIR]["RW"] is False
    assert mounts[CHECKPOINTS]["RW"] is True


def test_checkpoints_on_every_node(host):
    steps = host.check_output(f"ls {CHECKPOINTS}").split()
    assert any(s.startswith("step_") for s in steps), steps


def test_every_node_logged_falling_loss_a_checkpoint_and_a_resume(host):
    # Each node's first process logs: the status of a node never depends on another node's journal.
    p = train_progress(log(host))
    assert p["steps_logged"] >= 5
    assert p["loss"] < p["first_loss"], (p["first_loss"], p["loss"])
    assert p["tokens_per_s_per_device"] > 0
    assert p["last_checkpoint"]
    assert p["resumed_from"] and p["resumed_step"] > 0  # side_effect killed a rank


def test_collective_pre_flight_report():
    with open(os.path.join(EPHEMERAL, "reports", "collective.json"), encoding="utf-8") as f:
        report = json.load(f)
    assert report["ok"] is True and report["world_size"] == 4 and report["backend"] == "gloo"
    assert sorted(len(r) for r in report["nodes"].values()) == [2, 2]
    assert all(r["check_result"] == "success" and r["alg_bandwidth_gbs"] > 0 for r in report["results"])
