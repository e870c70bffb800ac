"""packages_check action: one controller-side task checks the settings, the manifest and each package."""

import hashlib
from types import SimpleNamespace
from unittest import mock

import pytest


@pytest.fixture(autouse=True)
def action_module(monkeypatch):
    """The action class, imported here: importing controller code (ansible._internal) marks the process as the
    controller, after which AnsibleModule.warn() no longer records warnings for the module tests that follow in
    the same pytest run. The mark is put back after each test."""
    from ansible.module_utils import _internal

    monkeypatch.setattr(_internal, "is_controller", _internal.is_controller)
    from ansible_collections.ascendops.cluster.plugins.action import packages_check

    return packages_check.ActionModule


def _run(args, host_vars=None, execute=None):
    from ansible_collections.ascendops.cluster.plugins.action.packages_check import ActionModule

    task = SimpleNamespace(args=args, async_val=0, check_mode=False, action="ascendops.cluster.packages_check",
                           _uuid="u", delegate_to=None)
    action = ActionModule.__new__(ActionModule)
    action._task = task
    action._execute_module = execute or mock.Mock(side_effect=AssertionError("no module for a controller source"))
    task_vars = {"inventory_hostname": "n1", "hostvars": {"n1": host_vars or {}}}
    with mock.patch("ansible.plugins.action.ActionBase.run", return_value={}):
        return action.run(task_vars=task_vars)


@pytest.fixture
def pkgs(tmp_path):
    d = tmp_path / "pkgs"
    d.mkdir()
    (d / "a.run").write_bytes(b"A")
    (d / "SHA256SUMS").write_text(f"{hashlib.sha256(b'A').hexdigest()}  a.run\n")
    return d


def _args(pkgs, tmp_path, **over):
    return {"packages": ["a.run"], "source": "controller", "package_dir": str(pkgs), "manifest": "SHA256SUMS",
            "cache_file": str(tmp_path / "cache.json"), **over}


def test_good_packages_return_their_sums_and_the_hash_is_kept(pkgs, tmp_path):
    out = _run(_args(pkgs, tmp_path))
    assert not out.get("failed") and out["changed"] is False
    assert out["sums"] == {"a.run": hashlib.sha256(b"A").hexdigest()}
    assert (tmp_path / "cache.json").exists()


def test_a_corrupt_package_is_refused_naming_the_setting_the_user_wrote(pkgs, tmp_path):
    (pkgs / "a.run").write_bytes(b"B")
    out = _run(_args(pkgs, tmp_path, var_prefix="npu_driver"), host_vars={"npu_driver_package_dir": str(pkgs)})
    assert out["failed"]
    assert f"n1: {pkgs}/a.run (npu_driver_package_dir) is corrupt: its sha256 is" in out["msg"]
    assert out["sums"] == {}


def test_the_default_is_marked_when_the_user_set_nothing(pkgs, tmp_path):
    (pkgs / "a.run").unlink()
    out = _run(_args(pkgs, tmp_path))
    assert f"n1: {pkgs}/a.run (ascend_package_dir (its default)) is missing" in out["msg"]


def test_settings_only_without_read_and_a_bad_source_is_refused_first(pkgs, tmp_path):
    assert _run(_args(pkgs, tmp_path, packages=[], read=False, package_dir="/nowhere"))["sums"] == {}
    out = _run(_args(pkgs, tmp_path, source="mirror", var_prefix="cann"), host_vars={"cann_package_source": "mirror"})
    assert out["failed"] and "cann_package_source is mirror but ascend_mirror_url (its default) is empty" in out["msg"]


def test_packages_must_be_a_list(pkgs, tmp_path):
    assert "needs __common_packages, a list" in _run(_args(pkgs, tmp_path, packages=None))["msg"]


def test_a_malformed_manifest_names_its_line(pkgs, tmp_path):
    (pkgs / "SHA256SUMS").write_text("not a line\n")
    assert "line 1 is not '<sha256>  <file>'" in _run(_args(pkgs, tmp_path))["msg"]


def test_a_mirror_manifest_is_read_by_the_node_through_uri(tmp_path):
    digest = hashlib.sha256(b"A").hexdigest()
    execute = mock.Mock(return_value={"content": f"{digest}  a.run\n", "status": 200})
    out = _run({"packages": ["a.run"], "source": "mirror", "mirror_url": "http://m/r/", "manifest": "SHA256SUMS"},
               execute=execute)
    assert out["sums"] == {"a.run": digest}
    assert execute.call_args.kwargs["module_name"] == "ansible.builtin.uri"
    assert execute.call_args.kwargs["module_args"]["url"] == "http://m/r/SHA256SUMS"
    execute.return_value = {"failed": True, "msg": "Status code was 404"}
    out = _run({"packages": ["a.run"], "source": "mirror", "mirror_url": "http://m/r", "manifest": "SHA256SUMS"},
               execute=execute)
    assert out["failed"] and "cannot read the package manifest http://m/r/SHA256SUMS" in out["msg"]
    assert "Status code was 404" in out["msg"]


def test_a_package_whose_manifest_entry_differs_from_the_release_pin_is_refused_naming_both_sums(pkgs, tmp_path):
    # A mirror (or directory) whose package and manifest were both replaced agree with each other: only the
    # release's pin tells them apart.
    (pkgs / "a.run").write_bytes(b"EVIL")
    evil = hashlib.sha256(b"EVIL").hexdigest()
    (pkgs / "SHA256SUMS").write_text(f"{evil}  a.run\n")
    pin = hashlib.sha256(b"A").hexdigest()
    out = _run(_args(pkgs, tmp_path, pins={"a.run": pin.upper()}, release="r1"))
    assert out["failed"]
    assert evil in out["msg"] and pin in out["msg"] and "release r1 pins" in out["msg"] and "n1: a.run" in out["msg"]


def test_a_pin_that_matches_passes_and_unpinned_packages_are_checked_as_before(pkgs, tmp_path):
    pin = hashlib.sha256(b"A").hexdigest()
    assert not _run(_args(pkgs, tmp_path, pins={"a.run": pin}, release="r1")).get("failed")
    assert not _run(_args(pkgs, tmp_path, pins={"other.run": "0" * 64})).get("failed")


def test_a_mirror_manifest_that_disagrees_with_the_pin_is_refused_before_any_node_downloads(tmp_path):
    pin = hashlib.sha256(b"A").hexdigest()
    execute = mock.Mock(return_value={"content": f"{'1' * 64}  a.run\n"})
    out = _run({"packages": ["a.run"], "source": "mirror", "mirror_url": "http://m", "manifest": "SHA256SUMS",
                "pins": {"a.run": pin}, "release": "r1"}, execute=execute)
    assert out["failed"] and pin in out["msg"] and "1" * 64 in out["msg"]
