"""Launch filters: error codes, log excerpts, collective verdict, NPU processes (the container
specification, environment and restart plan: tests/unit/plugins/module_utils/test_job_*.py)."""

from pathlib import Path

import pytest
from ansible_collections.ascendops.cluster.plugins.filter.launch import (
    HCCL_ERRORS,
    FilterModule,
    collective_verdict,
    hccl_errors,
    hccl_test_results,
    key_value_lines,
    log_excerpt,
    npu_processes,
    path_is,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize("code", ["EI0006", "EJ0001", "EI0014", "-8005"])
def test_each_documented_code_is_explained(code):
    found = hccl_errors(f"[ERROR] HCCL(1234) ... error code {code} happened\n")
    assert [f["code"] for f in found] == [code]
    assert found[0]["meaning"] == HCCL_ERRORS[code][0] and found[0]["fix"]
    assert code in found[0]["line"]


def test_codes_in_order_once_each_and_no_false_matches():
    text = ("EJ0001: HCCP init failed\nretry\nEI0006 Getting socket times out\nEJ0001 again\n"
            "ret is -80051 (not a code)\nXEI0006Y\n")
    assert [f["code"] for f in hccl_errors(text)] == ["EJ0001", "EI0006"]
    assert hccl_errors("dcmi module initialize failed. ret is -8005")[0]["code"] == "-8005"
    assert hccl_errors("all good") == []


REPORT = {"backend": "gloo", "world_size": 4, "failed_nodes": [], "slowest_node": "node2",
          "results": [{"size_bytes": 8192, "alg_bandwidth_gbs": 0.05},
                      {"size_bytes": 1 << 20, "alg_bandwidth_gbs": 0.5}]}


def test_collective_passes_over_the_floor():
    v = collective_verdict(REPORT, min_bandwidth_gbs=0.1, min_size_bytes=1 << 20)
    assert v["ok"] is True and "passed" in v["message"] and v["best_bandwidth_gbs"] == 0.5


def test_collective_under_the_floor_names_the_slowest_node():
    v = collective_verdict(REPORT, min_bandwidth_gbs=1.0)
    assert v["ok"] is False and v["slow_sizes"] == [8192, 1 << 20]
    assert "slowest node: node2" in v["message"]


def test_collective_wrong_values_name_the_nodes():
    v = collective_verdict(dict(REPORT, failed_nodes=["node1"]))
    assert v["ok"] is False and "node(s) node1" in v["message"]
    assert collective_verdict({"results": []})["ok"] is False


def test_hccl_test_rows():
    rows = hccl_test_results("data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:\n"
                             "8192 | 12.50 | 18.25 | success\n")
    assert rows == [{"size_bytes": 8192, "time_us": 12.5, "alg_bandwidth_gbs": 18.25, "check_result": "success"}]


NPU_SMI_BUSY = """+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| 0       0                 | 123456        | python3.9                | 3200                    |
+===========================+===============+====================================================+
| No running processes found in NPU 1                                                            |
+===========================+===============+====================================================+
"""


def test_npu_processes_lists_busy_devices():
    assert npu_processes(NPU_SMI_BUSY) == [
        {"npu_id": 0, "chip_id": 0, "pid": 123456, "name": "python3.9", "memory_mb": 3200}]


def test_npu_processes_on_the_vendor_samples():
    busy = (FIXTURES / "npu_smi_info_910b_8npu.txt").read_text()
    assert npu_processes(busy) == [{"npu_id": 4, "chip_id": 0, "pid": 231405, "name": "python3.10", "memory_mb": 56036}]
    for free in ("npu_smi_info_a3.txt", "npu_smi_info_310p.txt"):
        assert npu_processes((FIXTURES / free).read_text()) == []
    with pytest.raises(ValueError, match="no npu-smi process table"):
        npu_processes((FIXTURES / "npu_smi_info_910b.txt").read_text())


def test_filters_registered():
    assert set(FilterModule().filters()) == {
        "hccl_errors", "collective_verdict", "key_value_lines", "hccl_test_results", "hccl_test_verdict",
        "npu_processes", "log_excerpt", "job_container_spec", "job_container_argv", "job_container_unit",
        "job_container_command", "job_container_security", "container_user", "job_env", "env_file_text",
        "interface_of_address", "launch_plan", "path_is", "container_extra_args_problems"}


def test_key_value_lines_split_at_the_first_equals_sign():
    text = "ActiveState=active\nExecMainStartTimestamp=Mon 2026-11-30 10:00:00 UTC\n# c\nX=a=b\nnoise\n"
    assert key_value_lines(text) == {"ActiveState": "active", "ExecMainStartTimestamp": "Mon 2026-11-30 10:00:00 UTC",
                                     "X": "a=b"}


TORCHRUN_FAILURE = """W1130 17:23:40 torch/distributed/run.py:803] Setting OMP_NUM_THREADS
[rank3]: Traceback (most recent call last):
[rank3]:   File "<frozen runpy>", line 198, in _run_module_as_main
[rank3]:   File "/opt/ascendops/venv/lib/python3.11/site-packages/ascendops_trainer/collective.py", line 91, in _init
[rank3]:     dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=timeout_s))
[rank3]: RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error
rank 3 exiting
Traceback (most recent call last):
  File "/opt/ascendops/venv/bin/torchrun", line 8, in <module>
  File "/opt/ascendops/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 1019, in run
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
ascendops_trainer FAILED
Root Cause (first observed failure):
  rank      : 3 (local_rank: 1)
  exitcode  : 1 (pid: 8)
"""


def test_log_excerpt_shows_the_ranks_error_not_only_torchruns_summary():
    out = log_excerpt(TORCHRUN_FAILURE, lines=4)
    assert out[0] == "[rank3]: Traceback (most recent call last):"
    assert out[4].endswith("RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/"
                           "pair.cc:144] no error")
    assert out[5] == "..."
    assert out[6:] == TORCHRUN_FAILURE.splitlines()[-4:]


def test_log_excerpt_without_an_error_is_the_tail_and_a_long_traceback_is_cut():
    assert log_excerpt("a\nb\nc", lines=2) == ["b", "c"]
    frames = "\n".join(f'  File "x.py", line {i}, in f' for i in range(100))
    text = f"Traceback (most recent call last):\n{frames}\nValueError: bad\nlast"
    out = log_excerpt(text, lines=1, error_lines=10)
    assert len(out) == 10 + 2 + 2 and out[10].startswith("... (92 more lines)") and out[11] == "ValueError: bad"
    assert out[-1] == "last"


def test_path_is_a_right_file_or_directory_only():
    f = {"path": "/etc/ascendops/job.yaml", "exists": True, "isreg": True, "isdir": False, "uid": 0, "gid": 0,
         "mode": "0644", "checksum": "abc"}
    assert path_is(f, "file", "0644", "abc")
    assert not path_is(f, "file", "0644", "other")               # content differs
    assert not path_is(dict(f, mode="0600"), "file", "0644", "abc")
    assert not path_is(dict(f, uid=1000), "file", "0644", "abc")
    assert not path_is(dict(f, gid=5), "file", "0644", "abc")
    assert not path_is(dict(f, isreg=False, islnk=True), "file", "0644", "abc")  # a link is replaced
    assert not path_is({"path": "/x", "exists": False}, "file", "0644", "abc")
    assert not path_is(None, "file") and not path_is({}, "directory")
    d = {"path": "/etc/ascendops", "exists": True, "isdir": True, "isreg": False, "uid": 0, "gid": 0, "mode": "0755"}
    assert path_is(d, "directory", "0755") and not path_is(d, "file", "0755")
    assert not path_is(dict(d, mode="0700"), "directory", "0755")
    assert "path_is" in FilterModule().filters()
