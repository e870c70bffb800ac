"""ascend_run_lock / run_holder: one run at a time on a node; a stale holder is taken over."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ansible_collections.ascendops.cluster.plugins.module_utils import run_lock
from ansible_collections.ascendops.cluster.plugins.modules import ascend_run_lock

A = {"run_id": "ctl1:100:5000", "controller": "ctl1", "pid": 100, "playbook": "site.yml", "started": "t0"}
B = {"run_id": "ctl1:200:6000", "controller": "ctl1", "pid": 200, "playbook": "playbooks/upgrade.yml", "started": "t1"}
C = {"run_id": "ctl2:300:7000", "controller": "ctl2", "pid": 300, "playbook": "site.yml", "started": "t2"}


def take(run_module, path, holder, alive=(), stale_s=3600, check_mode=False, state="present"):
    return run_module(ascend_run_lock.main, {"path": str(path), "holder": holder, "alive": list(alive),
                                             "stale_s": stale_s, "node": "node1", "state": state},
                      check_mode=check_mode, diff=True)


def test_the_first_run_takes_the_lock_and_names_itself(run_module, tmp_path):
    path = tmp_path / "lib" / "run.lock"
    out = take(run_module, path, A)
    assert out["changed"] and out["action"] == "take"
    data = json.loads(path.read_text())
    assert {k: data[k] for k in run_lock.HOLDER_KEYS} == A
    assert data["taken"] == data["refreshed"] and oct(path.stat().st_mode & 0o777) == "0o644"
    again = take(run_module, path, A)
    assert again["action"] == "refresh" and not again["changed"] and again["holder"]["taken"] == data["taken"]


def test_a_second_live_run_is_refused_naming_the_holder(run_module, tmp_path):
    path = tmp_path / "run.lock"
    take(run_module, path, A)
    before = path.read_text()
    out = take(run_module, path, B, alive=[A["run_id"], B["run_id"]])
    assert out["failed"] and out["refused"]
    assert "another run holds the lock: site.yml (run ctl1:100:5000: pid 100 on ctl1, started t0" in out["msg"]
    assert "still running" in out["msg"] and str(path) in out["msg"]
    assert path.read_text() == before
    # from another controller, while the lock is fresh
    out = take(run_module, path, C, alive=[C["run_id"]])
    assert out["failed"] and "ascend_run_lock_stale_s" in out["msg"]
    assert path.read_text() == before


def test_a_lock_whose_run_is_gone_is_taken_over_with_a_warning(run_module, tmp_path):
    path = tmp_path / "run.lock"
    take(run_module, path, A)
    out = take(run_module, path, B, alive=[B["run_id"]])  # A's process is gone from ctl1
    assert out["changed"] and out["action"] == "takeover" and out["previous"]["run_id"] == A["run_id"]
    assert any("process is gone from ctl1" in w and "taken over" in w for w in out["warnings"])
    assert json.loads(path.read_text())["run_id"] == B["run_id"]


def test_another_controllers_lock_is_stale_only_after_stale_s():
    current = run_lock.record(C, now=1000)
    assert run_lock.decide(current, A, alive=[], stale_s=600, now=1500)["action"] == "refuse"
    assert run_lock.decide(current, A, alive=[], stale_s=600, now=1700)["action"] == "takeover"
    # a refresh by its holder keeps it fresh
    refreshed = run_lock.record(C, current, now=1650)
    assert refreshed["taken_epoch"] == 1000 and refreshed["refreshed_epoch"] == 1650
    assert run_lock.decide(refreshed, A, alive=[], stale_s=600, now=1700)["action"] == "refuse"


def test_check_mode_says_what_would_happen_and_writes_nothing(run_module, tmp_path):
    path = tmp_path / "lib" / "run.lock"
    out = take(run_module, path, A, check_mode=True)
    assert out["changed"] and out["action"] == "take" and not path.exists() and not path.parent.exists()
    take(run_module, path, A)
    before = path.read_text()
    assert take(run_module, path, B, alive=[A["run_id"]], check_mode=True)["failed"]
    assert take(run_module, path, B, alive=[], check_mode=True)["action"] == "takeover"
    assert path.read_text() == before


def test_release_removes_only_this_runs_lock(run_module, tmp_path):
    path = tmp_path / "run.lock"
    take(run_module, path, A)
    out = take(run_module, path, B, state="absent")
    assert not out["changed"] and not out["released"] and path.exists()
    assert take(run_module, path, A, state="absent", check_mode=True)["changed"] and path.exists()
    out = take(run_module, path, A, state="absent")
    assert out["changed"] and out["released"] and not path.exists()
    assert not take(run_module, path, A, state="absent")["changed"]


def test_the_lock_is_never_read_or_written_through_a_link(run_module, tmp_path):
    target = tmp_path / "shadow"
    target.write_text("root:x:0:0\n")
    path = tmp_path / "run.lock"
    path.symlink_to(target)
    out = take(run_module, path, A)
    assert out["failed"] and "without following a link" in out["msg"]
    assert target.read_text() == "root:x:0:0\n"


def test_a_corrupt_lock_is_taken_over(run_module, tmp_path):
    path = tmp_path / "run.lock"
    path.write_text("{not json")
    out = take(run_module, path, A)
    assert out["action"] == "take" and any("not JSON" in w for w in out["warnings"])


def test_the_controller_finds_its_ansible_playbook_process_and_the_live_ones(tmp_path):
    """A fake ansible-playbook runs a child that asks: the run is the parent's, and it is alive."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "ansible-playbook"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(run_lock.__file__)))))))
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, subprocess, sys\n"
        "code = ('import json, sys; sys.path.insert(0, %r);'\n"
        "        'from ansible_collections.ascendops.cluster.plugins.module_utils.run_lock import controller_holder;'\n"
        f"        'print(json.dumps(controller_holder(\"ctl\")))' % {root!r})\n"
        "child = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True)\n"
        "import os; print(json.dumps({'me': os.getpid(), 'child': json.loads(child.stdout)}))\n")
    script.chmod(0o755)
    out = json.loads(subprocess.run([str(script), "-i", "inv", "playbooks/site.yml"], capture_output=True,
                                    text=True, check=True).stdout)
    holder = out["child"]
    assert holder["pid"] == out["me"] and holder["playbook"] == "playbooks/site.yml"
    assert holder["run_id"].startswith(f"ctl:{out['me']}:") and holder["run_id"] in holder["alive"]
    assert holder["started"].endswith("Z")
    # once it has ended, its run is no longer alive
    assert holder["run_id"] not in run_lock.alive_runs("ctl")
