"""playbooks/versions.yml against two local "nodes" whose install trees are written here from the
documented record formats (no NPUs, no engine): rows mismatches first, the vendor rules, nodes that
differ, one JSON document, nothing changed (also in check mode)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "unit" / "plugins" / "fixtures"
pytestmark = pytest.mark.slow


def install_tree(root: Path, driver: str, firmware: str, cann: str):
    (root / "driver").mkdir(parents=True)
    info = (FIXTURES / "driver_version.info").read_text().replace("Version=24.1.rc1", f"Version={driver}")
    (root / "driver" / "version.info").write_text(info.replace("[7.0.0,7.2.99]", "[7.0.0,7.7.99]"))
    (root / "firmware").mkdir()
    (root / "firmware" / "version.info").write_text(f"Version={firmware}\n")
    tk = root / "ascend-toolkit" / cann
    (tk / "x86_64-linux").mkdir(parents=True)
    (tk / "x86_64-linux" / "ascend_toolkit_install.info").write_text(
        f"package_name=Ascend-cann-toolkit\nversion={cann}\nversion_dir={cann}\narch=x86_64\n")
    (tk / "opp_kernel").mkdir()
    (tk / "opp_kernel" / "version.info").write_text(
        f'Version=8.2.0.0.201\nversion_dir={cann}\nrequired_package_driver_version=">=25.0.rc1"\n')
    os.symlink(cann, root / "ascend-toolkit" / "latest")
    (root / "Ascend-Docker-Runtime").mkdir()
    (root / "Ascend-Docker-Runtime" / "ascend_docker_runtime_install.info").write_text("version=v6.0.0\n")


def run(tmp_path, *extra, path_prefix=""):
    install_tree(tmp_path / "n1", "25.0.rc1.1", "7.7.0.1.231", "8.2.RC1")
    install_tree(tmp_path / "n2", "24.1.rc1", "7.7.0.1.231", "8.2.RC1")
    py = sys.executable
    hosts = {f"n{i}": {"ansible_connection": "local", "ansible_python_interpreter": py,
                       "ascend_install_path": str(tmp_path / f"n{i}")} for i in (1, 2)}
    inv = tmp_path / "hosts.json"
    inv.write_text(json.dumps({"all": {"children": {"npu_nodes": {"hosts": hosts}}}}))
    out = tmp_path / "versions.json"
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               PATH=f"{path_prefix}{Path(py).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run(
        [str(Path(py).parent / "ansible-playbook"), str(REPO / "playbooks" / "versions.yml"), "-i", str(inv),
         "-e", f"versions_json_file={out}", *extra], capture_output=True, text=True, env=env, cwd=REPO, timeout=300,
        check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout, json.loads(out.read_text())


def test_versions_against_a_release_mismatches_first_and_nodes_that_differ(tmp_path):
    stdout, doc = run(tmp_path, "-e", "ascend_release=910b-cann8.2.rc1")
    assert doc["release"] == "910b-cann8.2.rc1"
    n2 = doc["nodes"]["n2"]["rows"]
    assert (n2[0]["component"], n2[0]["status"], n2[0]["installed"]) == ("driver", "mismatch", "24.1.rc1")
    assert [r["status"] for r in doc["nodes"]["n1"]["rows"]][0] == "missing"  # image: no engine here
    assert all(r["status"] == "ok" for r in doc["nodes"]["n1"]["rows"] if r["component"] != "image")
    assert [f["component"] for f in doc["nodes"]["n2"]["findings"]] == ["driver"]
    assert ">=25.0.rc1" in doc["nodes"]["n2"]["findings"][0]["msg"]
    assert [d["component"] for d in doc["differ"]] == ["driver"]
    assert "MISMATCH driver installed 24.1.rc1 expected 25.0.rc1.1" in stdout
    recap = stdout.split("PLAY RECAP")[1]
    assert recap.count("changed=0") == 2 and "changed=1" not in recap


def test_versions_without_a_release_uses_the_roles_default_release_and_json_format(tmp_path):
    stdout, doc = run(tmp_path, "-e", "versions_format=json", "--check")
    assert doc["release"] == "910b-cann8.0.0"  # roles/ascend/defaults: ascend_release
    rows = {r["component"]: r for r in doc["nodes"]["n1"]["rows"]}
    assert rows["cann_toolkit"]["expected"] == "8.0.0" and rows["cann_toolkit"]["status"] == "mismatch"
    assert rows["image"]["status"] == "missing"  # no engine here
    assert "MISMATCH" not in stdout  # json format: no text rows


def test_a_version_the_inventory_sets_itself_is_what_the_node_is_compared_with(tmp_path):
    _stdout, doc = run(tmp_path, "-e", "versions_format=json", "-e", "cann_version=8.2.RC1")
    rows = {r["component"]: r for r in doc["nodes"]["n1"]["rows"]}
    assert rows["cann_toolkit"]["expected"] == "8.2.RC1" and rows["cann_toolkit"]["status"] == "ok"
    assert rows["driver"]["expected"] == "24.1.rc1"  # the release's: not set by the inventory


def fake_docker(tmp_path, image_cann):
    """A `docker` on PATH that knows one image: its ascendops.release label names CANN ``image_cann`` and its
    kernels' version.info (read by `docker run ... cat`) requires driver >=25.0.rc1. Calls go to calls.log."""
    label = json.dumps({"release": "910b-cann8.2.rc1", "cann": image_cann})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(f"""#!/bin/sh
echo "$*" >> {tmp_path}/calls.log
case "$1 $2" in
  "image inspect") printf '%s\\n' '{json.dumps({"ascendops.release": label})}' ;;
  "run --rm") printf 'Version=8.3.0.0.201\\nversion_dir={image_cann}\\n'
              printf 'required_package_driver_version=">=25.0.rc1"\\n' ;;
  *) exit 1 ;;
esac
""")
    (bin_dir / "docker").chmod(0o755)
    return f"{bin_dir}{os.pathsep}"


def test_the_images_cann_is_checked_against_each_hosts_driver(tmp_path):
    _stdout, doc = run(tmp_path, "-e", "ascend_release=910b-cann8.2.rc1", "-e", "versions_format=json",
                       path_prefix=fake_docker(tmp_path, "8.3.RC1"))
    n2 = [f["msg"] for f in doc["nodes"]["n2"]["findings"]]
    assert ("n2: the trainer image's CANN 8.3.RC1 needs NPU driver >=25.0.rc1 (required_package_driver_version) "
            "but the installed driver is 24.1.rc1") in " ".join(n2)
    assert not any("the trainer image's CANN" in f["msg"] for f in doc["nodes"]["n1"]["findings"])
    # another CANN than the host's: its range is read from the image, in a throwaway container
    assert "run --rm --network none --runtime runc --entrypoint cat" in (tmp_path / "calls.log").read_text()


def test_the_images_cann_installed_on_the_host_takes_the_hosts_range_without_a_container(tmp_path):
    _stdout, doc = run(tmp_path, "-e", "ascend_release=910b-cann8.2.rc1", "-e", "versions_format=json",
                       path_prefix=fake_docker(tmp_path, "8.2.RC1"))
    assert any("the trainer image's CANN 8.2.RC1 needs NPU driver >=25.0.rc1" in f["msg"]
               for f in doc["nodes"]["n2"]["findings"])
    assert "run --rm" not in (tmp_path / "calls.log").read_text()


def test_a_release_that_names_an_mcu_reports_it_not_read_rather_than_missing(tmp_path):
    import shutil

    import yaml

    releases = tmp_path / "releases"
    releases.mkdir()
    shutil.copy(REPO / "releases" / "_torch_npu.yml", releases)
    data = yaml.safe_load((REPO / "releases" / "910b-cann8.2.rc1.yml").read_text())
    data["name"], data["host"]["mcu"] = "with-mcu", "22.0.2"
    (releases / "with-mcu.yml").write_text(yaml.safe_dump(data))
    stdout, doc = run(tmp_path, "-e", "ascend_release=with-mcu", "-e", f"ascend_releases_dir={releases}")
    rows = {r["component"]: r for r in doc["nodes"]["n1"]["rows"]}
    assert (rows["mcu"]["status"], rows["mcu"]["installed"], rows["mcu"]["expected"]) == ("not read", None, "22.0.2")
    assert "NOT READ mcu installed None expected 22.0.2" in stdout
    assert rows["driver"]["status"] == "ok"
