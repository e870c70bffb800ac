"""npu_driver's __npu_driver_up_to_date (roles/npu_driver/vars/main.yml): the package module is skipped
only when this run's read shows every component installed at exactly the version asked for, and never
after the role installed something in the same run (upgrade.yml's rollback runs the role again)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow

CASES = [
    # (name, facts set before, components, expected)
    ("no read in this run", {}, ["driver", "firmware"], False),
    ("both at the versions asked for", {"__npu_driver_before": {
        "driver": {"installed": True, "version": "24.1.rc1"},
        "firmware": {"installed": True, "version": "7.5.0.2.220"}}}, ["driver", "firmware"], True),
    ("installed in this run since the read", {"__npu_driver_installed_in_run": True, "__npu_driver_before": {
        "driver": {"installed": True, "version": "24.1.rc1"},
        "firmware": {"installed": True, "version": "7.5.0.2.220"}}}, ["driver", "firmware"], False),
    ("another driver (hand-installed)", {"__npu_driver_before": {
        "driver": {"installed": True, "version": "23.0.0"},
        "firmware": {"installed": True, "version": "7.5.0.2.220"}}}, ["driver", "firmware"], False),
    ("no firmware installed", {"__npu_driver_before": {
        "driver": {"installed": True, "version": "24.1.rc1"},
        "firmware": {"installed": False, "version": None}}}, ["driver", "firmware"], False),
    ("firmware not managed", {"__npu_driver_before": {
        "driver": {"installed": True, "version": "24.1.rc1"},
        "firmware": {"installed": False, "version": None}}}, ["driver"], True),
    ("same version, other case (left to the module)", {"__npu_driver_before": {
        "driver": {"installed": True, "version": "24.1.RC1"},
        "firmware": {"installed": True, "version": "7.5.0.2.220"}}}, ["driver", "firmware"], False),
]


def test_up_to_date_decision(tmp_path):
    tasks = []
    for name, facts, components, _expected in CASES:
        tasks.append({"name": f"set {name}", "ansible.builtin.set_fact": dict(
            {"__npu_driver_before": None, "__npu_driver_installed_in_run": False},
            __npu_driver_components=components, **facts)})
        tasks.append({"name": f"report {name}", "ansible.builtin.debug": {
            "msg": "RESULT {{ __npu_driver_up_to_date | bool }}"}})
    play = [{"hosts": "localhost", "gather_facts": False,
             "vars": {"npu_driver_version": "24.1.rc1", "npu_driver_firmware_version": "7.5.0.2.220"},
             "tasks": [{"name": "role vars", "ansible.builtin.include_vars":
                        str(REPO / "roles" / "npu_driver" / "vars" / "main.yml")}] + tasks}]
    path = tmp_path / "play.yml"
    path.write_text(json.dumps(play))
    py = sys.executable
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_CALLBACK_RESULT_FORMAT="json",
               PATH=f"{Path(py).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([str(Path(py).parent / "ansible-playbook"), str(path), "-i", "localhost,",
                           "-e", f"ansible_python_interpreter={py}", "-c", "local"],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = [line.split("RESULT ", 1)[1].strip().strip('"') for line in proc.stdout.splitlines() if "RESULT " in line]
    assert got == [str(expected) for *_rest, expected in CASES], proc.stdout
