"""Profiling windows (the `profile` config section): traces under the run directory and one summary line
per window - compute, communication, exposed communication, data wait.

The profiler: torch.profiler (CPU ops; CUDA kernels on CUDA), or on NPU torch_npu.profiler when it imports
(same switch; its own schedule, activities and trace handler: `torch_npu.profiler.profile(activities=[CPU,
NPU], schedule=torch_npu.profiler.schedule(wait, warmup, active, repeat, skip_first),
on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(dir))`, as the Ascend Extension for PyTorch API
reference documents it). Only the configured ranks (default: rank 0) trace; every rank follows the same
schedule, so the DeepSpeed comms logger (a collective summary) runs on all of them.

The window, in optimizer steps, is torch.profiler.schedule's: `wait` steps idle, `warmup` steps traced and
discarded, `active` steps recorded, `repeat` times (0 = until the end); or, with `start_step`, the recorded
steps begin at that step of the run (warmup steps before it), whatever step a resumed run starts at.

The summary reads the Chrome trace the window wrote (events with ts/dur in microseconds), as interval sets:
- communication: events whose names are collectives (all_reduce, reduce_scatter, all_gather, broadcast,
  all_to_all; nccl/hccl/hcom/gloo/c10d names);
- compute: device kernels that are not communication when the trace has device kernels (CUDA), else the
  host's aten operators outside communication and data wait (CPU runs: gloo collectives run on the host);
- exposed communication: the time communication runs while no compute does (union of communication
  minus union of compute) - the part of communication that the step waits for;
- data wait: the trainer's `ascendops/data_wait` label around fetching a micro-batch.
On NPU the summary is read from torch_npu's trace_view.json when its analysis has written one; that file's
layout has not been checked on a device here: when it is missing, the line says so and the traces remain.

The DeepSpeed comms logger (DeepSpeed config `comms_logger`) is enabled by the same switch. It synchronizes
the device after every collective (to time it), which would serialize the communication the trace is to
show overlapping: the trainer therefore has it time the window's warmup steps only (none without warmup)
and prints its table (rank 0) when the window ends.
"""

from __future__ import annotations

import bisect
import contextlib
import glob
import json
import logging
import os
import re
import time
from dataclasses import asdict, dataclass
from typing import Any

log = logging.getLogger(__name__)

DATA_WAIT_LABEL = "ascendops/data_wait"
COMM_PATTERN = re.compile(r"all_?reduce|reduce_?scatter|all_?gather|broadcast|all_?to_?all|nccl|hccl|hcom|gloo|"
                          r"c10d::|record_param_comms", re.IGNORECASE)
STEP_PATTERN = re.compile(r"^ProfilerStep#(\d+)$")
DEVICE_KERNEL_CATS = ("kernel",)  # torch.profiler's category of CUDA kernels in its Chrome trace
# torch_npu trace_view.json: device tasks sit under these process names (not verified on a device here)
NPU_DEVICE_PROCESSES = ("Ascend Hardware", "HCCL", "Communication")

Interval = tuple[float, float]


# ---------------------------------------------------------------- interval arithmetic


def merge(intervals) -> list[Interval]:
    """Sorted, disjoint intervals covering the same time (overlapping and touching ones joined; empty dropped)."""
    out: list[list[float]] = []
    for start, end in sorted((float(s), float(e)) for s, e in intervals if e > s):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(s, e) for s, e in out]


def total(intervals) -> float:
    """Time covered by the intervals (overlaps counted once)."""
    return sum(e - s for s, e in merge(intervals))


def subtract(a, b) -> list[Interval]:
    """The parts of a's time not covered by b."""
    cut = merge(b)
    starts = [s for s, _ in cut]
    out: list[Interval] = []
    for s, e in merge(a):
        pos = s
        i = max(bisect.bisect_right(starts, s) - 1, 0)
        while i < len(cut) and cut[i][0] < e:
            cs, ce = cut[i]
            if ce > pos:
                if cs > pos:
                    out.append((pos, cs))
                pos = max(pos, ce)
            i += 1
        if pos < e:
            out.append((pos, e))
    return out


def exposed(comm, compute) -> float:
    """Communication time during which no compute runs."""
    return total(subtract(comm, compute))


# ---------------------------------------------------------------- schedule


@dataclass(frozen=True)
class Window:
    """torch.profiler.schedule's numbers, counted in the optimizer steps this process trains."""

    skip_first: int
    wait: int
    warmup: int
    active: int
    repeat: int
    first_step: int  # the run's step number of this process's first optimizer step (1-based)

    @property
    def cycle(self) -> int:
        return self.wait + self.warmup + self.active

    def phase(self, step: int) -> str:
        """'idle' | 'warmup' | 'active' | 'done' for the run's optimizer step `step`."""
        n = step - self.first_step - self.skip_first
        if n < 0:
            return "idle"
        if self.repeat and n >= self.repeat * self.cycle:
            return "done"
        k = n % self.cycle
        if k < self.wait:
            return "idle"
        return "warmup" if k < self.wait + self.warmup else "active"

    def ends_window(self, step: int) -> bool:
        """True when `step` is the last recorded step of a window."""
        n = step - self.first_step - self.skip_first
        return self.phase(step) == "active" and n % self.cycle == self.cycle - 1


def window_for(pcfg, first_step: int) -> Window:
    """The schedule of a profile config for a process whose first optimizer step is `first_step`."""
    if pcfg.start_step:
        begin = max(pcfg.start_step - pcfg.warmup, first_step)  # a resumed run past the start: begin now
        warmup = min(pcfg.warmup, max(pcfg.start_step - first_step, 0))
        if pcfg.start_step < first_step:
            log.warning("profile.start_step %d is before this run's first step %d: the window starts now",
                        pcfg.start_step, first_step)
        return Window(begin - first_step, 0, warmup, pcfg.active, pcfg.repeat, first_step)
    return Window(0, pcfg.wait, pcfg.warmup, pcfg.active, pcfg.repeat, first_step)


def parse_ranks(text: str, world_size: int | None = None) -> list[int] | None:
    """profile.ranks: 'all' -> None (every rank), else the listed ranks ('0', '0,8,16'). ValueError naming
    the setting when malformed (config_rules.ranks_problem) or, given the world size, when no listed rank
    exists."""
    from .config_rules import ranks_problem

    found = ranks_problem(text)
    if found:
        raise ValueError(found)
    if str(text).strip().lower() == "all":
        return None
    ranks = sorted({int(x) for x in str(text).split(",")})
    if world_size is not None and not [r for r in ranks if r < world_size]:
        raise ValueError(f"profile.ranks={text}: no such rank in a world of {world_size} (ranks 0-{world_size - 1})")
    return ranks


# ---------------------------------------------------------------- summary of a trace


@dataclass
class WindowSummary:
    rank: int
    steps: tuple[int, int] | None  # the run's optimizer steps recorded (first, last)
    source: str  # 'device kernels' | 'host operators'
    wall_ms: float
    compute_ms: float
    communication_ms: float
    exposed_communication_ms: float
    data_wait_ms: float
    trace: str

    def line(self) -> str:
        steps = f"steps {self.steps[0]}-{self.steps[1]}" if self.steps else "window"
        frac = (self.exposed_communication_ms / self.communication_ms * 100) if self.communication_ms else 0.0
        return (f"profile {steps} rank {self.rank} ({self.source}): compute {self.compute_ms:.1f} ms, "
                f"communication {self.communication_ms:.1f} ms, exposed communication "
                f"{self.exposed_communication_ms:.1f} ms ({frac:.0f}% of it), data wait {self.data_wait_ms:.1f} ms, "
                f"wall {self.wall_ms:.1f} ms; trace {self.trace}")

    def record(self) -> dict[str, Any]:
        out = asdict(self)
        out["steps"] = list(self.steps) if self.steps else None
        return out


def trace_events(trace: dict | list) -> list[dict]:
    """Complete ('X') events of a Chrome trace (dict with traceEvents, or the bare list), with process names."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    names = {e.get("pid"): e.get("args", {}).get("name", "") for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    out = []
    for e in events:
        if e.get("ph") == "X" and "ts" in e and "dur" in e:
            e = dict(e, _process=str(names.get(e.get("pid"), "")))
            out.append(e)
    return out


def summarize(trace: dict | list, rank: int = 0, first_step: int = 1, trace_path: str = "") -> WindowSummary:
    """The four numbers of a window's Chrome trace (module docstring), in milliseconds."""
    events = trace_events(trace)

    def span(e) -> Interval:
        s = float(e["ts"])
        return s, s + float(e["dur"])

    def is_device(e) -> bool:
        return e.get("cat") in DEVICE_KERNEL_CATS or any(p in e["_process"] for p in NPU_DEVICE_PROCESSES)

    steps = [(int(m.group(1)), span(e)) for e in events if (m := STEP_PATTERN.match(str(e.get("name", ""))))]
    data_wait = [span(e) for e in events if e.get("name") == DATA_WAIT_LABEL]
    device = [e for e in events if is_device(e)]
    if device:
        source = "device kernels"
        comm = [span(e) for e in device if COMM_PATTERN.search(str(e.get("name", "")))]
        compute = [span(e) for e in device if not COMM_PATTERN.search(str(e.get("name", "")))
                   and not str(e.get("name", "")).lower().startswith(("memcpy", "memset"))]
    else:
        source = "host operators"
        comm_events = [e for e in events if COMM_PATTERN.search(str(e.get("name", "")))]
        comm = [span(e) for e in comm_events]
        by_tid: dict[Any, list[Interval]] = {}
        for e in events:
            if str(e.get("name", "")).startswith("aten::"):
                by_tid.setdefault((e.get("pid"), e.get("tid")), []).append(span(e))
        compute = []
        for key, spans in by_tid.items():  # an operator inside a collective or the batch fetch is neither compute
            inside = [span(e) for e in comm_events + [e for e in events if e.get("name") == DATA_WAIT_LABEL]
                      if (e.get("pid"), e.get("tid")) == key]
            compute.extend(subtract(spans, inside))
    if steps:
        wall = total([s for _, s in steps])
        numbers = [n for n, _ in steps]
        step_range = (first_step + min(numbers), first_step + max(numbers))
    else:
        all_spans = [span(e) for e in events]
        wall = (max(e for _, e in all_spans) - min(s for s, _ in all_spans)) if all_spans else 0.0
        step_range = None
    ms = 1e-3
    return WindowSummary(rank, step_range, source, wall * ms, total(compute) * ms, total(comm) * ms,
                         exposed(comm, compute) * ms, total(data_wait) * ms, trace_path)


# ---------------------------------------------------------------- the profiler of a run


class Profiler:
    """The run's profiler (one per process): `step(n)` after each optimizer step n; `data_wait()` around the
    batch fetch; `close()` at the end. Does nothing on ranks that do not trace, except following the
    schedule for the DeepSpeed comms logger (every rank, it is collective)."""

    def __init__(self, pcfg, run_dir: str, rank: int, world_size: int, device_type: str, first_step: int,
                 on_summary=None):
        self.cfg = pcfg
        self.enabled = bool(pcfg.enabled)
        self.rank = rank
        self.window = window_for(pcfg, first_step)
        self.dir = os.path.join(pcfg.dir or os.path.join(run_dir, "profile"), f"rank{rank}")
        self.on_summary = on_summary  # callback(WindowSummary): the metrics record
        self.summaries: list[WindowSummary] = []
        self._prof = None
        self._windows = 0
        self._npu = False
        self._comms = False
        if not self.enabled:
            return
        ranks = parse_ranks(pcfg.ranks, world_size)
        self.tracing = ranks is None or rank in ranks
        self._comms = _comms_logger_available()
        if self.tracing:
            os.makedirs(self.dir, exist_ok=True)
            self._prof = self._make(device_type)
            self._prof.start()
        if self._comms:
            import deepspeed.comm as dist

            dist.reset_log()  # what the engine's set-up and a resume timed is no window's
        self._set_comms(self.window.phase(first_step) == "warmup")

    # the torch / torch_npu profiler object
    def _make(self, device_type: str):
        w = self.window
        if device_type == "npu":
            try:
                import torch_npu.profiler as npu_prof
            except ImportError:
                npu_prof = None
            if npu_prof is not None:
                self._npu = True
                return npu_prof.profile(
                    activities=[npu_prof.ProfilerActivity.CPU, npu_prof.ProfilerActivity.NPU],
                    schedule=npu_prof.schedule(wait=w.wait, warmup=w.warmup, active=w.active, repeat=w.repeat,
                                               skip_first=w.skip_first),
                    on_trace_ready=self._npu_ready(npu_prof.tensorboard_trace_handler(self.dir)),
                    record_shapes=self.cfg.record_shapes, with_stack=self.cfg.with_stack)
            log.warning("profile: torch_npu.profiler does not import: torch.profiler records host operators only")
        import torch.profiler as tp

        acts = [tp.ProfilerActivity.CPU] + ([tp.ProfilerActivity.CUDA] if device_type == "cuda" else [])
        return tp.profile(activities=acts, schedule=tp.schedule(wait=w.wait, warmup=w.warmup, active=w.active,
                                                                repeat=w.repeat, skip_first=w.skip_first),
                          on_trace_ready=self._torch_ready, record_shapes=self.cfg.record_shapes,
                          with_stack=self.cfg.with_stack)

    def _torch_ready(self, prof) -> None:
        self._windows += 1
        path = os.path.join(self.dir, f"window{self._windows}.pt.trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
        self._report(summarize(trace, self.rank, self.window.first_step, path))

    def _npu_ready(self, handler):
        def ready(prof) -> None:
            self._windows += 1
            t0 = time.time()
            handler(prof)  # torch_npu writes <dir>/<worker>_<time>_ascend_pt/ and (by default) analyses it
            found = [p for p in glob.glob(os.path.join(self.dir, "*_ascend_pt", "ASCEND_PROFILER_OUTPUT",
                                                       "trace_view.json")) if os.path.getmtime(p) >= t0 - 1]
            if not found:
                log.info("profile window %d rank %d: traces in %s; no trace_view.json to summarize (torch_npu "
                         "analyses offline: torch_npu.profiler.profiler.analyse)", self._windows, self.rank, self.dir)
                return
            with open(max(found, key=os.path.getmtime)) as f:
                trace = json.load(f)
            self._report(summarize(trace, self.rank, self.window.first_step, found[0]))

        return ready

    def _report(self, summary: WindowSummary) -> None:
        self.summaries.append(summary)
        print(summary.line(), flush=True)  # the one line per window, on every tracing rank's console
        with open(os.path.join(self.dir, "summary.jsonl"), "a") as f:
            f.write(json.dumps(summary.record()) + "\n")
        if self.on_summary is not None:
            self.on_summary(summary)

    # the DeepSpeed comms logger: on during the warmup steps of a window (see the module docstring)
    def _set_comms(self, on: bool) -> None:
        if self._comms:
            import deepspeed.comm as dist

            dist.configure(enabled=on)

    def data_wait(self):
        """Context manager: labels the batch fetch in the trace (nothing when this rank does not trace)."""
        if self._prof is None:
            return contextlib.nullcontext()
        import torch

        return torch.profiler.record_function(DATA_WAIT_LABEL)

    def step(self, step: int) -> None:
        """After optimizer step `step` (the run's number): advance the trace; the comms logger follows the
        schedule on every rank and prints its table when a window ends (collective)."""
        if not self.enabled:
            return
        if self._prof is not None:
            self._prof.step()
        if self._comms and self.window.ends_window(step):
            import deepspeed.comm as dist

            if self.window.warmup:
                dist.log_summary()  # barrier inside: every rank is here at the same step
            dist.reset_log()
        self._set_comms(self.window.phase(step + 1) == "warmup")

    def close(self) -> None:
        """Stop tracing (a window cut short still writes its trace and summary)."""
        if self._prof is not None:
            prof, self._prof = self._prof, None
            prof.stop()
        self._set_comms(False)


def _comms_logger_available() -> bool:
    try:
        import deepspeed.comm as dist

        return hasattr(dist, "configure") and hasattr(dist, "log_summary")
    except ImportError:
        return False


def comms_logger_config(pcfg) -> dict[str, Any] | None:
    """The DeepSpeed config's `comms_logger` section for the profile switch (None when off)."""
    if not pcfg.enabled:
        return None
    return {"enabled": True, "verbose": False, "prof_all": True, "debug": False}
