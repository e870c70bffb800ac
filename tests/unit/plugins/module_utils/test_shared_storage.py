"""shared_storage: mount options from the settings, mountinfo parsing, the mount checks, the I/O test."""

from __future__ import annotations

import os

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils import shared_storage as ss

NFS = {"nfs_server": "nfs1.example", "nfs_export": "/export/ascend", "nfs_version": "4.1", "nfs_hard": True,
       "nfs_rsize": 1048576, "nfs_wsize": 1048576, "nfs_nconnect": 8, "mount_options_extra": []}

# Shortened from a real /proc/self/mountinfo (proc(5) layout): optional fields, escaped spaces.
MOUNTINFO = """\
22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/mapper/vg-root rw
25 22 0:23 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc rw
61 22 0:52 / /mnt/ascendops rw,relatime shared:30 - nfs4 nfs1.example:/export/ascend rw,vers=4.1,nconnect=8
62 22 0:53 / /mnt/with\\040space rw,relatime - lustre 10.0.0.1@o2ib:/lfs01 rw,flock
70 22 253:3 / /data rw,relatime - xfs /dev/sdb1 rw
71 70 0:60 / /data rw,relatime - nfs4 other:/x rw
"""


def test_nfs_mount_spec_from_the_settings():
    spec = ss.mount_spec("nfs", NFS)
    assert spec["src"] == "nfs1.example:/export/ascend" and spec["fstype"] == "nfs"
    assert spec["opts"] == "vers=4.1,hard,rsize=1048576,wsize=1048576,nconnect=8,_netdev"
    assert spec["fstypes"] == ["nfs", "nfs4"]


def test_nfs_zero_leaves_an_option_out_and_soft_and_ipv6():
    spec = ss.mount_spec("nfs", dict(NFS, nfs_server="fd00::5", nfs_hard=False, nfs_nconnect=0, nfs_rsize=0,
                                     nfs_version=""))
    assert spec["src"] == "[fd00::5]:/export/ascend"
    assert spec["opts"] == "soft,wsize=1048576,_netdev"


def test_extra_options_replace_the_derived_ones_of_their_key():
    spec = ss.mount_spec("nfs", dict(NFS, mount_options_extra=["nconnect=4", "soft", "noatime", "timeo=600"]))
    assert spec["opts"] == "vers=4.1,rsize=1048576,wsize=1048576,_netdev,nconnect=4,soft,noatime,timeo=600"


@pytest.mark.parametrize("changes, named", [
    ({"nfs_server": ""}, "shared_storage_nfs_server"),
    ({"nfs_export": "export/ascend"}, "shared_storage_nfs_export"),
    ({"nfs_version": "5"}, "shared_storage_nfs_version"),
    ({"nfs_nconnect": 32}, "shared_storage_nfs_nconnect"),
    ({"nfs_rsize": "big"}, "shared_storage_nfs_rsize"),
    ({"mount_options_extra": "noatime"}, "shared_storage_mount_options_extra"),
])
def test_nfs_settings_refused_naming_the_variable(changes, named):
    with pytest.raises(ss.SharedStorageError, match=named):
        ss.mount_spec("nfs", dict(NFS, **changes))


def test_lustre_mount_spec():
    spec = ss.mount_spec("lustre", {"lustre_mgs": "10.0.0.1@o2ib:10.0.0.2@o2ib", "lustre_fsname": "lfs01",
                                    "mount_options_extra": ["noatime"]})
    assert spec == {"src": "10.0.0.1@o2ib:10.0.0.2@o2ib:/lfs01", "fstype": "lustre",
                    "opts": "_netdev,flock,noatime", "fstypes": ["lustre"]}


@pytest.mark.parametrize("settings, named", [
    ({"lustre_mgs": "10.0.0.1", "lustre_fsname": "lfs01"}, "shared_storage_lustre_mgs"),
    ({"lustre_mgs": "10.0.0.1@tcp", "lustre_fsname": "far_too_long"}, "shared_storage_lustre_fsname"),
    ({"lustre_mgs": "10.0.0.1@tcp", "lustre_fsname": ""}, "shared_storage_lustre_fsname"),
    ({"lustre_mgs": "10.0.0.1@tcp", "lustre_fsname": "lfs01", "lustre_repo_url": "https://repo.example/lustre",
      "lustre_repo_key_url": "", "lustre_repo_unsigned": False}, "shared_storage_lustre_repo_unsigned: true"),
])
def test_lustre_settings_refused(settings, named):
    with pytest.raises(ss.SharedStorageError, match=named):
        ss.mount_spec("lustre", settings)


def test_existing_and_unknown_types():
    assert ss.mount_spec("existing", {}) == {"fstypes": []}
    assert ss.mount_spec("existing", {"fstypes": ["gpfs"]}) == {"fstypes": ["gpfs"]}
    with pytest.raises(ss.SharedStorageError, match="shared_storage_type"):
        ss.mount_spec("cephfs", {})


def test_parse_mountinfo_and_the_mount_holding_a_path():
    entries = ss.parse_mountinfo(MOUNTINFO)
    assert len(entries) == 6
    assert entries[2]["fstype"] == "nfs4" and entries[2]["source"] == "nfs1.example:/export/ascend"
    assert entries[3]["mount_point"] == "/mnt/with space" and entries[3]["fstype"] == "lustre"
    assert ss.mount_of("/mnt/ascendops/llama3/data", entries)["mount_point"] == "/mnt/ascendops"
    assert ss.mount_of("/mnt/ascendopsx", entries)["mount_point"] == "/"
    assert ss.mount_of("/data", entries)["fstype"] == "nfs4"  # the mount on top wins


def test_parse_mountinfo_names_a_bad_line():
    with pytest.raises(ValueError, match="line 2"):
        ss.parse_mountinfo("22 1 253:0 / / rw - ext4 /dev/sda1 rw\ngarbage here\n")


def test_mount_problems():
    entries = ss.parse_mountinfo(MOUNTINFO)
    entry, problems = ss.mount_problems("/mnt/ascendops", entries, ["nfs", "nfs4"], root_dev=1, path_dev=2)
    assert entry["fstype"] == "nfs4" and problems == []
    _entry, problems = ss.mount_problems("/mnt/ascendops", entries, ["lustre"], 1, 2)
    assert problems and "is a nfs4 file system" in problems[0] and "expected lustre" in problems[0]
    _entry, problems = ss.mount_problems("/srv/shared", entries, [], 1, 1)
    assert len(problems) == 1 and "not a mount point" in problems[0] and "ext4" in problems[0]
    _entry, problems = ss.mount_problems("/mnt/ascendops", entries, [], root_dev=5, path_dev=5)
    assert "root file system" in problems[0]


def test_io_test_measures_and_removes_its_file(tmp_path):
    res = ss.io_test(str(tmp_path), "io.tmp", 2)
    assert res["bytes"] == 2 * ss.MIB and res["write_mbps"] > 0 and res["read_mbps"] > 0
    assert list(tmp_path.iterdir()) == []


def test_as_user_runs_in_a_child_with_the_ids_and_reports_errors(tmp_path):
    uid, gid = os.getuid(), os.getgid()
    assert ss._as_user(uid, gid, lambda: [os.getuid(), os.getpid()])[0] == uid
    assert ss._as_user(uid, gid, os.getpid) != os.getpid()
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    if os.geteuid() == 0:  # root passes any mode: the child drops to nobody's ids, which the directory refuses
        uid = gid = 65534
        assert ss._as_user(uid, gid, lambda: [os.getuid(), os.getgid(), os.getgroups()]) == [uid, gid, []]
    with pytest.raises(OSError, match="PermissionError"):
        ss._as_user(uid, gid, lambda: ss.write_marker(str(locked), "t", "n"))
    assert list(locked.iterdir()) == []


def test_marker_round_trip(tmp_path):
    assert ss.read_marker(str(tmp_path)) is None
    ss.write_marker(str(tmp_path), "tok", "node1")
    assert ss.read_marker(str(tmp_path))["token"] == "tok"
    assert [p.name for p in tmp_path.iterdir()] == [ss.MARKER_NAME]


def test_a_lustre_repository_without_a_key_passes_only_when_unsigned_is_set():
    base = {"lustre_mgs": "10.0.0.1@tcp", "lustre_fsname": "lfs01", "lustre_repo_url": "https://repo.example/lustre"}
    assert ss.mount_spec("lustre", {**base, "lustre_repo_unsigned": True})["fstype"] == "lustre"
    keyed = {**base, "lustre_repo_key_url": "https://repo.example/key.asc"}
    assert ss.mount_spec("lustre", keyed)["fstype"] == "lustre"
    with pytest.raises(ss.SharedStorageError, match="shared_storage_lustre_repo_key_url is empty"):
        ss.mount_spec("lustre", base)


# ---------------------------------------------------------------- mount_conflict (validate_checks.yml, gathered mounts)

FACT_MOUNTS = [
    {"mount": "/", "device": "/dev/mapper/vg-root", "fstype": "ext4"},
    {"mount": "/mnt/site", "device": "filer:/vol/projects", "fstype": "nfs4"},
    {"mount": "/mnt/ascendops", "device": "nfs1.example:/export/ascend/", "fstype": "nfs4"},
    {"mount": "/scratch", "device": "/dev/sdb1", "fstype": "xfs"},
    {"mount": "/lustre", "device": "10.0.0.1@o2ib:/lfs01", "fstype": "lustre"},
]


@pytest.mark.parametrize("path, src, found", [
    ("/mnt/site", "nfs1.example:/export/ascend", "filer:/vol/projects (nfs4)"),
    ("/scratch/", "nfs1.example:/export/ascend", "/dev/sdb1 (xfs)"),
    ("/lustre", "10.0.0.2@o2ib:/lfs01", "10.0.0.1@o2ib:/lfs01 (lustre)"),
])
def test_a_mount_point_of_another_source_is_refused_naming_it_and_the_fix(path, src, found):
    msg = ss.mount_conflict(FACT_MOUNTS, path, src)
    assert msg.startswith(f"shared_storage_path {path.rstrip('/')} is already the mount point of {found}, not of {src}")
    assert "shared_storage_type: existing" in msg


@pytest.mark.parametrize("path, src", [
    ("/mnt/ascendops", "nfs1.example:/export/ascend"),  # the same export (a re-run), trailing / of the kernel's
    ("/mnt/ascendops/", "nfs1.example://export/ascend"),
    ("/lustre", "10.0.0.1@o2ib:/lfs01"),
    ("/mnt/new", "nfs1.example:/export/ascend"),  # nothing mounted there yet
    ("/mnt/site/sub", "nfs1.example:/export/ascend"),  # below another mount: a mount point of its own
])
def test_the_same_source_or_a_free_path_passes(path, src):
    assert ss.mount_conflict(FACT_MOUNTS, path, src) is None


def test_no_mounts_known_is_no_conflict():
    assert ss.mount_conflict(None, "/mnt/x", "a:/b") is None
