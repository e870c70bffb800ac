# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One run at a time: the run lock every playbook that changes nodes takes on each node.

The lock is a small JSON file on the node (``ascend_run_lock_path``) naming its holder: the run's ID,
the controller host, the PID and start time of its ``ansible-playbook`` process, the playbook and
when the lock was taken and last refreshed. ``decide()`` says what a run does with the lock it finds:

- none, or its own (the same run ID): take it (or refresh it);
- another run's from the same controller: stale when that run's process is gone (the controller
  reads its own process table: ``alive`` lists the run IDs of the live ``ansible-playbook``
  processes there; a PID reused by another process has another start time, so another run ID);
- another controller's: stale when it was not refreshed for ``stale_s`` seconds (that controller's
  processes cannot be seen from here);
- a live holder: refused, naming it.

``RunLock`` applies it on the node: the file is opened without following a link, read and rewritten
under ``flock`` (two runs taking it at once: one wins), written 0644 through a temporary file and a
rename. Release removes the lock only when this run holds it.
"""

from __future__ import annotations

import json
import os
import time

SCHEMA = 1
HOLDER_KEYS = ("run_id", "controller", "pid", "playbook", "started")


class LockError(ValueError):
    """A lock that cannot be read or a holder that cannot be written."""


def describe(holder):
    """The holder in words, for messages."""
    if not holder:
        return "nobody"
    return (f"{holder.get('playbook') or '?'} (run {holder.get('run_id') or '?'}: pid {holder.get('pid') or '?'}"
            f" on {holder.get('controller') or '?'}, started {holder.get('started') or '?'},"
            f" lock refreshed {holder.get('refreshed') or holder.get('taken') or '?'})")


def _age_s(holder, now):
    for key in ("refreshed_epoch", "taken_epoch"):
        try:
            return float(now) - float(holder[key])
        except (KeyError, TypeError, ValueError):
            continue
    return None


def decide(current, holder, alive=(), stale_s=21600, now=None):
    """What a run (``holder``) does with the lock it finds (``current``, None without one).

    Returns {action: take | refresh | takeover | refuse, reason}."""
    now = time.time() if now is None else now
    if not current:
        return {"action": "take", "reason": "no run holds the lock"}
    if current.get("run_id") == holder["run_id"]:
        return {"action": "refresh", "reason": "this run holds the lock"}
    if current.get("controller") == holder["controller"]:
        if current.get("run_id") in set(alive or ()):
            return {"action": "refuse", "reason": f"another run holds the lock: {describe(current)}, still running"}
        return {"action": "takeover",
                "reason": f"the lock of {describe(current)} is stale: that run's process is gone from "
                          f"{current.get('controller')}"}
    age = _age_s(current, now)
    if age is None or age > float(stale_s):
        how = ("of unknown age" if age is None
               else f"not refreshed for {int(age)} s (ascend_run_lock_stale_s {int(stale_s)})")
        return {"action": "takeover", "reason": f"the lock of {describe(current)} is stale: {how}"}
    return {"action": "refuse",
            "reason": f"another run holds the lock: {describe(current)}; from another controller it counts "
                      f"as held until it is {int(stale_s)} s old (ascend_run_lock_stale_s)"}


def record(holder, current=None, now=None):
    """The lock file's content for ``holder`` (taken now, or refreshed when it already held it)."""
    now = time.time() if now is None else now
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
    data = {"schema": SCHEMA}
    for key in HOLDER_KEYS:
        data[key] = holder.get(key)
    mine = bool(current) and current.get("run_id") == holder["run_id"]
    data["taken"] = current.get("taken") if mine else stamp
    data["taken_epoch"] = current.get("taken_epoch") if mine else int(now)
    data["refreshed"] = stamp
    data["refreshed_epoch"] = int(now)
    return data


def parse(text):
    """A lock file's content (None when empty)."""
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise LockError(f"not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise LockError("not a JSON object")
    return data


class RunLock:
    """ascend_run_lock on a node."""

    def __init__(self, module):
        self.module = module
        self.p = module.params

    def _open(self, path, check_mode):
        directory = os.path.dirname(path)
        if not os.path.isdir(directory):
            if check_mode:
                return None
            os.makedirs(directory, mode=0o755, exist_ok=True)
        flags = os.O_RDWR | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        if not check_mode:
            flags |= os.O_CREAT
        try:
            fd = os.open(path, flags, 0o644)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.module.fail_json(msg=f"{path}: cannot open the run lock without following a link ({exc})")
        if not os.path.stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            self.module.fail_json(msg=f"{path}: the run lock is not a regular file")
        return fd

    @staticmethod
    def _read(fd):
        os.lseek(fd, 0, os.SEEK_SET)
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            if sum(len(c) for c in chunks) > 65536:
                raise LockError("larger than 64 KiB")
        return b"".join(chunks).decode("utf-8", "replace")

    @staticmethod
    def _write(fd, data):
        text = (json.dumps(data, sort_keys=True) + "\n").encode("utf-8")
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, text)
        os.fsync(fd)

    def run(self):
        import fcntl

        path, holder, check = self.p["path"], dict(self.p["holder"] or {}), self.module.check_mode
        missing = [k for k in ("run_id", "controller") if not holder.get(k)]
        if missing:
            self.module.fail_json(msg=f"holder: {', '.join(missing)} missing")
        fd = self._open(path, check)
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    current = parse(self._read(fd))
                except LockError as exc:
                    self.module.warn(f"{path}: {exc}: taken over as no lock")
                    current = None
            else:
                current = None
            before = json.dumps(current, sort_keys=True, indent=1) + "\n" if current else ""
            if self.p["state"] == "absent":
                mine = bool(current) and current.get("run_id") == holder["run_id"]
                if mine and not check:
                    os.ftruncate(fd, 0)
                    os.unlink(path)
                self.module.exit_json(changed=mine, released=mine, holder=current,
                                      msg="released" if mine else f"not this run's lock: {describe(current)}",
                                      diff={"before": before, "after": "" if mine else before})
            verdict = decide(current, holder, self.p["alive"], self.p["stale_s"])
            if verdict["action"] == "refuse":
                self.module.fail_json(
                    msg=f"{self.p['node'] or 'this node'}: {verdict['reason']}. One run at a time: wait for it to end, "
                        f"or, when it is gone, remove {path} on this node.",
                    holder=current, refused=True)
            data = record(holder, current)
            if not check:
                self._write(fd, data)
            if verdict["action"] == "takeover":
                self.module.warn(f"{self.p['node'] or 'this node'}: {verdict['reason']}: taken over")
            after = json.dumps(data, sort_keys=True, indent=1) + "\n"
            self.module.exit_json(changed=verdict["action"] != "refresh", action=verdict["action"],
                                  msg=verdict["reason"], holder=data, previous=current,
                                  diff={"before": before, "after": after})
        finally:
            if fd is not None:
                os.close(fd)


# The controller's side (lookup run_holder): this run's ansible-playbook process and the live ones.

def _proc_stat(pid, proc="/proc"):
    """(ppid, start time in clock ticks since boot) of a process, or None."""
    try:
        with open(f"{proc}/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    try:
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def _cmdline(pid, proc="/proc"):
    try:
        with open(f"{proc}/{pid}/cmdline", "rb") as handle:
            return [a.decode("utf-8", "replace") for a in handle.read().split(b"\0") if a]
    except OSError:
        return []


def is_playbook_process(argv):
    """An ``ansible-playbook`` process (the script run directly or by a Python interpreter)."""
    return any(os.path.basename(a) == "ansible-playbook" for a in argv[:3])


def run_id(controller, pid, start_ticks):
    return f"{controller}:{int(pid)}:{int(start_ticks)}"


def playbook_process(pid=None, proc="/proc"):
    """The outermost ``ansible-playbook`` process this one runs in (its workers are its forks): (pid, start
    ticks, argv), or this process when none is found (not on Linux)."""
    pid = os.getpid() if pid is None else pid
    found = None
    seen = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        st = _proc_stat(pid, proc)
        if st is None:
            break
        argv = _cmdline(pid, proc)
        if is_playbook_process(argv):
            found = (pid, st[1], argv)
        pid = st[0]
    return found


def alive_runs(controller, proc="/proc"):
    """Run IDs of every live ``ansible-playbook`` process on this controller."""
    ids = []
    try:
        names = os.listdir(proc)
    except OSError:
        return ids
    for name in names:
        if not name.isdigit():
            continue
        argv = _cmdline(name, proc)
        if not is_playbook_process(argv):
            continue
        st = _proc_stat(name, proc)
        if st is not None:
            ids.append(run_id(controller, int(name), st[1]))
    return sorted(ids)


def _boot_time(proc="/proc"):
    try:
        with open(f"{proc}/stat", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("btime "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def controller_holder(controller, proc="/proc"):
    """This run as the lock names it: {run_id, controller, pid, playbook, started, alive}."""
    found = playbook_process(proc=proc)
    if found is None:
        # no ansible-playbook above this process (not Linux): this process, started now
        pid, ticks, argv = os.getpid(), int(time.time()), []
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    else:
        pid, ticks, argv = found
        boot = _boot_time(proc)
        hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        started = (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(boot + ticks / hz)) if boot is not None else "")
    books = [a for a in argv if a.endswith((".yml", ".yaml")) and not a.startswith("-")]
    return {"run_id": run_id(controller, pid, ticks), "controller": controller, "pid": pid,
            "playbook": " ".join(books) or "ansible-playbook", "started": started,
            "alive": alive_runs(controller, proc)}
