"""Helpers shared by the payload tests (a module of its own: other test trees have a conftest too)."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))  # the tests run without installing the package

STEPS = 40  # the "2N" of the resume test; the debug preset's default too
CKPT_INTERVAL = 10


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def subprocess_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK_TABLE_FILE", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                        "TORCH_ELASTIC_SHUTDOWN_TIMEOUT") and not k.startswith("ASCENDOPS_")}
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update({"OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"})
    env.update(extra)
    return env


def one_rank_env() -> dict[str, str]:
    """subprocess_env for a lone process that sets up a 1-rank process group itself (no torchrun)."""
    return subprocess_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), RANK="0", WORLD_SIZE="1",
                          LOCAL_RANK="0")


def run_worker(worker: str | Path, nproc: int, timeout: int = 600) -> dict:
    """Run a test worker script (worker_main) alone (nproc 1) or under torchrun; its ``RESULT`` json."""
    import subprocess

    cmd = [sys.executable, str(worker)] if nproc == 1 else [*torchrun_cmd([], nproc=nproc)[:-2], str(worker)]
    proc = subprocess.run(cmd, env=subprocess_env(), capture_output=True, text=True, timeout=timeout, cwd=str(TESTS))
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def worker_main(produce) -> None:
    """A test worker's main: CPU process group (torchrun's or a lone rank's), ``produce(ctx)``'s dict printed by
    rank 0 as one ``RESULT <json>`` line (run_worker reads it)."""
    import torch

    from ascendops_trainer.parallel import init_distributed, shutdown

    ctx = init_distributed("cpu", timeout_s=120)
    try:
        out = produce(ctx)
        if ctx.rank == 0:
            print("RESULT " + json.dumps(out), flush=True)
        torch.distributed.barrier()  # no rank leaves while another still talks to it
    finally:
        shutdown()


def torchrun_cmd(args: list[str], nproc: int = 2) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--node_rank", "0",
            "--nproc_per_node", str(nproc), "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
            "-m", "ascendops_trainer", *args]


def launch_cmd(args: list[str], grace_s: float = 120, nproc: int = 2) -> list[str]:
    """`ascendops-train launch --grace-s G -- <the torchrun arguments of torchrun_cmd>`."""
    return [sys.executable, "-m", "ascendops_trainer", "launch", "--grace-s", str(grace_s), "--",
            *torchrun_cmd(args, nproc)[3:]]


def read_status(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())


def train_args(data: str | Path, run_dir: str | Path, *extra: str) -> list[str]:
    return ["train", "--preset", "debug", "--data", str(data), "--run-dir", str(run_dir),
            "--steps", str(STEPS), "--checkpoint.interval", str(CKPT_INTERVAL), "--zero-stage", "3", *extra]


def read_metrics(run_dir: str | Path) -> dict[int, dict]:
    from ascendops_trainer.metrics import read_jsonl

    return {r["step"]: r for r in read_jsonl(str(Path(run_dir) / "metrics.jsonl"))}


def rank_table(servers: list[tuple[str, list[int]]]) -> str:
    """HCCL rank table v1.0 text: [(server_ip, [device ids])], ranks numbered server by server."""
    rank, server_list = 0, []
    for ip, devices in servers:
        devs = []
        for d in devices:
            devs.append({"device_id": str(d), "device_ip": f"192.168.100.{rank + 10}", "rank_id": str(rank)})
            rank += 1
        server_list.append({"server_id": ip, "host_ip": ip, "device": devs})
    return json.dumps({"version": "1.0", "status": "completed", "server_count": str(len(servers)),
                       "server_list": server_list})
