"""The job's container specification: one spec renders the systemd unit and the pre-flight's argv."""

import shlex

import pytest
from ansible_collections.ascendops.cluster.plugins.filter.launch import (
    container_extra_args_problems,
    container_user,
    job_container_argv,
    job_container_command,
    job_container_security,
    job_container_spec,
    job_container_unit,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.job_container import (
    ContainerSpec,
    ContainerSpecError,
    env_file_text,
    extra_args_problems,
    interface_of_address,
    job_env,
    security_args,
)

JOB = {"name": "run1", "data_path": "/data/tokens", "checkpoint_dir": "/data/ckpt", "run_dir": "/data/run",
       "hf_model_dir": None}
DEVICES = ["/dev/davinci0", "/dev/davinci1", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]


def stat_results(uid=1001, gid=1001, mode="0660", paths=tuple(DEVICES)):
    return [{"item": p, "stat": {"exists": True, "path": p, "uid": uid, "gid": gid, "mode": mode}} for p in paths]


def settings(**over):
    s = {"engine": "docker", "name": "ascendops-train", "image": "localhost/ascendops-trainer:1", "npu_ids": ["0", "1"],
         "control_devices": DEVICES[2:], "driver_mounts": ["/usr/local/Ascend/driver", "/etc/ascend_install.info"],
         "job_dir": "/etc/ascendops", "job": JOB, "status_dir": "/var/lib/ascendops/status",
         "env_file": "/etc/ascendops/ascendops.env", "user": container_user(stat_results(), "HwHiAiUser", 1001, 1001),
         "ulimits": {"memlock": "-1:-1"}, "extra_args": [], "labels": {"ascendops.job": "run1"}, "stop_timeout": 615,
         "command": {"nnodes": 2, "node_rank": 1, "nproc": 2, "master_addr": "10.0.0.9", "master_port": 29500,
                     "config_file": "/etc/ascendops/job.yaml", "grace_s": 600}}
    s.update(over)
    return s


def exec_start_argv(unit):
    """The ``<engine> run`` line of a unit (ExecStartPre=, the container started detached) as systemd
    splits it (continuation lines joined), without the --detach the unit adds."""
    body = unit.split("run --detach \\\n", 1)[1].split("\nExecStart=", 1)[0].replace("\\\n", " ")
    head = unit.split(" run --detach", 1)[0].rsplit("ExecStartPre=", 1)[1]
    return [head, "run"] + shlex.split(body)


def test_the_unit_and_the_pre_flight_run_the_same_container():
    spec = job_container_spec(settings())
    unit = job_container_unit(spec, "job run1", 600)
    run = exec_start_argv(unit)
    assert run[0] == "/usr/bin/docker" and run[1] == "run"
    pre = job_container_argv(spec, name="ascendops-train-collective",
                             command=job_container_command(spec, "collective", ["--sizes", "8K"]))
    # same options (name and command aside)
    opts = run[2:run.index("localhost/ascendops-trainer:1")]
    pre_opts = [o for o in pre[2:pre.index("localhost/ascendops-trainer:1")] if o != "--rm"]
    assert [o for o in opts if o != "ascendops-train"] == [o for o in pre_opts if o != "ascendops-train-collective"]
    assert pre[pre.index("localhost/ascendops-trainer:1") + 1:] == [
        "torchrun", "--nnodes", "2", "--node_rank", "1", "--nproc_per_node", "2", "--master_addr", "10.0.0.9",
        "--master_port", "29500", "-m", "ascendops_trainer", "collective", "--sizes", "8K"]


def test_the_job_runs_behind_the_launcher_with_the_stop_grace():
    run = exec_start_argv(job_container_unit(job_container_spec(settings()), "job run1", 600))
    cmd = run[run.index("localhost/ascendops-trainer:1") + 1:]
    assert cmd[:5] == ["ascendops-train", "launch", "--grace-s", "600", "--"]
    assert cmd[5:] == ["--nnodes", "2", "--node_rank", "1", "--nproc_per_node", "2", "--master_addr",
                       "10.0.0.9", "--master_port", "29500", "-m", "ascendops_trainer", "train", "--config",
                       "/etc/ascendops/job.yaml"]


def test_the_unit_gives_the_grace_and_systemd_waits_longer():
    unit = job_container_unit(job_container_spec(settings()), "job run1", 600)
    assert "ExecStop=-/usr/bin/docker stop --time 615 ascendops-train" in unit
    assert "TimeoutStopSec=645" in unit
    run = exec_start_argv(unit)
    assert run[run.index("--stop-timeout") + 1] == "615"
    with pytest.raises(ValueError, match="must exceed the grace"):
        job_container_unit(job_container_spec(settings(stop_timeout=600)), "job", 600)


def test_the_unit_never_retries_a_do_not_retry_exit_and_a_stop_is_clean():
    unit = job_container_unit(job_container_spec(settings()), "job run1", 600, restart_sec=5, start_limit_burst=3)
    lines = unit.splitlines()
    for setting in ("Restart=on-failure", "RestartSec=5", "StartLimitBurst=3", "RestartPreventExitStatus=2 3 4",
                    "SuccessExitStatus=143", "Wants=docker.service", "WantedBy=multi-user.target"):
        assert setting in lines
    # a container already removed is no failure of the stop
    assert [x for x in lines if x.startswith(("ExecStop", "ExecStartPre=-"))] == [
        "ExecStartPre=-/usr/bin/docker rm -f ascendops-train",
        "ExecStop=-/usr/bin/docker stop --time 615 ascendops-train",
        "ExecStopPost=-/usr/bin/docker rm -f ascendops-train"]


def test_least_privilege_flags_devices_and_mounts():
    run = exec_start_argv(job_container_unit(job_container_spec(settings()), "job run1", 600))
    assert "--privileged" not in run
    pairs = list(zip(run, run[1:]))
    assert ("--cap-drop", "ALL") in pairs and ("--security-opt", "no-new-privileges") in pairs
    assert ("--user", "1001:1001") in pairs and ("--env", "HOME=/tmp") in pairs
    assert ("--network", "host") in pairs and ("--ulimit", "memlock=-1:-1") in pairs
    assert [b for a, b in pairs if a == "--device"] == DEVICES
    assert [b for a, b in pairs if a == "--volume"] == [
        "/usr/local/Ascend/driver:/usr/local/Ascend/driver:ro", "/etc/ascend_install.info:/etc/ascend_install.info:ro",
        "/etc/ascendops:/etc/ascendops:ro", "/data/tokens:/data/tokens:ro", "/data/ckpt:/data/ckpt",
        "/data/run:/data/run", "/var/lib/ascendops/status:/var/lib/ascendops/status"]
    assert ("--env-file", "/etc/ascendops/ascendops.env") in pairs
    assert job_container_security("1001:1001") == security_args("1001:1001") == [
        "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", "1001:1001"]


def test_a_model_directory_is_read_only_and_a_shared_run_dir_is_mounted_once():
    job = dict(JOB, hf_model_dir="/models/llama3", run_dir="/data/ckpt")
    argv = job_container_argv(job_container_spec(settings(job=job)))
    vols = [b for a, b in zip(argv, argv[1:]) if a == "--volume"]
    assert "/models/llama3:/models/llama3:ro" in vols
    assert vols.count("/data/ckpt:/data/ckpt") == 1 and not any(v.startswith("/data/run") for v in vols)


def test_systemd_specifiers_and_spaces_are_escaped():
    spec = ContainerSpec("docker", "job", "img", ["sh", "-c", "echo 100% $HOME"], env={"A": "x y"})
    run = exec_start_argv(spec.unit("d", 10))
    assert run[-3:] == ["sh", "-c", "echo 100%% $$HOME"]
    assert "A=x y" in run


@pytest.mark.parametrize("bad, match", [
    ({"engine": "lxc"}, "docker or podman"),
    ({"name": "a b"}, "container name"),
    ({"devices": ["/tmp/x"]}, "not under /dev"),
    ({"mounts": [{"source": "data"}]}, "absolute paths"),
    ({"mounts": [{"source": "/a:b"}]}, "cannot be passed"),
    ({"env": {"A": "1\n2"}}, "without control characters"),
    ({"ulimits": {"memlock": "lots"}}, "ulimit"),
])
def test_bad_specifications_are_refused(bad, match):
    args = {"engine": "docker", "name": "job", "image": "img", "command": ["true"]}
    args.update(bad)
    with pytest.raises(ContainerSpecError, match=match):
        ContainerSpec(**args)


def test_podman_runs_without_docker_service():
    unit = ContainerSpec("podman", "job", "img", ["true"]).unit("d", 10)
    assert "docker.service" not in unit and "ExecStartPre=/usr/bin/podman run --detach" in unit
    main = [x for x in unit.splitlines() if x.startswith("ExecStart=")]
    assert main[0].endswith("ascendops-wait /usr/bin/podman job")


def test_the_runtime_user_when_it_owns_the_devices():
    user = container_user(stat_results(), "HwHiAiUser", 1001, 1001)
    assert user["user"] == "1001:1001" and user["cap_add"] == []
    # group access is enough
    assert container_user(stat_results(uid=0, gid=1001), "HwHiAiUser", 1001, 1001)["user"] == "1001:1001"


def test_root_without_capabilities_when_the_devices_do_not_allow_the_user():
    user = container_user(stat_results(uid=0, gid=0, mode="0600"), "HwHiAiUser", 1001, 1001)
    assert user["user"] is None and user["cap_add"] == []
    assert "cannot open /dev/davinci0 (0:0 0600)" in user["reason"]
    # devices of another user: root needs DAC_OVERRIDE to open them, nothing more
    other = container_user(stat_results(uid=1002, gid=1002), "HwHiAiUser", 1001, 1001)
    assert other["user"] is None and other["cap_add"] == ["DAC_OVERRIDE"]
    missing = container_user(stat_results(), "", None, None)
    assert missing["user"] is None and "root asked for" in missing["reason"]
    assert "does not exist" in container_user(stat_results(), "HwHiAiUser", None, None)["reason"]
    spec = job_container_spec(settings(user=other))
    assert ("--cap-add", "DAC_OVERRIDE") in zip(job_container_argv(spec), job_container_argv(spec)[1:])
    assert "--user" not in job_container_argv(spec) and "HOME=/tmp" not in job_container_argv(spec)


def test_environment_derived_values_and_the_sites_override():
    out = job_env({"HCCL_RDMA_TC": "132", "HCCL_RDMA_SL": "4", "GLOO_SOCKET_IFNAME": "eth0", "EMPTY": ""},
                  {"HCCL_RDMA_TC": "104", "TOKEN": "s3cret", "GLOO_SOCKET_IFNAME": "eth0"})
    assert out["env"] == {"HCCL_RDMA_TC": "104", "HCCL_RDMA_SL": "4", "GLOO_SOCKET_IFNAME": "eth0", "TOKEN": "s3cret"}
    assert out["overridden"] == {"HCCL_RDMA_TC": ["132", "104"]}
    text = env_file_text(out["env"], ["header"])
    assert text.splitlines() == ["# header", "HCCL_RDMA_TC=104", "HCCL_RDMA_SL=4", "GLOO_SOCKET_IFNAME=eth0",
                                 "TOKEN=s3cret"]
    with pytest.raises(ContainerSpecError):
        job_env({}, {"BAD KEY": "1"})


def test_the_interface_holding_an_address():
    facts = {"interfaces": ["lo", "eth0", "enp1s0-1"],
             "lo": {"ipv4": {"address": "127.0.0.1"}},
             "eth0": {"ipv4": {"address": "10.0.0.9"}, "ipv4_secondaries": [{"address": "10.0.0.99"}]},
             "enp1s0_1": {"ipv4": {"address": "192.168.1.5"}}}
    assert interface_of_address(facts, "10.0.0.9") == "eth0"
    assert interface_of_address(facts, "10.0.0.99") == "eth0"
    assert interface_of_address(facts, "192.168.1.5") == "enp1s0-1"
    assert interface_of_address(facts, "10.9.9.9") == "" and interface_of_address({}, "10.0.0.9") == ""


def test_an_engine_restart_does_not_restart_the_unit():
    """Wants= (not Requires=) on docker.service, the container detached, and a main process that is not
    the engine's client: nothing makes systemd stop or restart the job when docker.service restarts."""
    unit = job_container_unit(job_container_spec(settings()), "job run1", 600)
    lines = unit.splitlines()
    assert "Requires=docker.service" not in unit and "PartOf=" not in unit and "BindsTo=" not in unit
    assert "Wants=docker.service" in lines and "After=network-online.target docker.service" in lines
    assert [x for x in lines if x.startswith("ExecStartPre=/usr/bin/docker run")] == [
        "ExecStartPre=/usr/bin/docker run --detach \\"]
    assert "--rm" not in exec_start_argv(unit)
    main = [x for x in lines if x.startswith("ExecStart=")]
    assert len(main) == 1 and main[0].startswith("ExecStart=/bin/sh -c ")
    assert main[0].endswith(" ascendops-wait /usr/bin/docker ascendops-train")


FAKE_ENGINE = """#!/bin/sh
# a stand-in engine: the first `logs` breaks (the daemon restarts), `inspect` fails while it is down,
# then says the container runs; the second `logs` ends with the container, which exited with $EXIT
echo "$*" >> "$LOG"
n=$(grep -c '^logs' "$LOG")
case "$1" in
  logs) [ "$n" -ge 2 ] && { echo step 7; exit 0; }; echo step 3; exit 1;;
  inspect) i=$(grep -c '^inspect' "$LOG")
    [ "$i" -eq 1 ] && { echo "Cannot connect to the Docker daemon" >&2; exit 1; }
    [ "$n" -lt 2 ] && { echo "true 0"; exit 0; }
    echo "false $EXIT";;
esac
"""


@pytest.mark.parametrize("code", [0, 143, 3])
def test_the_main_process_follows_the_container_across_an_engine_restart(tmp_path, code):
    import os
    import subprocess

    from ansible_collections.ascendops.cluster.plugins.module_utils.job_container import WAIT_SCRIPT
    engine = tmp_path / "engine"
    engine.write_text(FAKE_ENGINE)
    engine.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sleep").symlink_to("/bin/true")  # no waiting between tries
    env = dict(os.environ, LOG=str(tmp_path / "calls"), EXIT=str(code), PATH=f"{bin_dir}:{os.environ['PATH']}")
    done = subprocess.run(["/bin/sh", "-c", WAIT_SCRIPT, "ascendops-wait", str(engine), "job"], env=env,
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == code
    assert done.stdout == "step 3\nstep 7\n"
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[0] == "logs --follow job" and calls[-2].startswith("logs --follow --since ")
    assert calls.count("inspect --format {{.State.Running}} {{.State.ExitCode}} job") == 2


def test_the_main_process_fails_when_the_container_is_gone(tmp_path):
    import subprocess

    from ansible_collections.ascendops.cluster.plugins.module_utils.job_container import WAIT_SCRIPT
    engine = tmp_path / "engine"
    engine.write_text("#!/bin/sh\n[ \"$1\" = inspect ] && echo 'Error: No such object: job' >&2\nexit 1\n")
    engine.chmod(0o755)
    done = subprocess.run(["/bin/sh", "-c", WAIT_SCRIPT, "ascendops-wait", str(engine), "job"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 1 and "container job is gone" in done.stderr


def test_systemd_reads_the_unit(tmp_path):
    import shutil
    import subprocess
    if not shutil.which("systemd-analyze"):
        pytest.skip("no systemd-analyze")
    unit = tmp_path / "ascendops-train.service"
    unit.write_text(job_container_unit(job_container_spec(settings()), "job run1", 600))
    out = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True, text=True,
                         check=False)
    bad = [x for x in (out.stdout + out.stderr).splitlines() if str(unit) in x and "Executable" not in x
           and "Failed to" not in x]
    assert bad == []


# ---------------------------------------------------------------- launch_container_extra_args: an allow-list

ACCEPTED_ARGS = [
    ["--shm-size", "64g"], ["--shm-size=64g"], ["--memory", "900g", "--memory-swap=-1"], ["-m", "512m"], ["-m512m"],
    ["--memory-reservation", "1.5GiB"], ["--cpus", "7.5"], ["--cpuset-cpus", "0-23,48-71"], ["--cpuset-mems=0,1"],
    ["--pids-limit", "-1"], ["--ulimit", "memlock=-1:-1"], ["--ulimit=stack=67108864"],
    ["--cap-add", "IPC_LOCK"], ["--cap-add=sys_ptrace"], ["--cap-add", "CAP_IPC_LOCK"],
    ["--env", "NCCL_DEBUG=INFO"], ["-e", "A=1"], ["-eA=1"], ["-e=A=1"], ["--env=A="],
    ["--label", "site.team=ml"], ["-l", "owner=ai"], ["--add-host", "registry:10.0.0.5"],
    ["--volume", "/etc/ascend-sim:/etc/ascend-sim:ro", "-v", "/var/lib/ascend-sim:/var/lib/ascend-sim",
     "--volume=/opt/ascend-sim-rank:/opt/ascend-sim-rank:ro"],
    [],
]


@pytest.mark.parametrize("args", ACCEPTED_ARGS)
def test_the_allowed_run_options_pass_in_both_forms(args):
    assert extra_args_problems(args) == []
    # and the spec renders them, in the unit and the pre-flight's argv alike
    spec = ContainerSpec("docker", "job", "img", ["true"], extra_args=args)
    assert spec.argv()[-(len(args) + 2):-2] == args


@pytest.mark.parametrize("args, expected", [
    (["--privileged"], "launch_container_extra_args[0]: --privileged is not accepted"),
    (["--pid=host"], "launch_container_extra_args[0]: --pid is not accepted"),
    (["--pid", "host"], "launch_container_extra_args[0]: --pid is not accepted"),
    (["-v", "/:/host"], "launch_container_extra_args[0] -v (/:/host): the host path is /"),
    (["--volume=/:/host"], "launch_container_extra_args[0] --volume (/:/host): the host path is /"),
    (["-v/var/run/docker.sock:/d.sock"], "/var/run (the kernel's, the devices', the engine's or root's own) is never"),
    (["--device", "/dev/mem"], "--device is not accepted"),
    (["--device=/dev/mem"], "--device is not accepted"),
    (["--network", "bridge"], "--network is not accepted"),
    (["--net=none"], "--net is not accepted"),
    (["--rm"], "--rm is not accepted"),
    (["--name", "other"], "--name is not accepted"),
    (["--entrypoint", "/bin/sh"], "--entrypoint is not accepted"),
    (["-u0"], "-u is not accepted"),
    (["--user", "0"], "--user is not accepted"),
    (["--security-opt", "seccomp=unconfined"], "--security-opt is not accepted"),
    (["--ipc=private"], "--ipc is not accepted"),
    (["--mount", "type=bind,src=/,dst=/h"], "--mount is not accepted"),
    (["-it"], "-i is not accepted"),
    (["--cap-add", "SYS_ADMIN"], "--cap-add 'SYS_ADMIN' must be only IPC_LOCK or SYS_PTRACE (no other capability)"),
    (["--cap-add=ALL"], "--cap-add 'ALL' must be only IPC_LOCK or SYS_PTRACE"),
    (["--env", "PATH"], "--env PATH=... must be NAME=value"),
    (["-e", "1BAD=x"], "-e 1BAD=... must be NAME=value"),
    (["--label", "ascendops.job=other"], "must be a key outside ascendops.*"),
    (["--shm-size", "lots"], "--shm-size 'lots' must be a size such as 64g or 512m"),
    (["--memory", "--privileged"], "--memory '--privileged' must be a size"),
    (["--ulimit", "memlock"], "--ulimit 'memlock' must be name=soft[:hard]"),
    (["--shm-size"], "launch_container_extra_args[0]: --shm-size needs a value"),
    (["alpine"], "launch_container_extra_args[0] ('alpine') is not an option: every value follows its option"),
    (["--", "sh"], "launch_container_extra_args[0]: -- is not accepted"),
    (["--shm-size", "64g\nExecStartPost=/bin/id"], "launch_container_extra_args[1] holds a newline at character 4"),
    ("--privileged", "launch_container_extra_args must be a list of options"),
])
def test_other_options_are_refused_naming_the_option_and_its_place(args, expected):
    out = extra_args_problems(args)
    assert any(expected in p for p in out), out
    if not isinstance(args, str):
        # the rendering refuses them too (nothing reaches a unit that validate.yml would refuse)
        with pytest.raises(ContainerSpecError):
            ContainerSpec("docker", "job", "img", ["true"], extra_args=args)


def test_an_env_value_in_a_refusal_is_not_shown():
    out = extra_args_problems(["-e", "1TOKEN=s3cret"])
    assert out and "s3cret" not in " ".join(out)


def test_every_refusal_is_reported_not_only_the_first():
    out = extra_args_problems(["--shm-size", "8g", "--privileged", "-v", "/:/h", "--pid=host"])
    assert [p.split(":", maxsplit=1)[0].split(" ", maxsplit=1)[0] for p in out] == [
        "launch_container_extra_args[2]", "launch_container_extra_args[3]", "launch_container_extra_args[5]"]


def test_the_filter_wraps_the_check():
    assert container_extra_args_problems(["--privileged"], "x") == extra_args_problems(["--privileged"], "x")


# ---------------------------------------------------------------- hostile values never reach the unit


@pytest.mark.parametrize("field, value", [
    ("image", "img:1\nExecStartPost=/bin/sh -c id"),
    ("command", ["true", "x\ny"]),
    ("labels", {"ascendops.job": "j\rExecStartPost=/bin/id"}),
    ("mounts", [{"source": "/data/x\nExecStartPost=/bin/id"}]),
    ("env_file", "/etc/ascendops/env\n"),
    ("env", {"A": "1\x00"}),
    ("user", "1000:1000\n"),
    ("cap_add", ["IPC_LOCK\n"]),
])
def test_a_control_character_in_any_field_is_refused(field, value):
    args = {"engine": "docker", "name": "job", "image": "img", "command": ["true"], field: value}
    with pytest.raises(ContainerSpecError, match="control character|a newline|a carriage return|a NUL"):
        ContainerSpec(**args)


def test_a_newline_in_the_units_description_or_comments_is_refused():
    spec = ContainerSpec("docker", "job", "img", ["true"])
    with pytest.raises(ContainerSpecError, match="description holds a newline"):
        spec.unit("job\nExecStartPost=/bin/id", 10)
    with pytest.raises(ContainerSpecError, match=r"comments\[0\] holds a newline"):
        spec.unit("d", 10, comments=["ok\n[Service]"])


def test_a_value_with_a_tab_renders_quoted_on_its_own_exec_line():
    spec = ContainerSpec("docker", "job", "img", ["true"], env={"A": "x\ty"})
    unit = spec.unit("d", 10)
    assert '--env "A=x\ty"' in unit
    assert [x.split("=", 1)[0] for x in unit.splitlines() if x.startswith("Exec")] == [
        "ExecStartPre", "ExecStartPre", "ExecStart", "ExecStop", "ExecStopPost"]
