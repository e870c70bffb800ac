"""SIMULATION ONLY - not Huawei software. User and group lookups for the installers and boot.

On a node (``$ASCEND_SIM_ROOT`` empty) this is the system database (``pwd``/``grp``, so NSS users
count). Under ``$ASCEND_SIM_ROOT`` (unit tests) it reads ``$ASCEND_SIM_ROOT/etc/passwd`` and
``$ASCEND_SIM_ROOT/etc/group`` only, so tests never create or delete real users.
"""

import grp
import os
import pwd

from . import paths


def _read_db(real_path: str) -> list[list[str]]:
    path = paths.host_path(real_path)
    if not os.path.isfile(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as f:
        return [line.rstrip("\n").split(":") for line in f if line.strip() and not line.startswith("#")]


def user(name: str) -> tuple[int, int] | None:
    """(uid, primary gid) of ``name``, or None."""
    if paths.under_sim_root():
        for fields in _read_db("/etc/passwd"):
            if len(fields) >= 4 and fields[0] == name:
                return int(fields[2]), int(fields[3])
        return None
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


def group(name: str) -> tuple[int, list[str]] | None:
    """(gid, member names) of ``name``, or None."""
    if paths.under_sim_root():
        for fields in _read_db("/etc/group"):
            if len(fields) >= 3 and fields[0] == name:
                members = [m for m in (fields[3].split(",") if len(fields) > 3 else []) if m]
                return int(fields[2]), members
        return None
    try:
        entry = grp.getgrnam(name)
    except KeyError:
        return None
    return entry.gr_gid, list(entry.gr_mem)


def user_in_group(user_name: str, group_name: str) -> bool:
    u = user(user_name)
    g = group(group_name)
    if u is None or g is None:
        return False
    return u[1] == g[0] or user_name in g[1]
