"""sha256sums: the package manifest every package is checked against."""

import pytest
from ansible_collections.ascendops.cluster.plugins.filter.packages import (
    FilterModule,
    cann_package_files,
    driver_package_file,
    sha256sums,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.run_package import parse_package_filename

A = "a" * 64
B = "B" * 64


def test_parses_sha256sum_output_both_modes():
    text = (f"{A}  Ascend-hdk-910b-npu-driver_24.1.rc1_linux-x86_64.run\n"
            f"{B} *Ascend-hdk-910b-npu-firmware_7.5.0.2.220.run\n")
    assert sha256sums(text) == {
        "Ascend-hdk-910b-npu-driver_24.1.rc1_linux-x86_64.run": A,
        "Ascend-hdk-910b-npu-firmware_7.5.0.2.220.run": B.lower(),
    }


def test_skips_blanks_and_comments_and_strips_directories():
    assert sha256sums(f"# manifest\n\n{A}  ./sub/pkg.run\n") == {"pkg.run": A}


@pytest.mark.parametrize("bad", [f"{A[:-1]}  short.run", "not a manifest line", f"{A}pkg.run"])
def test_malformed_line_is_an_error(bad):
    with pytest.raises(ValueError, match="line 1"):
        sha256sums(bad)


def test_conflicting_entries_are_an_error():
    with pytest.raises(ValueError, match="listed twice"):
        sha256sums(f"{A}  pkg.run\n{B}  pkg.run\n")
    assert sha256sums(f"{A}  pkg.run\n{A}  pkg.run\n") == {"pkg.run": A}


def test_registered_with_ansible():
    assert FilterModule().filters()["sha256sums"] is sha256sums


# ------------------------------------------------------------------ cann_package_files

@pytest.mark.parametrize("version, kernels", [
    ("8.0.RC3", "Ascend-cann-kernels-910b_8.0.RC3_linux.run"),
    ("8.0.0", "Ascend-cann-kernels-910b_8.0.0_linux-aarch64.run"),
    ("8.1.RC1", "Ascend-cann-kernels-910b_8.1.RC1_linux-aarch64.run"),
    ("8.0.0.alpha002", "Ascend-cann-kernels-910b_8.0.0.alpha002_linux-aarch64.run"),
    ("8.3.T5.0.B028", "Ascend-cann-kernels-910b_8.3.T5.0.B028_linux-aarch64.run"),
    ("8.5.0", "Ascend-cann-910b-ops_8.5.0_linux-aarch64.run"),
    ("9.0.RC1", "Ascend-cann-910b-ops_9.0.RC1_linux-aarch64.run"),
])
def test_cann_package_files(version, kernels):
    files = cann_package_files(version, "910b", "aarch64")
    assert files == {"toolkit": f"Ascend-cann-toolkit_{version}_linux-aarch64.run", "kernels": kernels}
    assert FilterModule().filters()["cann_package_files"] is cann_package_files


@pytest.mark.parametrize("bad", ["", "latest"])
def test_cann_package_files_refuses_non_versions(bad):
    with pytest.raises(ValueError):
        cann_package_files(bad, "910b", "aarch64")


def test_driver_package_file_is_the_name_npu_driver_installs_and_parses_back():
    assert driver_package_file("24.1.rc1", "910b", "aarch64") == "Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run"
    assert driver_package_file("25.0.rc1.1", "a3", "x86_64") == "Atlas-A3-hdk-npu-driver_25.0.rc1.1_linux-x86_64.run"
    parsed = parse_package_filename(driver_package_file("24.1.rc1", "910b", "x86_64"))
    assert (parsed.kind, parsed.version, parsed.arch) == ("driver", "24.1.rc1", "x86_64")
    assert "driver_package_file" in FilterModule().filters()
    with pytest.raises(ValueError, match="empty driver version"):
        driver_package_file(" ", "910b", "x86_64")


# ------------------------------------------------------------------ package settings (the roles' settings checks)

def _values(source="controller", mirror="", manifest="SHA256SUMS", own=None):
    """The collection-wide values, with the role's own where `own` ({key: value}) sets one."""
    wide = {"package_source": source, "package_dir": "/srv/ascend", "mirror_url": mirror, "package_manifest": manifest}
    own = own or {}
    return {key: [own.get(key, value), value] for key, value in wide.items()}


def test_package_settings_ok_reads_the_role_s_own_values():
    from ansible_collections.ascendops.cluster.plugins.filter.packages import package_settings_ok

    assert package_settings_ok(_values())
    assert package_settings_ok(_values("mirror", "https://mirror.example/ascend/"))
    assert not package_settings_ok(_values("mirror"))
    assert not package_settings_ok(_values(manifest=""))
    assert not package_settings_ok(_values(own={"package_source": "http"}))
    assert package_settings_ok(_values("mirror", own={"package_source": "controller"}))
    with pytest.raises(ValueError, match="unknown keys package_src"):
        package_settings_ok({"package_src": ["controller", "controller"]})


def test_package_settings_problem_is_the_packages_check_message_naming_what_the_user_wrote():
    from ansible_collections.ascendops.cluster.plugins.filter.packages import package_settings_problem

    assert package_settings_problem(_values(), {}, "n1", "cann") == ""
    # nothing set by the host: the collection-wide names, the default marked where a fix names it
    assert package_settings_problem(_values("mirror"), {"ascend_package_source": "mirror"}, "n1", "npu_driver") == (
        "n1: ascend_package_source is mirror but ascend_mirror_url (its default) is empty: set ascend_mirror_url to "
        "the mirror's base URL (or ascend_package_source: controller).")
    # the role's own variable, set on the host (or differing from the collection-wide one)
    msg = package_settings_problem(_values(own={"package_source": "mirror"}), {"cann_package_source": "mirror"},
                                   "n2", "cann")
    assert msg.startswith("n2: cann_package_source is mirror but ascend_mirror_url (its default) is empty")
    msg = package_settings_problem(_values(own={"package_manifest": ""}), {}, "n3", "container_runtime")
    assert msg == "n3: container_runtime_manifest_name is empty: name the sha256sum manifest (SHA256SUMS)."
    assert FilterModule().filters()["package_settings_problem"] is package_settings_problem
