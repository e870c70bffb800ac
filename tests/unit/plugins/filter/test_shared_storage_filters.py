"""shared_storage_mount / shared_storage_problems: the role's settings to an fstab entry, or the refusal."""

from __future__ import annotations

import pytest
from ansible_collections.ascendops.cluster.plugins.filter.shared_storage import FilterModule

F = FilterModule().filters()


def test_mount_of_nfs_and_the_refusal_as_a_filter_error():
    spec = F["shared_storage_mount"]("nfs", {"nfs_server": "nfs1", "nfs_export": "/e", "nfs_version": "4.2",
                                             "nfs_nconnect": 4, "nfs_hard": True})
    assert spec["src"] == "nfs1:/e" and spec["opts"] == "vers=4.2,hard,nconnect=4,_netdev"
    with pytest.raises(ValueError, match="shared_storage_nfs_server is empty"):
        F["shared_storage_mount"]("nfs", {"nfs_export": "/e"})


def test_problems_list_the_message_or_nothing():
    assert F["shared_storage_problems"]("lustre", {"lustre_mgs": "10.0.0.1@tcp", "lustre_fsname": "lfs"}) == []
    assert F["shared_storage_problems"]("lustre", {"lustre_mgs": "", "lustre_fsname": "lfs"})[0].startswith(
        "shared_storage_lustre_mgs must name")


def test_the_mount_conflict_filter_lists_the_refusal():
    mounts = [{"mount": "/mnt/ascendops", "device": "other:/x", "fstype": "nfs4"}]
    assert F["shared_storage_mount_conflict"](mounts, "/mnt/ascendops", "nfs1:/e")[0].startswith(
        "shared_storage_path /mnt/ascendops is already the mount point of other:/x (nfs4), not of nfs1:/e")
    assert F["shared_storage_mount_conflict"](mounts, "/mnt/ascendops", "other:/x/") == []
