"""SIMULATION ONLY code under test: the Ascend Docker Runtime stand-in (an OCI runtime wrapper)."""

import json
import os
import stat
import subprocess
import sys

import pytest

RUNTIME = os.path.join(os.path.dirname(__file__), "..", "..", "sim", "packages", "payload", "ascend_docker_runtime.py")
sys.path.insert(0, os.path.dirname(RUNTIME))

import ascend_docker_runtime as adr  # noqa: E402


@pytest.mark.parametrize("value, ids", [("0-7", list(range(8))), ("1,3", [1, 3]), ("0-2,4", [0, 1, 2, 4]),
                                        ("3", [3]), (" 1, 1 ", [1])])
def test_visible_devices_forms(value, ids):
    assert adr.parse_visible(value) == ids


@pytest.mark.parametrize("value", ["a", "2-1", "0-", "Ascend910-0", ""])
def test_visible_devices_refused(value):
    with pytest.raises(adr.RuntimeError_):
        adr.parse_visible(value)


@pytest.mark.parametrize("argv, expected", [
    (["--root", "/run/r", "--log", "/l.json", "--log-format", "json", "create", "--bundle", "/b", "--pid-file",
      "/p", "cid"], ("create", "/b")),
    (["--systemd-cgroup", "create", "--bundle=/b2", "cid"], ("create", "/b2")),
    (["run", "-b", "/b3", "cid"], ("run", "/b3")),
    (["--root", "/run/r", "start", "cid"], ("start", None)),
    (["features"], ("features", None)),
])
def test_subcommand_and_bundle(argv, expected):
    assert adr.subcommand_and_bundle(argv) == expected


def test_create_without_bundle_uses_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert adr.subcommand_and_bundle(["create", "cid"]) == ("create", str(tmp_path))


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A host tree with two NPUs' device nodes, the driver files and base.list (needs mknod: root)."""
    root = tmp_path / "host"
    (root / "dev").mkdir(parents=True)
    try:
        for name, (major, minor) in {"davinci0": (240, 0), "davinci1": (240, 1), "davinci_manager": (241, 0),
                                     "devmm_svm": (242, 0), "hisi_hdc": (243, 0)}.items():
            os.mknod(root / "dev" / name, 0o660 | stat.S_IFCHR, os.makedev(major, minor))
            os.chmod(root / "dev" / name, 0o660)
    except PermissionError:
        pytest.skip("mknod needs root")
    (root / "usr/local/Ascend/driver/lib64").mkdir(parents=True)
    (root / "usr/local/bin").mkdir(parents=True)
    (root / "usr/local/bin/npu-smi").write_text("#!/bin/sh\n")
    (root / "etc/ascend-docker-runtime.d").mkdir(parents=True)
    (root / "etc/ascend-docker-runtime.d/base.list").write_text(
        "/usr/local/Ascend/driver/lib64\n# comment\n/usr/local/Ascend/driver/include\n/usr/local/bin/npu-smi\n")
    monkeypatch.setenv("ASCEND_SIM_ROOT", str(root))
    return root


def _config(env):
    return {"process": {"env": ["PATH=/usr/bin"] + env}, "mounts": [{"destination": "/proc", "type": "proc"}],
            "linux": {"resources": {"devices": [{"allow": False, "access": "rwm"}]}}}


def test_visible_devices_add_nodes_rules_and_readonly_mounts(host):
    config = _config(["ASCEND_VISIBLE_DEVICES=1"])
    assert adr.edit_config(config) is True
    devices = {d["path"]: d for d in config["linux"]["devices"]}
    assert sorted(devices) == ["/dev/davinci1", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]
    assert devices["/dev/davinci1"] | {"uid": 0, "gid": 0} == {"path": "/dev/davinci1", "type": "c", "major": 240,
                                                               "minor": 1, "fileMode": 0o660, "uid": 0, "gid": 0}
    rules = config["linux"]["resources"]["devices"]
    assert rules[0] == {"allow": False, "access": "rwm"}
    assert {"allow": True, "type": "c", "major": 240, "minor": 1, "access": "rwm"} in rules
    mounts = {m["destination"]: m for m in config["mounts"]}
    # a base.list path missing on the host (include) is skipped, like the real runtime
    assert sorted(mounts) == ["/proc", "/usr/local/Ascend/driver/lib64", "/usr/local/bin/npu-smi"]
    assert "ro" in mounts["/usr/local/bin/npu-smi"]["options"]


def test_nodrv_adds_devices_only(host):
    config = _config(["ASCEND_VISIBLE_DEVICES=0-1", "ASCEND_RUNTIME_OPTIONS=NODRV"])
    adr.edit_config(config)
    assert len(config["linux"]["devices"]) == 5
    assert [m["destination"] for m in config["mounts"]] == ["/proc"]


def test_without_visible_devices_nothing_changes(host):
    config = _config([])
    before = json.dumps(config)
    assert adr.edit_config(config) is False and json.dumps(config) == before


def test_a_missing_npu_is_refused(host):
    with pytest.raises(adr.RuntimeError_, match="/dev/davinci2 is not present"):
        adr.edit_config(_config(["ASCEND_VISIBLE_DEVICES=0-5"]))


def _fake_runc(tmp_path):
    runc = tmp_path / "runc"
    runc.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/runc.args\n")
    runc.chmod(0o755)
    return str(runc)


def test_wrapper_edits_the_bundle_then_hands_over_to_runc(host, tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "config.json").write_text(json.dumps(_config(["ASCEND_VISIBLE_DEVICES=0"])))
    env = dict(os.environ, ASCEND_SIM_RUNC=_fake_runc(tmp_path))
    argv = ["--root", "/run/x", "create", "--bundle", str(bundle), "cid"]
    r = subprocess.run([sys.executable, RUNTIME, *argv], env=env, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "runc.args").read_text().split() == argv
    config = json.loads((bundle / "config.json").read_text())
    assert "/dev/davinci0" in [d["path"] for d in config["linux"]["devices"]]


def test_wrapper_refuses_with_one_line_and_never_runs_runc(host, tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "config.json").write_text(json.dumps(_config(["ASCEND_VISIBLE_DEVICES=7"])))
    env = dict(os.environ, ASCEND_SIM_RUNC=_fake_runc(tmp_path))
    r = subprocess.run([sys.executable, RUNTIME, "create", "--bundle", str(bundle), "cid"], env=env,
                       capture_output=True, text=True, check=False)
    assert r.returncode == 1 and r.stderr.startswith("ascend-docker-runtime: /dev/davinci7")
    assert not (tmp_path / "runc.args").exists()
