"""Shared fixtures for the payload tests: a prepared corpus and one uninterrupted 2-process run.

The multi-process runs are the expensive part (each process imports torch, transformers and
DeepSpeed): they are session fixtures, shared by every test that only reads their results.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trainer_helpers import launch_cmd, rank_table, subprocess_env, train_args  # noqa: E402


@pytest.fixture(scope="session")
def prepared(tmp_path_factory) -> dict[str, str]:
    """Corpus (.txt + .jsonl), a BPE tokenizer trained on it, and its token shards."""
    from _trainer_corpus import documents, write_corpus, write_tokenizer

    from ascendops_trainer.data import prepare

    root = tmp_path_factory.mktemp("prepared")
    files = write_corpus(str(root / "corpus"))
    tok = write_tokenizer(str(root / "tokenizer"), documents())
    data = str(root / "data")
    prepare(files, tok, data, shard_tokens=8000, val_fraction=0.05)  # several shards: samples cross them
    return {"root": str(root), "files": files, "tokenizer": tok, "data": data}


@pytest.fixture(scope="session")
def straight_run(prepared, tmp_path_factory) -> Path:
    """2 processes, gloo, ZeRO-3: STEPS uninterrupted steps, exported to <run>/hf at the end.
    Launched through `ascendops-train launch` (its status file: <run>/../status.json, its output:
    <run>/../log.txt) as the launch stage runs a job on part of a node: NPUs 4 and 5
    (ASCEND_RT_VISIBLE_DEVICES=4,5, a rank table naming devices 4 and 5 on 1 server), with the host
    socket variables set to the interface of the launch address (loopback here)."""
    root = tmp_path_factory.mktemp("straight")
    run = root / "run"
    table = root / "rank_table.json"
    table.write_text(rank_table([("127.0.0.1", [4, 5])]))
    cmd = launch_cmd(train_args(prepared["data"], run, "--export-dir", str(run / "hf")))
    env = subprocess_env(RANK_TABLE_FILE=str(table), ASCENDOPS_STATUS_FILE=str(root / "status.json"),
                         ASCENDOPS_JOB="straight", ASCENDOPS_NODE_NAME="node-a", ASCENDOPS_HOST_DEVICES="4,5",
                         GLOO_SOCKET_IFNAME="lo", HCCL_SOCKET_IFNAME="lo")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    (root / "log.txt").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, f"straight run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return run
