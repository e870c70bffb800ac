"""Merging settings into Docker's daemon.json (plugins/module_utils/docker_daemon_json.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.docker_daemon_json import (
    DaemonJson,
    DaemonJsonError,
    merge,
    parse,
    render,
)
from ansible_collections.ascendops.cluster.tests.unit.plugins.modules.ascend_module_harness import fixture_text

ASCEND = {
    "runtimes": {"ascend": {"path": "/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime",
                            "runtimeArgs": []}},
    "default-runtime": "ascend",
}
SITE = json.loads(fixture_text("daemon.json"))


def test_site_keys_survive_and_runtimes_merge_per_entry():
    out = merge(SITE, ASCEND)
    assert out["bip"] == "172.30.0.1/16"
    assert out["insecure-registries"] == ["registry.site.example:5000"]
    assert out["runtimes"]["kata"] == {"path": "/usr/bin/kata-runtime"}
    assert out["runtimes"]["ascend"]["path"].endswith("/ascend-docker-runtime")
    assert out["default-runtime"] == "ascend"


def test_nested_mapping_merges_but_lists_replace():
    out = merge(SITE, {"log-opts": {"max-size": "100m", "max-file": "5"},
                       "insecure-registries": ["mirror.example:443"]})
    assert out["log-opts"] == {"max-size": "100m", "labels": "site", "max-file": "5"}
    assert out["insecure-registries"] == ["mirror.example:443"]


def test_none_removes_a_key_and_missing_key_is_fine():
    out = merge(SITE, {"bip": None, "not-there": None})
    assert "bip" not in out and "not-there" not in out
    assert out["runtimes"] == SITE["runtimes"]


def test_merge_does_not_modify_its_inputs():
    current = {"runtimes": {"kata": {"path": "/k"}}}
    settings = {"runtimes": {"ascend": {"path": "/a", "runtimeArgs": []}}}
    out = merge(current, settings)
    out["runtimes"]["ascend"]["runtimeArgs"].append("x")
    assert current == {"runtimes": {"kata": {"path": "/k"}}}
    assert settings["runtimes"]["ascend"]["runtimeArgs"] == []


def test_a_scalar_over_a_mapping_replaces_it():
    assert merge({"log-opts": {"max-size": "1m"}}, {"log-opts": "x"}) == {"log-opts": "x"}


@pytest.mark.parametrize("text", ["", "  \n", None])
def test_empty_file_is_an_empty_object(text):
    assert parse(text) == {}


@pytest.mark.parametrize("text, word", [("{not json", "not valid JSON"), ("[1, 2]", "not an object"),
                                        ('"ascend"', "not an object")])
def test_invalid_content_is_refused_with_the_path(text, word):
    with pytest.raises(DaemonJsonError) as exc:
        parse(text, "/etc/docker/daemon.json")
    assert word in str(exc.value) and "/etc/docker/daemon.json" in str(exc.value)


def test_render_is_stable_json_with_a_final_newline():
    text = render({"b": 1, "a": [1]})
    assert text.endswith("}\n") and json.loads(text) == {"b": 1, "a": [1]}
    assert text.index('"b"') < text.index('"a"')


def test_plan_on_a_missing_file_creates_it(tmp_path):
    d = DaemonJson(str(tmp_path / "daemon.json"))
    assert d.plan(ASCEND) is True
    assert d.diff()["before"] == "" and json.loads(d.diff()["after"]) == ASCEND


def test_plan_compares_content_not_text(tmp_path):
    path = tmp_path / "daemon.json"
    # the same content, other key order and spacing (as the vendor installer writes it)
    path.write_text('{"default-runtime":"ascend","runtimes":{"ascend":{"runtimeArgs":[],'
                    '"path":"/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime"}}}')
    d = DaemonJson(str(path))
    assert d.plan(ASCEND) is False
    assert d.diff()["before"] == d.diff()["after"]


def test_plan_reports_a_real_change_with_a_diff(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text(fixture_text("daemon.json"))
    d = DaemonJson(str(path))
    assert d.plan(ASCEND) is True
    diff = d.diff()
    assert diff["before"] == fixture_text("daemon.json")
    after = json.loads(diff["after"])
    assert after["bip"] == "172.30.0.1/16" and after["default-runtime"] == "ascend"


def test_write_puts_the_merged_text_beside_the_file(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text("{}")
    d = DaemonJson(str(path))
    d.plan({"data-root": "/data/docker"})
    tmp = d.write()
    assert tmp.startswith(str(tmp_path)) and json.loads(Path(tmp).read_text()) == {"data-root": "/data/docker"}


def test_a_directory_in_place_of_the_file_is_refused(tmp_path):
    (tmp_path / "daemon.json").mkdir()
    with pytest.raises(DaemonJsonError, match="not a regular file"):
        DaemonJson(str(tmp_path / "daemon.json"))


def test_settings_must_be_a_mapping(tmp_path):
    with pytest.raises(DaemonJsonError, match="mapping"):
        DaemonJson(str(tmp_path / "daemon.json")).plan(["runtimes"])
