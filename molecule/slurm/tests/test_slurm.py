"""slurm verifier: Slurm's view of the cluster the slurm stage made (both nodes with their NPUs as 'npu' GRES, in
the partition, answering the controller; one munge key; the collection's configuration files), the job's files
on each node (the task script from the same container spec as the systemd unit, the batch script) and the state
side_effect left: the requeued job running on both nodes, each node's container without privileges."""

import hashlib
import json

from ansible_collections.ascendops.cluster.plugins.module_utils.slurm import parse_oneliner, parse_sinfo

JOB_DIR = "/etc/ascendops"
MARKER = "Ansible managed: written by the slurm role of ascendops.cluster"


def test_sinfo_lists_both_nodes_with_their_npus_in_the_partition(host, expected_npus):
    nodes = parse_sinfo(host.check_output("sinfo --noheader --Node --format='%N|%P|%G|%T'"))
    assert sorted(nodes) == ["node1", "node2"]
    for entry in nodes.values():
        assert entry["gres"] == {"npu": expected_npus}
        assert entry["partitions"] == ["npu"] and entry["default_partition"] == "npu"
        # the requeued job holds both nodes (allocated); a node that does not answer would carry '*'
        assert entry["state"] in ("allocated", "mixed", "idle", "completing") and "*" not in entry["flags"]


def test_the_node_answers_the_controller_and_the_daemons_run(host):
    assert "is UP" in host.check_output("scontrol ping")
    assert host.service("munge").is_running and host.service("slurmd").is_running
    assert host.service("slurmd").is_enabled
    if host.check_output("hostname") == "node1":
        assert host.service("slurmctld").is_running


def test_one_munge_key_private_to_munge(host):
    key = host.file("/etc/munge/munge.key")
    assert key.user == "munge" and key.mode == 0o400
    digest = hashlib.sha256(key.content).hexdigest()
    other = host.check_output("sha256sum /etc/munge/munge.key").split()[0]
    assert digest == other
    # the same on both nodes: the other node's key decodes this node's credential
    assert host.run("munge -n | unmunge").rc == 0
    assert len(key.content) == 128 and key.content.isalnum()


def test_configuration_files_are_the_collections(host, expected_npus):
    conf = host.file("/etc/slurm/slurm.conf").content_string
    assert MARKER in conf
    lines = conf.splitlines()
    for want in ("GresTypes=npu", "JobRequeue=1", "KillWait=180", "Epilog=/usr/local/lib/ascendops/slurm-epilog.sh",
                 "AuthInfo=cred_expire=20", "ProctrackType=proctrack/cgroup"):
        assert want in lines
    assert any(line.startswith("NodeName=node2 ") and f"Gres=npu:{expected_npus}" in line for line in lines)
    gres = host.file("/etc/slurm/gres.conf").content_string
    assert f"Name=npu File=/dev/davinci[0-{expected_npus - 1}]" in gres.splitlines()
    epilog = host.file("/usr/local/lib/ascendops/slurm-epilog.sh")
    assert epilog.mode == 0o755 and "label=ascendops.slurm.job=$SLURM_JOB_ID" in epilog.content_string


def test_no_systemd_unit_runs_the_job_under_slurm(host):
    assert not host.file("/etc/systemd/system/ascendops-train.service").exists
    task = host.file(f"{JOB_DIR}/slurm-task.sh").content_string
    assert "trap stop TERM INT USR1" in task
    assert "--cap-drop ALL" in task and "--privileged" not in task
    assert '--label "ascendops.slurm.job=${SLURM_JOB_ID:-none}"' in task


def test_the_requeued_job_runs_on_both_nodes(host):
    if host.check_output("hostname") != "node1":
        return
    record = json.loads(host.file(f"{JOB_DIR}/slurm-job.json").content_string)
    job = parse_oneliner(host.check_output(f"scontrol --oneliner show job {record['job_id']}"))
    assert job["JobState"] == "RUNNING" and job["NodeList"] == "node[1-2]" and job["Restarts"] == "1"
    assert job["Comment"].strip() == f"ascendops:ascendops-debug-llama:{record['fingerprint']}"
    batch = host.file(f"{JOB_DIR}/slurm-batch.sh").content_string.splitlines()
    for want in ("#SBATCH --exclusive", "#SBATCH --requeue", "#SBATCH --nodelist=node1,node2", "#SBATCH --gres=npu:2"):
        assert want in batch


def test_each_nodes_container_runs_without_privileges(host, expected_npus):
    info = json.loads(host.check_output("docker inspect ascendops-train"))[0]
    assert info["State"]["Running"]
    assert info["HostConfig"]["CapDrop"] == ["ALL"] and not info["HostConfig"]["Privileged"]
    assert info["Config"]["Labels"]["ascendops.slurm.job"].isdigit()
    devices = sorted(d["PathOnHost"] for d in info["HostConfig"]["Devices"])
    assert [d for d in devices if d.startswith("/dev/davinci") and d[-1].isdigit()] == [
        f"/dev/davinci{i}" for i in range(expected_npus)]
