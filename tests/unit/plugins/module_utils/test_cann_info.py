"""CANN records and compatibility (plugins/module_utils/cann_info.py), on the formats of ascend-facts.md."""

from __future__ import annotations

import os

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils import cann_info
from ansible_collections.ascendops.cluster.plugins.module_utils.cann_info import (
    CannQuery,
    active_toolkit,
    compatibility,
    in_range,
    installed_toolkits,
    package_state,
    parse_kernels_info,
    parse_range,
    read_kernels,
)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")
ARCH = "aarch64"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def toolkit(root, version, base=None, sub="", kernels=None, build=None):
    """One installed toolkit directory as the vendor installers lay it out."""
    base = base or os.path.join(root, "ascend-toolkit", version)
    write(os.path.join(base, sub, f"{ARCH}-linux", "ascend_toolkit_install.info"),
          f"package_name=Ascend-cann-toolkit\nversion={version}\nversion_dir={version}\narch={ARCH}\n")
    if kernels:
        write(os.path.join(base, "opp_kernel", "version.info"),
              f"Version={build or '9.9.0.0.201'}\nversion_dir={kernels}\n"
              'required_package_driver_version=">=23.0"\n')
    return base


# ------------------------------------------------------------------ records


def test_kernels_record_version_is_version_dir_not_the_build_number():
    info = parse_kernels_info(fixture("cann_kernels_version.info"))
    assert info["version"] == "8.2.RC1"
    assert info["build"] == "8.2.0.0.201"
    assert info["required"] == {"toolkit": "8.2.RC1", "driver": ">=7.6, <=8.2"}


def test_old_kernels_record_without_version_dir_reads_version():
    assert parse_kernels_info("Version=8.0.RC3\n")["version"] == "8.0.RC3"


def test_toolkit_record_fixture(tmp_path):
    path = tmp_path / "rec.info"
    path.write_text(fixture("cann_toolkit_install_8.2.info"))
    rec = cann_info.read_toolkit_record(str(path))
    assert rec["version"] == "8.2.RC1" and rec["version_dir"] == "8.2.RC1"


def test_classic_layout_resolves_latest_and_lists_every_version(tmp_path):
    root = str(tmp_path)
    toolkit(root, "8.0.RC3", kernels="8.0.RC3")
    toolkit(root, "8.0.0", kernels="8.0.0", build="8.0.0.0.201")
    os.symlink("8.0.0", os.path.join(root, "ascend-toolkit", "latest"))
    write(os.path.join(root, "ascend-toolkit", "set_env.sh"), "export ASCEND_TOOLKIT_HOME=x\n")
    active = active_toolkit(root, ARCH)
    assert active["installed"] and active["version"] == "8.0.0"
    assert active["path"] == os.path.realpath(os.path.join(root, "ascend-toolkit", "8.0.0"))
    assert active["set_env"] == os.path.join(root, "ascend-toolkit", "set_env.sh")
    assert active["kernels"]["version"] == "8.0.0" and active["kernels"]["build"] == "8.0.0.0.201"
    assert [tk["version"] for tk in installed_toolkits(root, ARCH)] == ["8.0.RC3", "8.0.0"]


def test_cann_85_layout_through_the_latest_link(tmp_path):
    root = str(tmp_path)
    base = toolkit(root, "8.5.0", base=os.path.join(root, "cann-8.5.0"), sub="cann", kernels="8.5.0")
    os.makedirs(os.path.join(root, "ascend-toolkit"))
    os.symlink(os.path.join("..", "cann-8.5.0"), os.path.join(root, "ascend-toolkit", "latest"))
    write(os.path.join(base, "set_env.sh"), "export ASCEND_TOOLKIT_HOME=x\n")
    active = active_toolkit(root, ARCH)
    assert active["version"] == "8.5.0" and active["path"] == os.path.realpath(base)
    assert active["set_env"] == os.path.join(base, "set_env.sh")
    assert active["kernels"]["version"] == "8.5.0"
    assert [tk["version"] for tk in installed_toolkits(root, ARCH)] == ["8.5.0"]


def test_cann_85_layout_through_a_cann_link(tmp_path):
    root = str(tmp_path)
    toolkit(root, "8.5.0", base=os.path.join(root, "cann-8.5.0"), sub="cann")
    os.symlink("cann-8.5.0", os.path.join(root, "cann"))
    active = active_toolkit(root, ARCH)
    assert active["installed"] and active["version"] == "8.5.0"
    assert not active["kernels"]["installed"]


def test_nothing_installed(tmp_path):
    active = active_toolkit(str(tmp_path), ARCH)
    assert not active["installed"] and active["version"] is None and active["set_env"] is None
    assert installed_toolkits(str(tmp_path), ARCH) == []
    assert not read_kernels(str(tmp_path))["installed"]


def test_internal_and_alpha_versions_do_not_crash(tmp_path):
    root = str(tmp_path)
    toolkit(root, "8.3.T5.0.B028", kernels="8.3.T5.0.B028")
    toolkit(root, "8.0.0.alpha002")
    toolkit(root, "8.0.RC3")
    versions = [tk["version"] for tk in installed_toolkits(root, ARCH)]
    assert sorted(versions) == sorted(["8.3.T5.0.B028", "8.0.0.alpha002", "8.0.RC3"])
    # the build-internal one cannot be ordered: it comes last
    assert versions[-1] == "8.3.T5.0.B028"
    assert package_state("toolkit", root, "8.3.T5.0.B028", ARCH) == (None, True)
    assert package_state("kernels", root, "8.3.T5.0.B028", ARCH) == (None, True)


def test_package_state_new_version_is_not_installed(tmp_path):
    root = str(tmp_path)
    toolkit(root, "8.0.0", kernels="8.0.0")
    os.symlink("8.0.0", os.path.join(root, "ascend-toolkit", "latest"))
    assert package_state("toolkit", root, "8.0.0", ARCH) == ("8.0.0", True)
    assert package_state("toolkit", root, "8.1.RC1", ARCH) == ("8.0.0", False)
    assert package_state("kernels", root, "8.1.RC1", ARCH) == ("8.0.0", False)
    toolkit(root, "8.1.RC1")
    assert package_state("kernels", root, "8.1.RC1", ARCH) == ("8.0.0", False)
    with pytest.raises(ValueError):
        package_state("driver", root, "8.0.0", ARCH)


# ------------------------------------------------------------------ ranges and compatibility


@pytest.mark.parametrize("spec, bounds", [
    ('">=7.6, <=8.2"', [(">=", "7.6"), ("<=", "8.2")]),
    ("[7.6,8.2]", [(">=", "7.6"), ("<=", "8.2")]),
    ("(7.6,8.2)", [(">", "7.6"), ("<", "8.2")]),
    ("8.2.RC1", [("==", "8.2.RC1")]),
    (">=24.1.rc1", [(">=", "24.1.rc1")]),
])
def test_parse_range(spec, bounds):
    assert parse_range(spec) == bounds


@pytest.mark.parametrize("version, spec, verdict", [
    ("7.6.0", ">=7.6, <=8.2", True),
    ("8.2", ">=7.6, <=8.2", True),
    ("8.3.0", ">=7.6, <=8.2", False),
    ("24.1.rc1", ">=24.1.rc1", True),
    ("23.0.0", ">=24.1.rc1", False),
    ("24.1.0", ">=24.1.rc1", True),
    ("8.3.T5.0.B028", ">=7.6", None),
    ("24.1.rc1", ">=7.6.T13.0.B094", None),
    ("24.1.rc1", "", None),
    # a list of intervals, any one may hold (310P 25.3.rc1 driver version.info, compatible_version_fw)
    ("6.4.12", "[6.4.0,6.4.99],[7.0.0,8.9.9]", True),
    ("7.5.0.2.220", "[6.4.0,6.4.99],[7.0.0,8.9.9]", True),
    ("6.5.0", "[6.4.0,6.4.99],[7.0.0,8.9.9]", False),
    ("9.0.0", "[6.4.0,6.4.99],[7.0.0,8.9.9]", False),
    ("7.5.T1", "[6.4.0,6.4.99],[7.0.0,8.9.9]", None),
])
def test_in_range(version, spec, verdict):
    assert in_range(version, spec) is verdict


def test_compatible():
    result = compatibility("8.0.0", "8.0.0", "24.1.rc1", {"driver": ">=23.0"})
    assert result == {"ok": True, "problems": [], "warnings": []}


def test_kernels_of_another_version_are_refused_naming_both():
    result = compatibility("8.1.RC1", "8.0.0", "24.1.rc1", {})
    assert not result["ok"]
    assert "8.0.0" in result["problems"][0] and "8.1.RC1" in result["problems"][0]


def test_kernels_version_compares_as_a_version():
    assert compatibility("8.0.RC3", "8.0.rc3.0", None, {})["ok"]


def test_driver_too_old_is_refused_naming_both():
    result = compatibility("8.2.RC1", "8.2.RC1", "24.1.rc1", {"driver": ">=25.0.rc1"})
    assert result["problems"] == ["CANN 8.2.RC1 needs NPU driver >=25.0.rc1 (required_package_driver_version) "
                                  "but the installed driver is 24.1.rc1"]


def test_uncomparable_driver_is_a_warning_not_a_refusal():
    result = compatibility("8.2.RC1", None, "8.3.T5.0.B028", {"driver": ">=7.6"})
    assert result["ok"] and "8.3.T5.0.B028" in result["warnings"][0]


def test_no_driver_is_a_warning():
    result = compatibility("8.2.RC1", None, None, {"driver": ">=7.6"})
    assert result["ok"] and "no installed driver" in result["warnings"][0]


# ------------------------------------------------------------------ package version data


def fake_package(tmp_path, version_info):
    path = tmp_path / "Ascend-cann-kernels-910b_8.2.RC1_linux-aarch64.run"
    path.write_text("#!/bin/bash\nexit 0\n")
    calls = []

    def run(argv):
        calls.append(argv)
        if version_info is None:
            return 2, "", "tar: ./version.info: Not found in archive"
        return 0, version_info, ""
    return str(path), run, calls


def test_package_data_is_read_through_makeself_tar(tmp_path):
    path, run, calls = fake_package(tmp_path, fixture("cann_kernels_version.info"))
    query = CannQuery(run, str(tmp_path), ARCH, driver_version="24.1.rc1")
    result = query.gather(kernels_package=path, toolkit_version="8.2.RC1")
    assert calls == [["/bin/bash", path, "--tar", "xOf", "./version.info"]]
    assert result["packages"]["kernels"]["version"] == "8.2.RC1"
    assert result["packages"]["kernels"]["build"] == "8.2.0.0.201"
    # the fixture's range (>=7.6, <=8.2) does not hold 24.1.rc1
    assert not result["compatibility"]["ok"]
    assert "24.1.rc1" in result["compatibility"]["problems"][0]


def test_package_without_version_data_falls_back_to_the_configured_version(tmp_path):
    path, run, _calls = fake_package(tmp_path, None)
    result = CannQuery(run, str(tmp_path), ARCH, "24.1.rc1").gather(kernels_package=path, toolkit_version="8.2.RC1")
    assert result["packages"]["kernels"] == {"path": path, "version": "8.2.RC1", "build": None, "required": {},
                                             "data": False}
    assert result["compatibility"]["ok"]


def test_gather_without_packages_reports_only_the_state(tmp_path):
    result = CannQuery(lambda argv: (0, "", ""), str(tmp_path), ARCH).gather()
    assert set(result) == {"active", "toolkits", "versions", "driver_version"}


def test_the_release_check_and_the_cann_roles_check_give_one_verdict():
    """cann_info.driver_fit is the one implementation: ascend_release.check_cann_driver says the same."""
    from ansible_collections.ascendops.cluster.plugins.module_utils import ascend_release

    cases = {("24.1.rc1", ">=25.0.rc1"): "problem", ("25.0.rc1.1", ">=25.0.rc1"): None,
             ("8.3.T5.0.B028", ">=7.6"): "warning", (None, ">=7.6"): "warning"}
    for (driver, spec), kind in cases.items():
        result = compatibility("8.2.RC1", None, driver, {"driver": spec})
        findings = ascend_release.check_cann_driver("n1", "8.2.RC1", {"driver": spec}, driver)
        sentences = result["problems"] + result["warnings"]
        if kind is None:
            assert sentences == [] and findings == []
            continue
        assert len(sentences) == 1 and len(findings) == 1
        assert bool(result["problems"]) == (kind == "problem")
        assert findings[0]["msg"].startswith("n1: " + sentences[0])


# ------------------------------------------------------------------ version.cfg (no install record)


def test_toolkit_without_install_record_is_read_from_its_version_cfg(tmp_path):
    """Images and older layouts without ``<arch>-linux/ascend_toolkit_install.info``: the toolkit
    directory's version.cfg names the release (the install record wins where both exist)."""
    root = str(tmp_path)
    base = os.path.join(root, "ascend-toolkit", "8.0.0")
    write(os.path.join(base, "version.cfg"), fixture("cann_version.cfg"))
    os.symlink("8.0.0", os.path.join(root, "ascend-toolkit", "latest"))
    active = active_toolkit(root, ARCH)
    assert active["installed"] and active["version"] == "8.0.0" and active["innerversion"] == "7.6.0.1.220"
    assert active["file"] == os.path.join(os.path.realpath(base), "version.cfg")
    assert [tk["version"] for tk in installed_toolkits(root, ARCH)] == ["8.0.0"]
    toolkit(root, "8.0.0", base=base)  # the install record appears: it is read instead
    assert active_toolkit(root, ARCH)["file"].endswith("ascend_toolkit_install.info")


def test_unreadable_version_cfg_names_the_file_and_line(tmp_path):
    root = str(tmp_path)
    base = os.path.join(root, "ascend-toolkit", "8.0.0")
    write(os.path.join(base, "version.cfg"), "# version: 1.0\ntoolkit 8.0.0\n")
    os.symlink("8.0.0", os.path.join(root, "ascend-toolkit", "latest"))
    with pytest.raises(cann_info.RecordError, match=r"8.0.0/version.cfg: cannot read the line 'toolkit 8.0.0'"):
        active_toolkit(root, ARCH)
