"""container_runtime verifier: engine, Ascend Docker Runtime, daemon.json, image delivery, credentials."""

import base64
import json
import os

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


def test_ascend_docker_runtime_installed_once(host):
    assert host.file(f"{RUNTIME_DIR}/version.info").content_string.strip() == "Version=6.0.0"
    for name in ("ascend-docker-runtime", "ascend-docker-hook", "ascend-docker-cli", "ascend-docker-destroy"):
        assert host.file(f"{RUNTIME_DIR}/{name}").mode & 0o111, name
    assert "/usr/local/bin/npu-smi" in host.file("/etc/ascend-docker-runtime.d/base.list").content_string
    # SIMULATION ONLY: the installer's event log; converge, the registry run and the re-run installed it once
    assert [i for i in installs(host) if i[0] == "docker-runtime"] == [("docker-runtime", "6.0.0", "install")]


def test_no_engine_restart_on_the_rerun(host):
    before = json.loads(host.file("/root/container-runtime-before.json").content_string)
    now = host.check_output("systemctl show docker --property=MainPID --property=ActiveEnterTimestampMonotonic")
    assert now.splitlines() == before["engine"]


def test_image_copied_and_loaded_once_not_resent(host):
    before = json.loads(host.file("/root/container-runtime-before.json").content_string)
    staged = host.file(ARCHIVE_ON_NODE)
    assert staged.exists and staged.mode == 0o600
    assert {"inode": staged.inode, "mtime": staged.mtime.timestamp()} == pytest.approx(before["archive"])
    assert host.check_output(f"docker image inspect --format '{{{{.Id}}}}' {IMAGE}") == _archive_id()
    loads = host.check_output("docker events --since 0 --until \"$(date +%s)\" --filter event=load "
                              "--format '{{.Action}}'").split()
    assert loads == ["load"]


def test_container_sees_only_its_npus_read_only_driver_unprivileged(host):
    uid = host.user("HwHiAiUser").uid
    cmd = host.run(
        f"docker run --rm --network none --cap-drop ALL --user {uid}:{uid} -e ASCEND_VISIBLE_DEVICES=1 "
        f"--entrypoint /bin/sh {IMAGE} -c 'for d in /dev/davinci0 /dev/davinci1 /dev/davinci_manager "
        "/dev/devmm_svm /dev/hisi_hdc; do [ -c $d ] && echo $d; done; "
        "while read -r _ _ _ _ mp o _; do case $mp in /usr/local/*) echo \"$mp $o\";; esac; done < /proc/self/mountinfo'")
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
    # the log is the real thing: -vvv module arguments, the login task and its user are in it
    assert "Container runtime | Log in to the registry" in log and '"argv"' in log and "ascendops-ci" in log
    for form in (secret, base64.b64encode(f"ascendops-ci:{secret}".encode()).decode(),
                 base64.b64encode(secret.encode()).decode()):
        assert form not in log
    # and the password sat only in a Vault-encrypted file
    assert _ephemeral("registry-vars.yml").startswith("$ANSIBLE_VAULT") and secret not in _ephemeral("registry-vars.yml")
