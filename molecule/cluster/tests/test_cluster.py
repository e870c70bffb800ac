"""cluster verifier: rank table vs the simulated device addresses, systemd unit, the trainer
container's devices, mounts and privileges (as docker inspect showed it while it ran), the job's
environment, the status files and unit after side_effect's last step (a non-finite loss: exit 4, not
retried), and the collective pre-flight report."""

import json
import os

import testinfra
import yaml
from ansible_collections.ascendops.cluster.plugins.filter.launch import key_value_lines
from ansible_collections.ascendops.cluster.plugins.filter.rank_table import check_rank_table
from ansible_collections.ascendops.cluster.plugins.module_utils.shared_storage import (
    MARKER_NAME,
    mount_of,
    parse_mountinfo,
)

EPHEMERAL = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "")
JOB_DIR = "/etc/ascendops"
HCCN_TOOL = "/usr/local/Ascend/driver/tools/hccn_tool"
# The job's data and checkpoints on the nodes' shared file system (shared_storage_type existing).
SHARED = "/mnt/ascendops"
CHECKPOINTS = f"{SHARED}/debug-llama/checkpoints"
DATA = f"{SHARED}/debug-llama/data"
STATUS = "/var/lib/ascendops/status/debug-llama.json"


def env(host):
    return key_value_lines(host.file(f"{JOB_DIR}/ascendops.env").content_string)


def table(host):
    return json.loads(host.file(f"{JOB_DIR}/rank_table.json").content_string)


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


def test_systemd_unit_restarts_a_crash_a_bounded_number_of_times_and_never_a_do_not_retry_exit(host):
    assert host.service("ascendops-train").is_enabled
    unit = host.file("/etc/systemd/system/ascendops-train.service").content_string
    lines = unit.splitlines()
    for setting in ("Restart=on-failure", "RestartPreventExitStatus=2 3 4", "SuccessExitStatus=143",
                    "ExecStop=-/usr/bin/docker stop --time 135 ascendops-train", "TimeoutStopSec=165"):
        assert setting in lines
    assert "StartLimitBurst=" in unit and "--privileged" not in unit
    assert "ascendops-train launch --grace-s 120 -- --nnodes 2 --node_rank" in unit


def test_the_job_ran_as_the_runtime_user_without_capabilities(host, expected_npus):
    info = json.loads(host.file("/root/ascendops-train.inspect.json").content_string)[0]
    hc = info["HostConfig"]
    user = host.user("HwHiAiUser")
    assert info["Config"]["User"] == f"{user.uid}:{user.gid}"
    assert hc["CapDrop"] == ["ALL"] and not hc["CapAdd"]
    # The engine adds label=disable itself to a container in the host's IPC namespace (the job's --ipc host,
    # which HCCL's shared memory needs); every other security option is ours.
    assert hc["IpcMode"] == "host"
    assert [o for o in hc["SecurityOpt"] if o != "label=disable"] == ["no-new-privileges"]
    assert hc["Privileged"] is False and hc["NetworkMode"] == "host"
    devices = sorted(d["PathOnHost"] for d in hc["Devices"])
    assert devices == sorted([f"/dev/davinci{i}" for i in range(expected_npus)]
                             + ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"])
    mounts = {m["Destination"]: m for m in info["Mounts"]}
    # /etc/hccn.conf: the device NICs' addresses the roce stage wrote (HCCL of some CANN versions reads them)
    for ro in ("/usr/local/Ascend/driver", "/etc/ascend_install.info", "/etc/hccn.conf", JOB_DIR, DATA):
        assert mounts[ro]["RW"] is False, ro
    for rw in (CHECKPOINTS, "/var/lib/ascendops/status"):
        assert mounts[rw]["RW"] is True, rw
    # what it wrote is the runtime user's
    assert host.file(CHECKPOINTS).uid == user.uid and host.file(STATUS).uid == user.uid


def test_environment_socket_interface_rdma_qos_and_secrets_kept_from_login_shells(host):
    e = env(host)
    addr = e["HCCL_IF_IP"]
    holder = [line.split()[1] for line in host.check_output("ip -o -4 addr show").splitlines()
              if line.split()[3].split("/")[0] == addr]
    assert holder == [e["GLOO_SOCKET_IFNAME"]]
    assert e["HCCL_SOCKET_IFNAME"] == e["GLOO_SOCKET_IFNAME"]
    assert (e["HCCL_RDMA_TC"], e["HCCL_RDMA_SL"]) == ("132", "4")  # ascend_rdma_dscp 33 x 4, priority 4
    assert "ASCEND_RT_VISIBLE_DEVICES" not in e  # the job has every NPU of the node
    f = host.file(f"{JOB_DIR}/ascendops.env")
    assert f.mode == 0o600 and f.user == "root"
    # The job's identity is not exported to login shells (issue 41).
    assert not host.file("/etc/profile.d/ascendops-job.sh").exists
    login = host.run("bash -lc 'env'").stdout
    assert "ASCENDOPS_JOB=" not in login and "ASCENDOPS_SERVICE=" not in login and "RANK_TABLE_FILE=" not in login


def test_checkpoints_on_every_node(host):
    steps = host.check_output(f"ls {CHECKPOINTS}").split()
    assert any(s.startswith("step_") for s in steps), steps


def _instances():
    with open(os.environ["MOLECULE_INVENTORY_FILE"], encoding="utf-8") as f:
        return sorted((yaml.safe_load(f).get("all") or {}).get("hosts") or {})


def test_data_and_checkpoints_are_on_the_one_shared_file_system(host):
    entries = parse_mountinfo(host.file("/proc/self/mountinfo").content_string)
    assert mount_of(CHECKPOINTS, entries)["mount_point"] == SHARED
    assert mount_of(DATA, entries)["mount_point"] == SHARED
    root_dev, shared_dev = host.check_output(f"stat -c %d / {SHARED}").split()
    assert root_dev != shared_dev  # not a directory of the node's own root file system
    # The shared_storage stage's marker: written by the first node with the run's token, the same file on every node.
    first, *others = _instances()
    marker = host.file(f"{SHARED}/{MARKER_NAME}").content_string
    assert json.loads(marker)["node"] == first
    for other in others:
        assert testinfra.get_host(f"podman://{other}").file(f"{SHARED}/{MARKER_NAME}").content_string == marker
    # The training data was copied into it (once, from the first node).
    assert host.file(DATA).is_directory and host.check_output(f"ls {DATA}").split()


def test_a_resume_on_the_other_node_read_the_checkpoint_the_first_node_wrote(host):
    # Shared mode: global rank 0 (node rank 0) alone finalizes every checkpoint (rename, latest, trainer
    # state); side_effect restarted the other node's ranks from a checkpoint, which they read from SHARED.
    log = host.check_output("journalctl -u ascendops-train -o cat --no-pager")
    saved = [line for line in log.splitlines() if "saved checkpoint" in line]
    resumed = [line for line in log.splitlines() if "resumed from" in line]
    assert resumed, "side_effect restarts every node from a checkpoint"
    if env(host)["NODE_RANK"] == "0":
        assert saved and all(f"saved checkpoint {SHARED}/" in line for line in saved), saved
    else:
        assert saved == [], saved  # this node wrote no checkpoint: what it resumed from came from node rank 0


def test_the_non_finite_loss_stopped_the_job_for_good(host):
    s = json.loads(host.file(STATUS).content_string)
    assert s["schema"] == 1 and s["job"] == "debug-llama" and s["state"] == "failed" and s["exit_code"] == 4
    assert s["reason"]
    props = key_value_lines(host.check_output("systemctl show ascendops-train --property=ActiveState,ExecMainStatus"))
    assert props == {"ActiveState": "failed", "ExecMainStatus": "4"}
    since = host.file("/root/diverge-started-at").content_string.strip()
    log = host.check_output(f"journalctl -u ascendops-train -o cat --no-pager --since @{since}")
    assert len([line for line in log.splitlines() if line.startswith("Started ascendops-train")]) == 1
    assert not host.file(f"{JOB_DIR}/debug-llama.intent.json").exists  # the start cleared the stop record


def test_collective_pre_flight_report():
    with open(os.path.join(EPHEMERAL, "reports", "collective.json"), encoding="utf-8") as f:
        report = json.load(f)
    assert report["ok"] is True and report["world_size"] == 4 and report["backend"] == "gloo"
    assert sorted(len(r) for r in report["nodes"].values()) == [2, 2]
    assert all(r["check_result"] == "success" and r["alg_bandwidth_gbs"] > 0 for r in report["results"])


def test_baselines_recorded_with_the_versions_they_ran_on():
    """The collective pre-flight (converge) and status.yml (side_effect) recorded the cluster's baselines."""
    import glob

    files = glob.glob(os.path.join(EPHEMERAL, "reports", "baseline-*.json"))
    assert len(files) == 1, files
    with open(files[0], encoding="utf-8") as f:
        store = json.load(f)
    coll, train = store["baselines"]["collective"], store["baselines"]["training"]
    assert set(coll["metrics"]) == {"8192", "262144"} and all(v > 0 for v in coll["metrics"].values())
    assert coll["context"]["nodes"] == 2 and coll["context"]["world_size"] == 4
    assert coll["context"]["driver"] and coll["context"]["cann"] not in ("", "none") and coll["context"]["image"]
    assert train["metrics"]["tokens_per_s_per_device"] > 0
