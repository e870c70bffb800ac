"""Controller-side SHA-256 of package files, kept across runs while the file is unchanged."""

from __future__ import annotations

import hashlib
import json
import os

from ansible_collections.ascendops.cluster.plugins.module_utils.sha256_cache import Sha256Cache, default_cache_file


class CountingHasher:
    def __init__(self):
        self.paths = []

    def __call__(self, path):
        self.paths.append(path)
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()


def test_a_kept_hash_is_reused_by_the_next_run(tmp_path):
    pkg = tmp_path / "Ascend-cann-toolkit_8.0.0_linux-aarch64.run"
    pkg.write_bytes(b"toolkit")
    cache_file = str(tmp_path / "cache" / "sha256.json")
    first = CountingHasher()
    c1 = Sha256Cache(cache_file, hasher=first)
    got = c1.digest(str(pkg))
    c1.save()
    assert got == {"path": str(pkg), "exists": True, "sha256": hashlib.sha256(b"toolkit").hexdigest(), "cached": False}
    second = CountingHasher()
    again = Sha256Cache(cache_file, hasher=second).digest(str(pkg))
    assert again["cached"] and again["sha256"] == got["sha256"] and second.paths == []


def test_a_changed_file_is_hashed_again_even_with_the_same_size_and_mtime(tmp_path):
    pkg = tmp_path / "driver.run"
    pkg.write_bytes(b"aaaa")
    cache_file = str(tmp_path / "sha256.json")
    c1 = Sha256Cache(cache_file)
    c1.digest(str(pkg))
    c1.save()
    st = os.stat(pkg)
    pkg.write_bytes(b"bbbb")  # same size
    os.utime(pkg, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime put back: the change time still moved
    hasher = CountingHasher()
    got = Sha256Cache(cache_file, hasher=hasher).digest(str(pkg))
    assert got["sha256"] == hashlib.sha256(b"bbbb").hexdigest() and not got["cached"] and hasher.paths == [str(pkg)]


def test_a_file_replaced_by_a_rename_is_hashed_again(tmp_path):
    pkg = tmp_path / "driver.run"
    pkg.write_bytes(b"old")
    cache_file = str(tmp_path / "sha256.json")
    c1 = Sha256Cache(cache_file)
    c1.digest(str(pkg))
    c1.save()
    new = tmp_path / "new.run"
    new.write_bytes(b"new")
    os.replace(new, pkg)
    got = Sha256Cache(cache_file).digest(str(pkg))
    assert got["sha256"] == hashlib.sha256(b"new").hexdigest() and not got["cached"]


def test_missing_file_and_unreadable_or_foreign_cache(tmp_path):
    cache_file = tmp_path / "sha256.json"
    cache_file.write_text("not json")
    cache = Sha256Cache(str(cache_file))
    assert cache.digest(str(tmp_path / "nope.run")) == {
        "path": str(tmp_path / "nope.run"), "exists": False, "sha256": None, "cached": False}
    pkg = tmp_path / "a.run"
    pkg.write_bytes(b"a")
    # a cache entry with a forged hash for another identity is not trusted
    forged = {str(pkg): {"identity": [0, 0, 1, 0, 0], "sha256": "f" * 64}}
    cache_file.write_text(json.dumps({"version": 1, "files": forged}))
    assert Sha256Cache(str(cache_file)).digest(str(pkg))["sha256"] == hashlib.sha256(b"a").hexdigest()


def test_no_cache_file_keeps_nothing(tmp_path):
    pkg = tmp_path / "a.run"
    pkg.write_bytes(b"a")
    cache = Sha256Cache("")
    cache.digest(str(pkg))
    cache.save()
    assert sorted(os.listdir(tmp_path)) == ["a.run"]


def test_default_cache_file_follows_xdg():
    assert default_cache_file({"XDG_CACHE_HOME": "/x"}) == "/x/ascendops/sha256.json"
    assert default_cache_file({}).endswith("/.cache/ascendops/sha256.json")


def test_files_gone_are_forgotten_on_save(tmp_path):
    a, b = tmp_path / "a.run", tmp_path / "b.run"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    cache_file = tmp_path / "sha256.json"
    c1 = Sha256Cache(str(cache_file))
    c1.digest(str(a))
    c1.digest(str(b))
    c1.save()
    b.unlink()
    c2 = Sha256Cache(str(cache_file))
    c2.digest(str(tmp_path / "new.run"))
    (tmp_path / "c.run").write_bytes(b"c")
    c2.digest(str(tmp_path / "c.run"))
    c2.save()
    assert sorted(json.loads(cache_file.read_text())["files"]) == [str(a), str(tmp_path / "c.run")]
