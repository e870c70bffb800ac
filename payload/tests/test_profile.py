"""The profile section: windows of steps traced with torch.profiler, one summary line per window (compute,
communication, exposed communication, data wait), the DeepSpeed comms logger behind the same switch."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _trainer_helpers  # noqa: E402,F401  (puts payload/src on sys.path)

from ascendops_trainer.config import ConfigError, ProfileConfig, build_config  # noqa: E402
from ascendops_trainer.profile import (  # noqa: E402
    DATA_WAIT_LABEL,
    Window,
    exposed,
    merge,
    parse_ranks,
    subtract,
    summarize,
    total,
    window_for,
)

# ---------------------------------------------------------------- interval arithmetic


def test_merge_joins_overlapping_nested_and_touching_intervals():
    assert merge([(5, 7), (0, 2), (1, 3), (10, 12), (10.5, 11), (12, 13), (4, 4)]) == [(0, 3), (5, 7), (10, 13)]
    assert total([(0, 10), (2, 3), (5, 12), (20, 21)]) == 13  # nested and overlapping counted once


@pytest.mark.parametrize("comm, compute, want", [
    ([(0, 10)], [(20, 30)], 10),  # disjoint: all of it exposed
    ([(0, 10)], [(2, 4)], 8),  # compute nested in communication: the rest exposed
    ([(2, 4)], [(0, 10)], 0),  # communication nested in compute: hidden
    ([(0, 10)], [(5, 15)], 5),  # overlapping at the end
    ([(5, 15)], [(0, 10)], 5),  # overlapping at the start
    ([(0, 10), (8, 20)], [(3, 6), (9, 12), (11, 14)], 20 - 3 - 5),  # overlapping comms, overlapping computes
    ([(0, 10)], [(0, 2), (2, 4), (8, 10)], 4),  # touching compute intervals, both ends covered
    ([(0, 10)], [], 10),
    ([], [(0, 10)], 0),
])
def test_exposed_communication_of_synthetic_intervals(comm, compute, want):
    assert exposed(comm, compute) == pytest.approx(want)
    # exposed + hidden = all communication, whatever the order the intervals come in
    hidden = total(comm) - total(subtract(comm, compute))
    assert exposed(list(reversed(comm)), list(reversed(compute))) + hidden == pytest.approx(total(comm))


def test_subtract_leaves_the_uncovered_pieces():
    assert subtract([(0, 10), (20, 30)], [(2, 3), (5, 22), (25, 26)]) == [(0, 2), (3, 5), (22, 25), (26, 30)]


# ---------------------------------------------------------------- summaries of traces


def _x(name, ts, dur, cat="cpu_op", tid=1, pid=1):
    return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "pid": pid, "tid": tid}


def test_summary_from_device_kernels():
    """With device kernels in the trace (CUDA): compute and communication are kernels; host ops ignored."""
    trace = {"traceEvents": [
        _x("ProfilerStep#2", 0, 1000, "user_annotation"), _x("ProfilerStep#3", 1000, 1000, "user_annotation"),
        _x(DATA_WAIT_LABEL, 10, 40, "user_annotation"),
        _x("aten::mm", 100, 900),  # a host op: not device time
        _x("ampere_bf16_gemm", 100, 400, "kernel", tid=7, pid=0),
        _x("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", 300, 500, "kernel", tid=8, pid=0),  # 200 hidden
        _x("Memcpy HtoD", 800, 50, "kernel", tid=7, pid=0),  # a copy: neither
        _x("flash_fwd_kernel", 1200, 300, "kernel", tid=7, pid=0),
        _x("ncclDevKernel_AllGather_RING_LL", 1400, 300, "kernel", tid=8, pid=0),  # 100 hidden
    ]}
    s = summarize(trace, rank=3, first_step=11, trace_path="t.json")
    assert s.source == "device kernels" and s.steps == (13, 14) and s.rank == 3
    assert (s.compute_ms, s.communication_ms, s.exposed_communication_ms, s.data_wait_ms, s.wall_ms) == \
        pytest.approx((0.7, 0.8, 0.5, 0.04, 2.0))
    line = s.line()
    for word in ("steps 13-14", "compute 0.7 ms", "communication 0.8 ms", "exposed communication 0.5 ms",
                 "data wait 0.0 ms", "trace t.json"):
        assert word in line


def test_summary_from_host_operators():
    """CPU runs (gloo): aten operators are compute, except those inside a collective or the batch fetch."""
    trace = [
        _x("ProfilerStep#0", 0, 1000, "user_annotation"),
        _x(DATA_WAIT_LABEL, 0, 100, "user_annotation"), _x("aten::to", 10, 50),  # data wait, not compute
        _x("aten::mm", 100, 300), _x("aten::add", 150, 100),  # nested: 300
        _x("c10d::allreduce_", 500, 200), _x("aten::copy_", 520, 50),  # the collective's copy: not compute
        _x("gloo:all_reduce", 600, 300, tid=2), _x("aten::mul", 650, 100, tid=3),  # a 3rd thread hides 100 of it
    ]
    s = summarize(trace)
    assert s.source == "host operators" and s.steps == (1, 1)
    assert s.compute_ms == pytest.approx(0.4)
    assert s.communication_ms == pytest.approx(0.4)  # 500-900
    assert s.exposed_communication_ms == pytest.approx(0.3)
    assert s.data_wait_ms == pytest.approx(0.1)


# ---------------------------------------------------------------- schedule and settings


@pytest.mark.parametrize("pcfg, first", [
    (ProfileConfig(enabled=True), 1),
    (ProfileConfig(enabled=True, wait=2, warmup=0, active=2, repeat=3), 1),
    (ProfileConfig(enabled=True, wait=0, warmup=2, active=1, repeat=0), 41),
    (ProfileConfig(enabled=True, start_step=10, warmup=2, active=3), 1),
    (ProfileConfig(enabled=True, start_step=10, warmup=2, active=3), 9),  # resumed inside the warmup
])
def test_window_agrees_with_torch_profiler_schedule(pcfg, first):
    """Window.phase (what the comms logger and the step numbers follow) is torch.profiler.schedule's action."""
    import torch.profiler as tp

    w = window_for(pcfg, first)
    sched = tp.schedule(wait=w.wait, warmup=w.warmup, active=w.active, repeat=w.repeat, skip_first=w.skip_first)
    want = {tp.ProfilerAction.NONE: ("idle", "done"), tp.ProfilerAction.WARMUP: ("warmup",),
            tp.ProfilerAction.RECORD: ("active",), tp.ProfilerAction.RECORD_AND_SAVE: ("active",)}
    for n in range(40):
        action = sched(n)
        assert w.phase(first + n) in want[action], (n, action, w)
        assert w.ends_window(first + n) == (action == tp.ProfilerAction.RECORD_AND_SAVE)


def test_start_step_records_from_that_step():
    w = window_for(ProfileConfig(enabled=True, start_step=10, warmup=2, active=3), first_step=1)
    assert [s for s in range(1, 30) if w.phase(s) == "active"] == [10, 11, 12]
    assert [s for s in range(1, 30) if w.phase(s) == "warmup"] == [8, 9]
    late = window_for(ProfileConfig(enabled=True, start_step=10, warmup=2, active=3), first_step=21)
    assert [s for s in range(21, 40) if late.phase(s) == "active"] == [21, 22, 23]  # resumed past it: now
    assert window_for(ProfileConfig(enabled=True), 1) == Window(0, 1, 1, 3, 1, 1)


@pytest.mark.parametrize("overrides, message", [
    ({"profile.ranks": "0,x"}, "profile.ranks must be 'all' or comma-separated rank numbers"),
    ({"profile.ranks": "-1"}, "profile.ranks must be 'all'"),
    ({"profile.active": "0"}, "profile.active must be >= 1"),
    ({"profile.warmup": "-1"}, "profile.warmup must be >= 0"),
    ({"profile.start_step": "x"}, "profile.start_step='x' is not a valid int"),
    ({"profile.enabled": "maybe"}, "profile.enabled='maybe' is not a valid bool"),
    ({"profile.window": "3"}, "unknown config key 'profile.window'"),
])
def test_profile_settings_are_refused_by_name(overrides, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        build_config(overrides)


def test_ranks():
    assert parse_ranks("all") is None and parse_ranks(" 8, 0 ,8") == [0, 8]
    assert parse_ranks(str(build_config({"profile.ranks": 0}).profile.ranks)) == [0]  # a YAML number
    with pytest.raises(ValueError, match=r"profile.ranks=8,9: no such rank in a world of 8"):
        parse_ranks("8,9", world_size=8)


# ---------------------------------------------------------------- a profiled run


def test_profiled_window_on_the_debug_preset(prepared, tmp_path):
    """One process, debug preset, 5 steps, the default window (wait 1, warmup 1, active 2): steps 3-4 are
    traced; the trace, the summary line with its four numbers, the metrics record and the comms logger's table
    (its own process: DeepSpeed keeps process-wide state)."""
    run = tmp_path / "run"
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parent.parent / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update({"OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"})
    proc = subprocess.run([sys.executable, "-m", "ascendops_trainer", "train", "--preset", "debug", "--data",
                           prepared["data"], "--run-dir", str(run), "--steps", "5", "--metrics.tensorboard", "false",
                           "--profile.enabled", "true", "--profile.active", "2"],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    lines = [line for line in proc.stdout.splitlines() if line.startswith("profile steps")]
    assert len(lines) == 1, out
    m = re.fullmatch(r"profile steps 3-4 rank 0 \(host operators\): compute ([\d.]+) ms, communication ([\d.]+) ms, "
                     r"exposed communication ([\d.]+) ms \(\d+% of it\), data wait ([\d.]+) ms, wall ([\d.]+) ms; "
                     r"trace (\S+)", lines[0])
    assert m, lines[0]
    compute, comm, exposed_comm, data_wait, wall = (float(m.group(i)) for i in range(1, 6))
    assert 0 < compute <= wall and 0 < comm and 0 <= exposed_comm <= comm and 0 < data_wait < wall
    trace = Path(m.group(6))
    assert trace == run / "profile" / "rank0" / "window1.pt.trace.json"
    names = {e.get("name") for e in json.loads(trace.read_text())["traceEvents"]}
    assert {DATA_WAIT_LABEL, "ProfilerStep#2", "ProfilerStep#3"} <= names and "ProfilerStep#4" not in names
    rec = [json.loads(x) for x in (run / "profile.jsonl").read_text().splitlines()]
    assert len(rec) == 1 and rec[0]["steps"] == [3, 4] and rec[0]["compute_ms"] == pytest.approx(compute, abs=0.1)
    assert (run / "profile" / "rank0" / "summary.jsonl").is_file()
    assert "Comm. Op" in proc.stdout and "all_reduce" in proc.stdout  # DeepSpeed's comms logger table
    ds = json.loads((run / "config.json").read_text())["deepspeed"]
    assert ds["comms_logger"] == {"enabled": True, "verbose": False, "prof_all": True, "debug": False}


def test_only_the_listed_rank_traces_while_every_rank_follows_the_window(prepared, tmp_path):
    """2 processes, profile.ranks 1: rank 1 writes the trace and its summary; rank 0 traces nothing but takes
    part in the comms logger's summary (a barrier) at the same step - the run ends instead of hanging."""
    from _trainer_helpers import subprocess_env, torchrun_cmd

    run = tmp_path / "run"
    proc = subprocess.run(torchrun_cmd(["train", "--preset", "debug", "--data", prepared["data"], "--run-dir",
                                        str(run), "--steps", "3", "--metrics.tensorboard", "false",
                                        "--profile.enabled", "true", "--profile.wait", "0", "--profile.active", "1",
                                        "--profile.ranks", "1"]),
                          env=subprocess_env(), capture_output=True, text=True, timeout=600, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert (run / "profile" / "rank1" / "window1.pt.trace.json").is_file()
    assert not (run / "profile" / "rank0").exists() and not (run / "profile.jsonl").exists()
    assert re.search(r"profile steps 2-2 rank 1 \(host operators\): compute [\d.]+ ms, communication [\d.]+ ms", out)
