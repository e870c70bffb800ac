"""docker_daemon_json: merge into a daemon.json file, check mode, diff, refusals."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from ansible_collections.ascendops.cluster.plugins.modules import docker_daemon_json
from ansible_collections.ascendops.cluster.tests.unit.plugins.modules.ascend_module_harness import fixture_text

ASCEND = {
    "runtimes": {"ascend": {"path": "/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime",
                            "runtimeArgs": []}},
    "default-runtime": "ascend",
    "log-opts": {"max-size": "100m", "max-file": "5"},
}


def _site(tmp_path):
    path = tmp_path / "docker" / "daemon.json"
    path.parent.mkdir()
    path.write_text(fixture_text("daemon.json"))
    return path


def test_merges_and_keeps_site_keys_then_is_idempotent(run_module, tmp_path):
    path = _site(tmp_path)
    first = run_module(docker_daemon_json.main, {"path": str(path), "settings": ASCEND})
    assert first["changed"] is True and not first.get("failed")
    data = json.loads(path.read_text())
    assert data["bip"] == "172.30.0.1/16" and data["runtimes"]["kata"] == {"path": "/usr/bin/kata-runtime"}
    assert data["default-runtime"] == "ascend" and data["log-opts"]["labels"] == "site"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    mtime = os.stat(path).st_mtime_ns
    second = run_module(docker_daemon_json.main, {"path": str(path), "settings": ASCEND})
    assert second["changed"] is False and second["config"] == data
    assert os.stat(path).st_mtime_ns == mtime


def test_check_mode_reports_without_writing(run_module, tmp_path):
    path = _site(tmp_path)
    result = run_module(docker_daemon_json.main, {"path": str(path), "settings": ASCEND}, check_mode=True, diff=True)
    assert result["changed"] is True
    assert path.read_text() == fixture_text("daemon.json")
    assert json.loads(result["diff"]["after"])["default-runtime"] == "ascend"
    assert result["diff"]["before"] == fixture_text("daemon.json")


def test_creates_the_file_and_its_directory(run_module, tmp_path):
    path = tmp_path / "etc" / "docker" / "daemon.json"
    result = run_module(docker_daemon_json.main, {"path": str(path), "settings": {"default-cgroupns-mode": "private"}})
    assert result["changed"] is True
    assert json.loads(path.read_text()) == {"default-cgroupns-mode": "private"}


def test_backup_keeps_the_old_file(run_module, tmp_path):
    path = _site(tmp_path)
    result = run_module(docker_daemon_json.main, {"path": str(path), "settings": {"bip": None}, "backup": True})
    assert result["changed"] is True and "bip" not in json.loads(path.read_text())
    assert Path(result["backup_file"]).read_text() == fixture_text("daemon.json")


def test_refuses_a_file_that_is_not_a_json_object(run_module, tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text('["not", "an", "object"]')
    result = run_module(docker_daemon_json.main, {"path": str(path), "settings": ASCEND})
    assert result["failed"] is True and "not an object" in result["msg"] and str(path) in result["msg"]
    assert path.read_text() == '["not", "an", "object"]'


def test_a_new_file_gets_the_vendor_mode(run_module, tmp_path):
    path = tmp_path / "etc" / "docker" / "daemon.json"
    run_module(docker_daemon_json.main, {"path": str(path), "settings": {"live-restore": True}})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_the_site_mode_is_applied_alone_and_in_check_mode_only_reported(run_module, tmp_path):
    path = _site(tmp_path)
    run_module(docker_daemon_json.main, {"path": str(path), "settings": ASCEND})
    checked = run_module(docker_daemon_json.main, {"path": str(path), "settings": ASCEND, "mode": "0600"},
                         check_mode=True)
    assert checked["changed"] is True and stat.S_IMODE(os.stat(path).st_mode) == 0o644
    done = run_module(docker_daemon_json.main, {"path": str(path), "settings": ASCEND, "mode": "0600"})
    assert done["changed"] is True and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # a mode change alone changes no key: nothing for the engine to reload or restart
    assert done["changed_keys"] == [] and done["restart_required"] is False
    again = run_module(docker_daemon_json.main, {"path": str(path), "settings": ASCEND, "mode": "0600"})
    assert again["changed"] is False


def test_reloadable_keys_need_no_restart(run_module, tmp_path):
    path = _site(tmp_path)
    settings = dict(ASCEND, **{"live-restore": True})
    result = run_module(docker_daemon_json.main, {"path": str(path), "settings": settings})
    assert result["changed_keys"] == ["default-runtime", "live-restore", "log-opts", "runtimes"]
    # log-opts is not applied by a reload
    assert result["restart_required"] is True
    result = run_module(docker_daemon_json.main, {"path": str(path), "settings": {"live-restore": False,
                                                                                  "labels": ["x"]}})
    assert result["changed_keys"] == ["labels", "live-restore"] and result["restart_required"] is False
    result = run_module(docker_daemon_json.main, {"path": str(path), "settings": {"bip": None}})
    assert result["changed_keys"] == ["bip"] and result["restart_required"] is True
