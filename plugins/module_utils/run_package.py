# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vendor ``.run`` packages (makeself archives): their file names, the output of their
``--check`` and the verdict on an installer run.

File names: one table, PACKAGE_NAME_TABLE, read by parse_package_filename() and filled by
package_filename() (``<arch>``: ``aarch64``, ``x86_64``; also spelt ``x86-64``, ``arm64``, ``amd64``).

Installer flags: INSTALLER_FLAGS says per kind what its installer accepts and what every run
gets; installer_args() builds a command line from it and refuses any other flag.

Installer verdict: the exit code decides, as in the vendor's own automation. Driver: rc 1 or an
``[ERROR]`` line is a failure, anything else a success; firmware: rc 0 and 2 are success; other
packages: rc 0 without ``[ERROR]`` line. A success line is not required (``--quiet`` runs print
little or nothing). An unanswered ``[y/n]`` question (nothing after it on its line, or end of input), or an
exit code of the shell itself (126 and up, a signal), is always a failure; a question the log shows
answered (``... EULA? [y/N]y``, as newer installers log it) is not. The wording only adds signal: a reboot hint.
"""

from __future__ import annotations

import os
import re
from collections import namedtuple

PACKAGE_KINDS = ("driver", "firmware", "toolkit", "kernels", "docker_runtime")

PackageName = namedtuple("PackageName", ["kind", "version", "arch", "model"])
PackageName.__new__.__defaults__ = (None,)

# One table of the published file names, read in both directions: package_filename() fills a
# template, parse_package_filename() matches the same template. ``{model}`` is the chip or server
# model as published (``910b``, ``310P``, ``A3``), ``{version}`` the package version, ``{arch}``
# the architecture. (kind, layout, template); a layout names one spelling of a kind.
PACKAGE_NAME_TABLE = (
    ("driver", "hdk", "Ascend-hdk-{model}-npu-driver_{version}_linux-{arch}.run"),
    ("driver", "a3", "Atlas-A3-hdk-npu-driver_{version}_linux-{arch}.run"),
    ("firmware", "hdk", "Ascend-hdk-{model}-npu-firmware_{version}.run"),
    ("firmware", "a3", "Atlas-A3-hdk-npu-firmware_{version}.run"),
    ("toolkit", "cann", "Ascend-cann-toolkit_{version}_linux-{arch}.run"),
    # CANN up to 8.0.RCx: arch-independent kernels
    ("kernels", "noarch", "Ascend-cann-kernels-{model}_{version}_linux.run"),
    ("kernels", "cann", "Ascend-cann-kernels-{model}_{version}_linux-{arch}.run"),
    # Atlas A3 before CANN 8.5
    ("kernels", "a3", "Atlas-A3-cann-kernels_{version}_linux-{arch}.run"),
    # CANN 8.5 and later: the operator package (Ascend-cann-910b-ops, Ascend-cann-A3-ops)
    ("kernels", "ops", "Ascend-cann-{model}-ops_{version}_linux-{arch}.run"),
    ("docker_runtime", "runtime", "Ascend-docker-runtime_{version}_linux-{arch}.run"),
    # Older releases, read (never made): HDK names without "npu-" (Ascend-hdk-910b-firmware_7.5.0.1.129.run) and the
    # server-named packages of the Atlas 800 training servers before the HDK naming (A800-9010-npu-driver_21.0.2_...,
    # A800-9000-npu-firmware_1.76.22.3.220.run); their model reads as a800-9010 / a800-9000.
    ("driver", "hdk-short", "Ascend-hdk-{model}-driver_{version}_linux-{arch}.run"),
    ("firmware", "hdk-short", "Ascend-hdk-{model}-firmware_{version}.run"),
    ("driver", "a800", "A800-{model}-npu-driver_{version}_linux-{arch}.run"),
    ("firmware", "a800", "A800-{model}-npu-firmware_{version}.run"),
)
# the model a fixed-name layout stands for
_LAYOUT_MODEL = {"a3": "a3"}

_FIELD_RES = {
    "model": r"(?P<model>[0-9A-Za-z]+)",
    "version": r"(?P<version>\d[0-9A-Za-z.\-]*?)",
    "arch": r"(?P<arch>aarch64|x86_64|x86-64|arm64|amd64)",
}
_ARCH_ALIASES = {"arm64": "aarch64", "amd64": "x86_64", "x86-64": "x86_64"}


def _template_re(template):
    parts = re.split(r"(\{\w+\})", template)
    return re.compile("^" + "".join(_FIELD_RES[p[1:-1]] if p.startswith("{") else re.escape(p)
                                    for p in parts) + "$", re.I)


_PACKAGE_PATTERNS = [(kind, layout, _template_re(template)) for kind, layout, template in PACKAGE_NAME_TABLE]


def package_filename(kind, layout, version, arch=None, model=None):
    """The published file name of one package (the inverse of parse_package_filename)."""
    for k, lay, template in PACKAGE_NAME_TABLE:
        if (k, lay) == (kind, layout):
            return template.format(version=version, arch=arch, model=model)
    raise ValueError(f"no published file name for a {kind} package in the {layout!r} layout")


def parse_package_filename(name):
    """Map a vendor ``.run`` file name (or path) to ``PackageName(kind, version, arch, model)``.

    ``arch`` is None where the name carries none (firmware; kernels without an arch); ``model``
    is the chip or server model in the name, lower case (``910b``, ``310p``, ``a3``), else None.
    Raises ValueError for other names.
    """
    base = os.path.basename(name or "")
    for kind, layout, pattern in _PACKAGE_PATTERNS:
        m = pattern.match(base)
        if m:
            groups = m.groupdict()
            arch = groups.get("arch")
            if arch:
                arch = _ARCH_ALIASES.get(arch.lower(), arch.lower())
            model = _LAYOUT_MODEL.get(layout) or (groups.get("model") or "").lower() or None
            if layout == "a800" and model:
                model = f"a800-{model}"
            return PackageName(kind, m.group("version"), arch, model)
    raise ValueError(
        f"{base!r} is not a known Ascend package file name (the layouts read: "
        + ", ".join(t for _k, _l, t in PACKAGE_NAME_TABLE) + ")")


# --------------------------------------------------------------------------------------------
# installer flags, per package kind
# --------------------------------------------------------------------------------------------

# The options every makeself header of the HDK and CANN packages takes (makeself's own).
_MAKESELF_FLAGS = ("--quiet", "--nox11", "--check", "--info", "--list", "--tar", "--noexec", "--extract",
                   "--keep", "--target", "--noprogress", "--nochown", "--nodiskspace")
_USER_FLAGS = ("--install-username", "--install-usergroup", "--install-for-all")

InstallerFlags = namedtuple("InstallerFlags", ["fresh", "upgrade", "always", "accepted"])

# What each kind's installer accepts (its header and its own help), and what every run gets.
# The Ascend Docker Runtime's header is the vendor's own: only --quiet --check --info --list --tar
# --noexec --extract of makeself's options, plus its help's --install --install-path= --install-scene=
# --uninstall --upgrade (and --install-type= --ce= of older helps); --nox11 is a usage error (rc 1).
# The firmware installer takes no user flags (only --full / --upgrade and the path).
INSTALLER_FLAGS = {
    "driver": InstallerFlags("--full", "--upgrade", ("--quiet", "--nox11"),
                             _MAKESELF_FLAGS + ("--full", "--upgrade", "--uninstall", "--install-path")
                             + _USER_FLAGS),
    "firmware": InstallerFlags("--full", "--upgrade", ("--quiet", "--nox11"),
                               _MAKESELF_FLAGS + ("--full", "--upgrade", "--install-path")),
    "toolkit": InstallerFlags("--install", "--upgrade", ("--quiet", "--nox11"),
                              _MAKESELF_FLAGS + ("--install", "--upgrade", "--uninstall", "--install-path")
                              + _USER_FLAGS),
    "kernels": InstallerFlags("--install", "--upgrade", ("--quiet", "--nox11"),
                              _MAKESELF_FLAGS + ("--install", "--upgrade", "--uninstall", "--install-path")
                              + _USER_FLAGS),
    "docker_runtime": InstallerFlags("--install", "--upgrade", ("--quiet",),
                                     ("--quiet", "--check", "--info", "--list", "--tar", "--noexec", "--extract",
                                      "--install", "--install-path", "--install-scene", "--uninstall",
                                      "--upgrade", "--install-type", "--ce", "--config-file-path")),
}


# The Ascend Docker Runtime's own options changed between releases (its run_main.sh: Ascend/ascend-docker-runtime
# up to 5.x, then Ascend/mind-cluster component/ascend-docker-runtime; each test quotes that version's usage text):
# - up to 6.0.0-RC2 (5.x): --install --install-path= --uninstall --upgrade --install-type= --ce= --version, the
#   makeself names "meaningless" and discarded; anything else "failed, Unsupported parameters: <arg>", rc 1;
# - 6.0.0-RC3 (package version 6.0.RC3) on: --install-scene=<scene> (6.0.RC3: docker or containerd; 7.x and later
#   also isula) and --config-file-path; anything else "failed, unsupported parameters: <arg>", rc 1;
# - 26.1.0 on: --install and --upgrade first ask "Do you accept the EULA to install Ascend-docker-runtime?[Y/N]" and
#   read the answer from stdin, asking again on anything but Y/N (end of input included: with stdin at /dev/null
#   it never ends); Y logs "[INFO] user accepted EULA", N "[INFO] install cancelled, user declined EULA" and exit 0.
RUNTIME_SCENE_FROM = "6.0.RC3"
RUNTIME_SCENES = (("6.0.RC3", ("docker", "containerd")), ("7.0.RC1", ("docker", "containerd", "isula")))
RUNTIME_EULA_FROM = "26.1.0"
# (kind, the first version that asks): installers that ask the user to accept an EULA before installing.
EULA_FROM = {"docker_runtime": RUNTIME_EULA_FROM}
EULA_ANSWER = "Y\n"
_EULA_ACCEPTED_RE = re.compile(r"user accepted EULA", re.IGNORECASE)
_EULA_DECLINED_RE = re.compile(r"user declined EULA", re.IGNORECASE)


def _version_at_least(version, first):
    from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_version import compare

    try:
        return compare(version, first) >= 0
    except ValueError:
        return None


def asks_eula(kind, version):
    """True when the ``kind`` installer of ``version`` asks to accept an EULA (on install and upgrade); None
    when the version cannot be ordered (treated as asking by the callers: refuse rather than hang)."""
    first = EULA_FROM.get(kind)
    if first is None:
        return False
    return _version_at_least(version, first) if version else None


# The makeself header's own options (the vendor's header of the runtime package), whatever the version.
RUNTIME_HEADER_OPTIONS = ("--quiet", "--check", "--info", "--list", "--tar", "--noexec", "--extract")


def runtime_options(version):
    """The options the Ascend Docker Runtime installer of ``version`` takes (its run_main.sh, plus the header's);
    the kind's whole set when the version is unknown."""
    if not version:
        return INSTALLER_FLAGS["docker_runtime"].accepted
    own = ["--install", "--install-path", "--uninstall", "--upgrade", "--install-type", "--version"]
    if runtime_scenes(version):
        own += ["--install-scene", "--config-file-path"]
    if not _version_at_least(version, RUNTIME_EULA_FROM):
        own.append("--ce")  # iSula before 26.1 (then --install-scene=isula)
    return RUNTIME_HEADER_OPTIONS + tuple(own)


def runtime_scenes(version):
    """The ``--install-scene`` values the Ascend Docker Runtime ``version`` takes; () where it has no such option
    (before 6.0.RC3: docker only, iSula through ``--ce=isula``)."""
    scenes = ()
    for first, names in RUNTIME_SCENES:
        if version and _version_at_least(version, first):
            scenes = names
    return scenes


class InstallerFlagError(ValueError):
    """An argument the kind's installer does not accept."""


def accepts(kind, flag):
    """Whether the ``kind`` installer accepts ``flag`` (``--name`` or ``--name=value``)."""
    return flag.split("=", 1)[0] in INSTALLER_FLAGS[kind].accepted


def refused_flags(kind, args):
    """The arguments of ``args`` that the ``kind`` installer would reject."""
    return [a for a in args if not accepts(kind, a)]


def installer_args(kind, action, install_path=None, username=None, usergroup=None, for_all=False,
                   scene=None, extra_args=(), version=None):
    """The installer's arguments for ``action`` (``install``: a fresh install; anything else: an
    upgrade), only from the flags the kind accepts. ``install_path`` None means the vendor default.
    User flags and ``--install-for-all`` go to fresh installs only (the installers refuse them with
    ``--upgrade``); ``for_all`` is dropped for a kind that takes no such flag. For the docker runtime,
    ``version`` decides whether ``--install-scene`` exists (6.0.RC3 on): before, ``scene=docker`` is its only
    scene and no flag is passed, another scene is refused. Raises InstallerFlagError naming the flag when the
    kind's installer would reject one."""
    if kind == "docker_runtime" and scene and version:
        scenes = runtime_scenes(version)
        if not scenes:
            if scene != "docker":
                raise InstallerFlagError(
                    f"the docker_runtime installer {version} has no --install-scene (it came with "
                    f"{RUNTIME_SCENE_FROM}): it installs for docker only (iSula: --ce=isula in extra_args)")
            scene = None
        elif scene not in scenes:
            raise InstallerFlagError(f"the docker_runtime installer {version} takes --install-scene="
                                     f"{'|'.join(scenes)}, not {scene}")
    flags = INSTALLER_FLAGS[kind]
    args = [flags.fresh if action == "install" else flags.upgrade]
    if install_path:
        args.append(f"--install-path={install_path}")
    if action == "install":
        if username:
            args += [f"--install-username={username}", f"--install-usergroup={usergroup}"]
        if for_all and accepts(kind, "--install-for-all"):
            args.append("--install-for-all")
    if scene:
        args.append(f"--install-scene={scene}")
    args += list(extra_args or ())
    args += list(flags.always)
    bad = refused_flags(kind, args)
    if not bad and kind == "docker_runtime" and version:
        options = runtime_options(version)
        bad = [a for a in args if a.split("=", 1)[0] not in options]
        if bad:
            raise InstallerFlagError(f"the docker_runtime installer {version} does not accept {', '.join(bad)} "
                                     f"(it takes {', '.join(options)})")
    if bad:
        raise InstallerFlagError(
            f"the {kind} installer does not accept {', '.join(bad)} (it takes "
            + ", ".join(flags.accepted) + ")")
    return args


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
_PROMPT = r"\[[yY]/[nN]\]|\([yY]/[nN]\)|\[yes/no\]"
_PROMPT_RE = re.compile(_PROMPT)
# For run_command (compiled with re.MULTILINE): a question with no answer after it on its line
PROMPT_REGEX = r"(?:" + _PROMPT + r")[ \t]*$"
_ANSWER_RE = re.compile(r"^\s*(?:y|yes|n|no)\b", re.IGNORECASE)
_EOF_RE = re.compile(r"\bEOF\b|end of (?:input|file)", re.IGNORECASE)
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


def _prompts(lines):
    """(the last unanswered question or None, the answered ones). A question is answered when its
    line carries the answer after it (``[y/N]y``); one with nothing after it, or followed by an
    end-of-input message, was left unanswered."""
    unanswered, answered = None, []
    for i, ln in enumerate(lines):
        for m in _PROMPT_RE.finditer(ln):
            rest = ln[m.end():]
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            # An answer piped to stdin is not echoed: the runtime's EULA question is followed by the line
            # "[INFO] user accepted EULA" (or "... declined EULA", a refusal judged by the caller).
            after = lines[i + 1:i + 3]
            judged = [x for x in after if _EULA_ACCEPTED_RE.search(x) or _EULA_DECLINED_RE.search(x)]
            eula = "EULA" in ln.upper() and bool(judged)
            if eula or (_ANSWER_RE.match(rest) and not _EOF_RE.search(rest) and not _EOF_RE.search(nxt)):
                answered.append(ln.strip())
            else:
                unanswered = ln[:m.end()].strip()
    return unanswered, answered


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
    * ``answered_prompts``: questions the output shows answered (``[y/N]y``, or the runtime's EULA question
      followed by ``user accepted EULA``): not a failure; ``reason`` ``eula_declined`` when it says declined
    """
    text = "\n".join(t for t in (stdout or "", stderr or "") if t)
    lines = [ln.rstrip() for ln in text.splitlines()]
    error_lines = [_error_text(ln) for ln in lines if _ERROR_RE.search(ln)]
    success_re = _SUCCESS_RES.get(kind, _GENERIC_SUCCESS_RE)
    success_line = next((ln.strip() for ln in lines if success_re.search(ln)), None)
    prompt, answered = _prompts(lines)
    reason = None
    if any(_EULA_DECLINED_RE.search(ln) for ln in lines):
        reason = "eula_declined"  # the runtime exits 0 after a declined EULA, having installed nothing
    elif prompt or rc == 257:
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
        "answered_prompts": answered,
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
