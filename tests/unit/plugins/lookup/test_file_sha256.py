"""Lookup file_sha256: every path's hash, lists flattened, the cache file honoured."""

from __future__ import annotations

import hashlib
import json

from ansible_collections.ascendops.cluster.plugins.lookup.file_sha256 import LookupModule


def test_lookup_hashes_every_path_and_keeps_them(tmp_path):
    a, b = tmp_path / "a.run", tmp_path / "b.run"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    cache_file = tmp_path / "c" / "sha256.json"
    lookup = LookupModule()
    got = lookup.run([[str(a), str(b)], str(tmp_path / "missing.run")], variables={}, cache_file=str(cache_file))
    assert [(g["exists"], g["sha256"]) for g in got] == [
        (True, hashlib.sha256(b"a").hexdigest()), (True, hashlib.sha256(b"b").hexdigest()), (False, None)]
    assert set(json.loads(cache_file.read_text())["files"]) == {str(a), str(b)}
    again = LookupModule().run([str(a)], variables={}, cache_file=str(cache_file))
    assert again[0]["cached"]


def test_lookup_refuses_unknown_options(tmp_path):
    import pytest
    from ansible.errors import AnsibleLookupError

    with pytest.raises(AnsibleLookupError, match="unknown option cache"):
        LookupModule().run([str(tmp_path)], variables={}, cache="x")
