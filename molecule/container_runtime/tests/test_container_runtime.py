"""container_runtime verifier: engine, Ascend Docker Runtime, daemon.json, image delivery, credentials."""

import base64
import json
import os
import re

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.docker_archive import read_archive
from ascend_verify import installs

EPHEMERAL = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "")
RUNTIME_DIR = "/usr/local/Ascend/Ascend-Docker-Runtime"
IMAGE = "localhost/ascendops-tiny:1"
ARCHIVE_ON_NODE = "/var/cache/ascendops/images/ascendops-tiny.tar"
REGISTRY_IMAGE = "127.0.0.1:5000/ascendops/tiny:1"


def _ephemeral(name):
    path = os.path.join(EPHEMERAL, name)
    assert os.path.isfile(path), f"{path} missing: did side_effect run?"
    with open(path, encoding="utf-8") as f:
        return f.read()


def _archive_id():
    return read_archive(os.path.join(EPHEMERAL, "ascendops-tiny.tar"))[0]["id"]


def _docker_info(host):
    return json.loads(host.check_output("docker info --format '{{json .}}'"))


def test_engine_runs_with_the_ascend_runtime_as_default(host):
    assert host.service("docker").is_running and host.service("docker").is_enabled
    info = _docker_info(host)
    assert info["DefaultRuntime"] == "ascend"
    assert info["Runtimes"]["ascend"]["path"] == f"{RUNTIME_DIR}/ascend-docker-runtime"


def test_daemon_json_merged_site_key_kept(host):
    daemon = json.loads(host.file("/etc/docker/daemon.json").content_string)
    # the site's keys (written before the engine was installed) survive
    assert daemon["labels"] == ["ascendops.test=site-key"] and daemon["max-concurrent-downloads"] == 2
    assert daemon["runtimes"]["ascend"] == {"path": f"{RUNTIME_DIR}/ascend-docker-runtime", "runtimeArgs": []}
    assert daemon["default-runtime"] == "ascend"
    assert daemon["log-driver"] == "json-file" and daemon["log-opts"] == {"max-size": "100m", "max-file": "5"}
    assert daemon["data-root"] == "/var/lib/docker"
    # the simulated cluster's inventory setting, through container_runtime_daemon_extra
    assert daemon["default-cgroupns-mode"] == "private"
    # and the engine really runs with them
    assert "ascendops.test=site-key" in _docker_info(host)["Labels"]


def test_daemon_json_live_restore_and_the_vendor_mode(host):
    daemon = host.file("/etc/docker/daemon.json")
    assert json.loads(daemon.content_string)["live-restore"] is True
    assert daemon.mode == 0o600
    assert _docker_info(host)["LiveRestoreEnabled"] is True


def test_engine_restart_kept_the_training_container(host):
    """side_effect: two converges that each changed log-opts (a restart) while a job container ran."""
    rcs = _ephemeral("restart-run.rc").split()
    assert rcs == ["0", "0"], _ephemeral("restart-run.log")[-3000:]
    log = _ephemeral("restart-run.log")
    assert log.count("Container runtime | Restart the engine]") == 2
    job = json.loads(host.file("/root/container-runtime-job.json").content_string)
    (started_before, pid_before), engine_before = job["before"][0].split(), job["before"][1]
    (started_after, pid_after), engine_after = job["after"][0].split(), job["after"][1]
    assert engine_after != engine_before  # the engine really restarted
    assert (started_after, pid_after) == (started_before, pid_before)  # the job did not
    state = host.check_output("docker inspect --format '{{.State.Running}} {{.State.StartedAt}}' ascendops-job")
    assert state == f"true {started_before}"


def test_ascend_docker_runtime_installed_once_besides_the_eula_runs(host):
    record = host.file(f"{RUNTIME_DIR}/ascend_docker_runtime_install.info").content_string.splitlines()
    assert "version=v6.0.0" in record
    assert not host.file(f"{RUNTIME_DIR}/version.info").exists
    for name in ("ascend-docker-runtime", "ascend-docker-hook", "ascend-docker-cli", "ascend-docker-destroy"):
        assert host.file(f"{RUNTIME_DIR}/{name}").mode & 0o111, name
    assert "/usr/local/bin/npu-smi" in host.file("/etc/ascend-docker-runtime.d/base.list").content_string
    # SIMULATION ONLY: the installer's event log; converge, the registry run, the restart runs and the
    # re-run installed it once (the installer would take a second --install silently: the record check stops it).
    # side_effect's EULA runs: the refused one ran no installer, the accepted one upgraded to 26.1.0, and the
    # release's 6.0.0 came back through --upgrade (a downgrade the role allowed there).
    assert [i for i in installs(host) if i[0] == "docker-runtime"] == [
        ("docker-runtime", "6.0.0", "install"), ("docker-runtime", "26.1.0", "upgrade"),
        ("docker-runtime", "6.0.0", "upgrade")]


def test_no_engine_restart_on_the_rerun(host):
    before = json.loads(host.file("/root/container-runtime-engine.json").content_string)
    now = host.check_output("systemctl show docker --property=MainPID --property=ActiveEnterTimestampMonotonic")
    assert now.splitlines() == before


def test_image_copied_and_loaded_once_not_resent(host):
    before = json.loads(host.file("/root/container-runtime-before.json").content_string)
    staged = host.file(ARCHIVE_ON_NODE)
    assert staged.exists and staged.mode == 0o600
    assert {"inode": staged.inode, "mtime": staged.mtime.timestamp()} == pytest.approx(before["archive"])
    assert host.check_output(f"docker image inspect --format '{{{{.Id}}}}' {IMAGE}") == _archive_id()
    # every image load the engine saw before side_effect's restarts, and since: this archive's
    # image was loaded exactly once (by converge)
    loads = host.check_output("docker events --since 0 --until \"$(date +%s)\" --filter event=load "
                              "--format '{{.Actor.ID}}'").split()
    assert before["loads"].count(_archive_id()) == 1, before["loads"]
    assert loads.count(_archive_id()) == 0, loads


def test_container_sees_only_its_npus_read_only_driver_unprivileged(host):
    uid = host.user("HwHiAiUser").uid
    cmd = host.run(
        f"docker run --rm --network none --cap-drop ALL --user {uid}:{uid} -e ASCEND_VISIBLE_DEVICES=1 "
        f"--entrypoint /bin/sh {IMAGE} -c 'for d in /dev/davinci0 /dev/davinci1 /dev/davinci_manager "
        "/dev/devmm_svm /dev/hisi_hdc; do [ -c $d ] && echo $d; done; "
        "while read -r _ _ _ _ mp o _; do case $mp in /usr/local/*) echo \"$mp $o\";; esac; "
        "done < /proc/self/mountinfo'")
    assert cmd.rc == 0, cmd.stderr
    lines = cmd.stdout.splitlines()
    assert [ln for ln in lines if ln.startswith("/dev/")] == [
        "/dev/davinci1", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]
    mounts = dict(ln.split(" ", 1) for ln in lines if not ln.startswith("/dev/"))
    assert "/usr/local/bin/npu-smi" in mounts and "/usr/local/dcmi" in mounts
    assert all(opts.split(",")[0] == "ro" for opts in mounts.values()), mounts


def test_container_without_visible_devices_gets_no_npu(host):
    out = host.check_output(f"docker run --rm --network none --entrypoint /bin/sh {IMAGE} -c "
                            "'for d in /dev/davinci0 /dev/davinci_manager; do [ -e $d ] && echo $d; done; true'")
    assert out == ""


def test_registry_pull_used_the_vault_password(host):
    assert _ephemeral("registry-run.rc").strip() == "0", _ephemeral("registry-run.log")[-3000:]
    requests = [json.loads(ln) for ln in host.file("/root/registry.jsonl").content_string.splitlines()]
    authed = [r for r in requests if r["password_ok"]]
    # docker login reached the registry with the right user and the Vault password; the pull followed
    assert any(r["path"] == "/v2/" and r["user"] == "ascendops-ci" for r in authed)
    assert any("/manifests/1" in r["path"] for r in authed)
    assert host.check_output(f"docker image inspect --format '{{{{.Id}}}}' {REGISTRY_IMAGE}") == _archive_id()
    # logged out afterwards: no credentials left on the node
    config = host.file("/root/.docker/config.json")
    assert not config.exists or "127.0.0.1:5000" not in json.loads(config.content_string).get("auths", {})


def test_registry_password_appears_nowhere_in_the_run_log():
    secret = _ephemeral("registry-secret").strip()
    log = _ephemeral("registry-run.log")
    assert len(secret) >= 30
    # the log is the real thing: -vvv module arguments (in the callback's YAML or JSON form), the login
    # task and the pulled reference are in it, so a login task without no_log would have put its stdin there
    assert "Container runtime | Log in to the registry" in log and REGISTRY_IMAGE in log
    assert re.search(r'"?module_args"?:', log) and re.search(r'"?argv"?:', log)
    for form in (secret, base64.b64encode(f"ascendops-ci:{secret}".encode()).decode(),
                 base64.b64encode(secret.encode()).decode()):
        assert form not in log
    # and the password sat only in a Vault-encrypted file
    vaulted = _ephemeral("registry-vars.yml")
    assert vaulted.startswith("$ANSIBLE_VAULT") and secret not in vaulted
