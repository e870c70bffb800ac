"""`ascendops-train launch`: torchrun under a launcher whose grace period the unit controls.

    ascendops-train launch --grace-s G -- <torchrun arguments> -m ascendops_trainer train --config FILE

The container's command. It starts torchrun with the arguments given and:

- stop: on SIGTERM (also SIGINT, SIGHUP) it forwards the signal to torchrun, whose agent forwards it to
  the workers; the workers finish the micro-step, save a checkpoint and exit 143. torchrun SIGKILLs
  its workers a fixed time after forwarding: 30 s, hard-coded before torch 2.10. The launcher makes
  that time G: with torch's `--shutdown-timeout` where the installed torchrun has it, otherwise by
  running torchrun with its worker shutdown (PContext.close) waiting max(timeout, G) seconds. G + 20 s
  after the signal, whatever still runs is SIGKILLed (torchrun and its workers, which run in
  sessions of their own). The outer stop timeout (podman/docker stop -t, systemd TimeoutStopSec)
  must exceed G + 20.
- exit code (status.py): torchrun exits 1 for any failed worker; the launcher reads the node's status
  file (ASCENDOPS_STATUS_FILE, written by the node's local rank 0) and returns the trainer's own
  code: completed 0, stopped 143, failed 2/3/4 (do not retry) or 1. A status file older than this
  launch is ignored. Without ASCENDOPS_STATUS_FILE the launcher points the trainer at a private one.
- ASCENDOPS_GRACE_S=G is exported to the trainer (a save slower than half of it is warned about).

ASCENDOPS_LAUNCH_GRACE_MODE=auto|flag|patch chooses how G reaches torchrun (auto: flag where torchrun
has --shutdown-timeout). No torch import here: the launcher stays small and starts at once.
"""

from __future__ import annotations

import importlib.util
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

from .status import (
    EXIT_COMPLETED,
    EXIT_CONFIG,
    EXIT_CRASH,
    EXIT_NONFINITE,
    EXIT_RANK_TABLE,
    EXIT_STOPPED,
    GRACE_ENV,
    STATUS_ENV,
    read_status,
)

GRACE_MODE_ENV = "ASCENDOPS_LAUNCH_GRACE_MODE"
KILL_MARGIN_S = 20.0  # after G: torchrun's own teardown, then SIGKILL everything
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
SHUTDOWN_FLAGS = ("--shutdown-timeout", "--shutdown_timeout")


def _say(msg: str) -> None:
    print(f"ascendops-train launch: {msg}", file=sys.stderr, flush=True)


def torchrun_has_shutdown_timeout() -> bool:
    """Whether the installed torchrun accepts --shutdown-timeout (torch >= 2.10), read from its source
    without importing torch."""
    spec = importlib.util.find_spec("torch")
    for d in (spec.submodule_search_locations or []) if spec else []:
        try:
            with open(os.path.join(d, "distributed", "run.py")) as f:
                text = f.read()
        except OSError:
            continue
        return any(flag in text for flag in SHUTDOWN_FLAGS)
    return False


def grace_mode(env: dict[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    mode = env.get(GRACE_MODE_ENV, "auto") or "auto"
    if mode not in ("auto", "flag", "patch"):
        raise ValueError(f"{GRACE_MODE_ENV}={mode!r}: expected auto, flag or patch")
    if mode == "auto":
        return "flag" if torchrun_has_shutdown_timeout() else "patch"
    return mode


def torchrun_command(grace_s: float, args: list[str], mode: str) -> list[str]:
    """The torchrun command line with the grace period applied. An explicit --shutdown-timeout in
    `args` wins (argparse takes the last one)."""
    if mode == "flag":
        return [sys.executable, "-m", "torch.distributed.run", f"--shutdown-timeout={math.ceil(grace_s)}", *args]
    return [sys.executable, "-m", "ascendops_trainer.launch", "--torchrun-grace", str(grace_s), *args]


def exit_code_for(torchrun_rc: int, status: dict[str, Any] | None) -> int:
    """The launcher's exit code from torchrun's and the node's status record (None: none of this launch)."""
    if status is not None:
        state = status.get("state")
        if state == "completed":
            return EXIT_COMPLETED
        if state == "stopped":
            return EXIT_STOPPED
        if state == "failed":
            code = status.get("exit_code")
            return code if code in (EXIT_CRASH, EXIT_CONFIG, EXIT_RANK_TABLE, EXIT_NONFINITE) else EXIT_CRASH
        # starting / running: the trainer ended without a final state (killed, crashed hard, another node)
    if torchrun_rc == 0:
        return EXIT_COMPLETED
    if torchrun_rc == 2 and status is None:
        return EXIT_CONFIG  # torchrun's own usage error: its arguments are wrong, a retry will not help
    return EXIT_CRASH


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` (from /proc): torchrun's workers run in sessions of their own."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _kill_tree(pid: int) -> None:
    for p in [pid, *_descendants(pid)]:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def launch(grace_s: float, args: list[str]) -> int:
    """Run torchrun with `args`; return the exit code of status.py (see the module docstring)."""
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        _say("no torchrun arguments: ascendops-train launch --grace-s G -- <torchrun args> -m ascendops_trainer "
             "train ...")
        return EXIT_CONFIG
    if grace_s <= 0:
        _say(f"--grace-s must be > 0, got {grace_s}")
        return EXIT_CONFIG
    env = dict(os.environ)
    env[GRACE_ENV] = f"{grace_s:g}"
    private_dir = None
    if not env.get(STATUS_ENV):
        private_dir = tempfile.mkdtemp(prefix="ascendops-launch-")
        env[STATUS_ENV] = os.path.join(private_dir, "status.json")
    status_path = env[STATUS_ENV]
    try:
        mode = grace_mode(env)
    except ValueError as e:
        _say(str(e))
        return EXIT_CONFIG
    cmd = torchrun_command(grace_s, args, mode)
    how = ("torchrun --shutdown-timeout" if mode == "flag"
           else f"torchrun's worker shutdown patched to wait {grace_s:g} s")
    _say(f"grace {grace_s:g} s after SIGTERM ({how}); status file {status_path}")

    started = time.time()
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    deadline: list[float] = []
    got: list[int] = []

    def forward(signum, _frame):
        got.append(signum)
        if not deadline:
            deadline.append(time.monotonic() + grace_s + KILL_MARGIN_S)
            _say(f"{signal.Signals(signum).name}: forwarded to torchrun; the workers save and stop "
                 f"(killed after {grace_s + KILL_MARGIN_S:g} s)")
        try:
            proc.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {s: signal.signal(s, forward) for s in FORWARDED}
    try:
        while True:
            try:
                rc = proc.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                if deadline and time.monotonic() > deadline[0]:
                    _say(f"still running {grace_s + KILL_MARGIN_S:g} s after the signal: SIGKILL")
                    _kill_tree(proc.pid)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    status = read_status(status_path)
    if status is not None and float(status.get("started_at") or 0) < started - 1.0:
        status = None  # left by an earlier launch
    code = exit_code_for(rc, status)
    what = (f"status {status['state']} at step {status.get('step')}/{status.get('steps')}"
            f"{', checkpoint ' + str(status['last_checkpoint']) if status.get('last_checkpoint') else ''}"
            f"{': ' + status['reason'] if status.get('reason') else ''}" if status else "no status from the trainer")
    _say(f"torchrun exited {rc}; {what}; exit code {code}")
    if private_dir:
        shutil.rmtree(private_dir, ignore_errors=True)
    return code


def add_parser(sub) -> None:
    import argparse

    p = sub.add_parser("launch", help="run torchrun so that a stop saves a checkpoint within --grace-s; exit codes "
                                      "0/1/2/3/4/143 (see README)")
    p.add_argument("--grace-s", type=float, required=True,
                   help="seconds the workers get after SIGTERM to save before anything is killed")
    p.add_argument("torchrun_args", nargs=argparse.REMAINDER,
                   help="-- then torchrun's arguments, ending in -m ascendops_trainer train ...")
    p.set_defaults(func=lambda a: launch(a.grace_s, a.torchrun_args))


def _torchrun_with_grace(argv: list[str]) -> None:
    """torchrun, with its worker shutdown waiting at least the grace period (torch < 2.10, where the
    agent calls PContext.close with the 30 s default). Runs in the launcher's child process."""
    grace = float(argv[0])
    from torch.distributed.elastic.multiprocessing import api

    stock = api.PContext.close

    def close(self, death_sig=None, timeout=30):
        return stock(self, death_sig, max(timeout, math.ceil(grace)))

    api.PContext.close = close
    from torch.distributed.run import main

    main(argv[1:])


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--torchrun-grace":
        _torchrun_with_grace(sys.argv[2:])
    else:
        sys.exit("usage: ascendops-train launch --grace-s G -- <torchrun arguments>")
