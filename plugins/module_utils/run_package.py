# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vendor ``.run`` packages (makeself archives): their file names, the output of their
``--check`` and the verdict on an installer run.

File names (``<arch>``: ``aarch64``, ``x86_64``; also spelt ``x86-64``, ``arm64``, ``amd64``):

* driver: ``Ascend-hdk-<chip>-npu-driver_<ver>_linux-<arch>.run`` (``910b``, ``310p``/``310P``),
  Atlas A3: ``Atlas-A3-hdk-npu-driver_<ver>_linux-<arch>.run``
* firmware: ``Ascend-hdk-<chip>-npu-firmware_<ver>.run``, ``Atlas-A3-hdk-npu-firmware_<ver>.run``
* ``Ascend-cann-toolkit_<ver>_linux-<arch>.run``, ``Ascend-cann-kernels-<chip>_<ver>_linux[-<arch>].run``,
  ``Ascend-docker-runtime_<ver>_linux-<arch>.run``

Installer verdict: the exit code decides, as in the vendor's own automation. Driver: rc 1 or an
``[ERROR]`` line is a failure, anything else a success; firmware: rc 0 and 2 are success; other
packages: rc 0 without ``[ERROR]`` line. A success line is not required (``--quiet`` runs print
little or nothing). An unanswered ``[y/n]`` question, or an exit code of the shell itself (126 and
up, a signal), is always a failure. The wording only adds signal: a reboot hint.
"""

from __future__ import annotations

import os
import re
from collections import namedtuple

PACKAGE_KINDS = ("driver", "firmware", "toolkit", "kernels", "docker_runtime")

PackageName = namedtuple("PackageName", ["kind", "version", "arch", "model"])
PackageName.__new__.__defaults__ = (None,)

_VER = r"(?P<version>\d[0-9A-Za-z.\-]*?)"
_ARCH = r"(?P<arch>aarch64|x86_64|x86-64|arm64|amd64)"
_HDK = r"(?:Ascend-hdk-(?P<model>[0-9a-z]+)-|(?P<a3>Atlas-A3)-hdk-)"
_PACKAGE_PATTERNS = [
    ("driver", re.compile(r"^" + _HDK + r"npu-driver_" + _VER + r"_linux-" + _ARCH + r"\.run$", re.I)),
    ("firmware", re.compile(r"^" + _HDK + r"npu-firmware_" + _VER + r"\.run$", re.I)),
    ("toolkit", re.compile(r"^Ascend-cann-toolkit_" + _VER + r"_linux-" + _ARCH + r"\.run$", re.I)),
    ("kernels", re.compile(r"^Ascend-cann-kernels-(?P<model>[0-9a-z]+)_" + _VER + r"_linux(?:-" + _ARCH + r")?\.run$",
                           re.I)),
    ("docker_runtime", re.compile(r"^Ascend-docker-runtime_" + _VER + r"_linux-" + _ARCH + r"\.run$", re.I)),
]
_ARCH_ALIASES = {"arm64": "aarch64", "amd64": "x86_64", "x86-64": "x86_64"}


def parse_package_filename(name):
    """Map a vendor ``.run`` file name (or path) to ``PackageName(kind, version, arch, model)``.

    ``arch`` is None where the name carries none (firmware; kernels without an arch); ``model``
    is the chip or server model in the name, lower case (``910b``, ``310p``, ``a3``), else None.
    Raises ValueError for other names.
    """
    base = os.path.basename(name or "")
    for kind, pattern in _PACKAGE_PATTERNS:
        m = pattern.match(base)
        if m:
            groups = m.groupdict()
            arch = groups.get("arch")
            if arch:
                arch = _ARCH_ALIASES.get(arch.lower(), arch.lower())
            model = "a3" if groups.get("a3") else (groups.get("model") or "").lower() or None
            return PackageName(kind, m.group("version"), arch, model)
    raise ValueError(
        f"{base!r} is not a known Ascend package file name (expected e.g. "
        "Ascend-hdk-910b-npu-driver_<ver>_linux-<arch>.run, Ascend-hdk-910b-npu-firmware_<ver>.run, "
        "Atlas-A3-hdk-npu-driver_<ver>_linux-<arch>.run, Atlas-A3-hdk-npu-firmware_<ver>.run, "
        "Ascend-cann-toolkit_<ver>_linux-<arch>.run, Ascend-cann-kernels-910b_<ver>_linux[-<arch>].run, "
        "Ascend-docker-runtime_<ver>_linux-<arch>.run)")


# --------------------------------------------------------------------------------------------
# installer output
# --------------------------------------------------------------------------------------------

DEFAULT_INSTALL_LOG = "/var/log/ascend_seclog/ascend_install.log"

_SUCCESS_RES = {
    "driver": re.compile(r"Driver package (?:installed|upgraded) successfully|Driver package install success",
                         re.IGNORECASE),
    "firmware": re.compile(r"Firmware package (?:installed|upgraded) successfully"
                           r"|firmware of \[\d+\] chips? (?:are|is) successfully upgraded", re.IGNORECASE),
}
_GENERIC_SUCCESS_RE = re.compile(
    r"\b(?:install(?:ed|ation)?|upgrade(?:d)?|uninstall(?:ed)?)\s+(?:success(?:fully)?\b|succeed(?:ed)?\b)"
    r"|\b(?:installed|upgraded)\s+successfully", re.IGNORECASE)
# "Reboot needed for installation/upgrade to take effect!", "Reboot now or after driver installation ..."
_REBOOT_RE = re.compile(r"\breboot\b.*\b(?:needed|required|now|take effect)\b|\b(?:need|needs|required) to reboot\b",
                        re.IGNORECASE)
# "Do not power off or reboot the system during the installation" is a warning, not a request
_NEGATED_RE = re.compile(r"\b(?:do not|don't|never)\b", re.IGNORECASE)
_IMMEDIATE_RE = re.compile(r"takes? effect immediately", re.IGNORECASE)
_ERROR_RE = re.compile(r"\[ERROR\]", re.IGNORECASE)
_LOG_PATH_RE = re.compile(r"((?:/|\bvar/)[\w./-]*?\.log)\b")
PROMPT_REGEX = r"\[[yY]/[nN]\]|\([yY]/[nN]\)|\[yes/no\]"
_PROMPT_RE = re.compile(PROMPT_REGEX)
# rc the shell itself gives (cannot execute, not found, killed) or run_command's 257 for a prompt
_SHELL_RC = 126

# exit codes that mean success, by kind (the firmware installer's 2 is a success)
SUCCESS_RCS = {"firmware": (0, 2)}
# exit codes that mean failure where any other code is a success
FAILURE_RCS = {"driver": (1,)}


def _installer_log_path(text):
    m = _LOG_PATH_RE.search(text or "")
    if not m:
        return None
    path = m.group(1).rstrip(".")
    if not path.startswith("/"):
        path = "/" + path
    return path


def _error_text(line):
    """An ``[ERROR]`` line as quoted: whole (``[Driver] [time] [ERROR]...``), but without a prompt
    that the installer left unanswered on the same line."""
    m = _ERROR_RE.search(line)
    if _PROMPT_RE.search(line[:m.start()]):
        return line[m.start():].strip()
    return line.strip()


def _rc_ok(kind, rc):
    if rc is None or rc < 0 or rc >= _SHELL_RC:
        return False
    if kind in FAILURE_RCS:
        return rc not in FAILURE_RCS[kind]
    return rc in SUCCESS_RCS.get(kind, (0,))


def classify_installer_output(kind, rc, stdout, stderr=""):
    """The verdict on one run of a vendor ``.run`` installer (see the module docstring).

    Returns a dict:

    * ``success`` (bool); ``reason``: why not (None on success)
    * ``success_line``: the installer's success line when it printed one (extra signal only)
    * ``error``: the first line with ``[ERROR]`` (or None); ``error_lines``: all of them
    * ``log_path``: the log file the output names (``var/log/...`` made absolute), else None
    * ``reboot_hint``: the output asks for a reboot (``Reboot needed ...``, ``Reboot now or after
      driver installation ...``) and does not say the change ``takes effect immediately``
    * ``immediate``: the output says the new version takes effect immediately
    * ``prompt``: the installer stopped at an interactive ``[y/n]`` question (the line), else None
    """
    text = "\n".join(t for t in (stdout or "", stderr or "") if t)
    lines = [ln.rstrip() for ln in text.splitlines()]
    error_lines = [_error_text(ln) for ln in lines if _ERROR_RE.search(ln)]
    success_re = _SUCCESS_RES.get(kind, _GENERIC_SUCCESS_RE)
    success_line = next((ln.strip() for ln in lines if success_re.search(ln)), None)
    prompt = None
    for ln in lines:
        m = _PROMPT_RE.search(ln)
        if m:
            prompt = ln[:m.end()].strip()
    reason = None
    if prompt or rc == 257:
        reason = "prompt"
    elif not _rc_ok(kind, rc):
        reason = "rc"
    elif error_lines and kind != "firmware":
        reason = "error"
    clean = [ln for ln in lines if not _ERROR_RE.search(ln)]
    immediate = any(_IMMEDIATE_RE.search(ln) for ln in clean)
    reboot = reason is None and any(_REBOOT_RE.search(ln) and not _IMMEDIATE_RE.search(ln)
                                    and not _NEGATED_RE.search(ln) for ln in clean)
    log_path = None
    for ln in error_lines + lines:
        log_path = _installer_log_path(ln)
        if log_path:
            break
    return {
        "success": reason is None,
        "reason": reason,
        "success_line": success_line,
        "error": error_lines[0] if error_lines else None,
        "error_lines": error_lines,
        "log_path": log_path,
        "reboot_hint": bool(reboot),
        "immediate": bool(immediate and reason is None),
        "prompt": prompt,
    }


def check_output_ok(rc, stdout, stderr=""):
    """True when a makeself ``--check`` run reports an intact archive."""
    text = f"{stdout or ''}\n{stderr or ''}"
    low = text.lower()
    if rc != 0:
        return False
    if "error in" in low or "corrupt" in low:
        return False
    return not _ERROR_RE.search(text)
