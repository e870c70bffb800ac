# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Settings that would make the collection touch what it does not own, found before any change.

Three rules, each returning messages that name the variable (the caller adds the host and the fix
where it knows more):

- ``control_char_problems``: a string that reaches a systemd unit, an environment file or a command
  line must not hold a control character. A newline in ``launch_image`` adds a directive to the
  unit (``ExecStartPost=...``), one in an ``extra_env`` value a variable to the environment file.
  Refused: C0 controls (U+0000..U+001F) except tab, DEL (U+007F), C1 controls (U+0080..U+009F) and
  the Unicode line and paragraph separators (U+2028, U+2029), which line splitters also break on.
  The value is never shown (it may be a secret): only the variable, the character and its position.
- ``path_problems``: a directory the collection writes, owns or mounts (or a file it writes) must be
  an absolute path, not ``/``, without ``..``, and not a system directory itself (``/etc``, ``/var``,
  ``/var/lib``, ``/home``, ``/tmp``...: the collection would chown, chmod or mount over it). A
  directory below one (``/var/lib/ascendops``, ``/home/ai/ckpt``, ``/mnt/shared``) is fine.
- ``volume_problems``: a host directory bind-mounted into the job's container through
  ``launch_container_extra_args`` (job_container.extra_args_problems) follows the path rule, is not
  the kernel's or the container engine's state, and is read-only where it is the system's software
  or configuration.
"""

from __future__ import annotations

import re

# Controls a unit file, an environment file or an argv must not carry (tab is whitespace there: systemd
# quotes it, an env file keeps it in the value).
_CONTROL_RE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_NAMES = {"\n": "a newline", "\r": "a carriage return", "\x00": "a NUL", "\x1b": "an escape",
                  "\x7f": "a DEL", "\u2028": "a line separator (U+2028)", "\u2029": "a paragraph separator (U+2029)"}

# Directories of the system (not to be chowned, chmodded, mounted over or given to a container): each
# refused itself; what lies below is the site's to choose (/var/lib/ascendops, /mnt/shared, /home/ai/x).
SYSTEM_DIRS = frozenset((
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/media", "/mnt", "/opt", "/proc", "/root", "/run", "/sbin",
    "/srv", "/sys", "/tmp", "/usr", "/var",
    "/usr/bin", "/usr/include", "/usr/lib", "/usr/libexec", "/usr/local", "/usr/sbin", "/usr/share", "/usr/src",
    "/usr/local/bin", "/usr/local/etc", "/usr/local/include", "/usr/local/lib", "/usr/local/sbin",
    "/usr/local/share", "/usr/local/src",
    "/var/cache", "/var/lib", "/var/local", "/var/lock", "/var/log", "/var/mail", "/var/opt", "/var/run",
    "/var/spool", "/var/tmp",
))
# /lib, /lib32, /lib64, /libx32, /libexec (and /usr's).
_LIB_RE = re.compile(r"^(/usr)?/lib(32|64|x32|exec)?$")

# Bind-mount sources never given to the job's container: the kernel's and the devices' trees, the runtime
# state (engine sockets under /run), the boot files, root's home and the engines' own storage.
VOLUME_REFUSED_TREES = ("/proc", "/sys", "/dev", "/boot", "/run", "/var/run", "/root", "/var/lib/docker",
                        "/var/lib/containers", "/var/lib/containerd", "/etc/docker", "/etc/containers")
# Bind-mount sources given read-only only: the system's software and configuration.
VOLUME_READ_ONLY_TREES = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")


def control_char(text):
    """(position, description) of the first control character in ``text``, or None."""
    found = _CONTROL_RE.search(str(text))
    if not found:
        return None
    char = found.group()
    return found.start(), _CONTROL_NAMES.get(char, f"a control character (U+{ord(char):04X})")


def control_char_problems(name, value, skip=()):
    """Messages for every string in ``value`` (strings, and the keys and values of mappings and lists,
    at any depth) that holds a control character, each naming where: ``name``, ``name.key``,
    ``name[2]``. ``skip``: dotted names left out with what lies below them (text that reaches no unit,
    environment file or command line, e.g. launch_job.config: written to a YAML file)."""
    skip = tuple(skip or ())
    out = []

    def walk(where, item):
        if where in skip:
            return
        if isinstance(item, dict):
            for key, sub in item.items():
                found = control_char(key) if isinstance(key, str) else None
                if found:
                    out.append(f"{where} has a key with {found[1]} at character {found[0] + 1}")
                    continue
                walk(f"{where}.{key}", sub)
        elif isinstance(item, (list, tuple)):
            for i, sub in enumerate(item):
                walk(f"{where}[{i}]", sub)
        elif isinstance(item, str):
            found = control_char(item)
            if found:
                out.append(f"{where} holds {found[1]} at character {found[0] + 1}")

    walk(str(name), value)
    return out


def settings_control_char_problems(settings, skip=()):
    """control_char_problems over {name: value}, in order."""
    out = []
    for name, value in (settings or {}).items():
        out.extend(control_char_problems(name, value, skip))
    return out


def normalize(path):
    """``path`` with ``//`` and ``.`` components and a trailing ``/`` taken out (``..`` kept)."""
    parts = [p for p in str(path).split("/") if p not in ("", ".")]
    return "/" + "/".join(parts) if str(path).startswith("/") else "/".join(parts)


def is_system_dir(path):
    """Whether the absolute ``path`` (normalized) is a system directory itself."""
    path = normalize(path)
    return path in SYSTEM_DIRS or bool(_LIB_RE.match(path))


def _under(path, tree):
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def path_problems(name, value, allow_empty=False):
    """Messages for a path setting (a directory the collection writes, owns or mounts, or a file it writes)
    that is not an absolute path, is ``/``, has a ``..`` component or is a system directory itself.
    ``allow_empty``: an empty value means "none" for this setting."""
    if value is None or (isinstance(value, str) and value.strip() == ""):
        return [] if allow_empty else [f"{name} must be an absolute path, is empty"]
    if not isinstance(value, str):
        return [f"{name} must be an absolute path, is {type(value).__name__} {value!r}"]
    found = control_char(value)
    if found:
        return [f"{name} holds {found[1]} at character {found[0] + 1}"]
    if not value.startswith("/"):
        return [f"{name} must be an absolute path, is {value!r}"]
    if ".." in value.split("/"):
        return [f"{name} must not have '..' components, is {value!r}: write the path it means"]
    path = normalize(value)
    if path == "/":
        return [f"{name} is / : name a directory of its own (e.g. /var/lib/ascendops/...)"]
    if is_system_dir(path):
        return [f"{name} is the system directory {path} itself, which the collection would own, change or mount "
                f"over: name a directory below it that is the collection's (e.g. {path.rstrip('/')}/ascendops)"]
    return []


def settings_path_problems(settings, allow_empty=()):
    """path_problems over {name: value or list of values}; names in ``allow_empty`` may be empty (none)."""
    out = []
    for name, value in (settings or {}).items():
        if isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                out.extend(path_problems(f"{name}[{i}]", item))
        else:
            out.extend(path_problems(name, value, allow_empty=name in (allow_empty or ())))
    return out


def volume_problems(where, spec):
    """Messages for a ``--volume SRC:DST[:ro|rw]`` value given to the job's container (``where``: how the
    message names it, e.g. launch_container_extra_args[1])."""
    parts = str(spec).split(":")
    if len(parts) not in (2, 3) or not parts[0].startswith("/") or not parts[1].startswith("/"):
        return [f"{where} ({spec}) must be HOST_PATH:CONTAINER_PATH[:ro|rw], both absolute (no named volumes)"]
    source, target = parts[0], parts[1]
    mode = parts[2] if len(parts) == 3 else "rw"
    out = []
    if mode not in ("ro", "rw"):
        out.append(f"{where} ({spec}): the only mount options accepted are ro and rw (z/Z relabel the host's "
                   f"files, propagation options reach the host's mounts), is {mode!r}")
    out += [p.replace(f"{where}.source", f"{where} ({spec}): the host path") for p in
            path_problems(f"{where}.source", source)]
    if ".." in target.split("/") or normalize(target) == "/":
        out.append(f"{where} ({spec}): the container path must be a directory other than /, without '..'")
    if out:
        return out
    src = normalize(source)
    for tree in VOLUME_REFUSED_TREES:
        if _under(src, tree):
            return [f"{where} ({spec}): {tree} (the kernel's, the devices', the engine's or root's own) is never "
                    f"mounted into the job's container"]
    if mode != "ro":
        for tree in VOLUME_READ_ONLY_TREES:
            if _under(src, tree):
                return [f"{where} ({spec}): a host path under {tree} is mounted read-only only: add :ro"]
    return []
