#!/usr/bin/env python3
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SIMULATION ONLY. A small training data set for the debug Llama on the simulated cluster.

Writes the trainer tests' synthetic corpus, a BPE tokenizer trained on it and the token shards
(`ascendops-train prepare` output) to OUT (default .cache/sim/debug-data/data). The launch role copies
that directory to every node (launch_job.data_src). Nothing is downloaded. Re-running is a no-op when
OUT already holds an index.json.

    PYTHONPATH=payload/src .venv/bin/python sim/data/debug-data.py [OUT]
"""

import os
import sys
import tempfile

repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(repo, "payload", "src"))
sys.path.insert(0, os.path.join(repo, "payload", "tests"))

from _trainer_corpus import documents, write_corpus, write_tokenizer  # noqa: E402
from ascendops_trainer.data import prepare  # noqa: E402


def main() -> int:
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(repo, ".cache", "sim", "debug-data", "data")
    if os.path.isfile(os.path.join(out, "index.json")):
        print(f"debug data already in {out}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        files = write_corpus(os.path.join(tmp, "corpus"))
        tok = write_tokenizer(os.path.join(os.path.dirname(out), "tokenizer"), documents())
        idx = prepare(files, tok, out + ".tmp", shard_tokens=8000)
    os.replace(out + ".tmp", out)
    print(f"debug data: {idx['num_tokens']} tokens in {len(idx['shards'])} shards in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
