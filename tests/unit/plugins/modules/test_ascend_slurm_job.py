"""ascend_slurm_job with stand-ins for Slurm's client tools: a job slurmctld has forgotten (MinJobAge) is read
from Slurm's accounting (sacct, the real output in tests/fixtures/slurm) where Slurm keeps job records, and is
None where it does not."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils import slurm
from ansible_collections.ascendops.cluster.plugins.modules import ascend_slurm_job
from ansible_collections.ascendops.cluster.tests.unit.plugins.modules.ascend_module_harness import write_script

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "slurm"

# scontrol as Slurm 22.05 answers for a job it no longer holds (stderr, exit 1); squeue with an empty queue.
FAKE_SCONTROL = f"""#!/bin/sh
cat '{FIX / "scontrol-show-job-unknown.txt"}' >&2
exit 1
"""
FAKE_SQUEUE = "#!/bin/sh\nexit 0\n"
# sacct prints the file named by $FAKE_SACCT_OUT with exit $FAKE_SACCT_RC (its arguments recorded).
FAKE_SACCT = """#!/bin/sh
printf '%s\\n' "$*" >> "$FAKE_SACCT_ARGS"
if [ "$FAKE_SACCT_RC" != 0 ]; then cat "$FAKE_SACCT_OUT" >&2; exit "$FAKE_SACCT_RC"; fi
cat "$FAKE_SACCT_OUT"
"""


@pytest.fixture
def tools(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    write_script(bindir / "scontrol", FAKE_SCONTROL)
    write_script(bindir / "squeue", FAKE_SQUEUE)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_SACCT_ARGS", str(tmp_path / "sacct.args"))

    def with_sacct(output, rc=0):
        write_script(bindir / "sacct", FAKE_SACCT)
        out = tmp_path / "sacct.out"
        out.write_text(output)
        monkeypatch.setenv("FAKE_SACCT_OUT", str(out))
        monkeypatch.setenv("FAKE_SACCT_RC", str(rc))
        return tmp_path / "sacct.args"

    return with_sacct


def test_forgotten_job_read_from_accounting(run_module, tools):
    args = tools((FIX / "sacct.txt").read_text())
    record = slurm.parse_sacct((FIX / "sacct.txt").read_text())
    job = record[0]
    result = run_module(ascend_slurm_job.main,
                        {"action": "info", "name": "ascendops-debug-llama", "job_id": job["job_id"]})
    assert not result.get("failed"), result
    last = result["last"]
    assert last["source"] == "sacct" and last["job_id"] == job["job_id"]
    assert last["state"] == job["state"] and last["code"] == slurm.STATE_CODES[job["state"]]
    assert slurm.comment_fingerprint(last["comment"], "ascendops-debug-llama"), last
    called = args.read_text()
    assert f"--jobs={job['job_id']}" in called and "--parsable2" in called and "--allocations" in called
    assert result["warnings"] == []


def test_no_accounting_means_no_record(run_module, tools):
    tools("sacct: error: Slurm accounting storage is disabled\n", rc=1)
    result = run_module(ascend_slurm_job.main, {"action": "info", "name": "llama3", "job_id": "12"})
    assert not result.get("failed") and result["last"] is None and result["warnings"] == []


def test_no_sacct_installed(run_module, tools):
    result = run_module(ascend_slurm_job.main, {"action": "info", "name": "llama3", "job_id": "12"})
    assert not result.get("failed") and result["last"] is None


def test_accounting_that_does_not_answer_is_a_warning(run_module, tools):
    tools("sacct: error: slurm_persist_conn_open_without_init: failed to open persistent connection to "
          "host:node1:6819: Connection refused\n", rc=1)
    result = run_module(ascend_slurm_job.main, {"action": "info", "name": "llama3", "job_id": "12"})
    assert not result.get("failed") and result["last"] is None
    assert any("sacct -j 12 failed" in w and "Connection refused" in w for w in result["warnings"]), result


def test_unreadable_sacct_line_is_named(run_module, tools):
    tools("12|llama3|CANCELLED by 0\n")
    result = run_module(ascend_slurm_job.main, {"action": "info", "name": "llama3", "job_id": "12"})
    assert result.get("failed") and "could not read the sacct line '12|llama3|CANCELLED by 0'" in result["msg"]


def test_parse_sacct_states_and_codes():
    rows = slurm.parse_sacct("7|llama3|CANCELLED by 0|0:15|node[1-2]|00:01:02|ascendops:llama3:ab|c\n"
                             "8|llama3|COMPLETED|0:0|node1|00:00:09|\n9|x|FAILED|3:0|node2|00:00:01|\n")
    assert [(r["job_id"], r["state"], r["code"], r["exit_code"]) for r in rows] == [
        ("7", "CANCELLED", "CA", 0), ("8", "COMPLETED", "CD", 0), ("9", "FAILED", "F", 3)]
    assert rows[0]["comment"] == "ascendops:llama3:ab|c" and rows[0]["nodes"] == "node[1-2]"
