# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the shared_storage role: thin wrappers of module_utils/shared_storage.py."""

from __future__ import annotations

from ansible_collections.ascendops.cluster.plugins.module_utils import shared_storage as ss


def shared_storage_mount(fs_type, settings):
    """``{src, fstype, opts, fstypes}`` of the mount (``{fstypes}`` for existing/none); a bad setting raises
    ``SharedStorageError`` (a ValueError: Ansible shows its message naming the setting)."""
    return ss.mount_spec(fs_type, dict(settings or {}))


def shared_storage_problems(fs_type, settings):
    """The problem of the settings (a list of one message), [] when they make a mount."""
    try:
        ss.mount_spec(fs_type, dict(settings or {}))
    except ss.SharedStorageError as exc:
        return [str(exc)]
    return []


def shared_storage_mount_conflict(mounts, path, src):
    """[message] when ``path`` is the mount point of another source than ``src`` (ansible_facts.mounts), else []."""
    found = ss.mount_conflict(mounts, path, src)
    return [found] if found else []


class FilterModule:
    """Shared storage filters."""

    def filters(self):
        return {"shared_storage_mount": shared_storage_mount, "shared_storage_problems": shared_storage_problems,
                "shared_storage_mount_conflict": shared_storage_mount_conflict}
