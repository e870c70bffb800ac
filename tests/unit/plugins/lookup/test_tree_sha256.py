"""Lookup tree_sha256 through ansible-playbook (in a subprocess, as test_file_sha256.py): every entry below a
controller directory, as find with follow=true lists it (links not followed as entries, hidden ones too),
regular files with their SHA-256, kept in the cache file; a missing directory gives nothing."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from .test_file_sha256 import play

pytestmark = pytest.mark.slow


def test_tree_lists_every_entry_with_the_files_hashes_and_keeps_them(tmp_path):
    top = tmp_path / "data"
    (top / "sub" / "deeper").mkdir(parents=True)
    (top / ".hidden").mkdir()
    (top / "a.bin").write_bytes(b"a")
    (top / "sub" / "b.bin").write_bytes(b"b")
    (top / ".hidden" / "h").write_bytes(b"h")
    os.symlink("a.bin", top / "link.bin")
    cache_file = tmp_path / "c" / "sha256.json"
    rc, got = play(tmp_path, f"query('ascendops.cluster.tree_sha256', '{top}', cache_file='{cache_file}')")
    assert rc == 0, got
    sha = {e["path"]: e.get("sha256") for e in got}
    kinds = {e["path"]: e["kind"] for e in got}
    assert kinds == {".hidden": "directory", ".hidden/h": "file", "a.bin": "file", "link.bin": "link",
                     "sub": "directory", "sub/b.bin": "file", "sub/deeper": "directory"}
    assert sha["a.bin"] == hashlib.sha256(b"a").hexdigest() and sha["sub/b.bin"] == hashlib.sha256(b"b").hexdigest()
    assert sha["sub"] is None and sha["link.bin"] is None
    paths = [e["path"] for e in got]
    assert paths.index("sub") < paths.index("sub/b.bin") < paths.index("sub/deeper")
    assert set(json.loads(cache_file.read_text())["files"]) == {str(top / "a.bin"), str(top / "sub" / "b.bin"),
                                                                  str(top / ".hidden" / "h")}


def test_a_missing_directory_gives_nothing_and_unknown_options_are_refused(tmp_path):
    rc, got = play(tmp_path, f"query('ascendops.cluster.tree_sha256', '{tmp_path / 'absent'}', cache_file='')")
    assert rc == 0 and got == [], got
    rc, out = play(tmp_path, f"query('ascendops.cluster.tree_sha256', '{tmp_path}', cache='x')")
    assert rc != 0 and "unknown option cache" in out
