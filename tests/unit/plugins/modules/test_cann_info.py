"""cann_info against a temporary install tree and makeself-like packages that print their version.info."""

from __future__ import annotations

import os
import shlex

from ansible_collections.ascendops.cluster.plugins.modules import cann_info
from ansible_collections.ascendops.cluster.tests.unit.plugins.modules.ascend_module_harness import (
    fixture_text,
    write_script,
)

ARCH = "aarch64"
KERNELS_INFO = fixture_text("cann_kernels_version.info")  # version_dir=8.2.RC1, driver ">=7.6, <=8.2"


def put(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def package(tmp_path, name, version_info):
    """A .run stand-in answering `--tar xOf ./version.info` like a makeself archive does."""
    data = tmp_path / f"{name}.version.info"
    data.write_text(version_info)
    return write_script(tmp_path / name, "#!/bin/sh\n"
                        f'[ "$1 $2 $3" = "--tar xOf ./version.info" ] && cat {shlex.quote(str(data))}\n')


def installed(root, version, kernels=True):
    put(os.path.join(root, "ascend-toolkit", version, f"{ARCH}-linux", "ascend_toolkit_install.info"),
        f"version={version}\nversion_dir={version}\n")
    if kernels:
        put(os.path.join(root, "ascend-toolkit", version, "opp_kernel", "version.info"),
            f"Version=8.0.0.0.201\nversion_dir={version}\n")


def test_reports_installed_versions_and_the_active_one(run_module, tmp_path):
    root = str(tmp_path / "Ascend")
    installed(root, "8.0.RC3")
    installed(root, "8.0.0")
    os.symlink("8.0.0", os.path.join(root, "ascend-toolkit", "latest"))
    put(os.path.join(root, "ascend-toolkit", "set_env.sh"), "export ASCEND_TOOLKIT_HOME=x\n")
    put(os.path.join(root, "driver", "version.info"), "Version=24.1.rc1\n")
    res = run_module(cann_info.main, {"install_path": root, "arch": ARCH})
    assert not res.get("failed") and res["changed"] is False
    assert res["versions"] == ["8.0.RC3", "8.0.0"]
    assert res["active"]["version"] == "8.0.0" and res["active"]["kernels"]["version"] == "8.0.0"
    assert res["active"]["set_env"] == os.path.join(root, "ascend-toolkit", "set_env.sh")
    assert res["driver_version"] == "24.1.rc1"
    assert "compatibility" not in res


def test_checks_packages_against_the_installed_driver(run_module, tmp_path):
    root = str(tmp_path / "Ascend")
    put(os.path.join(root, "driver", "version.info"), "Version=24.1.rc1\n")
    kernels = package(tmp_path, "Ascend-cann-kernels-910b_8.2.RC1_linux-aarch64.run", KERNELS_INFO)
    toolkit = package(tmp_path, "Ascend-cann-toolkit_8.2.RC1_linux-aarch64.run",
                      "Version=8.2.RC1\nversion_dir=8.2.RC1\n")
    res = run_module(cann_info.main, {"install_path": root, "arch": ARCH, "toolkit_package": str(toolkit),
                                      "kernels_package": str(kernels), "toolkit_version": "8.2.RC1"})
    assert not res.get("failed"), res.get("msg")
    assert res["packages"]["kernels"]["build"] == "8.2.0.0.201"
    assert res["compatibility"]["ok"] is False
    assert res["compatibility"]["problems"] == [
        "CANN 8.2.RC1 needs NPU driver >=7.6, <=8.2 (required_package_driver_version) but the installed driver is "
        "24.1.rc1"]


def test_kernels_of_another_version_in_check_mode(run_module, tmp_path):
    root = str(tmp_path / "Ascend")
    kernels = package(tmp_path, "Ascend-cann-kernels-910b_8.1.RC1_linux-aarch64.run",
                      "Version=8.0.0.0.201\nversion_dir=8.0.0\n")
    res = run_module(cann_info.main, {"install_path": root, "arch": ARCH, "kernels_package": str(kernels),
                                      "toolkit_version": "8.1.RC1", "driver_version": "24.1.rc1"},
                     check_mode=True)
    assert res["compatibility"]["ok"] is False
    assert "8.0.0" in res["compatibility"]["problems"][0] and "8.1.RC1" in res["compatibility"]["problems"][0]


def test_present_says_what_the_package_module_would_leave_alone(run_module, tmp_path):
    root = str(tmp_path / "Ascend")
    installed(root, "8.0.0")
    installed(root, "8.0.RC3", kernels=False)
    os.symlink("8.0.0", os.path.join(root, "ascend-toolkit", "latest"))
    put(os.path.join(root, "driver", "version.info"), "Version=24.1.rc1\n")

    def present(version):
        res = run_module(cann_info.main, {"install_path": root, "arch": ARCH, "toolkit_version": version,
                                          "toolkit_package": str(tmp_path / "absent.run")})
        assert not res.get("failed"), res.get("msg")
        return res["present"]

    assert present("8.0.0") == {"toolkit": True, "kernels": True}
    assert present("8.0.RC3") == {"toolkit": True, "kernels": False}  # a toolkit without its kernels
    assert present("8.1.RC1") == {"toolkit": False, "kernels": False}
    assert "present" not in run_module(cann_info.main, {"install_path": root, "arch": ARCH})
