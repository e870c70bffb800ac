# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One node's support bundle: what the vendor's support asks for, in one tar.gz, secrets redacted.

Commands (npu-smi, hccn_tool per device, the unit's journal, the kernel log, msnpureport where the
driver ships it) and files (versions, rank table, job files, the driver's and CANN's log
directories) go under ``commands/`` and ``files/<absolute path>``; ``index.json`` lists each
command's exit code and what was left out for size. A command that fails is recorded, not fatal:
a broken node is exactly what a bundle is for.
"""

from __future__ import annotations

import glob
import io
import json
import os
import re
import shutil
import tarfile
import tempfile
import time

# KEY=value / KEY: value where the key names a secret; Authorization headers; URLs with a password.
_SECRET_KV = re.compile(r"(?i)\b([A-Z0-9_.-]*(?:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_?KEY|"
                        r"PRIVATE_?KEY|CREDENTIALS?)[A-Z0-9_.-]*)(\"?\s*[=:]\s*\"?)([^\s\"',}]+)")
_AUTH = re.compile(r"(?i)\b(authorization\s*:\s*(?:bearer|basic|token)\s+)\S+")
_URL_PW = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)[^@\s/]+@")
REDACTED = "***"


def redact(text):
    """Text with secret values replaced by *** (keys stay, so the reader sees what was set)."""
    text = _SECRET_KV.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _AUTH.sub(lambda m: m.group(1) + REDACTED, text)
    return _URL_PW.sub(lambda m: m.group(1) + REDACTED + "@", text)


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
        out, err = redact(out or ""), redact(err or "")
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
            for what in ("link", "net_health", "stat", "ip"):
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
        path = os.path.join(self.work, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        self.total += len(text.encode("utf-8", "replace"))

    def add_file(self, path):
        try:
            size = os.path.getsize(path)
        except OSError:
            return
        limit = self.p["max_file_bytes"]
        if size > limit or self.total + size > self.p["max_total_bytes"]:
            self.index["left_out"].append({"path": path, "bytes": size, "why": "size limit"})
            return
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            self.index["left_out"].append({"path": path, "why": str(e)})
            return
        rel = os.path.join("files", path.lstrip("/"))
        dest = os.path.join(self.work, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if _is_text(data):
            data = redact(data.decode("utf-8", "replace")).encode("utf-8")
        with open(dest, "wb") as f:
            f.write(data)
        self.total += len(data)
        self.index["files"].append(path)

    def files(self):
        wanted = []
        for pattern in self.p["files"]:
            wanted.extend(sorted(glob.glob(pattern)) or [])
        for pattern in self.p["log_dirs"]:
            found = []
            for d in sorted(glob.glob(pattern)):
                for root, _dirs, names in os.walk(d):
                    found.extend(os.path.join(root, n) for n in names)
            # newest first: when the size limit bites, the old logs are the ones left out
            wanted.extend(sorted(found, key=lambda f: os.path.getmtime(f) if os.path.exists(f) else 0, reverse=True))
        for path in dict.fromkeys(wanted):
            if os.path.isfile(path) and not os.path.islink(path):
                self.add_file(path)

    # ---- the whole bundle

    def triage_data(self):
        """What the controller's triage reads (short: the whole output is in the bundle)."""
        o = self.outputs
        status = ""
        if self.p["status_file"] and os.path.isfile(self.p["status_file"]):
            with open(self.p["status_file"], encoding="utf-8", errors="replace") as f:
                status = redact(f.read(65536))
        props = dict(line.split("=", 1) for line in (o.get("unit_state") or "").splitlines() if "=" in line)
        return {
            "npu_smi_info": o.get("npu_smi_info", ""),
            "hccn": {str(d): {"link": o.get(f"hccn_{d}_link", ""), "net_health": o.get(f"hccn_{d}_net_health", "")}
                     for d in self.devices},
            "journal": _tail(o.get("journal_job"), self.p["triage_lines"]),
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
            os.makedirs(os.path.dirname(bundle), exist_ok=True)
            tmp = bundle + ".tmp"
            top = os.path.basename(bundle).split(".tar")[0]
            with tarfile.open(tmp, "w:gz") as tar:
                tar.add(self.work, arcname=top)
            os.chmod(tmp, 0o600)  # logs can tell more than they should: only root reads the bundle
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
