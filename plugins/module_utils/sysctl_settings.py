# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel parameters set together: a drop-in file under /etc/sysctl.d and the running kernel.

A stage's sysctl settings (a mapping of keys to values) are read and applied in one module call
instead of one task per key. Both sides are checked, as ``ansible.posix.sysctl`` with ``reload``
does for each key:

* the file (``sysctl_file``, read by systemd-sysctl at boot): each key has one ``key=value`` line
  with the value asked for. A line of the key with another value is rewritten in place, later
  lines of the same key are dropped (the last one would win at boot), a missing key is appended;
  every other line (comments, the site's own keys) stays as it is. A file that already says it is
  not rewritten.
* the running kernel (``/proc/sys``, what ``sysctl -n`` reads): a key whose value differs is
  written (what ``sysctl -w`` does).

Values compare as ``sysctl`` prints them: whitespace-separated fields (``tcp_rmem`` is tab
separated in /proc, space separated in the file). Booleans become 1 / 0.

Key names follow sysctl(8): dots separate the levels, unless the first separator is a slash
(``net/ipv4/conf/eth0.100/rp_filter``); in the dotted form a slash stands for a dot in a name
(``net.ipv4.conf.eth0/100.rp_filter``).
"""

from __future__ import annotations

import os
import tempfile

PROC_SYS = "/proc/sys"
FILE_MODE = 0o644
_TRUE = ("yes", "true", "on")
_FALSE = ("no", "false", "off")


class SysctlError(Exception):
    """A setting that cannot be applied (an unknown key, a value the kernel refuses)."""


def normalize_value(value):
    """The value as sysctl writes it: booleans (and yes/no, true/false, on/off) as 1 / 0."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if value is None:
        return ""
    text = str(value).strip()
    if text.lower() in _TRUE:
        return "1"
    if text.lower() in _FALSE:
        return "0"
    return text


def same_value(a, b):
    """Whether two values are the same to sysctl (field by field, any whitespace)."""
    if a is None or b is None:
        return False
    return str(a).split() == str(b).split()


def proc_path(key, root=None):
    """The /proc/sys file of a key (sysctl(8)'s dotted or slashed form)."""
    key = key.strip()
    first = next((c for c in key if c in "./"), None)
    rel = key.strip("/") if first == "/" else "".join("/" if c == "." else "." if c == "/" else c for c in key)
    return os.path.join(root or PROC_SYS, rel)


def parse_lines(text):
    """[(key or None, value or None, line)] of a sysctl.d file: comments (# ;) and blank lines have no key."""
    out = []
    for line in (text or "").splitlines():
        body = line.strip()
        if not body or body.startswith(("#", ";")) or "=" not in body:
            out.append((None, None, line))
            continue
        key, value = body.split("=", 1)
        # a leading '-' tells systemd-sysctl to ignore a missing key: the key is the rest
        out.append((key.strip().lstrip("-").strip(), value.strip(), line))
    return out


def file_values(text):
    """{key: value} the file sets (the last line of a key wins, as at boot)."""
    return {k: v for k, v, _line in parse_lines(text) if k is not None}


def render_file(text, settings):
    """The file's text with ``settings`` ({key: value as text}) in it; other lines unchanged."""
    seen = set()
    lines = []
    for key, value, line in parse_lines(text):
        if key is None or key not in settings:
            lines.append(line)
            continue
        if key in seen:
            continue  # a later line of a key we set would override it at boot
        seen.add(key)
        lines.append(line if value == settings[key] else f"{key}={settings[key]}")
    lines.extend(f"{key}={value}" for key, value in settings.items() if key not in seen)
    return "\n".join(lines) + "\n" if lines else ""


class SysctlSettings:
    """The plan for one file and the running kernel: read both once, then apply what differs."""

    def __init__(self, settings, sysctl_file, proc_root=None):
        self.settings = {str(k).strip(): normalize_value(v) for k, v in (settings or {}).items()}
        self.path = sysctl_file
        self.proc_root = proc_root or PROC_SYS
        self.exists = os.path.isfile(sysctl_file)
        self.before_text = self._read_file() if self.exists else ""
        self.after_text = render_file(self.before_text, self.settings)
        self.live = {key: self._read_live(key) for key in self.settings}

    def _read_file(self):
        try:
            with open(self.path, encoding="utf-8") as handle:
                return handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise SysctlError(f"cannot read {self.path}: {exc}") from exc

    def _read_live(self, key):
        try:
            with open(proc_path(key, self.proc_root), encoding="utf-8") as handle:
                return handle.read().strip()
        except OSError:
            return None

    @property
    def file_changed(self):
        return self.after_text != self.before_text

    def unknown_keys(self):
        """Keys the running kernel does not have."""
        return [k for k, v in self.live.items() if v is None]

    def live_changes(self):
        """Keys whose running value differs from the one asked for."""
        return [k for k, v in self.live.items() if v is not None and not same_value(v, self.settings[k])]

    def changed_keys(self):
        """Keys whose file line or running value differs from the one asked for (or unknown to the kernel)."""
        before = file_values(self.before_text)
        live = set(self.live_changes()) | set(self.unknown_keys())
        return [k for k in self.settings if before.get(k) != self.settings[k] or k in live]

    def diff(self):
        live_before = "".join(f"{k} = {' '.join(str(v).split()) if v is not None else '(no such key)'}\n"
                              for k, v in self.live.items())
        live_after = "".join(f"{k} = {' '.join(v.split())}\n" for k, v in self.settings.items())
        return [
            {"before_header": self.path, "after_header": self.path,
             "before": self.before_text, "after": self.after_text},
            {"before_header": "running kernel (sysctl -n)", "after_header": "running kernel (sysctl -n)",
             "before": live_before, "after": live_after},
        ]

    def write_file(self, atomic_move):
        directory = os.path.dirname(self.path) or "."
        os.makedirs(directory, mode=0o755, exist_ok=True)
        mode = (os.stat(self.path).st_mode & 0o7777) if self.exists else FILE_MODE
        fd, tmp = tempfile.mkstemp(prefix=".ascendops-sysctl-", suffix=".conf", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(self.after_text)
        os.chmod(tmp, mode)
        atomic_move(tmp, self.path)

    def _write_live(self, key, value):
        with open(proc_path(key, self.proc_root), "w", encoding="utf-8") as handle:
            handle.write(value)

    def apply_live(self):
        for key in self.live_changes():
            try:
                self._write_live(key, self.settings[key])
            except OSError as exc:
                raise SysctlError(f"setting {key}={self.settings[key]} in the running kernel failed: "
                                  f"{exc.strerror or exc}") from exc


class SysctlSettingsTask:
    """The sysctl_settings module's work: plan, report (check mode, diff), write the file, set the kernel."""

    def __init__(self, module, proc_root=None):
        self.module = module
        self.proc_root = proc_root

    def run(self):
        module = self.module
        p = module.params
        try:
            plan = SysctlSettings(p["settings"], p["sysctl_file"], self.proc_root)
        except SysctlError as exc:
            module.fail_json(msg=f"{exc} (sysctl_settings changed nothing)", path=p["sysctl_file"])
        changed_keys = plan.changed_keys()
        unknown = plan.unknown_keys()
        result = dict(changed=bool(changed_keys) or plan.file_changed, path=plan.path, changed_keys=changed_keys,
                      file_changed=plan.file_changed, live=dict(plan.live),
                      settings=plan.settings)
        if module._diff:
            result["diff"] = plan.diff()
        if unknown:
            msg = (f"the running kernel has no {', '.join(unknown)} (no "
                   f"{', '.join(proc_path(k, '/proc/sys') for k in unknown)}): check the key names, or load "
                   "the kernel module that provides them")
            if not module.check_mode:
                module.fail_json(msg=msg + " (sysctl_settings changed nothing)", **result)
            module.warn(msg)
        if module.check_mode or not result["changed"]:
            module.exit_json(**result)
        try:
            if plan.file_changed:
                plan.write_file(module.atomic_move)
            plan.apply_live()
        except SysctlError as exc:
            module.fail_json(msg=str(exc), **result)
        module.exit_json(**result)
