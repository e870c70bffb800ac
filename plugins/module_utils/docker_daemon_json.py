# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Docker's ``/etc/docker/daemon.json``: read it, merge settings into it, write it back.

The file belongs to the site as much as to us: other keys (a site's ``insecure-registries``, a
``bip``, proxies) must survive. Merging rules:

* a key in the settings whose value is a mapping, over a mapping already in the file, is merged
  recursively (``runtimes``: the ``ascend`` entry is set, other runtimes stay);
* any other value replaces the file's value (lists such as ``registry-mirrors`` are replaced whole);
* a ``None`` value removes the key;
* keys absent from the settings are left alone.

Whether the file changes is decided on the parsed content, not on its text: a file that says the
same with other spacing or key order is not rewritten (and the engine is not restarted for it).

What a change needs: dockerd applies some keys on a reload (SIGHUP, ``systemctl reload docker``;
the list is dockerd's "configuration reload behavior"), among them ``live-restore``; any other key
needs an engine restart. ``restart_required`` says which. With ``live-restore`` on (loaded by a
reload first), a restart leaves running containers running.
"""

from __future__ import annotations

import copy
import json
import os

DEFAULT_PATH = "/etc/docker/daemon.json"
# the mode the Ascend Docker Runtime installer leaves the file with (run_main.sh: chmod 600)
DEFAULT_MODE = "0600"
# keys dockerd applies on a reload, without a restart (docs: dockerd, configuration reload behavior)
RELOADABLE_KEYS = frozenset((
    "debug", "labels", "live-restore", "max-concurrent-downloads", "max-concurrent-uploads",
    "max-download-attempts", "default-runtime", "runtimes", "authorization-plugins", "insecure-registries",
    "registry-mirrors", "shutdown-timeout", "features", "builder",
))


_MISSING = object()


class DaemonJsonError(Exception):
    """The file cannot be used (not JSON, not a JSON object, unreadable)."""


def parse(text, path=DEFAULT_PATH):
    """The file's text as a dict; an empty or blank file is ``{}``."""
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DaemonJsonError(f"{path} is not valid JSON ({exc}); fix or remove it, then run again.") from exc
    if not isinstance(data, dict):
        raise DaemonJsonError(f"{path} holds a JSON {type(data).__name__}, not an object; fix or remove it, "
                              "then run again.")
    return data


def merge(current, settings):
    """A new dict: ``settings`` merged into ``current`` (neither is modified)."""
    out = copy.deepcopy(current)
    for key, value in settings.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def render(data):
    """The text written for ``data``: two-space indented JSON, keys in insertion order, final newline."""
    return json.dumps(data, indent=2) + "\n"


class DaemonJson:
    """One daemon.json file: ``plan(settings)`` says what merging would do, ``write()`` does it."""

    def __init__(self, path=DEFAULT_PATH):
        self.path = path
        self.exists = os.path.exists(path)
        self.text = None
        self.current = {}
        self.desired = None
        if self.exists:
            if not os.path.isfile(path):
                raise DaemonJsonError(f"{path} exists but is not a regular file.")
            try:
                with open(path, encoding="utf-8") as handle:
                    self.text = handle.read()
            except (OSError, UnicodeDecodeError) as exc:
                raise DaemonJsonError(f"cannot read {path}: {exc}") from exc
            self.current = parse(self.text, path)

    def plan(self, settings):
        """Merge ``settings``; returns True when the file would change (or be created)."""
        if not isinstance(settings, dict):
            raise DaemonJsonError("settings must be a mapping of daemon.json keys to values.")
        self.desired = merge(self.current, settings)
        return not self.exists or self.desired != self.current

    @property
    def changed(self):
        return self.desired is not None and (not self.exists or self.desired != self.current)

    def changed_keys(self):
        """Top-level keys whose value the merge changes (added, changed or removed), sorted."""
        if self.desired is None:
            return []
        keys = set(self.current) | set(self.desired)
        return sorted(k for k in keys if self.current.get(k, _MISSING) != self.desired.get(k, _MISSING))

    def restart_required(self):
        """Whether the change needs an engine restart (a key a reload does not apply)."""
        return any(k not in RELOADABLE_KEYS for k in self.changed_keys())

    def diff(self):
        """Before/after texts for Ansible's diff (the file's own text before, the rendered one after)."""
        before = self.text if self.text is not None else ""
        after = render(self.desired) if self.changed else before
        return {"before": before, "after": after, "before_header": self.path, "after_header": self.path}

    def write(self, tmpdir=None):
        """Write the merged content to a temporary file beside the target; returns its path
        (the caller moves it into place atomically)."""
        directory = os.path.dirname(self.path) or "."
        fd_path = os.path.join(tmpdir or directory, f".{os.path.basename(self.path)}.ascendops.tmp")
        with open(fd_path, "w", encoding="utf-8") as handle:
            handle.write(render(self.desired))
        return fd_path


class DaemonJsonTask:
    """The docker_daemon_json module's work: plan, report (check mode, diff), write atomically."""

    def __init__(self, module):
        self.module = module

    def run(self):
        module = self.module
        p = module.params
        path = p["path"]
        try:
            daemon = DaemonJson(path)
            changed = daemon.plan(p["settings"])
        except DaemonJsonError as exc:
            module.fail_json(msg=f"{exc} (docker_daemon_json left the file unchanged)", path=path)
        result = dict(changed=changed, config=daemon.desired, path=path, changed_keys=daemon.changed_keys(),
                      restart_required=daemon.restart_required())
        if module._diff:
            result["diff"] = daemon.diff()
        # the file's mode: the site's (p["mode"]) or, for a new file, the vendor's 0600
        mode = p["mode"] if p["mode"] is not None else (None if daemon.exists else DEFAULT_MODE)
        if not changed or module.check_mode:
            if daemon.exists and mode is not None:
                file_args = module.load_file_common_arguments(dict(path=path, mode=mode))
                result["changed"] = module.set_fs_attributes_if_different(file_args, changed)
            module.exit_json(**result)

        directory = os.path.dirname(path)
        if directory and not os.path.isdir(directory):
            os.makedirs(directory, mode=0o755)
        if p["backup"] and daemon.exists:
            result["backup_file"] = module.backup_local(path)
        if mode is None:
            mode = "0%o" % (os.stat(path).st_mode & 0o7777)
        tmp = daemon.write()
        module.atomic_move(tmp, path)
        file_args = module.load_file_common_arguments(dict(path=path, mode=mode))
        module.set_fs_attributes_if_different(file_args, True)
        module.exit_json(**result)
