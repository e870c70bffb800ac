"""Release manifests and the vendor's compatibility rules (plugins/module_utils/ascend_release.py)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_collections.ascendops.cluster.plugins.filter.release import FilterModule
from ansible_collections.ascendops.cluster.plugins.module_utils import ascend_release as r
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_formats import parse_key_value

REPO = Path(__file__).resolve().parents[4]
RELEASES = REPO / "releases"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def release(name="910b-cann8.2.rc1"):
    return r.load_release(name, str(RELEASES))


def raw(name="910b-cann8.2.rc1"):
    return yaml.safe_load((RELEASES / f"{name}.yml").read_text())


def write(tmp_path, data, name=None):
    name = name or data.get("name", "x")
    path = tmp_path / f"{name}.yml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


# ------------------------------------------------------------------------------ the shipped files

@pytest.mark.parametrize("name", r.list_releases(str(RELEASES)))
def test_every_shipped_release_loads_and_its_own_rules_hold(name):
    rel = release(name)
    assert rel["name"] == name and rel["table"]["pairs"]
    assert r.check_release(rel) == []


def test_the_releases_the_issue_asks_for_are_there():
    names = r.list_releases(str(RELEASES))
    assert {"910b-cann8.0.0", "910b-cann8.2.rc1", "sim"} <= set(names)
    assert "_torch_npu" not in names  # the table is not a release
    new = release("910b-cann8.2.rc1")
    assert new["image"]["torch"] == "2.6.0" and new["image"]["cann"] == "8.2.RC1"


# (role, variable, key of the release) of every role version default that comes from the release
RELEASE_DEFAULTS = [
    ("npu_driver", "npu_driver_version", "host.driver"),
    ("npu_driver", "npu_driver_firmware_version", "host.firmware"),
    ("cann", "cann_version", "host.cann_toolkit"),
    ("container_runtime", "container_runtime_ascend_runtime_version", "host.docker_runtime"),
    ("container_runtime", "container_runtime_image", "image.reference"),
]


def _defaults_play(tmp_path, *extra):
    """A play that loads the roles' defaults the way the roles do and prints the version variables."""
    files = [str(REPO / "roles" / role / "defaults" / "main.yml")
             for role in ("ascend", "npu_driver", "cann", "container_runtime", "launch")]
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False, "vars_files": files,
        "tasks": [{"ansible.builtin.copy": {
            "content": "{{ {'driver': npu_driver_version, 'firmware': npu_driver_firmware_version, "
                       "'cann': cann_version, 'runtime': container_runtime_ascend_runtime_version, "
                       "'image': container_runtime_image, 'launch_image': launch_image} | to_json }}",
            "dest": str(tmp_path / "out.json"), "mode": "0644"}}]}]))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    bin_dir = Path(sys.executable).parent
    proc = subprocess.run([str(bin_dir / "ansible-playbook"), str(play), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", *extra],
                          capture_output=True, text=True, env=env, cwd=REPO, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads((tmp_path / "out.json").read_text())


def test_every_role_version_default_names_the_release():
    for role, var, key in RELEASE_DEFAULTS:
        defaults = yaml.safe_load((REPO / "roles" / role / "defaults" / "main.yml").read_text())
        assert defaults[var] == "{{ ascend_release_manifest." + key + " }}", (role, var)
        for name in r.list_releases(str(RELEASES)):
            part, field = key.split(".")
            assert release(name)[part][field], (name, key)


@pytest.mark.slow
def test_the_role_defaults_follow_the_selected_release_and_an_override_wins(tmp_path):
    out = _defaults_play(tmp_path)  # roles/ascend's default release: what the sample inventory installs
    assert out == {"driver": "24.1.rc1", "firmware": "7.5.0.2.220", "cann": "8.0.0", "runtime": "6.0.0",
                   "image": "localhost/ascendops-trainer:latest", "launch_image": "localhost/ascendops-trainer:latest"}
    out = _defaults_play(tmp_path, "-e", "ascend_release=910b-cann8.2.rc1", "-e", "cann_version=8.3.RC1")
    assert out["driver"] == "25.0.rc1.1" and out["firmware"] == "7.7.0.1.231"
    assert out["image"] == out["launch_image"] == "localhost/ascendops-trainer:910b-cann8.2.rc1"
    assert out["cann"] == "8.3.RC1"  # the site's own version wins (validate.yml checks it like the rest)


def test_the_simulated_packages_are_built_from_the_simulated_releases():
    """sim/packages/build-all.sh reads its versions through sim/yaml-get.py (sim/versions.env is gone)."""
    for name in ("sim", "sim-previous"):
        proc = subprocess.run([sys.executable, str(REPO / "sim" / "yaml-get.py"), str(RELEASES / f"{name}.yml"),
                               "host.driver", "host.firmware", "host.cann_toolkit", "host.docker_runtime"],
                              capture_output=True, text=True, check=True)
        host = release(name)["host"]
        assert proc.stdout.split() == [host["driver"], host["firmware"], host["cann_toolkit"], host["docker_runtime"]]
        assert host["cann_toolkit"] == host["cann_kernels"]
    assert release("sim-previous")["host"]["driver"] != release("sim")["host"]["driver"]
    script = (REPO / "sim" / "packages" / "build-all.sh").read_text()
    assert "releases/sim.yml" in script and "releases/sim-previous.yml" in script
    assert not (REPO / "sim" / "versions.env").exists()


def test_yaml_get_names_the_file_and_a_missing_key(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "sim" / "yaml-get.py"), str(RELEASES / "sim.yml"), "host.nope"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "sim.yml: host.nope: missing" in proc.stderr


def test_sim_release_image_matches_the_cpu_build_pins():
    """The CPU image's pins (payload/requirements.txt for Python 3.11, build-image.sh's TORCH_SPEC)."""
    img = release("sim")["image"]
    req = (REPO / "payload" / "requirements.txt").read_text()
    for pkg in ("deepspeed", "transformers", "numpy", "protobuf"):
        lines = [ln for ln in req.splitlines() if ln.startswith(f"{pkg}==")]
        pins = [ln.split("==")[1].split(";")[0].strip() for ln in lines if "< \"3.11\"" not in ln]
        assert pins == [img[pkg]], pkg
    assert f"torch=={img['torch']}" in (REPO / "payload" / "build-image.sh").read_text()
    assert img["cann"] is None and img["torch_npu"] is None


# ------------------------------------------------------------------------------ schema errors

@pytest.mark.parametrize("mutate, key, words", [
    (lambda d: d["host"].pop("firmware"), "host.firmware", "missing"),
    (lambda d: d["host"].update(driver=25), "host.driver", "must be a version string"),
    (lambda d: d["host"].update(driver="latest"), "host.driver", "is not an Ascend version"),
    (lambda d: d["host"].update(cann_kernels="8.1.RC1"), "host.cann_kernels", "one version"),
    (lambda d: d["host"].update(kernel="8.2.RC1"), "host.kernel", "unknown key"),
    (lambda d: d.update(server_model="910c"), "server_model", "must be one of"),
    (lambda d: d["image"].update(torch="two"), "image.torch", "Python package version"),
    (lambda d: d["image"].update(python="3"), "image.python", "major.minor"),
    (lambda d: d["image"].update(torch_npu=None), "image.torch_npu", "both its CANN and its torch_npu"),
    (lambda d: d["image"].pop("reference"), "image.reference", "image reference"),
    (lambda d: d["cann_python"].update(numpy="less than two"), "cann_python.numpy", "version range"),
    (lambda d: d["image"]["pins"].update(numpy="1.26.4"), "image.pins.numpy", "set image.numpy"),
    (lambda d: d.update(name="other"), "name", "differs from the file name"),
    (lambda d: d.update(packages=["a.run"]), "packages", "must be a mapping"),
    (lambda d: d.update(packages={"a.run": "abc"}), "packages.a.run", "64 hex digits"),
    (lambda d: d.update(packages={"x/a.run": "0" * 64}), "packages.x/a.run", "no directory"),
    (lambda d: d["image"].update(digest="a" * 64), "image.digest", "sha256:<64 hex digits>"),
    (lambda d: d["image"].update(digest="sha256:" + "A" * 64), "image.digest", "sha256:<64 hex digits>"),
    (lambda d: d["image"].update(digest="latest"), "image.digest", "registry digest"),
])
def test_schema_errors_name_the_file_and_the_key(tmp_path, mutate, key, words):
    data = raw()
    mutate(data)
    path = write(tmp_path, data, "910b-cann8.2.rc1")
    with pytest.raises(r.ReleaseError) as err:
        r.validate_release(yaml.safe_load(Path(path).read_text()), path)
    assert str(err.value).startswith(f"{path}: {key}: ") and words in str(err.value)


def test_package_pins_are_read_lowercase_and_absent_pins_are_none():
    data = raw()
    data["packages"] = {"Ascend-hdk-910b-npu-driver_24.1.0_linux-aarch64.run": "AB" * 32}
    rel = r.validate_release(data, "910b-cann8.2.rc1.yml")
    assert rel["packages"] == {"Ascend-hdk-910b-npu-driver_24.1.0_linux-aarch64.run": "ab" * 32}
    assert r.validate_release(raw(), "910b-cann8.2.rc1.yml")["packages"] == {}


def test_an_image_digest_is_read_and_absent_is_none():
    data = raw()
    data["image"]["digest"] = "sha256:" + "0f" * 32
    assert r.validate_release(data, "910b-cann8.2.rc1.yml")["image"]["digest"] == "sha256:" + "0f" * 32
    assert r.validate_release(raw(), "910b-cann8.2.rc1.yml")["image"]["digest"] is None


def test_unknown_release_name_lists_the_known_ones():
    with pytest.raises(r.ReleaseError, match=r"no release 'nope'.*known: 910b-cann8.0.0, 910b-cann8.2.rc1, sim"):
        r.load_release("nope", str(RELEASES))


def test_release_by_path_uses_the_table_beside_it_or_the_releases_dir(tmp_path):
    path = write(tmp_path, raw())
    rel = r.load_release(path, str(RELEASES))
    assert rel["file"] == path and rel["table"]["file"] == str(RELEASES / "_torch_npu.yml")


def test_a_release_is_read_once_per_process_until_its_file_changes(tmp_path, monkeypatch):
    path = write(tmp_path, raw())
    reads = []
    real = r._read_yaml
    monkeypatch.setattr(r, "_read_yaml", lambda p: reads.append(p) or real(p))
    first = r.load_release(path, str(RELEASES))
    first["host"]["driver"] = "changed by a caller"
    again = r.load_release(path, str(RELEASES))
    assert reads == [path, str(RELEASES / "_torch_npu.yml")]  # the second call read nothing
    assert again["host"]["driver"] == raw()["host"]["driver"]  # a caller's change is not kept
    data = raw()
    data["host"]["driver"] = "24.1.rc3"
    Path(path).write_text(yaml.safe_dump(data) + "# rewritten\n")
    assert r.load_release(path, str(RELEASES))["host"]["driver"] == "24.1.rc3"
    assert reads.count(path) == 2
    other = write(tmp_path, raw("910b-cann8.0.0"))  # two releases in turn (installed, upgrade target)
    r.load_release(other, str(RELEASES))
    r.load_release(path, str(RELEASES))
    assert reads.count(path) == 2 and reads.count(other) == 1


def test_broken_yaml_names_the_file(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(r.ReleaseError, match=f"{bad}: not valid YAML"):
        r.load_release(str(bad), str(RELEASES))


def test_table_rejects_a_torch_npu_listed_twice_and_rows_without_cann(tmp_path):
    data = yaml.safe_load((RELEASES / "_torch_npu.yml").read_text())
    data["pairs"].append(dict(data["pairs"][0]))
    with pytest.raises(r.ReleaseError, match=r"pairs\[\d+\]\.torch_npu: .* listed twice"):
        r.validate_table(data, "t.yml")
    data["pairs"][-1] = {"torch_npu": "9.9.9", "torch": "9.9.9", "cann": []}
    with pytest.raises(r.ReleaseError, match=r"t.yml: pairs\[\d+\]\.cann: must be a non-empty list"):
        r.validate_table(data, "t.yml")


# ------------------------------------------------------------------------------ firmware vs driver

DRIVER_INFO = parse_key_value((FIXTURES / "driver_version.info").read_text())  # compatible_version_fw=[7.0.0,7.2.99]


@pytest.mark.parametrize("firmware, bad", [("7.1.0.11.220", False), ("7.0.0", False), ("7.2.99", False),
                                           ("7.5.0.2.220", True), ("6.4.0.1.220", True)])
def test_firmware_within_the_drivers_compatible_version_fw(firmware, bad):
    found = r.check_firmware("n1", "24.1.rc1", DRIVER_INFO, firmware)
    assert bool(found) == bad
    if bad:
        msg = found[0]["msg"]
        assert msg.startswith("n1: firmware ") and firmware in msg and "24.1.rc1" in msg
        assert "compatible_version_fw=[7.0.0,7.2.99]" in msg and found[0]["component"] == "firmware"


def test_firmware_without_a_declared_range_or_comparable_version_is_reported_not_passed():
    assert "declares no compatible_version_fw" in r.check_firmware("n1", "24.1.rc1", {"Version": "24.1.rc1"},
                                                                   "7.5.0.2.220")[0]["msg"]
    assert "cannot tell" in r.check_firmware("n1", "24.1.rc1", DRIVER_INFO, "7.3.T5.0.B028")[0]["msg"]
    assert r.check_firmware("n1", "24.1.rc1", DRIVER_INFO, None) == []  # nothing installed: nothing to pair


# ------------------------------------------------------------------------------ driver vs CANN

KERNELS_INFO = (FIXTURES / "cann_kernels_version.info").read_text()  # required driver ">=7.6, <=8.2"


def test_driver_within_the_range_a_cann_package_declares():
    # the same reader as the cann role's check (cann_info.parse_kernels_info / parse_required)
    assert r.check_cann_driver("n1", "8.2.RC1", KERNELS_INFO, "8.0") == []
    assert r.check_cann_driver("n1", "8.2.RC1", {"driver": ">=25.0.rc1"}, "25.0.rc1.1") == []
    found = r.check_cann_driver("n2", "8.2.RC1", {"driver": ">=25.0.rc1"}, "24.1.rc1")
    assert found[0]["msg"] == ("n2: CANN 8.2.RC1 needs NPU driver >=25.0.rc1 (required_package_driver_version) but "
                               "the installed driver is 24.1.rc1: install a driver in that range first, or pick a "
                               "release whose CANN supports this driver")
    info = parse_key_value(KERNELS_INFO)
    assert r.check_cann_driver("n1", "8.2.RC1", info, "8.3")[0]["expected"] == ">=7.6, <=8.2"


def test_driver_missing_or_uncomparable_against_a_cann_range():
    assert "no installed driver" in r.check_cann_driver("n1", "8.2.RC1", {"driver": ">=25.0"}, None)[0]["msg"]
    assert "cannot tell" in r.check_cann_driver("n1", "8.2.RC1", {"driver": ">=25.0"}, "8.3.T5.0.B028")[0]["msg"]
    assert r.check_cann_driver("n1", "8.2.RC1", {}, "24.1.rc1") == []  # no range declared: no rule


# ------------------------------------------------------------------------------ torch_npu pairing

def image(**over):
    img = dict(release()["image"])
    img.update(over)
    return img


def test_torch_npu_paired_with_torch_and_cann_per_the_table():
    table = release()["table"]
    assert r.check_torch_npu("img", image(), table) == []
    assert r.check_torch_npu("img", image(torch="2.6.0+cpu"), table) == []  # local tag aside
    found = r.check_torch_npu("img", image(torch="2.7.1"), table)
    assert [f["component"] for f in found] == ["torch"]
    assert "torch 2.7.1 does not match torch_npu 2.6.0, which is built for torch 2.6.0" in found[0]["msg"]
    found = r.check_torch_npu("img", image(cann="8.0.0"), table)
    assert [f["component"] for f in found] == ["image CANN"]
    assert "CANN 8.0.0 is not a CANN of torch_npu 2.6.0 (it pairs with CANN 8.2.RC1" in found[0]["msg"]
    found = r.check_torch_npu("img", image(torch_npu="2.6.1"), table)
    assert "torch_npu 2.6.1 is not in the torch_npu compatibility table" in found[0]["msg"]
    assert r.check_torch_npu("img", image(torch_npu=None, cann=None), table) == []  # CPU image


def test_cann_8_0_0_goes_to_torch_npu_2_4_0_at_most():
    table = release()["table"]
    canns = {p["torch_npu"]: p["cann"] for p in table["pairs"]}
    for_800 = [npu for npu, cann in canns.items() if "8.0.0" in cann]
    assert max(for_800, key=r._pyver) == "2.4.0.post2"
    assert canns["2.6.0"] == ["8.2.RC1"]


def test_numpy_and_protobuf_within_canns_range_only_for_an_image_with_cann():
    rel = release()
    assert r.check_cann_python("img", image(), rel["cann_python"]) == []
    found = r.check_cann_python("img", image(numpy="2.4.6", protobuf="7.36.2"), rel["cann_python"])
    assert [f["component"] for f in found] == ["numpy", "protobuf"]
    assert "numpy 2.4.6 is outside CANN 8.2.RC1's range >=1.19.2, <2.0" in found[0]["msg"]
    assert r.check_cann_python("img", image(cann=None, torch_npu=None, numpy="2.4.6"), rel["cann_python"]) == []


def test_trainer_needs_torch_2_6_unless_the_release_says_it_has_no_trainer_image():
    old = release("910b-cann8.0.0")
    assert old["image"]["trainer"] is False and r.check_release(old) == []
    old["image"]["trainer"] = True
    found = r.check_release(old)
    assert [f["component"] for f in found] == ["torch"] and "older than 2.6" in found[0]["msg"]


# ------------------------------------------------------------------------------ nodes that differ

def test_nodes_that_would_end_on_different_versions():
    same = {"n1": {"driver": "24.1.rc1", "docker_runtime": "v6.0.0"},
            "n2": {"driver": "24.1.RC1", "docker_runtime": "6.0.0"}}
    assert r.check_nodes_agree(same) == []
    mixed = copy.deepcopy(same)
    mixed["n3"] = {"driver": "25.0.rc1.1", "docker_runtime": "6.0.0"}
    found = r.check_nodes_agree(mixed)
    assert [f["component"] for f in found] == ["driver"]
    assert found[0]["msg"] == ("driver would differ between nodes: 24.1.rc1 on n1, n2; 25.0.rc1.1 on n3; run on "
                               "every node (no --limit) or finish the failed batch first")
    mixed["n4"] = {}
    assert "none on n4" in r.check_nodes_agree(mixed)[0]["msg"]


def test_a_limit_run_or_a_failed_batch_leaves_nodes_on_other_versions():
    old = r.expected_versions(release("910b-cann8.0.0"))
    installed = {h: dict(old) for h in ("n1", "n2", "n3")}
    expected = r.expected_versions(release())
    # every node in the run: all end on the release
    everyone = r.end_versions(installed, expected, ["n1", "n2", "n3"])
    assert r.check_nodes_agree(everyone) == []
    assert everyone["n2"]["driver"] == "25.0.rc1.1"
    # --limit n1: n2 and n3 keep theirs
    found = r.check_nodes_agree(r.end_versions(installed, expected, ["n1"]))
    assert {f["component"] for f in found} == {"driver", "firmware", "cann_toolkit", "cann_kernels", "image"}
    assert "25.0.rc1.1 on n1; 24.1.rc1 on n2, n3" in [f["msg"] for f in found if f["component"] == "driver"][0]
    # a failed batch: n3 failed
    found = r.check_nodes_agree(r.end_versions(installed, expected, ["n1", "n2", "n3"], failed=["n3"]))
    assert "8.2.RC1 on n1, n2; 8.0.0 on n3" in [f["msg"] for f in found if f["component"] == "cann_toolkit"][0]
    # per-node expected versions (a site override on one node) are what that node ends on
    per_host = {h: dict(expected) for h in installed}
    per_host["n3"]["driver"] = "25.0.rc1"
    found = FilterModule().filters()["release_nodes_differ"](installed, per_host, list(installed))
    assert [f["component"] for f in found] == ["driver"] and "25.0.rc1 on n3" in found[0]["msg"]


# ------------------------------------------------------------------------------ image label

def test_image_label_round_trip_and_every_differing_key():
    rel = release()
    label = r.image_label(rel)
    assert json.loads(label)["release"] == "910b-cann8.2.rc1"
    assert r.check_image_label("n1", label, rel) == []
    other = json.loads(label)
    other.update(torch_npu="2.6.0.post3", cann="8.3.RC1")
    found = r.check_image_label("n1", json.dumps(other), rel)
    assert sorted(f["component"] for f in found) == ["image cann", "image torch_npu"]
    msg = [f["msg"] for f in found if f["component"] == "image torch_npu"][0]
    assert msg.startswith("n1: image localhost/ascendops-trainer:910b-cann8.2.rc1 was built with torch_npu "
                          "2.6.0.post3 but release 910b-cann8.2.rc1 names 2.6.0")
    assert "carries no ascendops.release label" in r.check_image_label("n1", None, rel)[0]["msg"]
    assert "is not JSON" in r.check_image_label("n1", "{oops", rel)[0]["msg"]
    sim = release("sim")
    found = r.check_image_label("n1", label, sim)
    assert {"image release", "image cann", "image torch_npu", "image torch"} <= {f["component"] for f in found}


# ------------------------------------------------------------------------------ installed vs release

def test_compare_orders_mismatches_first_and_compares_as_versions():
    expected = r.expected_versions(release())
    assert "mcu" not in expected and expected["image"] == "910b-cann8.2.rc1"
    installed = {"driver": "24.1.rc1", "firmware": "7.7.0.1.231", "cann_toolkit": None,
                 "docker_runtime": "v6.0.0", "image": "910b-cann8.2.rc1", "extra": "1"}
    rows = r.compare("n1", installed, expected)
    assert [(x["component"], x["status"]) for x in rows] == [
        ("driver", "mismatch"), ("cann_kernels", "missing"), ("cann_toolkit", "missing"), ("extra", "unknown"),
        ("docker_runtime", "ok"), ("firmware", "ok"), ("image", "ok")]
    assert rows[0] == {"host": "n1", "component": "driver", "installed": "24.1.rc1", "expected": "25.0.rc1.1",
                       "status": "mismatch"}


def test_a_component_the_caller_cannot_read_is_not_read_rather_than_missing():
    expected = {"driver": "24.1.rc1", "mcu": "22.0.2"}
    rows = r.compare("n1", {"driver": "24.1.rc1"}, expected, ("mcu",))
    assert [(x["component"], x["status"], x["installed"]) for x in rows] == [
        ("mcu", "not read", None), ("driver", "ok", "24.1.rc1")]
    assert [x["status"] for x in r.compare("n1", {"driver": "24.1.rc1"}, expected)] == ["missing", "ok"]
    # nothing expected (the release's mcu: null): no row says anything about it
    assert r.compare("n1", {}, {"driver": "24.1.rc1"}, ("mcu",))[0]["status"] == "missing"
    assert FilterModule().filters()["release_compare"]({}, expected, "n1", ["mcu"])[1]["status"] == "not read"


# ------------------------------------------------------------------------------ filters

def test_filters_are_registered_and_release_check_combines_the_node_rules():
    filters = FilterModule().filters()
    assert set(filters) == {"release_load", "release_check", "release_compare", "release_expected",
                            "release_nodes_differ", "release_run_end", "release_run_agrees", "release_left_out",
                            "release_end_state", "release_installed", "release_image_label"}
    rel = filters["release_load"]("910b-cann8.2.rc1", str(RELEASES))
    node = {"driver": {"version": "24.1.rc1", "info": DRIVER_INFO}, "firmware": {"version": "7.5.0.2.220"},
            "cann": {"version": "8.2.RC1", "required": {"driver": ">=25.0.rc1"}}}
    comps = [f["component"] for f in filters["release_check"](node, rel, "n1")]
    assert comps == ["firmware", "driver"]  # no image_label given: not checked
    node["image_label"] = None
    assert [f["component"] for f in filters["release_check"](node, rel, "n1")][-1] == "image label"
    assert filters["release_check"]({}, None, "n1") == []


def test_release_load_filter_raises_an_error_naming_the_release():
    with pytest.raises(ValueError, match="no release 'missing'"):
        FilterModule().filters()["release_load"]("missing", str(RELEASES))


def test_an_image_of_another_release_with_the_same_pins_is_this_releases_image():
    """releases/sim-previous.yml names the image releases/sim.yml builds (same pins): not a finding;
    the release's name is still reported beside any pin that differs."""
    previous, current = release("sim-previous"), release("sim")
    assert r.check_image_label("n1", r.image_label(current), previous) == []
    other = json.loads(r.image_label(current))
    other["torch"] = "2.4.0+cpu"
    found = r.check_image_label("n1", json.dumps(other), previous)
    assert sorted(f["component"] for f in found) == ["image release", "image torch"]
    assert "was built with release sim but release sim-previous names sim-previous" in found[1]["msg"]


# ------------------------------------------------------------------------------ the filter's disk cache

def _fresh_worker(monkeypatch, cache_home):
    """As in a new ansible-playbook worker: the process cache empty, the disk cache under cache_home."""
    from ansible_collections.ascendops.cluster.plugins.filter import release as release_filter
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    monkeypatch.setattr(release_filter, "_CACHE", {})
    return release_filter


def test_a_worker_reads_the_validated_release_from_the_disk_cache_instead_of_the_yaml(tmp_path, monkeypatch):
    releases = tmp_path / "releases"
    releases.mkdir()
    for name in ("sim.yml", r.COMPAT_FILE):
        (releases / name).write_text((RELEASES / name).read_text())
    mod = _fresh_worker(monkeypatch, tmp_path / "cache")
    first = mod.release_load("sim", str(releases))
    assert first == r.load_release("sim", str(releases))
    assert len(list((tmp_path / "cache" / "ascendops" / "release").iterdir())) == 1

    mod = _fresh_worker(monkeypatch, tmp_path / "cache")
    monkeypatch.setattr(r, "load_release", lambda *a: pytest.fail("the YAML was read again"))
    assert mod.release_load("sim", str(releases)) == first


def test_an_edited_manifest_or_table_is_read_again_and_checked(tmp_path, monkeypatch):
    releases = tmp_path / "releases"
    releases.mkdir()
    for name in ("sim.yml", r.COMPAT_FILE):
        (releases / name).write_text((RELEASES / name).read_text())
    _fresh_worker(monkeypatch, tmp_path / "cache").release_load("sim", str(releases))
    manifest = yaml.safe_load((releases / "sim.yml").read_text())
    manifest["host"]["driver"] = "not a version"
    (releases / "sim.yml").write_text(yaml.safe_dump(manifest))
    with pytest.raises(ValueError, match="driver"):
        _fresh_worker(monkeypatch, tmp_path / "cache").release_load("sim", str(releases))
    # A changed table of the same manifest is a miss too.
    (releases / "sim.yml").write_text((RELEASES / "sim.yml").read_text())
    (releases / r.COMPAT_FILE).write_text((RELEASES / r.COMPAT_FILE).read_text() + "\n# edited\n")
    calls = []
    mod = _fresh_worker(monkeypatch, tmp_path / "cache")
    real = r.load_release
    monkeypatch.setattr(r, "load_release", lambda *a: calls.append(a) or real(*a))
    mod.release_load("sim", str(releases))
    assert len(calls) == 1


def test_a_corrupt_cache_file_is_a_miss_and_the_cache_can_be_turned_off(tmp_path, monkeypatch):
    mod = _fresh_worker(monkeypatch, tmp_path / "cache")
    expected = mod.release_load("sim", str(RELEASES))
    cache_dir = tmp_path / "cache" / "ascendops" / "release"
    for cached in cache_dir.iterdir():
        cached.write_bytes(b"\x00garbage")
    mod = _fresh_worker(monkeypatch, tmp_path / "cache")
    assert mod.release_load("sim", str(RELEASES)) == expected
    monkeypatch.setenv("ASCENDOPS_RELEASE_CACHE", "0")
    monkeypatch.setattr(mod, "_CACHE", {})
    other = tmp_path / "other"
    monkeypatch.setenv("XDG_CACHE_HOME", str(other))
    assert mod.release_load("sim", str(RELEASES)) == expected
    assert not other.exists()
