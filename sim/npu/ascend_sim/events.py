"""SIMULATION ONLY - not Huawei software. The simulator's event log (stand-in only).

``/var/log/ascend-sim/events.log``: one line per action, ``<UTC time> <action ...>``, e.g.
``2026-11-29T23:59:00Z install firmware 7.5.0.2.220 mode=upgrade rc=2``.
"""

import fcntl
import os
import time

from . import paths


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def log_event(text: str) -> None:
    path = paths.host_path(paths.EVENTS_LOG)
    paths.ensure_parent(path)
    with open(path, "a", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(f"{utc_now()} {text}\n")


def read_events() -> str:
    path = paths.host_path(paths.EVENTS_LOG)
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8") as f:
        return f.read()
