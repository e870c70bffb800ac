"""The metrics timer's runner: the module_utils it is given suffice, with Python's standard library only."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_collections.ascendops.cluster.plugins.module_utils.prometheus_textfile import validate
from ansible_collections.ascendops.cluster.tests.unit.plugins.modules.ascend_module_harness import (
    fixture_text,
    write_script,
)

ROOT = Path(__file__).resolve().parents[3]
MODULE_UTILS = ROOT / "plugins" / "module_utils"
RUNNER = ROOT / "roles" / "launch" / "files" / "ascendops-metrics-textfile"
LISTED = yaml.safe_load((ROOT / "roles/launch/vars/main.yml").read_text())["__launch_metrics_module_utils"]
# Without Ansible on the path: the python of the system (no site-packages), else this one isolated.
PYTHON = [shutil.which("python3", path="/usr/bin") or sys.executable, "-I", "-S"]


def closure(name):
    todo, seen = [name], set()
    while todo:
        mod = todo.pop()
        if mod not in seen:
            seen.add(mod)
            source = (MODULE_UTILS / f"{mod}.py").read_text()
            todo += re.findall(r"ascendops\.cluster\.plugins\.module_utils\.(\w+)", source)
            for names in re.findall(r"ascendops\.cluster\.plugins\.module_utils import \(?([\w, ]+)", source):
                todo += [n.strip() for n in names.split(",") if n.strip()]
    return seen


def test_the_role_copies_every_module_utils_file_the_metrics_need():
    assert sorted(LISTED) == sorted(closure("ascend_metrics"))


@pytest.fixture
def node(tmp_path):
    lib = tmp_path / "lib"
    dest = lib / "ansible_collections" / "ascendops" / "cluster" / "plugins" / "module_utils"
    dest.mkdir(parents=True)
    for name in LISTED:
        shutil.copy(MODULE_UTILS / f"{name}.py", dest / f"{name}.py")
    textfile = tmp_path / "textfile_collector"
    textfile.mkdir()
    status = tmp_path / "status.json"
    status.write_text(json.dumps({"schema": 1, "job": "llama3", "state": "running", "step": 7, "steps": 10,
                                  "loss": 3.5, "updated_at": 1764633600}))
    (tmp_path / "usages").write_text(fixture_text("npu_smi_usages_910b.txt"))
    (tmp_path / "common").write_text(fixture_text("npu_smi_common_910b.txt").replace(": 1\n", ": 0\n", 1))
    smi = write_script(tmp_path / "npu-smi", f"""#!/bin/sh
case "$*" in
  "info -l") printf '\\tTotal Count : 1\\n\\n\\tNPU ID : 0\\n\\tChip Count : 1\\n';;
  "info -t usages -i 0") cat {tmp_path}/usages;;
  "info -t common -i 0") cat {tmp_path}/common;;
  *) echo Error; exit 1;;
esac
""")
    return {"lib": lib, "textfile": textfile, "status": status, "smi": smi}


def run(node, *more):
    return subprocess.run(PYTHON + [str(RUNNER), "--lib", str(node["lib"]), "--directory", str(node["textfile"]),
                                    "--node", "node1", "--status-file", str(node["status"]), *more],
                          capture_output=True, text=True, check=False)


def test_the_runner_writes_the_metrics_without_ansible(node):
    proc = run(node, "--npu-smi", node["smi"])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["changed"] is True
    text = (node["textfile"] / "ascendops.prom").read_text()
    validate(text)
    assert 'ascend_train_step{node="node1",job="llama3"} 7\n' in text
    assert 'ascend_npu_up{node="node1",npu="0",job="llama3"} 1\n' in text
    assert json.loads(run(node, "--npu-smi", node["smi"]).stdout)["changed"] is False


def test_the_runner_fails_on_a_missing_directory_and_reports_a_missing_npu_smi(node, tmp_path):
    proc = run(node, "--directory", str(tmp_path / "absent"))
    assert proc.returncode == 1 and "textfile collector directory" in proc.stderr
    proc = run(node, "--npu-smi", str(tmp_path / "no-npu-smi"))
    assert proc.returncode == 0 and "npu-smi not found" in json.loads(proc.stdout)["npu_error"]
