"""playbooks/reset_npu.yml (issue 43 item 8): one NPU of one node reset with npu-smi set -t reset -i N -c 0,
refused while the job's unit is active (naming stop.yml), never without -e npu; run on localhost with a fake
systemctl and npu-smi that log their calls."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "unit" / "plugins" / "fixtures"
pytestmark = pytest.mark.slow


def _tools(tmp_path, job_state):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    (tmp_path / "table.out").write_text((FIXTURES / "npu_smi_info_910b_8npu.txt").read_text()
                                        .replace("| Alarm         |", "| OK            |")
                                        .replace("| Warning       |", "| OK            |"))
    (tmp_path / "health.out").write_text((FIXTURES / "npu_smi_health.txt").read_text())
    (tmp_path / "ecc.out").write_text((FIXTURES / "npu_smi_ecc.txt").read_text())
    smi = bin_dir / "npu-smi"
    smi.write_text(
        "#!/bin/sh\n"
        f'echo "npu-smi $*" >> {log}\n'
        'if [ "$1" = "set" ]; then read answer; echo "answer=$answer" >> ' f"{log}; "
        'echo "Reset chip 0 of card $5 succeeded."; exit 0; fi\n'
        f'if [ "$3" = "health" ]; then cat {tmp_path}/health.out; exit 0; fi\n'
        f'if [ "$3" = "ecc" ]; then cat {tmp_path}/ecc.out; exit 0; fi\n'
        f"cat {tmp_path}/table.out\n")
    systemctl = bin_dir / "systemctl"
    systemctl.write_text(f'#!/bin/sh\necho "systemctl $*" >> {log}\necho {job_state}\n'
                         f'[ {job_state} = active ] && exit 0 || exit 3\n')
    for tool in (smi, systemctl):
        tool.chmod(0o755)
    return bin_dir, log


def _run(tmp_path, job_state, *extra):
    bin_dir, log = _tools(tmp_path, job_state)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("npu_nodes:\n  hosts:\n    node7:\n      ansible_connection: local\n"
                         f"      ansible_python_interpreter: {sys.executable}\n"
                         f"      ascend_run_lock_path: {tmp_path}/run.lock\n"
                         f"      ascend_install_path: {tmp_path}/Ascend\n")
    py = Path(sys.executable)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=f"{bin_dir}{os.pathsep}{py.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([str(py.parent / "ansible-playbook"), "playbooks/reset_npu.yml", "-i", str(inventory),
                           *extra], capture_output=True, text=True, env=env, cwd=REPO, timeout=300, check=False)
    calls = log.read_text().splitlines() if log.exists() else []
    return proc, calls


def test_resets_the_named_npu_and_reads_its_health(tmp_path):
    proc, calls = _run(tmp_path, "inactive", "-e", "npu=3", "--limit", "node7")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "npu-smi set -t reset -i 3 -c 0" in calls and "answer=Y" in calls
    assert "npu-smi info -t health -i 3" in calls
    assert "node7 NPU 3: Reset chip 0 of card 3 succeeded.; after the reset: healthy" in proc.stdout


def test_refused_while_the_job_runs_naming_stop_yml(tmp_path):
    proc, calls = _run(tmp_path, "active", "-e", "npu=3", "--limit", "node7")
    assert proc.returncode != 0
    assert "the training job's unit ascendops-train is active" in proc.stdout
    assert "playbooks/stop.yml" in proc.stdout
    assert not [c for c in calls if c.startswith("npu-smi set")]


def test_refused_without_an_npu_or_for_an_npu_the_node_does_not_have(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    proc, calls = _run(tmp_path / "a", "inactive")
    assert proc.returncode != 0 and "name the NPU with -e npu=N" in proc.stdout
    proc, calls = _run(tmp_path / "b", "inactive", "-e", "npu=9")
    assert proc.returncode != 0 and "npu-smi lists no NPU 9" in proc.stdout
    assert not [c for c in calls if c.startswith("npu-smi set")]
