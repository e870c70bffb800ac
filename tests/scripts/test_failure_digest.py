"""scripts/failure-digest.py: the lines `make test` prints after its summary for a failed step, read from
the JUnit files of Ansible's junit callback and pytest, and from molecule's own messages in the log."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "failure-digest.py"
SPEC = importlib.util.spec_from_file_location("failure_digest", SCRIPT)
digest_module = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(digest_module)
VENV_BIN = Path(sys.executable).parent

# A localhost playbook: an ignored failure, a rescued one, then a loop whose second item fails and
# ends the play (the failures before the last one are expected).
PLAYBOOK = """\
- name: Digest probe
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Probe | Ignored failure
      ansible.builtin.fail:
        msg: ignored on purpose
      ignore_errors: true
    - name: Probe | Rescued
      block:
        - name: Probe | Fails inside a block
          ansible.builtin.fail:
            msg: rescued on purpose
      rescue:
        - name: Probe | Rescue
          ansible.builtin.debug:
            msg: rescued
    - name: Probe | Check each item
      ansible.builtin.assert:
        that: item != 'bad'
        fail_msg: "item {{ item }} is bad: set probe_items without it"
      loop: [good, bad]
"""


def _playbook_bin() -> str:
    found = VENV_BIN / "ansible-playbook"
    if found.exists():
        return str(found)
    which = shutil.which("ansible-playbook")
    if not which:
        pytest.skip("ansible-playbook is not installed")
    return which


def _run_probe(tmp_path: Path, junit: Path) -> str:
    book = tmp_path / "probe.yml"
    book.write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_CALLBACKS_ENABLED="ansible.builtin.junit", JUNIT_OUTPUT_DIR=str(junit),
               JUNIT_HIDE_TASK_ARGUMENTS="true",  # as molecule-all.sh sets it
               ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([_playbook_bin(), "-i", "localhost,", str(book)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def test_ansible_junit_callback_report_names_the_task_host_and_the_failed_item(tmp_path):
    junit = tmp_path / "junit" / "probe-scenario"
    log = _run_probe(tmp_path, junit)
    files = list(junit.glob("probe-*.xml"))
    assert len(files) == 1  # the callback's own file: <playbook>-<time>.xml
    failures = digest_module.junit_failures(files[0])
    # the ignored failure is no failure for the callback; the rescued one is, and the loop
    assert [what.split(": ", 1)[0] for _, what in failures] == [
        "[localhost] Digest probe", "[localhost] Digest probe"]
    assert "rescued on purpose" in failures[0][1]
    assert failures[1] == ("playbook probe",
                           "[localhost] Digest probe: Probe | Check each item: (item=bad) item bad is bad: "
                           "set probe_items without it")
    lines = digest_module.digest(log.splitlines(), 8, [tmp_path / "junit"])
    assert lines == ["playbook probe", failures[0][1], failures[1][1]]  # not ansible-core's [ERROR] lines
    # no JUnit file (a playbook that never started): ansible-core's [ERROR] lines instead
    assert "[ERROR]: Task failed: Action failed: item bad is bad: set probe_items without it" in \
        digest_module.digest(log.splitlines(), 8, [tmp_path / "nothing"])


def test_only_the_failed_molecule_scenarios_files_are_read(tmp_path):
    """Two scenarios as molecule prints them: the first provokes a refusal on purpose and passes, the second
    fails in its converge; each scenario's JUnit files in a folder of its name (molecule-all.sh)."""
    log = """\
INFO     refusals ➜ converge: Executing
  │ fatal: [node]: FAILED! =>
INFO     refusals ➜ verify: Executing
INFO     cluster ➜ converge: Executing
CRITICAL Ansible return code was 2, command was: ansible-playbook converge.yml
ERROR    cluster ➜ converge: Executed: Failed
"""

    def suite(name, task, message):
        return (f'<?xml version="1.0" ?><testsuites><testsuite name="{name}" tests="2">'
                f'<testcase name="[node1] Converge: Facts" classname="converge.yml:3"/>'
                f'<testcase name="[node1] Converge: {task}" classname="converge.yml:9">'
                f'<failure message="{message}">{{}}</failure></testcase></testsuite></testsuites>')

    (tmp_path / "refusals").mkdir()
    (tmp_path / "cluster").mkdir()
    (tmp_path / "refusals" / "converge-1.xml").write_text(suite("converge", "Validate", "expected refusal"))
    (tmp_path / "cluster" / "converge-2.xml").write_text(
        suite("converge", "Settings | Check what the user set", "no attribute default_ipv4"))
    lines = digest_module.digest(log.splitlines(), 8, [tmp_path])
    assert lines == ["molecule scenario cluster, action converge", "playbook converge",
                     "[node1] Converge: Settings | Check what the user set: no attribute default_ipv4",
                     "CRITICAL Ansible return code was 2, command was: ansible-playbook converge.yml"]


def test_the_last_failures_of_runs_in_the_order_they_ended(tmp_path):
    """A nested run's file is written before its parent's: the parent's failure comes last."""
    for n, (name, msg) in enumerate([("nested", "expected in a nested run"), ("side_effect", "the real one")]):
        f = tmp_path / f"{name}-{n}.xml"
        f.write_text(f'<testsuite name="{name}"><testcase name="[n] P: T{n}"><failure message="{msg}"/></testcase>'
                     "</testsuite>")
        os.utime(f, (time.time() + n, time.time() + n))
    lines = digest_module.digest([], 2, [tmp_path])
    assert lines == ["playbook nested", "[n] P: T0: expected in a nested run"]
    assert digest_module.digest([], 8, [tmp_path])[-1] == "[n] P: T1: the real one"


def test_pytest_junitxml_and_a_log_without_any_failure(tmp_path):
    test = tmp_path / "test_probe.py"
    test.write_text("def test_fine():\n    pass\n\n\ndef test_broken():\n    assert 1 + 1 == 3, 'arithmetic'\n")
    xml = tmp_path / "junit" / "pytest.xml"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
                           str(test)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout
    lines = digest_module.digest(proc.stdout.splitlines(), 8, [xml.parent])
    assert lines[0] == "test_probe"
    assert lines[1].startswith("test_broken: AssertionError: arithmetic")
    assert digest_module.digest(["all fine", "the end"], 8) == [
        "no failure found in a JUnit file or the log; the log ends:", "all fine", "the end"]


def test_ansible_test_sanity_findings_and_the_command_line(tmp_path):
    log = ["Running sanity test \"pep8\"", "ERROR: Found 1 pep8 issue(s) which need to be resolved:",
           "ERROR: plugins/module_utils/x.py:338:50: E127: continuation line over-indented for visual indent",
           "FATAL: The 1 sanity test(s) listed below (out of 24) failed. See error output above for details.", "pep8"]
    assert digest_module.digest(log, 8) == [
        "ERROR: plugins/module_utils/x.py:338:50: E127: continuation line over-indented for visual indent"]
    path = tmp_path / "sanity.log"
    path.write_text("\n".join(log) + "\n")
    proc = subprocess.run([sys.executable, str(SCRIPT), "sanity", str(path), "--junit", str(tmp_path / "none")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout == "sanity: ERROR: plugins/module_utils/x.py:338:50: E127: continuation line over-indented " \
                          "for visual indent\n"
