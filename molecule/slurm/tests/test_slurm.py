"""slurm verifier: Slurm's view of the cluster the slurm stage made (both nodes with their NPUs as 'npu' GRES, in
the partition, answering the controller; one munge key; the collection's configuration files), the job's files
on each node (the task script from the same container spec as the systemd unit, the batch script) and the state
side_effect left: the requeued job running on both nodes, each node's container without privileges; Slurm's
accounting (slurmdbd and MariaDB on node1) holding every run of the job."""

import hashlib
import json

from ansible_collections.ascendops.cluster.plugins.module_utils.slurm import (
    SACCT_FORMAT,
    comment_fingerprint,
    parse_oneliner,
    parse_sacct,
    parse_sinfo,
)

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


def test_accounting_database_and_daemon_on_the_controller(host):
    if host.check_output("hostname") != "node1":
        assert not host.file("/etc/slurm/slurmdbd.conf").exists
        return
    assert host.service("mariadb").is_running and host.service("mariadb").is_enabled
    assert host.service("slurmdbd").is_running and host.service("slurmdbd").is_enabled
    conf = host.file("/etc/slurm/slurmdbd.conf")
    # slurmdbd refuses a configuration others can read; the password is the one the collection made
    assert conf.user == "slurm" and conf.mode == 0o600
    lines = conf.content_string.splitlines()
    assert MARKER in lines[0] and "DbdHost=node1" in lines and "StorageLoc=slurm_acct_db" in lines
    password = next(line.split("=", 1)[1] for line in lines if line.startswith("StoragePass="))
    assert len(password) == 32 and password.isalnum()
    slurm_conf = host.file("/etc/slurm/slurm.conf").content_string.splitlines()
    assert "AccountingStorageType=accounting_storage/slurmdbd" in slurm_conf
    assert "AccountingStoreFlags=job_comment" in slurm_conf


def test_every_run_of_the_job_is_in_slurms_accounting(host):
    # From each node: sacct asks slurmdbd on node1 through munge.
    assert "ascendops" in host.check_output("sacctmgr --noheader --parsable2 show cluster format=Cluster").splitlines()
    out = host.check_output("sacct --noheader --parsable2 --allocations --starttime=now-1days "
                            f"--name=ascendops-debug-llama --format={SACCT_FORMAT}")
    jobs = {j["job_id"]: j for j in parse_sacct(out)}
    record = json.loads(host.file(f"{JOB_DIR}/slurm-job.json").content_string) \
        if host.file(f"{JOB_DIR}/slurm-job.json").exists else None
    states = sorted(j["state"] for j in jobs.values())
    # the job stop.yml cancelled, and the changed job submitted after it (requeued once, running again)
    assert "CANCELLED" in states and "RUNNING" in states, out
    # slurmctld sends the comment (AccountingStoreFlags=job_comment) with a job's completion record: every
    # ended run carries the collection's fingerprint, the running one gets it when it ends.
    for job in jobs.values():
        if job["state"] not in ("RUNNING", "PENDING", "REQUEUED"):
            assert comment_fingerprint(job["comment"], "ascendops-debug-llama"), job
    if record:
        assert jobs[record["job_id"]]["state"] == "RUNNING" and jobs[record["job_id"]]["nodes"] == "node[1-2]"
