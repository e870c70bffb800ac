"""path_info: many paths read in one call, in order; missing paths and links."""

from __future__ import annotations

import hashlib
import os

from ansible_collections.ascendops.cluster.plugins.modules import path_info


def test_reads_every_path_in_order(run_module, tmp_path):
    d = tmp_path / "ckpt"
    d.mkdir(mode=0o750)
    os.chmod(d, 0o750)
    f = tmp_path / "ascend_install.info"
    f.write_text("x")
    os.chmod(f, 0o644)
    result = run_module(path_info.main, {"paths": [str(d), str(tmp_path / "missing"), str(f), "/dev/null"]},
                        check_mode=True)
    assert result["changed"] is False
    ckpt, missing, info, null = result["stats"]
    assert ckpt["path"] == str(d) and ckpt["exists"] and ckpt["isdir"] and ckpt["mode"] == "0750"
    assert ckpt["uid"] == os.getuid() and ckpt["gid"] == os.getgid()
    assert missing == {"path": str(tmp_path / "missing"), "exists": False}
    assert info["isreg"] and not info["isdir"] and info["mode"] == "0644"
    assert null["ischr"] and not null["isreg"]


def test_links_follow_by_default_and_a_dangling_link_does_not_exist(run_module, tmp_path):
    target = tmp_path / "driver"
    target.mkdir()
    good = tmp_path / "good"
    good.symlink_to(target)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "gone")
    followed = run_module(path_info.main, {"paths": [str(good), str(dangling)]})["stats"]
    assert followed[0]["isdir"] and not followed[0]["islnk"]
    assert followed[1]["exists"] is False
    links = run_module(path_info.main, {"paths": [str(good), str(dangling)], "follow": False})["stats"]
    assert links[0]["islnk"] and not links[0]["isdir"]
    assert links[1]["exists"] and links[1]["islnk"]


def test_checksums_of_regular_files_when_asked(run_module, tmp_path):
    f = tmp_path / "Ascend-hdk-910b-npu-driver.run"
    f.write_bytes(b"driver")
    plain = run_module(path_info.main, {"paths": [str(f), str(tmp_path)]})["stats"]
    assert "checksum" not in plain[0] and plain[0]["size"] == 6
    summed = run_module(path_info.main, {"paths": [str(f), str(tmp_path)], "checksum": "sha256"})["stats"]
    assert summed[0]["checksum"] == hashlib.sha256(b"driver").hexdigest()
    assert "checksum" not in summed[1]  # a directory has none


def test_checksum_cache_spares_reading_an_unchanged_file_and_notices_a_rewrite(run_module, tmp_path, monkeypatch):
    from ansible_collections.ascendops.cluster.plugins.module_utils import sha256_cache

    stage = tmp_path / "stage"
    stage.mkdir()
    pkg = stage / "Ascend-cann-toolkit_8.0.0_linux-aarch64.run"
    pkg.write_bytes(b"toolkit")
    cache = str(stage / ".sha256-cache.json")
    args = {"paths": [str(pkg)], "checksum": "sha256", "checksum_cache": cache}
    # check mode reads but keeps no cache
    assert run_module(path_info.main, args, check_mode=True)["stats"][0]["checksum"] == hashlib.sha256(
        b"toolkit").hexdigest()
    assert not os.path.exists(cache)
    run_module(path_info.main, args)
    assert os.path.exists(cache)
    hashed = []
    real = sha256_cache.sha256_file
    monkeypatch.setattr(sha256_cache, "sha256_file", lambda p: hashed.append(p) or real(p))
    again = run_module(path_info.main, args)["stats"][0]
    assert again["checksum"] == hashlib.sha256(b"toolkit").hexdigest() and hashed == []
    pkg.write_bytes(b"tampered")
    changed = run_module(path_info.main, args)["stats"][0]
    assert changed["checksum"] == hashlib.sha256(b"tampered").hexdigest() and hashed == [str(pkg)]


def test_checksum_cache_is_not_written_where_its_directory_is_missing(run_module, tmp_path):
    f = tmp_path / "a.run"
    f.write_bytes(b"a")
    result = run_module(path_info.main, {"paths": [str(f)], "checksum": "sha256",
                                         "checksum_cache": str(tmp_path / "missing" / "cache.json")})
    assert result["stats"][0]["checksum"] == hashlib.sha256(b"a").hexdigest()
    assert not (tmp_path / "missing").exists()


def test_checksum_cache_needs_sha256(run_module, tmp_path):
    result = run_module(path_info.main, {"paths": [str(tmp_path)], "checksum": "sha1",
                                         "checksum_cache": str(tmp_path / "c.json")})
    assert result["failed"] and "sha256" in result["msg"]


def test_small_files_content_is_read_in_the_same_call(run_module, tmp_path):
    """content_max_size: small records (a mount list, a fingerprint) come back base64, as slurp gives them;
    a larger file, a directory and a missing path get none."""
    import base64
    small, big = tmp_path / "base.list", tmp_path / "big"
    small.write_bytes(b"/usr/local/Ascend/driver\n")
    big.write_bytes(b"x" * 100)
    stats = run_module(path_info.main, {"paths": [str(small), str(big), str(tmp_path), str(tmp_path / "gone")],
                                        "checksum": "sha1", "content_max_size": 64})["stats"]
    assert base64.b64decode(stats[0]["content"]) == b"/usr/local/Ascend/driver\n"
    assert stats[0]["checksum"] == hashlib.sha1(b"/usr/local/Ascend/driver\n").hexdigest()
    assert "content" not in stats[1] and "content" not in stats[2] and "content" not in stats[3]
    assert "content" not in run_module(path_info.main, {"paths": [str(small)]})["stats"][0]
