"""SIMULATION ONLY - not Huawei software, not part of the trainer. A simulated rank holds its NPU.

On a real node a training rank opens its NPU through the driver when torch_npu sets the device, and
npu-smi counts the NPU busy (AI Core use, HBM, power, its process table). The simulated ranks train on
CPU and open nothing, so the stand-in npu-smi (sim/npu, busy rule: a process with ``/dev/davinciN``
open) would report every NPU idle. inventories/sim mounts this directory into the trainer's container
and puts it on ``PYTHONPATH``; Python imports ``sitecustomize`` at start-up, and a process with
``LOCAL_RANK`` (each rank torchrun starts) opens its device with ``O_PATH`` (the simulated device nodes
have no driver behind them; a path descriptor is all the busy rule reads) and keeps it for its life.
Its device: the ``LOCAL_RANK``-th of the ``/dev/davinciN`` the container has, in ascending order, as
CANN numbers visible devices (0..n-1); ``ASCEND_RT_VISIBLE_DEVICES``, when set, picks among those by
that number (logical ids, as aclrtSetDevice takes them), not by host id. Forked children (data
loader workers) close it: the rank holds the device, not its helpers. Anything unexpected: nothing is
held and nothing is said (the job must never fail because of this stand-in).
"""

import contextlib
import os
import re

_HELD = None


def _visible(env, dev_dir="/dev"):
    ids = sorted(int(n[7:]) for n in os.listdir(dev_dir) if re.match(r"^davinci\d+$", n))
    wanted = env.get("ASCEND_RT_VISIBLE_DEVICES", "").strip()
    if wanted:
        ids = [ids[int(i)] for i in wanted.split(",") if i.strip().isdigit() and int(i) < len(ids)]
    return ids


def hold(env=None, dev_dir="/dev"):
    """Open this rank's /dev/davinciN (O_PATH); returns the fd, or None when there is none to hold."""
    global _HELD
    env = os.environ if env is None else env
    rank = env.get("LOCAL_RANK", "")
    if _HELD is not None or not rank.isdigit():
        return _HELD
    try:
        ids = _visible(env, dev_dir)
        if int(rank) >= len(ids):
            return None
        _HELD = os.open(os.path.join(dev_dir, f"davinci{ids[int(rank)]}"), os.O_PATH)
    except OSError:
        return None
    os.register_at_fork(after_in_child=_release)
    return _HELD


def _release():
    global _HELD
    if _HELD is not None:
        with contextlib.suppress(OSError):
            os.close(_HELD)
        _HELD = None


hold()
