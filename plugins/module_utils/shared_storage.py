# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared storage for the job's data and checkpoints: mount settings and the checks on a node.

Pure parts (unit-tested, also used by the ``shared_storage_mount`` filter):

* ``mount_spec(type, settings)``: the ``src``, ``fstype`` and ``opts`` of the fstab entry of an
  ``nfs`` or ``lustre`` file system, and the file system types a check accepts;
* ``parse_mountinfo(text)`` / ``mount_of(path, entries)``: the mount that holds a path, from
  ``/proc/self/mountinfo`` (``proc(5)``: mount point and source escaped as ``\\040`` etc.);
* ``mount_problems(...)``: the path is a mount point of an expected type, not the root file system.

``SharedStorageCheck`` is the module's work on one node (``shared_storage_check``): the mount, then,
unless in check mode, a marker (written with a unique token on one node, read back on the others:
the same file system everywhere), a write and a read of ``size_mib`` as the job's user (it must be
able to write; with root squashing root could not), and whether root can give a directory to the
job's user (the launch stage does). Throughput in MB/s (10^6 bytes per second) against floors; every
problem names the path and the measured number.
"""

from __future__ import annotations

import json
import os
import time

MB = 1000 * 1000
MIB = 1024 * 1024
MARKER_NAME = ".ascendops-shared-storage.json"
TYPES = ("none", "nfs", "lustre", "existing")
NFS_FSTYPES = ["nfs", "nfs4"]
LUSTRE_FSTYPES = ["lustre"]
MOUNTINFO = "/proc/self/mountinfo"
ROOT = "/"


class SharedStorageError(ValueError):
    """A setting that cannot make a mount (the message names the setting)."""


def _positive_int(value, name):
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise SharedStorageError(f"{name} must be a whole number (is {value!r})") from None
    if number < 0:
        raise SharedStorageError(f"{name} must be 0 or more (is {value!r})")
    return number


def nfs_options(settings):
    """The NFS mount options (a list) from the ``nfs_*`` settings (``0`` or empty leaves one out)."""
    opts = []
    version = str(settings.get("nfs_version") or "").strip()
    if version:
        if version not in ("3", "4", "4.0", "4.1", "4.2"):
            raise SharedStorageError(f"shared_storage_nfs_version must be 3, 4, 4.0, 4.1 or 4.2 (is {version!r})")
        opts.append(f"vers={version}")
    opts.append("hard" if settings.get("nfs_hard", True) else "soft")
    for key in ("rsize", "wsize", "nconnect"):
        number = _positive_int(settings.get(f"nfs_{key}", 0) or 0, f"shared_storage_nfs_{key}")
        if key == "nconnect" and number > 16:
            raise SharedStorageError(f"shared_storage_nfs_nconnect must be 16 at most, the kernel's limit "
                                     f"(is {number})")
        if number:
            opts.append(f"{key}={number}")
    return opts


def _extra(settings):
    extra = settings.get("mount_options_extra") or []
    if isinstance(extra, str):
        raise SharedStorageError("shared_storage_mount_options_extra must be a list of options, e.g. [noatime]")
    return [str(o) for o in extra]


def _merge(base, extra):
    """Options with the site's extras; an extra ``key=value`` or flag replaces the derived one of that key."""
    keys = {o.split("=", 1)[0] for o in extra}
    opposite = {"hard": "soft", "soft": "hard"}
    kept = [o for o in base if o.split("=", 1)[0] not in keys and opposite.get(o) not in keys]
    return kept + [o for o in extra if o not in kept]


def mount_spec(fs_type, settings):
    """``{src, fstype, opts, fstypes}`` of an nfs or lustre mount; ``{fstypes}`` only for existing/none.

    ``settings``: the role's settings without the ``shared_storage_`` prefix (nfs_server, nfs_export,
    nfs_version, nfs_hard, nfs_rsize, nfs_wsize, nfs_nconnect, lustre_mgs, lustre_fsname, lustre_repo_url,
    lustre_repo_key_url, lustre_repo_unsigned, mount_options_extra, fstypes). A Lustre repository without a
    signing key is refused unless lustre_repo_unsigned says so.
    """
    if fs_type not in TYPES:
        raise SharedStorageError(f"shared_storage_type must be one of {', '.join(TYPES)} (is {fs_type!r})")
    wanted = list(settings.get("fstypes") or [])
    if fs_type == "nfs":
        server = str(settings.get("nfs_server") or "").strip()
        export = str(settings.get("nfs_export") or "").strip()
        if not server:
            raise SharedStorageError("shared_storage_nfs_server is empty: set it to the NFS server's name or address")
        if not export.startswith("/"):
            raise SharedStorageError(f"shared_storage_nfs_export must be the absolute path the server exports "
                                     f"(is {export!r})")
        host = f"[{server}]" if ":" in server and not server.startswith("[") else server
        opts = _merge(nfs_options(settings) + ["_netdev"], _extra(settings))
        return {"src": f"{host}:{export}", "fstype": "nfs", "opts": ",".join(opts), "fstypes": wanted or NFS_FSTYPES}
    if fs_type == "lustre":
        mgs = str(settings.get("lustre_mgs") or "").strip()
        fsname = str(settings.get("lustre_fsname") or "").strip().strip("/")
        if not mgs or "@" not in mgs:
            raise SharedStorageError(f"shared_storage_lustre_mgs must name the MGS NID(s), e.g. 10.0.0.1@tcp or "
                                     f"10.0.0.1@o2ib:10.0.0.2@o2ib for a failover pair (is {mgs!r})")
        if not fsname or len(fsname) > 8 or not fsname.replace("_", "").replace("-", "").isalnum():
            raise SharedStorageError(f"shared_storage_lustre_fsname must be the file system's name, 1 to 8 letters, "
                                     f"digits, - or _ (is {fsname!r})")
        repo = str(settings.get("lustre_repo_url") or "").strip()
        key = str(settings.get("lustre_repo_key_url") or "").strip()
        if repo and not key and settings.get("lustre_repo_unsigned") not in (True, "true", "True", "yes"):
            raise SharedStorageError(f"shared_storage_lustre_repo_url is {repo} but shared_storage_lustre_repo_key_url "
                                     "is empty: the client packages would be installed unverified. Set the key URL "
                                     "of the repository's signing key, or shared_storage_lustre_repo_unsigned: true "
                                     "to accept an unsigned repository")
        opts = _merge(["_netdev", "flock"], _extra(settings))
        return {"src": f"{mgs}:/{fsname}", "fstype": "lustre", "opts": ",".join(opts),
                "fstypes": wanted or LUSTRE_FSTYPES}
    return {"fstypes": wanted}


def _source_key(src):
    """A mount source compared as the kernel may show it: ``host:/export`` with ``//`` and a trailing ``/``
    of the path taken out, brackets of an IPv6 server kept as the mount was written."""
    host, sep, path = str(src or "").strip().partition(":/")
    if not sep:
        return str(src or "").strip().rstrip("/") or "/"
    path = "/".join(p for p in path.split("/") if p)
    return f"{host}:/{path}"


def mount_conflict(mounts, path, src):
    """A message when ``path`` (shared_storage_path) is already the mount point of another source than
    ``src`` (what the nfs or lustre mount would mount there), or None. ``mounts``: Ansible's
    ``ansible_facts.mounts`` ([{mount, device, fstype, ...}]). The same source there is a re-run: fine."""
    want = str(path or "").rstrip("/") or "/"
    others = []
    for entry in mounts or []:
        if not isinstance(entry, dict) or (str(entry.get("mount") or "").rstrip("/") or "/") != want:
            continue
        if _source_key(entry.get("device")) != _source_key(src):
            others.append(f"{entry.get('device')} ({entry.get('fstype')})")
    if not others:
        return None
    return (f"shared_storage_path {want} is already the mount point of {', '.join(others)}, not of {src}: mounting "
            f"there would replace the site's mount (and its /etc/fstab line). Set shared_storage_path to a directory "
            f"of its own, or shared_storage_type: existing to use the file system mounted there as it is")


def _unescape(field):
    """A mountinfo field: octal escapes (``\\040`` space, ``\\011`` tab, ``\\012`` newline, ``\\134`` backslash)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text):
    """The entries of ``/proc/self/mountinfo``: ``[{mount_point, fstype, source, options, dev}]`` in order."""
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split(" ")
        try:
            sep = fields.index("-", 6)
            entries.append({"dev": fields[2], "mount_point": _unescape(fields[4]), "options": fields[5],
                            "fstype": fields[sep + 1], "source": _unescape(fields[sep + 2]),
                            "super_options": fields[sep + 3] if len(fields) > sep + 3 else ""})
        except (ValueError, IndexError):
            raise ValueError(f"/proc/self/mountinfo line {number} cannot be read: {line!r}") from None
    return entries


def mount_of(path, entries):
    """The entry of the mount holding ``path`` (a resolved absolute path): the last one of the longest prefix."""
    best = None
    for entry in entries:
        mp = entry["mount_point"]
        holds = path == mp or mp == "/" or path.startswith(mp.rstrip("/") + "/")
        if holds and (best is None or len(mp) >= len(best["mount_point"])):
            best = entry
    return best


def mount_problems(path, entries, fstypes, root_dev=None, path_dev=None):
    """Problems of ``path`` as a shared mount: a mount point, of a type in ``fstypes`` (empty: any), not ``/``."""
    entry = mount_of(path, entries)
    if entry is None or entry["mount_point"] != path:
        holder = entry["mount_point"] if entry else "?"
        kind = f"{entry['fstype']} " if entry else ""
        return entry, [f"{path} is not a mount point (it lies on the {kind}file system mounted at {holder}): "
                       "mount the shared file system there first"]
    problems = []
    if path == "/" or (root_dev is not None and path_dev is not None and root_dev == path_dev):
        problems.append(f"{path} is on the root file system ({entry['fstype']} {entry['source']}), not a shared one")
    if fstypes and entry["fstype"] not in fstypes:
        problems.append(f"{path} is a {entry['fstype']} file system ({entry['source']}), expected "
                        f"{' or '.join(fstypes)}: set shared_storage_fstypes if this is right")
    return entry, problems


def _as_user(uid, gid, func):
    """``func()`` in a child process with the ids ``uid``/``gid`` (no supplementary groups); its JSON result."""
    if uid is None:
        return func()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        code = 0
        try:
            os.close(read_fd)
            if os.geteuid() == 0:
                os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            payload = json.dumps({"result": func()})
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
            payload = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
            code = 1
        with os.fdopen(write_fd, "w") as handle:
            handle.write(payload)
        os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd) as handle:
        data = handle.read()
    os.waitpid(pid, 0)
    reply = json.loads(data or '{"error": "no answer from the child process"}')
    if "error" in reply:
        raise OSError(reply["error"])
    return reply["result"]


def io_test(path, name, size_mib, block_mib=1):
    """Write ``size_mib`` MiB to ``<path>/<name>`` (fsync), drop it from the page cache, read it back.

    Returns ``{write_mbps, read_mbps, bytes}``; the file is removed. The read is from the server
    where the file system honours ``POSIX_FADV_DONTNEED`` (local disks, NFS); otherwise it is cached.
    """
    target = os.path.join(path, name)
    block = os.urandom(block_mib * MIB)
    count = max(1, int(size_mib) // block_mib)
    try:
        start = time.monotonic()
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for _block in range(count):
                os.write(fd, block)
            os.fsync(fd)
            if hasattr(os, "posix_fadvise"):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        write_s = time.monotonic() - start
        start = time.monotonic()
        fd = os.open(target, os.O_RDONLY)
        read = 0
        try:
            while True:
                chunk = os.read(fd, block_mib * MIB)
                if not chunk:
                    break
                read += len(chunk)
        finally:
            os.close(fd)
        read_s = time.monotonic() - start
    finally:
        if os.path.exists(target):
            os.unlink(target)
    total = count * block_mib * MIB
    if read != total:
        raise OSError(f"read back {read} of the {total} bytes written to {target}")
    return {"bytes": total, "write_mbps": round(total / MB / max(write_s, 1e-6), 1),
            "read_mbps": round(total / MB / max(read_s, 1e-6), 1)}


def write_marker(path, token, node):
    """Write the marker (``{token, node}``) through a temporary file and a rename."""
    target = os.path.join(path, MARKER_NAME)
    tmp = f"{target}.{os.getpid()}.tmp"
    with open(tmp, "w") as handle:
        json.dump({"token": token, "node": node, "written_at": int(time.time())}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(tmp, target)
    return target


def read_marker(path):
    """The marker's content (None when there is none or it cannot be read)."""
    try:
        with open(os.path.join(path, MARKER_NAME)) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def root_can_chown(path, uid, gid, name):
    """Root creates a directory in ``path`` and gives it to ``uid``/``gid`` (what the launch stage does)."""
    target = os.path.join(path, name)
    try:
        os.mkdir(target, 0o755)
        try:
            os.chown(target, uid, gid)
        finally:
            os.rmdir(target)
    except OSError as exc:
        return f"{exc.strerror or exc}"
    return None


class SharedStorageCheck:
    """One shared_storage_check run on a node (the module's work)."""

    def __init__(self, module, mountinfo_path=None, sleep=time.sleep):
        self.module = module
        self.mountinfo_path = mountinfo_path or MOUNTINFO
        self.sleep = sleep

    def run(self):
        p = self.module.params
        path = os.path.realpath(p["path"])
        node = p["node"]
        result = {"changed": False, "path": path, "mount": None, "write_mbps": None, "read_mbps": None,
                  "marker": None, "checked": [], "problems": []}
        problems = result["problems"]
        try:
            with open(self.mountinfo_path) as handle:
                entries = parse_mountinfo(handle.read())
        except (OSError, ValueError) as exc:
            self.module.fail_json(msg=f"{node}: cannot read the mounts: {exc}", **result)
        if not os.path.isdir(path):
            problems.append(f"{path} is not a directory")
            self._finish(result)
        root_dev = os.stat(ROOT).st_dev
        path_dev = os.stat(path).st_dev
        entry, mount = mount_problems(path, entries, p["fstypes"], root_dev, path_dev)
        result["mount"] = entry and {k: entry[k] for k in ("mount_point", "fstype", "source", "options")}
        problems.extend(mount)
        result["checked"].append("mount")
        if problems or self.module.check_mode:
            # In check mode nothing is written: the marker and the throughput are left for a real run.
            self._finish(result)
        uid, gid = p["uid"], p["gid"]
        who = f"uid {uid}" if uid is not None else "root"
        if p["marker_token"]:
            result["marker"] = self._marker(path, p, uid, gid, problems, who)
            result["checked"].append("marker")
        if uid is not None:
            error = root_can_chown(path, uid, gid, f".ascendops-chown-{node}-{os.getpid()}")
            if error:
                problems.append(f"root cannot create a directory in {path} and give it to {who} ({error}): the launch "
                                "stage does that for the job's directories; export the file system without root "
                                "squashing for the nodes (NFS: no_root_squash)")
            result["checked"].append("root_chown")
        if p["size_mib"] > 0:
            try:
                io = _as_user(uid, gid, lambda: io_test(path, f".ascendops-io-{node}-{os.getpid()}", p["size_mib"]))
            except OSError as exc:
                problems.append(f"{who} (the job's user) cannot write {p['size_mib']} MiB in {path}: {exc}; make "
                                f"{path} writable for it on every node (same uid everywhere)")
            else:
                result["write_mbps"], result["read_mbps"] = io["write_mbps"], io["read_mbps"]
                result["checked"].append("throughput")
                if io["write_mbps"] < p["min_write_mbps"]:
                    problems.append(f"writing {p['size_mib']} MiB to {path} ran at {io['write_mbps']} MB/s, below "
                                    f"shared_storage_min_write_mbps {p['min_write_mbps']}")
                if io["read_mbps"] < p["min_read_mbps"]:
                    problems.append(f"reading {p['size_mib']} MiB from {path} ran at {io['read_mbps']} MB/s, below "
                                    f"shared_storage_min_read_mbps {p['min_read_mbps']}")
        self._finish(result)

    def _marker(self, path, p, uid, gid, problems, who):
        token = p["marker_token"]
        if p["marker_write"]:
            try:
                _as_user(uid, gid, lambda: write_marker(path, token, p["node"]))
            except OSError as exc:
                problems.append(f"{who} (the job's user) cannot write the marker {MARKER_NAME} in {path}: {exc}; make "
                                f"{path} writable for it on every node (same uid everywhere)")
                return {"written": False}
            return {"written": True, "node": p["node"]}
        deadline = time.monotonic() + p["marker_wait_s"]
        while True:
            data = read_marker(path)
            if data and data.get("token") == token:
                return {"written": False, "node": data.get("node")}
            if time.monotonic() >= deadline:
                break
            self.sleep(1)
        seen = f"one from {data.get('node')} with another token (an earlier run)" if data else "none"
        problems.append(f"the marker written on {p['marker_node'] or 'the first node'} is not in {path} here (found "
                        f"{seen} after {p['marker_wait_s']} s): this node's {path} is another file system")
        return {"written": False, "node": data.get("node") if data else None}

    def _finish(self, result):
        if result["problems"]:
            self.module.fail_json(msg=f"{self.module.params['node']}: shared storage {result['path']}: "
                                      + "; ".join(result["problems"]), **result)
        self.module.exit_json(**result)
