"""Collective pre-flight: all-reduce bandwidth and correctness over torch.distributed.

Run on every node with torchrun before training (``ascendops-train collective --out report.json``):
for each message size it times ``all_reduce(SUM)`` on the device backend (hccl on NPU, nccl on
CUDA, gloo on CPU), checks the result value on every rank, and rank 0 writes a JSON report:

    {"backend": "hccl", "world_size": 16, "nodes": {"host-a": [0, ..., 7], ...},
     "results": [{"size_bytes": 8192, "time_us": 12.5, "alg_bandwidth_gbs": 0.65,
                  "bus_bandwidth_gbs": 1.22, "check_result": "success",
                  "node_time_us": {"host-a": 12.1, "host-b": 12.5}}, ...],
     "failed_nodes": [], "slowest_node": "host-b", "ok": true}

``time_us`` is the slowest rank's average per operation (a collective is as fast as its slowest
member); algorithm bandwidth = size / time (GB = 1e9 bytes, as CANN's hccl_test prints it); bus
bandwidth = algorithm bandwidth x 2(n-1)/n (the traffic a ring all-reduce puts on each link).
The exit status is 0 when every check passed, 1 otherwise. A bandwidth floor is the caller's choice
(the collection's collective playbook applies it to the report).
"""

from __future__ import annotations

import json
import os
import re
import socket
import time

from .config import ConfigError
from .parallel import device_module, start_process_group

DEFAULT_SIZES = "8K,64K,1M,16M,64M"
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """'8K' -> 8192, '1M', '1G', '4096' (binary units, as hccl_test's -b/-e)."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?B?)\s*", str(text), re.IGNORECASE)
    if not m:
        raise ConfigError(f"collective: size {text!r} is not a number with an optional K/M/G suffix")
    unit = m.group(2).upper().rstrip("B") or ""
    size = int(m.group(1)) * _UNITS[unit]
    if size < 4:
        raise ConfigError(f"collective: size {text!r} is below one fp32 element (4 bytes)")
    return size


def parse_sizes(text: str) -> list[int]:
    return [parse_size(s) for s in str(text).split(",") if s.strip()]


def bus_factor(world: int) -> float:
    return 2.0 * (world - 1) / world if world > 1 else 1.0


def summarize(results: list[dict], nodes: dict[str, list[int]]) -> dict:
    """Failed nodes (a rank whose check failed) and the slowest node over all sizes."""
    failed = sorted({node for r in results for node in r.get("failed_nodes", [])})
    totals: dict[str, float] = {}
    for r in results:
        for node, t in r.get("node_time_us", {}).items():
            totals[node] = totals.get(node, 0.0) + t
    slowest = max(totals, key=totals.get) if totals else None
    return {"failed_nodes": failed, "slowest_node": slowest, "ok": not failed and bool(results),
            "nodes": nodes}


def run_collective(sizes: list[int], iters: int = 10, warmup: int = 2, device: str = "auto",
                   out: str | None = None, timeout_s: int = 600, node_name: str | None = None) -> dict:
    """Time all_reduce for every size on every rank; rank 0 returns (and writes) the report."""
    import torch
    import torch.distributed as dist

    _, _, device_type, dev, backend = start_process_group(device, timeout_s)
    mod = device_module(device_type)
    rank, world = dist.get_rank(), dist.get_world_size()
    node = node_name or os.environ.get("ASCENDOPS_NODE_NAME") or socket.gethostname()
    names: list = [None] * world
    dist.all_gather_object(names, node)
    nodes: dict[str, list[int]] = {}
    for r, n in enumerate(names):
        nodes.setdefault(n, []).append(r)

    def sync():
        if mod is not None:
            mod.synchronize()

    expected = world * (world + 1) / 2.0  # rank r contributes r + 1
    results = []
    for size in sizes:
        numel = max(size // 4, 1)
        buf = torch.empty(numel, dtype=torch.float32, device=dev)
        for _ in range(warmup):
            buf.fill_(rank + 1)
            dist.all_reduce(buf)
        sync()
        dist.barrier()
        elapsed = 0.0
        ok = True
        for _ in range(max(iters, 1)):
            buf.fill_(rank + 1)
            sync()
            t0 = time.perf_counter()
            dist.all_reduce(buf)
            sync()
            elapsed += time.perf_counter() - t0
            ok = ok and bool(torch.all(buf == expected).item())
        mine = elapsed / max(iters, 1) * 1e6
        gathered: list = [None] * world
        dist.all_gather_object(gathered, (mine, ok))
        worst = max(t for t, _ in gathered)
        node_time: dict[str, float] = {}
        failed = set()
        for r, (t, good) in enumerate(gathered):
            node_time[names[r]] = max(node_time.get(names[r], 0.0), t)
            if not good:
                failed.add(names[r])
        alg = size / (worst / 1e6) / 1e9 if worst > 0 else 0.0
        results.append({"size_bytes": numel * 4, "time_us": round(worst, 2), "alg_bandwidth_gbs": round(alg, 4),
                        "bus_bandwidth_gbs": round(alg * bus_factor(world), 4),
                        "check_result": "success" if not failed else "fail",
                        "failed_nodes": sorted(failed), "node_time_us": {k: round(v, 2) for k, v in node_time.items()}})
        if rank == 0:
            r = results[-1]
            print(f"all_reduce {r['size_bytes']:>12d} B | {r['time_us']:>12.2f} us | "
                  f"{r['alg_bandwidth_gbs']:>9.4f} GB/s | {r['check_result']}", flush=True)
    report = {"backend": backend, "device_type": device_type, "world_size": world, "iters": iters,
              "results": results, **summarize(results, nodes)}
    if rank == 0 and out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(report, f, indent=2)
        os.replace(tmp, out)
    dist.barrier()
    dist.destroy_process_group()
    return report


def add_parser(sub) -> None:
    """The `collective` subcommand (cli.py registers it)."""
    c = sub.add_parser("collective", help="all-reduce bandwidth and correctness pre-flight (launch with torchrun)")
    c.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated message sizes, e.g. 8K,1M,64M")
    c.add_argument("--iters", type=int, default=10, help="timed all-reduces per size")
    c.add_argument("--warmup", type=int, default=2, help="untimed all-reduces per size first")
    c.add_argument("--device", choices=("auto", "npu", "cuda", "cpu"), default="auto")
    c.add_argument("--out", help="JSON report written by rank 0")
    c.add_argument("--timeout", type=int, default=600, help="process-group timeout in seconds")
    c.add_argument("--node-name", help="name of this node in the report (default: $ASCENDOPS_NODE_NAME or hostname)")
    c.set_defaults(func=main)


def main(args) -> int:
    report = run_collective(parse_sizes(args.sizes), args.iters, args.warmup, args.device, args.out,
                            args.timeout, args.node_name)
    return 0 if report["ok"] else 1
