"""sysctl_settings: many kernel parameters in one call, in the file and the running kernel; check mode, diff."""

from __future__ import annotations

import errno
import os
import stat

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils import sysctl_settings as su
from ansible_collections.ascendops.cluster.plugins.modules import sysctl_settings

SETTINGS = {"net.core.somaxconn": 65535, "net.ipv4.tcp_rmem": "4096 87380 268435456"}


@pytest.fixture
def proc(tmp_path, monkeypatch):
    """A /proc/sys with the two keys at other values (as a fresh kernel has them)."""
    root = tmp_path / "proc"
    (root / "net" / "core").mkdir(parents=True)
    (root / "net" / "ipv4").mkdir(parents=True)
    (root / "net" / "core" / "somaxconn").write_text("4096\n")
    (root / "net" / "ipv4" / "tcp_rmem").write_text("4096\t131072\t6291456\n")
    monkeypatch.setattr(su, "PROC_SYS", str(root))
    return root


def _args(tmp_path, settings=None):
    return {"settings": SETTINGS if settings is None else settings,
            "sysctl_file": str(tmp_path / "sysctl.d" / "90.conf")}


def test_sets_file_and_kernel_then_is_a_no_op(run_module, proc, tmp_path):
    first = run_module(sysctl_settings.main, _args(tmp_path))
    assert first["changed"] is True and not first.get("failed")
    assert first["changed_keys"] == ["net.core.somaxconn", "net.ipv4.tcp_rmem"]
    path = tmp_path / "sysctl.d" / "90.conf"
    assert path.read_text() == "net.core.somaxconn=65535\nnet.ipv4.tcp_rmem=4096 87380 268435456\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert (proc / "net" / "core" / "somaxconn").read_text() == "65535"
    # the kernel prints tcp_rmem tab separated: still the same value
    (proc / "net" / "ipv4" / "tcp_rmem").write_text("4096\t87380\t268435456\n")
    mtime = os.stat(path).st_mtime_ns
    second = run_module(sysctl_settings.main, _args(tmp_path), diff=True)
    assert second["changed"] is False and second["changed_keys"] == []
    assert os.stat(path).st_mtime_ns == mtime


def test_a_running_value_changed_by_hand_is_drift_and_set_again(run_module, proc, tmp_path):
    run_module(sysctl_settings.main, _args(tmp_path))
    (proc / "net" / "ipv4" / "tcp_rmem").write_text("4096\t87380\t268435456\n")
    (proc / "net" / "core" / "somaxconn").write_text("1024\n")
    check = run_module(sysctl_settings.main, _args(tmp_path), check_mode=True, diff=True)
    assert check["changed"] is True and check["changed_keys"] == ["net.core.somaxconn"]
    assert check["file_changed"] is False
    live = check["diff"][1]
    assert "net.core.somaxconn = 1024" in live["before"] and "net.core.somaxconn = 65535" in live["after"]
    assert (proc / "net" / "core" / "somaxconn").read_text() == "1024\n"  # check mode wrote nothing
    fixed = run_module(sysctl_settings.main, _args(tmp_path))
    assert fixed["changed"] is True and (proc / "net" / "core" / "somaxconn").read_text() == "65535"


def test_a_file_edited_by_hand_is_drift_and_the_site_lines_stay(run_module, proc, tmp_path):
    run_module(sysctl_settings.main, _args(tmp_path))
    path = tmp_path / "sysctl.d" / "90.conf"
    path.write_text("# site note\nnet.core.somaxconn=128\nvm.swappiness=1\nnet.ipv4.tcp_rmem=4096 87380 268435456\n")
    check = run_module(sysctl_settings.main, _args(tmp_path), check_mode=True, diff=True)
    assert check["changed"] is True and check["file_changed"] is True
    assert check["changed_keys"] == ["net.core.somaxconn"]
    assert "net.core.somaxconn=128" in check["diff"][0]["before"]
    assert "net.core.somaxconn=65535" in check["diff"][0]["after"]
    assert "somaxconn=128" in path.read_text()
    run_module(sysctl_settings.main, _args(tmp_path))
    assert path.read_text() == ("# site note\nnet.core.somaxconn=65535\nvm.swappiness=1\n"
                                "net.ipv4.tcp_rmem=4096 87380 268435456\n")


def test_check_mode_on_a_fresh_host_writes_nothing(run_module, proc, tmp_path):
    result = run_module(sysctl_settings.main, _args(tmp_path), check_mode=True, diff=True)
    assert result["changed"] is True and result["file_changed"] is True
    assert not (tmp_path / "sysctl.d").exists()
    assert result["diff"][0]["before"] == "" and "net.core.somaxconn=65535" in result["diff"][0]["after"]
    assert (proc / "net" / "core" / "somaxconn").read_text() == "4096\n"


def test_an_unknown_key_fails_before_any_change_and_warns_in_check_mode(run_module, proc, tmp_path):
    args = _args(tmp_path, {**SETTINGS, "net.core.no_such_key": 1})
    result = run_module(sysctl_settings.main, args)
    assert result["failed"] and "net.core.no_such_key" in result["msg"]
    assert "/proc/sys/net/core/no_such_key" in result["msg"]
    assert not (tmp_path / "sysctl.d").exists()
    assert (proc / "net" / "core" / "somaxconn").read_text() == "4096\n"
    check = run_module(sysctl_settings.main, args, check_mode=True)
    assert not check.get("failed") and check["changed"] is True
    assert any("net.core.no_such_key" in w for w in check["warnings"])


def test_a_value_the_kernel_refuses_names_the_key(run_module, proc, tmp_path, monkeypatch):
    def refuse(self, key, value):
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))

    monkeypatch.setattr(su.SysctlSettings, "_write_live", refuse)
    result = run_module(sysctl_settings.main, _args(tmp_path, {"net.core.somaxconn": 65535}))
    assert result["failed"] and "net.core.somaxconn=65535" in result["msg"] and "Invalid argument" in result["msg"]
