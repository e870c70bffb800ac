# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SHA-256 of files on the controller, remembered across runs by the file's identity.

A vendor package is gigabytes (the CANN toolkit): hashing every package on every run (once per host)
cost most of a no-op re-run's validation. A file's hash is kept in a JSON cache keyed by its path and
identity - device, inode, size, modification and change time in nanoseconds (what ``git`` trusts for
its index): any write to the file, a copy over it or a rename onto its path changes the change time
(which no user call can set back), so a kept hash is only used for the very bytes it was taken of.
Only the standard library is used.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile

CACHE_VERSION = 1
CHUNK = 4 * 1024 * 1024


def default_cache_file(environ=None):
    """``$XDG_CACHE_HOME/ascendops/sha256.json`` (``~/.cache/ascendops/sha256.json``)."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ascendops", "sha256.json")


def file_identity(st):
    """The identity a kept hash is valid for (an ``os.stat_result``)."""
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


class Sha256Cache:
    """``digest(path)`` -> ``{"path", "exists", "sha256", "cached"}``; ``cache_file`` None or empty
    keeps nothing across runs. ``create_dir`` false: the cache is only written where its directory
    exists already (on a node: beside the files it describes, never creating that directory)."""

    def __init__(self, cache_file=None, hasher=None, create_dir=True):
        self.cache_file = cache_file or None
        self.hasher = hasher or sha256_file
        self.create_dir = create_dir
        self.entries = self._load()
        self.dirty = False

    def _load(self):
        if not self.cache_file:
            return {}
        try:
            with open(self.cache_file, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
            return {}
        if not isinstance(data.get("files"), dict):
            return {}
        return data["files"]

    def digest(self, path):
        path = os.path.abspath(path)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return {"path": path, "exists": False, "sha256": None, "cached": False}
        ident = file_identity(st)
        kept = self.entries.get(path)
        if isinstance(kept, dict) and kept.get("identity") == ident and isinstance(kept.get("sha256"), str):
            return {"path": path, "exists": True, "sha256": kept["sha256"], "cached": True}
        digest = self.hasher(path)
        # Hashed while it changed: not kept (the next run hashes it again).
        if file_identity(os.stat(path)) == ident:
            self.entries[path] = {"identity": ident, "sha256": digest}
            self.dirty = True
        return {"path": path, "exists": True, "sha256": digest, "cached": False}

    def save(self):
        """Write the cache (atomically; several controller processes may share it). Errors are
        ignored: the cache only saves time."""
        if not self.cache_file or not self.dirty:
            return
        # Files gone since (packages of an older release, removed) are forgotten.
        self.entries = {path: kept for path, kept in self.entries.items() if os.path.exists(path)}
        try:
            directory = os.path.dirname(self.cache_file)
            if not self.create_dir and not os.path.isdir(directory):
                return
            os.makedirs(directory, mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".sha256.", dir=directory)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"version": CACHE_VERSION, "files": self.entries}, f)
            os.replace(tmp, self.cache_file)
            self.dirty = False
        except OSError:
            pass


def lookup_terms(name, terms, options, known=("cache_file",)):
    """The flat list of a lookup's terms (lists flattened), after checking its options are ``known``.
    Raises ValueError naming an unknown option."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"{name}: unknown option {unknown[0]} (it takes {' and '.join(known)})")
    flat = []
    for term in terms:
        flat.extend(term if isinstance(term, (list, tuple)) else [term])
    return flat


def lookup_setup(name, terms, options):
    """The cache and the flat list of terms of a lookup whose only option is ``cache_file`` (None: the
    default file; empty: nothing kept). Raises ValueError naming an unknown option."""
    flat = lookup_terms(name, terms, options)
    cache_file = options.get("cache_file")
    return Sha256Cache(default_cache_file() if cache_file is None else cache_file), flat
