"""validate.yml's release checks on two local "nodes" whose install trees are written here from the
documented record formats (roles/ascend/tasks/release_validate.yml, the validate_nodes part): a --limit run
that would leave a node outside it on another driver is refused before any change, naming the node, the
driver and both versions; the whole inventory on one version passes; a node's installed CANN that does not
run the release's driver is refused."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "unit" / "plugins" / "fixtures"
pytestmark = pytest.mark.slow


def install_tree(root: Path, driver: str, cann: str = "8.0.0", driver_range: str = ">=23.0, <=24.1.rc3",
                 fw_range: str = "[7.0.0,7.7.99]"):
    (root / "driver").mkdir(parents=True)
    info = (FIXTURES / "driver_version.info").read_text().replace("Version=24.1.rc1", f"Version={driver}")
    (root / "driver" / "version.info").write_text(info.replace("[7.0.0,7.2.99]", fw_range))
    (root / "firmware").mkdir()
    (root / "firmware" / "version.info").write_text("Version=7.5.0.2.220\n")
    tk = root / "ascend-toolkit" / cann
    (tk / "x86_64-linux").mkdir(parents=True)
    (tk / "x86_64-linux" / "ascend_toolkit_install.info").write_text(
        f"package_name=Ascend-cann-toolkit\nversion={cann}\nversion_dir={cann}\narch=x86_64\n")
    (tk / "opp_kernel").mkdir()
    (tk / "opp_kernel" / "version.info").write_text(
        f'Version=8.0.0.0.201\nversion_dir={cann}\nrequired_package_driver_version="{driver_range}"\n')
    os.symlink(cann, root / "ascend-toolkit" / "latest")


def package(directory: Path, name: str, version_info: str, member: str = "./version.info"):
    """A .run stand-in answering `--tar xOf <member>` like a makeself archive does (a CANN package holds its
    record as ./version.info, the driver package as ./driver/version.info, the tree it installs)."""
    directory.mkdir(exist_ok=True)
    (directory / f"{name}.version.info").write_text(version_info)
    data = directory / f"{name}.version.info"
    (directory / name).write_text(f'#!/bin/sh\n[ "$1 $2 $3" = "--tar xOf {member}" ] && cat "{data}"\n')
    (directory / name).chmod(0o755)


def run(tmp_path, *extra, driver_checks=False):
    """validate.yml's release checks alone on n1 and n2; with driver_checks, after the read npu_driver's
    validate.yml makes in the same play (npu_info registered as __npu_driver_before), which they reuse."""
    py = sys.executable
    hosts = {f"n{i}": {"ansible_connection": "local", "ansible_python_interpreter": py,
                       "ascend_install_path": str(tmp_path / f"n{i}"),
                       "ascend_package_dir": str(tmp_path / "packages")} for i in (1, 2)}
    inv = tmp_path / "hosts.json"
    inv.write_text(json.dumps({"all": {"children": {"npu_nodes": {"hosts": hosts}}}}))
    markers = tmp_path / "changed"
    markers.mkdir(exist_ok=True)
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([
        {"name": "Release checks", "hosts": "npu_nodes", "gather_facts": False, "any_errors_fatal": True,
         "tasks": ([{"name": "NPU driver | Read the NPUs and installed versions", "ascendops.cluster.npu_info": {
             "install_path": "{{ ascend_install_path }}"}, "register": "__npu_driver_before"}] if driver_checks else [])
         + [{"name": "Release", "ansible.builtin.include_role": {
             "name": "ascendops.cluster.ascend", "tasks_from": "release_validate"}}]},
        {"name": "Stand-in stage", "hosts": "npu_nodes", "gather_facts": False,
         "tasks": [{"name": "Stage | Change something", "ansible.builtin.copy": {
             "content": "changed\n", "dest": f"{markers}/{{{{ inventory_hostname }}}}", "mode": "0644"}}]},
    ], sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=f"{Path(py).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([str(Path(py).parent / "ansible-playbook"), str(play), "-i", str(inv), *extra],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=300, check=False)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split()), sorted(p.name for p in markers.iterdir())


def test_a_limit_run_leaving_a_node_on_another_driver_is_refused_before_any_change(tmp_path):
    install_tree(tmp_path / "n1", "24.1.rc1")
    install_tree(tmp_path / "n2", "23.0.0")
    rc, text, changed = run(tmp_path, "--limit", "n1")
    assert rc != 0
    assert ("n2: driver 23.0.0 is installed there (outside this run: --limit) but the nodes of this run end on "
            "driver 24.1.rc1 (release 910b-cann8.0.0)") in text
    assert changed == []


def test_a_limit_run_whose_other_nodes_carry_the_release_passes(tmp_path):
    install_tree(tmp_path / "n1", "24.1.rc1")
    install_tree(tmp_path / "n2", "24.1.rc1")
    rc, text, changed = run(tmp_path, "--limit", "n1")
    assert rc == 0, text[-3000:]
    assert changed == ["n1"]


def test_the_whole_inventory_in_one_run_brings_every_node_to_the_release(tmp_path):
    install_tree(tmp_path / "n1", "24.1.rc1")
    install_tree(tmp_path / "n2", "23.0.0")
    rc, text, changed = run(tmp_path)
    assert rc == 0, text[-3000:]
    assert changed == ["n1", "n2"]


def test_an_installed_cann_that_does_not_run_the_drivers_the_site_sets_is_refused(tmp_path):
    install_tree(tmp_path / "n1", "24.1.rc1")
    install_tree(tmp_path / "n2", "24.1.rc1")
    rc, text, changed = run(tmp_path, "-e", "npu_driver_version=25.0.rc1.1")
    assert rc != 0
    assert ("n1: CANN 8.0.0 needs NPU driver >=23.0, <=24.1.rc3 (required_package_driver_version) but the driver "
            "this node ends on is 25.0.rc1.1") in text
    assert changed == []


def cann_8_2_packages(directory):
    """CANN 8.2.RC1 toolkit and kernels whose version.info needs driver >= 25.0.rc1."""
    arch = os.uname().machine
    package(directory, f"Ascend-cann-toolkit_8.2.RC1_linux-{arch}.run", "Version=8.2.RC1\nversion_dir=8.2.RC1\n")
    package(directory, f"Ascend-cann-kernels-910b_8.2.RC1_linux-{arch}.run",
            'Version=8.2.0.0.201\nversion_dir=8.2.RC1\nrequired_package_driver_version=">=25.0.rc1"\n')


def test_a_cann_the_site_sets_is_refused_when_its_packages_need_another_driver(tmp_path):
    install_tree(tmp_path / "n1", "24.1.rc1")
    install_tree(tmp_path / "n2", "24.1.rc1")
    cann_8_2_packages(tmp_path / "packages")
    rc, text, changed = run(tmp_path, "-e", "cann_version=8.2.RC1")
    assert rc != 0
    assert ("n1: CANN 8.2.RC1 needs NPU driver >=25.0.rc1 (required_package_driver_version) but the driver this "
            "node ends on is 24.1.rc1") in text
    assert changed == []


def test_a_cann_the_site_sets_passes_with_the_driver_its_packages_need(tmp_path):
    install_tree(tmp_path / "n1", "24.1.rc1")
    install_tree(tmp_path / "n2", "24.1.rc1")
    cann_8_2_packages(tmp_path / "packages")
    rc, text, changed = run(tmp_path, "-e", "cann_version=8.2.RC1", "-e", "npu_driver_version=25.0.rc1.1")
    assert rc == 0, text[-3000:]
    assert changed == ["n1", "n2"]


def driver_package(directory: Path, version: str, fw_range: str | None):
    """The driver package a run installs, its record (./driver/version.info) declaring fw_range (None: no key)."""
    info = (FIXTURES / "driver_version.info").read_text().replace("Version=24.1.rc1", f"Version={version}")
    info = "".join(line for line in info.splitlines(keepends=True)
                   if fw_range is not None or not line.startswith("compatible_version_fw"))
    package(directory, f"Ascend-hdk-910b-npu-driver_{version}_linux-{os.uname().machine}.run",
            info.replace("[7.0.0,7.2.99]", fw_range or ""), member="./driver/version.info")


# The release's firmware (7.5.0.2.220) with a driver the site sets (25.0.rc1.1, which the installed CANN's
# range takes): judged by the range in the new driver's package, not by the installed driver's.
def upgrade_run(tmp_path, package_range, installed_range="[7.0.0,7.7.99]"):
    for n in ("n1", "n2"):
        install_tree(tmp_path / n, "24.1.rc1", driver_range=">=23.0", fw_range=installed_range)
    if package_range != "no package":
        driver_package(tmp_path / "packages", "25.0.rc1.1", package_range)
    return run(tmp_path, "-e", "npu_driver_version=25.0.rc1.1")


def test_a_driver_upgrade_whose_package_range_excludes_the_end_firmware_is_refused(tmp_path):
    rc, text, changed = upgrade_run(tmp_path, "[7.6.0,7.7.99]")
    assert rc != 0
    assert ("n1: firmware 7.5.0.2.220 is outside driver 25.0.rc1.1's compatible_version_fw=[7.6.0,7.7.99] "
            "(version.info)") in text
    assert "release 910b-cann8.0.0; refused before any change" in text
    assert changed == []


def test_a_driver_upgrade_whose_package_range_holds_the_end_firmware_passes(tmp_path):
    # the installed driver's range would refuse 7.5.0.2.220: the new driver's is the one that counts
    rc, text, changed = upgrade_run(tmp_path, "[7.5.0,7.7.99]", installed_range="[7.0.0,7.2.99]")
    assert rc == 0, text[-3000:]
    assert "Read the version.info of the driver package this run installs" in text
    assert changed == ["n1", "n2"]


@pytest.mark.parametrize("package_range", ["no package", None])
def test_a_driver_upgrade_without_a_readable_range_is_not_judged_by_the_installed_driver(tmp_path, package_range):
    rc, text, changed = upgrade_run(tmp_path, package_range, installed_range="[7.0.0,7.2.99]")
    assert rc == 0, text[-3000:]
    assert changed == ["n1", "n2"]


def test_nodes_that_keep_their_driver_and_cann_read_no_package(tmp_path):
    install_tree(tmp_path / "n1", "24.1.rc1")
    install_tree(tmp_path / "n2", "24.1.rc1")
    # the release's packages are on the controller; the driver's would refuse the firmware if it were read
    arch = os.uname().machine
    package(tmp_path / "packages", f"Ascend-cann-toolkit_8.0.0_linux-{arch}.run", "Version=8.0.0\nversion_dir=8.0.0\n")
    package(tmp_path / "packages", f"Ascend-cann-kernels-910b_8.0.0_linux-{arch}.run",
            'Version=8.0.0.0.201\nversion_dir=8.0.0\nrequired_package_driver_version=">=23.0"\n')
    driver_package(tmp_path / "packages", "24.1.rc1", "[7.6.0,7.7.99]")
    rc, text, changed = run(tmp_path)
    assert rc == 0, text[-3000:]
    # no node changes its driver or CANN: the package reads are not even included (one skipped task)
    # both nodes skip it, in whichever order their results come back (n2's may come first under load)
    section = re.search(r"Read the packages this run installs \(controller\)\] \**(.*?)(?:TASK \[|$)", text)
    assert section, text[-3000:]
    assert "skipping: [n1]" in section.group(1) and "skipping: [n2]" in section.group(1), section.group(1)
    for task in ("Read the driver range of the CANN packages this run installs",
                 "Read the version.info of the driver package this run installs"):
        assert task not in text, task
    assert changed == ["n1", "n2"]


def test_a_cann_upgrade_on_one_node_reads_the_packages_once_for_the_run(tmp_path):
    # n1 (which runs the controller's read for the run) already has the CANN; n2 gets it in this run
    install_tree(tmp_path / "n1", "24.1.rc1", cann="8.2.RC1", driver_range=">=25.0.rc1")
    install_tree(tmp_path / "n2", "24.1.rc1")
    cann_8_2_packages(tmp_path / "packages")
    rc, text, changed = run(tmp_path, "-e", "cann_version=8.2.RC1")
    assert rc != 0
    # n2's new CANN judged by its packages' range, n1's by its installed record
    assert ("n2: CANN 8.2.RC1 needs NPU driver >=25.0.rc1 (required_package_driver_version) but the driver this "
            "node ends on is 24.1.rc1") in text
    assert "n1: CANN 8.2.RC1 needs" in text
    assert changed == []
    rc, text, changed = run(tmp_path, "-e", "cann_version=8.2.RC1", "-e", "npu_driver_version=25.0.rc1.1")
    assert rc == 0, text[-3000:]
    assert re.search(r"Read the driver range of the CANN packages this run installs \(controller\)\] \** "
                     r"ok: \[n1 -> localhost\]", text), text[-3000:]
    assert changed == ["n1", "n2"]


@pytest.mark.parametrize("driver_checks", [False, True])
def test_the_driver_stages_read_is_reused_and_judges_the_same(tmp_path, driver_checks):
    install_tree(tmp_path / "n1", "24.1.rc1")
    install_tree(tmp_path / "n2", "24.1.rc1")
    rc, text, changed = run(tmp_path, "-e", "npu_driver_version=25.0.rc1.1", driver_checks=driver_checks)
    assert rc != 0
    assert ("n1: CANN 8.0.0 needs NPU driver >=23.0, <=24.1.rc3 (required_package_driver_version) but the driver "
            "this node ends on is 25.0.rc1.1") in text
    assert changed == []
    # n1's result within that task's block (the hosts' lines come in any order)
    read = re.search(r"Read the installed driver, firmware and CANN \(unless the driver stage's checks did\)\] \**"
                     r"(?:(?!TASK \[).)*?(\w+): \[n1\]", text, re.S)
    assert read and read.group(1) == ("skipping" if driver_checks else "ok"), text[-3000:]
