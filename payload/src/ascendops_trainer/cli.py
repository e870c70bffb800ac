"""`ascendops-train` entry point: parse the subcommand, hand over. Heavy imports happen later."""

from __future__ import annotations

import argparse
import os
import sys

from .collective import add_parser as add_collective_parser
from .config import ConfigError, add_config_arguments, config_from_args
from .launch import add_parser as add_launch_parser
from .parallel import RankTableError
from .progress import add_progress_argument, resolve_interval, resolve_mode
from .status import EXIT_CONFIG, EXIT_CRASH, EXIT_RANK_TABLE, RunStatus, one_line


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ascendops-train", description="Llama 3 training with DeepSpeed ZeRO "
                                "on Ascend NPU, CUDA or CPU. Launch `train` with torchrun for several devices.")
    sub = p.add_subparsers(dest="cmd", required=True)

    t = sub.add_parser("train", help="train (resumes from the latest checkpoint automatically)")
    add_config_arguments(t)

    b = sub.add_parser("bench", help="tokens/s and MFU: DeepSpeed stack vs a plain PyTorch loop")
    add_config_arguments(b)
    add_progress_argument(b)

    pn = sub.add_parser("plan", help="the memory planner's choices (ZeRO stage, recompute, buckets, gradient "
                        "communication) for a job on N nodes x D devices of G GiB, and why; no device needed")
    add_config_arguments(pn)
    pn.add_argument("--nodes", type=int, default=1)
    pn.add_argument("--devices-per-node", type=int, default=8)
    pn.add_argument("--device-memory-gib", type=float, required=True, help="memory of one device, GiB")

    pr = sub.add_parser("prepare", help="tokenize jsonl/jsonl.gz/parquet/txt files into token shards + index.json")
    pr.add_argument("inputs", nargs="+", help=".jsonl[.gz], .parquet, .txt[.gz]/.md (documents split at blank lines)")
    pr.add_argument("--tokenizer", required=True, help="local Hugging Face tokenizer directory")
    pr.add_argument("--out", required=True, help="output directory (becomes data.path)")
    pr.add_argument("--shard-tokens", type=int, default=1 << 28, help="tokens per shard file")
    pr.add_argument("--jsonl-field", default="text")
    pr.add_argument("--txt-docs", choices=("blank", "line", "file"), default="blank",
                    help="how text files split into documents")
    pr.add_argument("--no-eos", action="store_true", help="do not append EOS after each document")
    pr.add_argument("--workers", type=int, default=min(os.cpu_count() or 1, 16), help="tokenizer processes")
    pr.add_argument("--val-fraction", type=float, default=0.005,
                    help="share of documents held out as the validation split (0 = none)")
    add_progress_argument(pr)

    e = sub.add_parser("export", help="checkpoint -> Hugging Face directory (offline, one process)")
    e.add_argument("--checkpoint-dir", required=True, help="checkpoint.dir of a run")
    e.add_argument("--tag", help="checkpoint to export (default: latest)")
    e.add_argument("--out", required=True)
    e.add_argument("--dtype", choices=("bf16", "fp32"), default="bf16")
    e.add_argument("--tokenizer", help="tokenizer dir to copy (default: the one the data was prepared with)")
    add_progress_argument(e)

    add_collective_parser(sub)  # sets func=: dispatched first in main()
    add_launch_parser(sub)  # sets func=

    pl = sub.add_parser("plot", help="PNG plots (loss, tokens/s) from a run's metrics.jsonl")
    pl.add_argument("metrics", help="metrics.jsonl or the run directory")
    pl.add_argument("--out", help="output directory (default: <run dir>/plots)")
    return p


def _train(args) -> int:
    """`train` with the node's status file (status.py): starting before the model is built, the final
    state and exit code at the end, also for a config or rank-table error and any crash."""
    import signal

    from .train import StopFlag  # light: no torch

    # SIGTERM becomes a flag from here on: torchrun SIGTERMs this worker when another one exits first
    # (e.g. with the same config error), and this one must still report its own outcome.
    previous = signal.getsignal(signal.SIGTERM)
    stop = StopFlag().install()
    status = RunStatus.from_env()
    try:
        cfg = config_from_args(args)
        status.starting(cfg.train.steps)
        from .train import train

        return train(cfg, status, stop)
    except ConfigError as e:
        status.failed(EXIT_CONFIG, f"config error: {e}")
        raise
    except RankTableError as e:
        status.failed(EXIT_RANK_TABLE, f"rank table error: {e}")
        raise
    except Exception as e:
        status.failed(EXIT_CRASH, f"{type(e).__name__}: {one_line(str(e))}")
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


def plan_lines(cfg, nodes: int, devices_per_node: int, device_memory_gib: float) -> list[str]:
    """`ascendops-train plan`: the planner's reasons and the memory estimate of the chosen plan."""
    from .config import grad_accum_steps
    from .engine import plan_memory, resolve_precision
    from .model import build_hf_config

    if nodes < 1 or devices_per_node < 1 or device_memory_gib <= 0:
        raise ConfigError("--nodes and --devices-per-node must be >= 1 and --device-memory-gib > 0")
    dp = nodes * devices_per_node
    grad_accum_steps(cfg, dp)  # the batch must divide, as at launch
    precision = resolve_precision(cfg.train.precision, "npu")  # auto: bf16, as on any accelerator
    device_bytes = int(device_memory_gib * 2**30)
    plan = plan_memory(cfg, build_hf_config(cfg.model), dp, precision, device_bytes, devices_per_node)
    return [*plan.notes, "memory estimate " + plan.estimate.line(device_bytes)]


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # models and tokenizers are local directories, always
    args = _parser().parse_args(argv)
    try:
        progress = "off"
        if hasattr(args, "progress"):
            try:
                progress = resolve_mode(args.progress)
                resolve_interval()  # a bad ASCENDOPS_PROGRESS_INTERVAL is refused before any work
            except ValueError as e:
                raise ConfigError(str(e)) from None
        if getattr(args, "func", None):
            return args.func(args)
        if args.cmd == "train":
            return _train(args)
        if args.cmd == "bench":
            from .bench import bench

            return bench(config_from_args(args), progress=progress)
        if args.cmd == "plan":
            for line in plan_lines(config_from_args(args), args.nodes, args.devices_per_node, args.device_memory_gib):
                print(line)
            return 0
        if args.cmd == "prepare":
            from .data import prepare

            idx = prepare(args.inputs, args.tokenizer, args.out, shard_tokens=args.shard_tokens,
                          jsonl_field=args.jsonl_field, txt_docs=args.txt_docs, add_eos=not args.no_eos,
                          workers=args.workers, val_fraction=args.val_fraction, progress=progress)
            print(f"prepared {idx['num_tokens']:,} tokens from {idx['num_documents']:,} documents into "
                  f"{len(idx['shards'])} shard(s) in {args.out} (vocab {idx['vocab_size']}, {idx['dtype']}); "
                  f"validation: {idx['val_num_tokens']:,} tokens, {idx['val_num_documents']:,} documents")
            return 0
        if args.cmd == "export":
            from .checkpoint import export_from_checkpoint

            tag = export_from_checkpoint(args.checkpoint_dir, args.out, tag=args.tag, dtype_name=args.dtype,
                                         tokenizer_dir=args.tokenizer, progress=progress)
            print(f"exported {args.checkpoint_dir}/{tag} to {args.out} ({args.dtype})")
            return 0
        if args.cmd == "plot":
            from .metrics import plot

            run_dir = args.metrics if os.path.isdir(args.metrics) else os.path.dirname(args.metrics)
            for path in plot(args.metrics, args.out or os.path.join(run_dir, "plots")):
                print(path)
            return 0
    except ConfigError as e:
        print(f"ascendops-train: config error: {e}", file=sys.stderr)
        return EXIT_CONFIG
    except RankTableError as e:
        print(f"ascendops-train: rank table error: {e}", file=sys.stderr)
        return EXIT_RANK_TABLE
    return EXIT_CRASH
