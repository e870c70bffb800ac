"""Exit codes and the per-node status file that the launch stage reads.

Exit codes (the trainer's and `ascendops-train launch`'s; systemd's RestartPreventExitStatus takes
DO_NOT_RETRY):

    0    completed: train.steps reached (or the checkpoint was already there: nothing to train)
    1    crash: any other exception; a restart makes sense
    2    config error (the message says what to change)
    3    rank-table error (the HCCL rank table does not describe this launch)
    4    non-finite loss or gradient norm (nothing saved after the last good step)
    143  stopped on SIGTERM after saving a checkpoint (128 + SIGTERM)

Status file: `ASCENDOPS_STATUS_FILE` (unset: none is written). Only the first process of each node
(local rank 0) writes it, atomically (a temp file in the same directory, then os.replace), mode 0644:

    {"schema": 1, "job": $ASCENDOPS_JOB or null, "node": $ASCENDOPS_NODE_NAME or the hostname,
     "node_rank": int, "state": "starting" | "running" | "completed" | "stopped" | "failed",
     "step": int, "steps": int, "loss": float | null, "tokens_per_s_per_device": float | null,
     "mfu": float | null, "last_checkpoint": tag | null, "last_checkpoint_step": int | null,
     "exit_code": int | null, "reason": str | null, "started_at": epoch, "updated_at": epoch,
     "completed_at": epoch | null, "pid": int}

Nothing here imports torch: the file is written before the heavy imports, and on config errors.
"""

from __future__ import annotations

import json
import math
import os
import socket
import tempfile
import time
from typing import Any

EXIT_COMPLETED = 0
EXIT_CRASH = 1
EXIT_CONFIG = 2
EXIT_RANK_TABLE = 3
EXIT_NONFINITE = 4
EXIT_STOPPED = 143  # 128 + SIGTERM
DO_NOT_RETRY = (EXIT_CONFIG, EXIT_RANK_TABLE, EXIT_NONFINITE)  # systemd RestartPreventExitStatus=2 3 4

STATUS_ENV = "ASCENDOPS_STATUS_FILE"
GRACE_ENV = "ASCENDOPS_GRACE_S"  # exported by `ascendops-train launch --grace-s` to the trainer
SCHEMA = 1
STATES = ("starting", "running", "completed", "stopped", "failed")


def one_line(text: str, limit: int = 500) -> str:
    """A reason as one line: the first non-empty line, cut at `limit` characters."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    return first if len(first) <= limit else first[:limit - 3] + "..."


def _finite_or_none(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None  # JSON has no NaN/inf; a non-finite loss is named in `reason`


def write_json_atomic(path: str, record: dict[str, Any], mode: int = 0o644) -> None:
    """Write a JSON file so a reader sees the old or the new content, never a partial one."""
    d = os.path.dirname(os.path.abspath(path)) or "."
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(record, f, indent=1)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)  # mkstemp creates 0600; the launch stage's status playbook reads it as another user
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def read_status(path: str) -> dict[str, Any] | None:
    """The status record at `path`, or None when it is missing or unreadable."""
    try:
        with open(path) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) and rec.get("schema") == SCHEMA else None


class RunStatus:
    """This process's view of the status file; a no-op unless the variable is set and this process
    is its node's first (local rank 0). Writes are cheap (one small file) and happen at start, at
    log intervals, after saves and at the end."""

    def __init__(self, path: str | None, node_rank: int = 0, job: str | None = None, node: str | None = None,
                 writer: bool = True):
        self.path = path if (path and writer) else None
        now = time.time()
        self.record: dict[str, Any] = {
            "schema": SCHEMA, "job": job, "node": node or socket.gethostname(), "node_rank": int(node_rank),
            "state": "starting", "step": 0, "steps": 0, "loss": None, "tokens_per_s_per_device": None,
            "mfu": None, "last_checkpoint": None, "last_checkpoint_step": None, "exit_code": None,
            "reason": None, "started_at": now, "updated_at": now, "completed_at": None, "pid": os.getpid(),
        }

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> RunStatus:
        from .parallel import launch_info

        env = os.environ if env is None else env
        launch = launch_info(env)
        return cls(env.get(STATUS_ENV) or None, node_rank=launch.node_rank, job=env.get("ASCENDOPS_JOB") or None,
                   node=env.get("ASCENDOPS_NODE_NAME") or None, writer=launch.is_node_main)

    @property
    def enabled(self) -> bool:
        return self.path is not None

    @property
    def state(self) -> str:
        return self.record["state"]

    def update(self, **fields: Any) -> None:
        unknown = set(fields) - set(self.record)
        if unknown:
            raise KeyError(f"not status fields: {sorted(unknown)}")
        self.record.update(fields)
        self.record["updated_at"] = time.time()
        if self.path is None:
            return
        try:
            write_json_atomic(self.path, self.record)
        except OSError as e:  # a status file must never stop training
            import logging

            logging.getLogger(__name__).warning("cannot write the status file %s: %s", self.path, e)

    def starting(self, steps: int) -> None:
        self.update(state="starting", steps=int(steps))

    def resumed(self, step: int, tag: str) -> None:
        self.update(step=int(step), last_checkpoint=tag, last_checkpoint_step=int(step))

    def running(self, step: int, loss: float | None, tokens_per_s: float | None, mfu: float | None) -> None:
        self.update(state="running", step=int(step), loss=_finite_or_none(loss),
                    tokens_per_s_per_device=_finite_or_none(tokens_per_s), mfu=_finite_or_none(mfu))

    def saved(self, step: int, tag: str) -> None:
        self.update(last_checkpoint=tag, last_checkpoint_step=int(step))

    def completed(self, step: int, reason: str | None = None) -> None:
        self.update(state="completed", step=int(step), exit_code=EXIT_COMPLETED, reason=reason,
                    completed_at=time.time())

    def stopped(self, step: int, reason: str) -> None:
        self.update(state="stopped", step=int(step), exit_code=EXIT_STOPPED, reason=one_line(reason))

    def failed(self, code: int, reason: str, step: int | None = None) -> None:
        fields: dict[str, Any] = {"state": "failed", "exit_code": int(code), "reason": one_line(reason)}
        if step is not None:
            fields["step"] = int(step)
        self.update(**fields)

    def finish(self, code: int, step: int, reason: str | None = None) -> None:
        """The final state for a trainer exit code."""
        if code == EXIT_COMPLETED:
            self.completed(step, reason)
        elif code == EXIT_STOPPED:
            self.stopped(step, reason or "SIGTERM")
        else:
            self.failed(code, reason or f"exit code {code}", step)
