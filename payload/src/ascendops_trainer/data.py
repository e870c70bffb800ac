"""Token data: `prepare` (text/JSONL -> flat token shards + index) and the training loader.

On disk (a directory):
  index.json            what is there: dtype, vocab size, shards and their token counts, tokenizer
  shard_00000.bin ...   flat little-endian token ids (uint16 when the vocabulary fits, else uint32)

The loader sees the shards as one token stream and cuts it into fixed-length samples: sample i is
tokens [i*L, i*L + L + 1) (inputs are the first L, targets the last L). Each epoch visits the
samples in a seeded permutation. One micro-step consumes ``dp_size * micro_batch`` samples of that
order; data-parallel rank r takes the r-th slice. Its position (epoch, samples consumed) is global,
so it goes into the checkpoint and a resume continues with exactly the next batch.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

INDEX_NAME = "index.json"
FORMAT = "ascendops-tokens"


# ---------------------------------------------------------------- prepare


def _iter_documents(path: str, jsonl_field: str, txt_docs: str) -> Iterator[str]:
    """Documents of one input file. JSONL: one per line (field `jsonl_field`). Text files:
    txt_docs='blank' splits at blank lines, 'line' makes each non-empty line a document, 'file'
    takes the whole file."""
    if path.endswith((".jsonl", ".json")):
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{n}: not JSON ({e})") from None
                if jsonl_field not in rec:
                    raise ValueError(f"{path}:{n}: no field '{jsonl_field}' (set --jsonl-field)")
                yield str(rec[jsonl_field])
        return
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if txt_docs == "file":
        if text.strip():
            yield text
    elif txt_docs == "line":
        yield from (ln for ln in text.splitlines() if ln.strip())
    else:
        buf: list[str] = []
        for ln in text.splitlines():
            if ln.strip():
                buf.append(ln)
            elif buf:
                yield "\n".join(buf)
                buf = []
        if buf:
            yield "\n".join(buf)


def _batched(it: Iterable[str], n: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for x in it:
        batch.append(x)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch


def _write_shard(path: Path, tokens: np.ndarray) -> str:
    mm = np.memmap(path, dtype=tokens.dtype, mode="w+", shape=tokens.shape)
    mm[:] = tokens
    mm.flush()
    del mm
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            h.update(chunk)
        os.fsync(f.fileno())
    return h.hexdigest()


def prepare(inputs: list[str], tokenizer_dir: str, out_dir: str, shard_tokens: int = 1 << 28,
            jsonl_field: str = "text", txt_docs: str = "blank", add_eos: bool = True,
            batch_docs: int = 256) -> dict[str, Any]:
    """Tokenize documents into flat shards with an index; returns the index.

    Each document is encoded with the tokenizer's own special tokens (BOS for Llama 3) and ends
    with EOS (unless add_eos=False or the tokenizer already appended it).
    """
    from transformers import AutoTokenizer

    if not os.path.isdir(tokenizer_dir):
        raise FileNotFoundError(f"tokenizer directory {tokenizer_dir} does not exist (nothing is downloaded)")
    tok = AutoTokenizer.from_pretrained(tokenizer_dir, local_files_only=True)
    vocab = len(tok)
    dtype = np.uint16 if vocab <= np.iinfo(np.uint16).max + 1 else np.uint32
    eos = tok.eos_token_id
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / INDEX_NAME).unlink(missing_ok=True)  # an index marks a complete directory
    for old in out.glob("shard_*.bin"):
        old.unlink()

    shards: list[dict[str, Any]] = []
    pending: list[np.ndarray] = []
    pending_n = 0
    n_docs = 0
    t0 = time.time()

    def flush(final: bool) -> None:
        nonlocal pending, pending_n
        while pending_n >= shard_tokens or (final and pending_n):
            flat = np.concatenate(pending)
            take, rest = flat[:shard_tokens], flat[shard_tokens:]
            name = f"shard_{len(shards):05d}.bin"
            digest = _write_shard(out / name, take)
            shards.append({"file": name, "num_tokens": int(take.size), "sha256": digest})
            pending, pending_n = ([rest] if rest.size else []), int(rest.size)

    for path in inputs:
        for batch in _batched(_iter_documents(path, jsonl_field, txt_docs), batch_docs):
            for ids in tok(batch)["input_ids"]:
                if add_eos and eos is not None and (not ids or ids[-1] != eos):
                    ids = [*ids, eos]
                pending.append(np.asarray(ids, dtype=dtype))
                pending_n += len(ids)
                n_docs += 1
            flush(final=False)
    flush(final=True)
    if not shards:
        raise ValueError(f"no tokens produced from {inputs}")

    index = {
        "format": FORMAT, "version": 1, "dtype": np.dtype(dtype).name, "vocab_size": vocab,
        "bos_id": tok.bos_token_id, "eos_id": eos, "tokenizer": os.path.abspath(tokenizer_dir),
        "num_tokens": sum(s["num_tokens"] for s in shards), "num_documents": n_docs,
        "shards": shards, "sources": [os.path.abspath(p) for p in inputs],
        "prepare_seconds": round(time.time() - t0, 3),
    }
    tmp = out / (INDEX_NAME + ".tmp")
    with open(tmp, "w") as f:
        json.dump(index, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out / INDEX_NAME)
    return index


# ---------------------------------------------------------------- dataset


class TokenDataset:
    """Read-only view of a prepared directory: one virtual stream over memory-mapped shards."""

    def __init__(self, path: str):
        index_path = Path(path) / INDEX_NAME
        if not index_path.is_file():
            raise FileNotFoundError(f"{index_path} not found: run `ascendops-train prepare` first "
                                    "(data.path must be its output directory)")
        self.path = str(path)
        self.index = json.loads(index_path.read_text())
        if self.index.get("format") != FORMAT:
            raise ValueError(f"{index_path} is not an {FORMAT} index")
        dtype = np.dtype(self.index["dtype"])
        self.shards = [np.memmap(Path(path) / s["file"], dtype=dtype, mode="r", shape=(s["num_tokens"],))
                       for s in self.index["shards"]]
        self.starts = np.cumsum([0] + [len(s) for s in self.shards])
        self.num_tokens = int(self.starts[-1])
        # Identifies the data for resume checks: changing the data under a run is refused.
        self.fingerprint = hashlib.sha256(
            json.dumps([(s["file"], s["num_tokens"], s.get("sha256")) for s in self.index["shards"]]).encode()
        ).hexdigest()[:16]

    @property
    def vocab_size(self) -> int:
        return int(self.index["vocab_size"])

    def tokens(self, start: int, length: int) -> np.ndarray:
        """Tokens [start, start+length) of the stream, across shard boundaries."""
        out = np.empty(length, dtype=np.int64)
        filled = 0
        while filled < length:
            pos = start + filled
            k = int(np.searchsorted(self.starts, pos, side="right")) - 1
            off = pos - int(self.starts[k])
            n = min(length - filled, len(self.shards[k]) - off)
            out[filled:filled + n] = self.shards[k][off:off + n]
            filled += n
        return out

    def num_samples(self, seq_len: int) -> int:
        return max((self.num_tokens - 1) // seq_len, 0)

    def sample(self, i: int, seq_len: int) -> np.ndarray:
        return self.tokens(i * seq_len, seq_len + 1)


@dataclass
class LoaderState:
    epoch: int = 0
    consumed: int = 0  # samples of this epoch already served, over all data-parallel ranks
    seed: int = 0
    seq_len: int = 0
    fingerprint: str = ""


class DistributedLoader:
    """Endless iterator of [micro_batch, seq_len + 1] int64 batches for one data-parallel rank."""

    def __init__(self, dataset: TokenDataset, seq_len: int, micro_batch: int, dp_rank: int, dp_size: int,
                 seed: int, shuffle: bool = True):
        self.ds, self.seq_len, self.micro, self.rank, self.world = dataset, seq_len, micro_batch, dp_rank, dp_size
        self.shuffle = shuffle
        self.n = dataset.num_samples(seq_len)
        self.per_step = micro_batch * dp_size
        if self.n < self.per_step:
            raise ValueError(f"data at {dataset.path} has {dataset.num_tokens} tokens = {self.n} samples of "
                             f"{seq_len}+1 tokens, fewer than one micro-step needs "
                             f"({micro_batch} x {dp_size} ranks = {self.per_step})")
        self.state = LoaderState(seed=seed, seq_len=seq_len, fingerprint=dataset.fingerprint)
        self._order_epoch = -1
        self._order: np.ndarray | None = None

    def _epoch_order(self) -> np.ndarray:
        if self._order_epoch != self.state.epoch:
            if self.shuffle:
                rng = np.random.default_rng([self.state.seed, self.state.epoch])
                self._order = rng.permutation(self.n)
            else:
                self._order = np.arange(self.n)
            self._order_epoch = self.state.epoch
        return self._order

    def next_indices(self) -> np.ndarray:
        """Sample indices of this rank's next micro-batch; advances the (global) position."""
        if self.state.consumed + self.per_step > self.n:  # drop the incomplete tail, next epoch
            self.state.epoch += 1
            self.state.consumed = 0
        order = self._epoch_order()
        lo = self.state.consumed + self.rank * self.micro
        idx = order[lo:lo + self.micro]
        self.state.consumed += self.per_step
        return idx

    def __iter__(self):
        return self

    def __next__(self):
        import torch

        idx = self.next_indices()
        batch = np.stack([self.ds.sample(int(i), self.seq_len) for i in idx])
        return torch.from_numpy(batch)

    def state_dict(self) -> dict[str, Any]:
        return dict(vars(self.state))

    def load_state_dict(self, sd: dict[str, Any]) -> None:
        st = LoaderState(**sd)
        if st.fingerprint != self.ds.fingerprint:
            raise ValueError(f"checkpoint was trained on different data (fingerprint {st.fingerprint}, "
                             f"data.path has {self.ds.fingerprint}); refusing to resume on other data")
        if st.seq_len != self.seq_len:
            raise ValueError(f"checkpoint used data.seq_len={st.seq_len}, this run {self.seq_len}")
        self.state = st
