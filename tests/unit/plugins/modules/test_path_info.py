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
