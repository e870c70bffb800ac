# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Many paths read in one call: whether each exists, its type, owner and mode.

What a role needs to decide, before it acts, whether a list of paths is already right (device nodes
the job's container gets, driver paths it mounts, directories it creates) without one ``stat`` task
per path. Read-only.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat as st

from ansible_collections.ascendops.cluster.plugins.module_utils.sha256_cache import Sha256Cache


def file_digest(path, algorithm):
    """The hex digest of a file's content (read in 1 MiB blocks)."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def path_stat(path, follow=True, checksum=None, cache=None, content_max_size=0):
    """{path, exists, isdir, isreg, ischr, islnk, uid, gid, mode[, checksum]} of one path (mode as an
    octal string, as Ansible's stat gives it). ``follow``: a symbolic link is described by its target
    (a dangling link does not exist). ``checksum``: a hashlib algorithm, for regular files; ``cache``: a
    Sha256Cache that answers sha256 for a file unchanged since it was hashed. ``content_max_size``: a
    regular file of at most that many bytes also gets its ``content``, base64 (as slurp gives it)."""
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return {"path": path, "exists": False}
    out = {"path": path, "exists": True, "isdir": st.S_ISDIR(info.st_mode), "isreg": st.S_ISREG(info.st_mode),
           "ischr": st.S_ISCHR(info.st_mode), "islnk": st.S_ISLNK(info.st_mode), "uid": info.st_uid,
           "gid": info.st_gid, "mode": f"{st.S_IMODE(info.st_mode):04o}", "size": info.st_size}
    if checksum and out["isreg"]:
        try:
            if cache is not None and checksum == "sha256":
                out["checksum"] = cache.digest(path)["sha256"]
            else:
                out["checksum"] = file_digest(path, checksum)
        except OSError:
            out["checksum"] = None
    if content_max_size and out["isreg"] and info.st_size <= content_max_size:
        try:
            with open(path, "rb") as handle:
                out["content"] = base64.b64encode(handle.read(content_max_size + 1)).decode("ascii")
        except OSError:
            out["content"] = None
    return out


class PathInfo:
    """The path_info module's work: one stat per path, in the order given."""

    def __init__(self, module):
        self.module = module

    def run(self):
        p = self.module.params
        cache = None
        if p.get("checksum_cache"):
            if p["checksum"] != "sha256":
                self.module.fail_json(msg="checksum_cache keeps sha256 checksums: set checksum: sha256")
            cache = Sha256Cache(p["checksum_cache"], create_dir=False)
        stats = [path_stat(path, p["follow"], p["checksum"], cache, p.get("content_max_size") or 0)
                 for path in p["paths"]]
        if cache is not None and not self.module.check_mode:
            cache.save()
        self.module.exit_json(changed=False, stats=stats)
