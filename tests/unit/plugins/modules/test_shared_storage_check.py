"""shared_storage_check: one call per node: mount, marker, root's chown, throughput; check mode writes nothing."""

from __future__ import annotations

import os

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils import shared_storage as ss
from ansible_collections.ascendops.cluster.plugins.modules import shared_storage_check


@pytest.fixture
def shared(tmp_path, monkeypatch):
    """A directory that /proc/self/mountinfo (faked) lists as an nfs4 mount; / is another device."""
    path = tmp_path / "shared"
    path.mkdir()
    info = tmp_path / "mountinfo"
    info.write_text("22 1 253:0 / / rw - ext4 /dev/sda1 rw\n"
                    f"61 22 0:52 / {path} rw,relatime - nfs4 nfs1:/export rw,vers=4.1\n")
    monkeypatch.setattr(ss, "MOUNTINFO", str(info))
    monkeypatch.setattr(ss, "ROOT", "/proc")
    return path


def args(path, **more):
    base = {"path": str(path), "fstypes": ["nfs", "nfs4"], "node": "node1", "size_mib": 1,
            "uid": os.getuid(), "gid": os.getgid()}
    return dict(base, **more)


def test_writer_and_reader_pass_and_leave_only_the_marker(run_module, shared):
    res = run_module(shared_storage_check.main, args(shared, marker_token="abc123", marker_write=True))
    assert not res.get("failed"), res.get("msg")
    assert res["changed"] is False and res["mount"]["fstype"] == "nfs4" and res["mount"]["source"] == "nfs1:/export"
    assert res["checked"] == ["mount", "marker", "root_chown", "throughput"]
    assert res["write_mbps"] > 0 and res["read_mbps"] > 0 and res["marker"] == {"written": True, "node": "node1"}
    assert [p.name for p in shared.iterdir()] == [ss.MARKER_NAME]
    res = run_module(shared_storage_check.main, args(shared, node="node2", marker_token="abc123"))
    assert not res.get("failed"), res.get("msg")
    assert res["marker"] == {"written": False, "node": "node1"}


def test_a_reader_without_the_token_is_on_another_file_system(run_module, shared, monkeypatch):
    monkeypatch.setattr(ss.time, "sleep", lambda s: None)
    ss.write_marker(str(shared), "from-an-earlier-run", "node1")
    res = run_module(shared_storage_check.main, args(shared, node="node2", marker_token="new", marker_node="node1",
                                                     marker_wait_s=0))
    assert res["failed"] and res["msg"].startswith(f"node2: shared storage {shared}: ")
    assert "the marker written on node1 is not in" in res["msg"] and "another file system" in res["msg"]


def test_throughput_floors_name_the_measured_number(run_module, shared):
    res = run_module(shared_storage_check.main, args(shared, min_write_mbps=1e9, min_read_mbps=1e9))
    assert res["failed"]
    assert (f"writing 1 MiB to {shared} ran at {res['write_mbps']} MB/s, below shared_storage_min_write_mbps"
            in res["msg"])
    assert f"ran at {res['read_mbps']} MB/s, below shared_storage_min_read_mbps" in res["msg"]


def test_not_a_mount_point_and_wrong_type(run_module, shared):
    inner = shared / "sub"
    inner.mkdir()
    res = run_module(shared_storage_check.main, args(inner))
    assert res["failed"] and f"{inner} is not a mount point" in res["msg"] and "nfs4" in res["msg"]
    assert res["checked"] == ["mount"] and res["write_mbps"] is None
    res = run_module(shared_storage_check.main, args(shared, fstypes=["lustre"]))
    assert res["failed"] and "expected lustre" in res["msg"]


def test_on_the_root_device(run_module, shared, monkeypatch):
    monkeypatch.setattr(ss, "ROOT", str(shared.parent))
    res = run_module(shared_storage_check.main, args(shared))
    assert res["failed"] and "on the root file system" in res["msg"]


def test_the_job_user_cannot_write(run_module, shared):
    if os.geteuid() == 0:
        uid = gid = 65534  # nobody, on a directory only root writes
    else:
        uid, gid = os.getuid(), os.getgid()
    os.chmod(shared, 0o755 if os.geteuid() == 0 else 0o555)
    try:
        res = run_module(shared_storage_check.main, args(shared, uid=uid, gid=gid, marker_token="t", marker_write=True))
    finally:
        os.chmod(shared, 0o755)
    assert res["failed"] and f"uid {uid} (the job's user) cannot write the marker" in res["msg"]
    assert f"uid {uid} (the job's user) cannot write 1 MiB in {shared}" in res["msg"]


def test_check_mode_checks_the_mount_and_writes_nothing(run_module, shared):
    res = run_module(shared_storage_check.main, args(shared, marker_token="t", marker_write=True), check_mode=True)
    assert not res.get("failed") and res["checked"] == ["mount"] and list(shared.iterdir()) == []
