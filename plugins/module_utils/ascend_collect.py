# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One node's support bundle: what the vendor's support asks for, in one tar.gz, secrets redacted.

Commands (npu-smi, hccn_tool per device, the unit's journal, the kernel log, msnpureport where the
driver ships it) and files (versions, rank table, job files, the driver's and CANN's log
directories) go under ``commands/`` and ``files/<absolute path>``; ``index.json`` lists each
command's exit code and what was left out for size. A command that fails is recorded, not fatal:
a broken node is exactly what a bundle is for.

Only root reads what it collects, and nothing on the node can point it elsewhere: the bundle is built
in a private temporary directory (0700) with every file created 0600 (``O_EXCL``); node files are
read without following a symbolic link in their last component and only when they are regular files
(the job's container can write the job and status directories); the bundle's directory is created
0700 or must already be a real directory of this user that no one else can write (a directory or
link another user put there first is refused, naming it), and the archive is written to a new file
there (``O_EXCL``, 0600) and renamed into place. Secrets are redacted by key (``*_TOKEN=``,
``password:``, docker's ``"auth"``), by shape (``--password x``, bearer tokens, URL credentials, AWS
access key IDs, private key blocks) and by value (``redact_values``: the job's ``extra_env`` values
and the registry password, wherever they appear).
"""

from __future__ import annotations

import contextlib
import glob
import io
import json
import os
import re
import shutil
import stat
import tarfile
import tempfile
import time

# KEY=value / KEY: value where the key names a secret; Authorization headers; URLs with a password.
_SECRET_KV = re.compile(r"(?i)\b([A-Z0-9_.-]*(?:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_?KEY|"
                        r"PRIVATE_?KEY|CREDENTIALS?)[A-Z0-9_.-]*)(\"?\s*[=:]\s*\"?)([^\s\"',}]+)")
_AUTH = re.compile(r"(?i)\b(authorization\s*:\s*(?:bearer|basic|token)\s+)\S+")
_URL_PW = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)[^@\s/]+@")
# --password x / --password=x and their kin on a command line; docker login's -p (its short --password:
# -p alone means a port or a PID elsewhere)
_FLAG = re.compile(r"(?i)((?:^|\s)--(?:password|passwd|token|secret|api-key|access-key)(?:=|\s+))(\S+)")
_LOGIN_P = re.compile(r"(?i)(\blogin\b[^\n]*?\s-p(?:=|\s+))(\S+)")
# docker's config.json: "auth": "<base64 user:password>"
_DOCKER_AUTH = re.compile(r"(?i)(\"auth\"\s*:\s*\")[^\"]+")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}")
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S)
REDACTED = "***"
# Redacted by value only when at least this long and not a plain number: an extra_env value such as "1", "INFO"
# or "1200" would mask every such word of the logs (their keys are still redacted when they name a secret).
MIN_VALUE_LEN = 6
_PLAIN_NUMBER = re.compile(r"^[0-9.:+-]*$")


def redactable(value):
    """Whether ``value`` is redacted wherever it appears (``redact_values``)."""
    value = str(value)
    return len(value) >= MIN_VALUE_LEN and not _PLAIN_NUMBER.match(value)


def redact(text, values=()):
    """Text with secret values replaced by *** (keys stay, so the reader sees what was set); ``values``:
    strings redacted wherever they appear (the longest first), those ``redactable`` says are."""
    for value in sorted({str(v) for v in values or () if redactable(v)}, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    text = _PRIVATE_KEY.sub(REDACTED, text)
    text = _SECRET_KV.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _AUTH.sub(lambda m: m.group(1) + REDACTED, text)
    text = _FLAG.sub(lambda m: m.group(1) + REDACTED, text)
    text = _LOGIN_P.sub(lambda m: m.group(1) + REDACTED, text)
    text = _DOCKER_AUTH.sub(lambda m: m.group(1) + REDACTED, text)
    text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    text = _AWS_KEY_ID.sub(REDACTED, text)
    return _URL_PW.sub(lambda m: m.group(1) + REDACTED + "@", text)


class CollectError(Exception):
    """The bundle cannot be written safely (its directory is not this user's private directory)."""


def private_directory(path):
    """Create ``path`` 0700 (its parent must exist), or accept an existing one that is a real directory
    (not a symbolic link) owned by this user, made 0700; CollectError naming the path otherwise."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise CollectError(f"{path} is {'a symbolic link' if stat.S_ISLNK(st.st_mode) else 'not a directory'}: "
                           "the bundle is not written through it; remove it or choose another bundle path")
    if st.st_uid != os.geteuid():
        raise CollectError(f"{path} belongs to uid {st.st_uid}, not to this run's user (uid {os.geteuid()}): "
                           "another user made it first; remove it or choose another bundle path")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)


def _open_new(path):
    """A new file (never an existing one, never through a link), 0600, for writing bytes."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600), "wb")


def read_regular(path, limit):
    """``(data, None)`` with at most ``limit`` bytes of the regular file ``path``, read without following a
    symbolic link as its last component; ``(None, why)`` when it is a link, not a regular file, or unreadable."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        return None, "a symbolic link (not followed)" if os.path.islink(path) else str(e)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None, "not a regular file"
        return f.read(limit), None


def _is_text(data):
    return b"\0" not in data[:8192]


def _tail(text, lines):
    return "\n".join(str(text or "").splitlines()[-lines:])


class Collector:
    """Builds the bundle in a temporary directory, then packs it. `run` is module.run_command."""

    def __init__(self, run, params, devices):
        self.run = run
        self.p = params
        self.devices = devices
        self.index = {"commands": [], "files": [], "left_out": [], "host_time": time.time()}
        self.total = 0
        self.outputs = {}

    # ---- commands

    def command(self, name, argv, cwd=None, timeout_s=None):
        """Run one command into commands/<name>.txt; its stdout (redacted) is kept for triage."""
        t0 = time.monotonic()
        if not argv or not (os.path.isabs(argv[0]) and os.access(argv[0], os.X_OK) or shutil.which(argv[0])):
            self.index["commands"].append({"name": name, "argv": argv, "rc": None, "error": "not installed"})
            return None
        cmd = (["timeout", str(int(timeout_s))] + argv) if timeout_s and shutil.which("timeout") else argv
        rc, out, err = self.run(cmd, cwd=cwd)
        out, err = self._redact(out or ""), self._redact(err or "")
        self.index["commands"].append({"name": name, "argv": argv, "rc": rc,
                                       "seconds": round(time.monotonic() - t0, 2)})
        self._write(os.path.join("commands", name + ".txt"),
                    f"$ {' '.join(argv)}\n# exit {rc}\n{out}" + (f"\n# stderr\n{err}" if err.strip() else ""))
        self.outputs[name] = out if rc == 0 or out.strip() else (out + err)
        return rc

    def commands(self):
        p = self.p
        smi = p["npu_smi"]
        self.command("npu_smi_info", [smi, "info"])
        tool = p["hccn_tool"]
        for dev in self.devices:
            for what in ("link", "net_health", "netdetect", "stat", "ip"):
                self.command(f"hccn_{dev}_{what}", [tool, "-i", str(dev), f"-{what}", "-g"])
        lines = str(p["journal_lines"])
        since = ["--since", p["since"]] if p.get("since") else []
        self.command("journal_job", ["journalctl", "--unit", p["service"], "--output", "short-iso",
                                     "--no-pager", "--lines", lines] + since)
        self.command("unit_state", ["systemctl", "show", p["service"], "--property",
                                    "ActiveState,SubState,Result,NRestarts,ExecMainStatus,ExecMainStartTimestamp"])
        if self.command("kernel", ["journalctl", "--dmesg", "--output", "short-iso", "--no-pager", "--lines",
                                   lines] + since) not in (0,):
            self.command("dmesg", ["dmesg"])
        report = os.path.join(p["install_path"], "driver", "tools", "msnpureport")
        if os.access(report, os.X_OK):
            out = os.path.join(self.work, "msnpureport")
            os.makedirs(out, exist_ok=True)
            self.command("msnpureport", [report], cwd=out, timeout_s=p["msnpureport_timeout_s"])
        for name, argv in (p["extra_commands"] or {}).items():
            self.command(name, list(argv))

    # ---- files

    def _write(self, rel, text):
        data = text.encode("utf-8", "replace")
        self._write_bytes(rel, data)

    def _write_bytes(self, rel, data):
        path = os.path.join(self.work, rel)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with _open_new(path) as f:
            f.write(data)
        self.total += len(data)

    def _redact(self, text):
        return redact(text, self.p.get("redact_values") or ())

    def add_file(self, path):
        """Copy one node file into the bundle: a regular file only, read through no symbolic link as its last
        component (the job's container writes some of these directories), within the size limits."""
        limit = self.p["max_file_bytes"]
        data, why = read_regular(path, limit + 1)
        if data is None:
            if os.path.lexists(path):
                self.index["left_out"].append({"path": path, "why": why})
            return
        if len(data) > limit or self.total + len(data) > self.p["max_total_bytes"]:
            self.index["left_out"].append({"path": path, "bytes": os.path.getsize(path), "why": "size limit"})
            return
        if _is_text(data):
            data = self._redact(data.decode("utf-8", "replace")).encode("utf-8")
        self._write_bytes(os.path.join("files", path.lstrip("/")), data)
        self.index["files"].append(path)

    def files(self):
        wanted = []
        for pattern in self.p["files"]:
            wanted.extend(sorted(glob.glob(pattern)) or [])
        for pattern in self.p["log_dirs"]:
            found = []
            for d in sorted(glob.glob(pattern)):
                if os.path.islink(d):  # a user's log directory pointing elsewhere (/home/*/ascend/log)
                    self.index["left_out"].append({"path": d, "why": "a symbolic link (not followed)"})
                    continue
                for root, _dirs, names in os.walk(d):  # links inside are not followed (os.walk's default)
                    found.extend(os.path.join(root, n) for n in names)
            # newest first: when the size limit bites, the old logs are the ones left out
            wanted.extend(sorted(found, key=lambda f: os.path.getmtime(f) if os.path.exists(f) else 0, reverse=True))
        for path in dict.fromkeys(wanted):
            if not os.path.isdir(path) or os.path.islink(path):  # add_file names a link it did not follow
                self.add_file(path)

    # ---- the whole bundle

    def triage_data(self):
        """What the controller's triage reads (short: the whole output is in the bundle)."""
        o = self.outputs
        status = ""
        if self.p["status_file"]:
            data, _why = read_regular(self.p["status_file"], 65536)
            status = self._redact(data.decode("utf-8", "replace")) if data is not None else ""
        props = dict(line.split("=", 1) for line in (o.get("unit_state") or "").splitlines() if "=" in line)
        return {
            "npu_smi_info": o.get("npu_smi_info", ""),
            "hccn": {str(d): {"link": o.get(f"hccn_{d}_link", ""), "net_health": o.get(f"hccn_{d}_net_health", ""),
                              "netdetect": o.get(f"hccn_{d}_netdetect", "")}
                     for d in self.devices},
            # under Slurm no unit runs the job: its container's log (collect.yml's extra command) stands for the journal
            "journal": _tail(o.get("container_log") or o.get("journal_job"), self.p["triage_lines"]),
            "kernel": _tail(o.get("kernel") or o.get("dmesg"), self.p["triage_lines"]),
            "status": status,
            "unit_state": f"{props.get('ActiveState', 'unknown')}/{props.get('SubState', '')}",
        }

    def collect(self, bundle, check_mode=False):
        self.work = tempfile.mkdtemp(prefix="ascendops-collect-")
        try:
            self.commands()
            if not check_mode:
                self.files()
            self._write("index.json", json.dumps(self.index, indent=1))
            data = self.triage_data()
            if check_mode:
                return {"changed": False, "bundle": None, "bytes": 0, "triage": data, "index": self.index}
            # logs can tell more than they should: only this user (root) reads the bundle, from its creation
            private_directory(os.path.dirname(os.path.abspath(bundle)))
            tmp = bundle + ".tmp"
            if os.path.lexists(tmp):
                os.unlink(tmp)  # an interrupted run's (a link is removed, not followed)
            top = os.path.basename(bundle).split(".tar")[0]
            with _open_new(tmp) as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
                tar.add(self.work, arcname=top)
            os.replace(tmp, bundle)
            return {"changed": True, "bundle": bundle, "bytes": os.path.getsize(bundle), "triage": data,
                    "index": self.index}
        finally:
            shutil.rmtree(self.work, ignore_errors=True)


def bundle_members(path):
    """Names in a bundle (tests and the playbook's own check)."""
    with tarfile.open(path, "r:gz") as tar:
        return tar.getnames()


def read_member(path, name):
    with tarfile.open(path, "r:gz") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(name))
        return io.TextIOWrapper(tar.extractfile(member), encoding="utf-8").read()
