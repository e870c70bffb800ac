"""scripts/failure-digest.py: the lines `make test` prints after its summary for a failed step."""

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("failure_digest", REPO / "scripts" / "failure-digest.py")
digest_module = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(digest_module)

# Two scenarios as molecule 25 prints them (ansible's output boxed by "  │ "): the first provokes a refusal on
# purpose and passes, the second fails in its converge.
LOG = """\
INFO     refusals ➜ converge: Executing
  │ TASK [Validate with eight NPUs expected] ***
  │ fatal: [node]: FAILED! =>
  │     msg: expected refusal
INFO     refusals ➜ verify: Executing
INFO     cluster ➜ converge: Executing
  │ TASK [Settings | Check what the user set] ***
  │ failed: [node1] (item=launch) =>
  │     changed: false
  │     msg: 'Task failed: no attribute default_ipv4'
CRITICAL Ansible return code was 2, command was: ansible-playbook converge.yml
ERROR    cluster ➜ converge: Executed: Failed
"""


def test_a_failed_scenario_is_named_with_its_action_task_and_message_and_expected_refusals_are_left_out():
    lines = digest_module.digest(LOG.splitlines(), 8)
    assert lines[0] == "molecule scenario cluster, action converge"
    assert lines[1] == "TASK [Settings | Check what the user set]"
    assert lines[2] == "failed: [node1] (item=launch) => msg: 'Task failed: no attribute default_ipv4'"
    assert not any("expected refusal" in line for line in lines)


def test_pytest_failures_and_a_log_without_one():
    assert digest_module.digest(["x", "FAILED tests/test_a.py::test_b - AssertionError: real", "y"], 8) == [
        "FAILED tests/test_a.py::test_b - AssertionError: real"]
    assert digest_module.digest(["all fine", "the end"], 8) == [
        "no failure line found; the log ends:", "all fine", "the end"]


def test_ansible_test_sanity_findings():
    log = ["Running sanity test \"pep8\"", "ERROR: Found 1 pep8 issue(s) which need to be resolved:",
           "ERROR: plugins/module_utils/x.py:338:50: E127: continuation line over-indented for visual indent",
           "FATAL: The 1 sanity test(s) listed below (out of 24) failed. See error output above for details.", "pep8"]
    assert digest_module.digest(log, 8) == [
        "ERROR: plugins/module_utils/x.py:338:50: E127: continuation line over-indented for visual indent"]
