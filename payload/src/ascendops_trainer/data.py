"""Token data: `prepare` (text/JSONL -> flat token shards + index) and the training loader.

On disk (a directory):
  index.json            what is there: dtype, vocab size, shards and their token counts, tokenizer
  shard_00000.bin ...   flat little-endian token ids (uint16 when the vocabulary fits, else uint32)
  shard_00000.docs ...  int64 offsets in that shard where a document starts (document masking)
  val_00000.bin/.docs   the validation split (whole documents held out), same layout

The loader sees the shards as one token stream and cuts it into fixed-length samples: sample i is
tokens [i*L, i*L + L + 1) (inputs are the first L, targets the last L). Each epoch visits the
samples in a seeded permutation, computed on the fly (a keyed Feistel network with cycle walking,
`SamplePermutation`): O(1) memory, also for 15T tokens (1.8e9 samples of 8192, whose explicit
permutation would take 15 GB per rank). One micro-step consumes ``dp_size * micro_batch`` samples of
that order; data-parallel rank r takes the r-th slice. Its position (epoch, samples consumed) is
global, so it goes into the checkpoint and a resume continues with exactly the next batch.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

INDEX_NAME = "index.json"
FORMAT = "ascendops-tokens"


# ---------------------------------------------------------------- prepare


INPUT_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".parquet", ".txt", ".txt.gz", ".md")


def _open_text(path: str):
    """A text stream (read line by line, never the whole file), gzip-decompressed for *.gz."""
    if path.endswith(".gz"):
        import gzip

        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _disk_position(f) -> int:
    """Bytes of the file on disk read so far through text stream `f` (_open_text): the compressed
    position for .gz. Read-ahead makes it run up to one buffer ahead of the documents yielded."""
    buf = f.buffer
    raw = getattr(buf, "fileobj", None)  # gzip.GzipFile: the file underneath
    return (raw if raw is not None else buf).tell()


def _iter_documents(path: str, jsonl_field: str, txt_docs: str,
                    where: list[Callable[[], int]] | None = None) -> Iterator[str]:
    """Documents of one input file, streamed. JSONL (optionally .gz): one per line (field
    `jsonl_field`). Parquet: column `jsonl_field`, one row group at a time. Text files: txt_docs='blank'
    splits at blank lines, 'line' makes each non-empty line a document, 'file' takes the whole file.
    where: when given, where[0] becomes a function returning the bytes of the file on disk read so far
    (progress; called between documents, not per line)."""
    where = where if where is not None else [lambda: 0]
    if path.endswith(".parquet"):
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise ValueError(f"{path}: reading parquet needs pyarrow (pip install pyarrow)") from None
        pf = pq.ParquetFile(path)
        if jsonl_field not in pf.schema_arrow.names:
            raise ValueError(f"{path}: no column '{jsonl_field}' (set --jsonl-field); columns: {pf.schema_arrow.names}")
        size, groups_read = os.path.getsize(path), [0]
        where[0] = lambda: size * groups_read[0] // max(pf.num_row_groups, 1)
        for rg in range(pf.num_row_groups):
            values = pf.read_row_group(rg, columns=[jsonl_field]).column(0).to_pylist()
            groups_read[0] = rg + 1
            for v in values:
                if v:
                    yield str(v)
        return
    if path.endswith((".jsonl", ".json", ".jsonl.gz", ".json.gz")):
        with _open_text(path) as f:
            where[0] = lambda: _disk_position(f)
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
    with _open_text(path) as f:
        where[0] = lambda: _disk_position(f)
        if txt_docs == "file":
            text = f.read()
            if text.strip():
                yield text
            return
        buf: list[str] = []
        for ln in f:
            ln = ln.rstrip("\n")
            if txt_docs == "line":
                if ln.strip():
                    yield ln
            elif ln.strip():
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


def _write_array(path: Path, arr: np.ndarray) -> str:
    """Write a flat array, fsync it; returns its sha256."""
    with open(path, "wb") as f:
        f.write(arr.tobytes())
        f.flush()
        os.fsync(f.fileno())
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            h.update(chunk)
    return h.hexdigest()


# Tokenizer of a worker process (loaded once per worker by _worker_init).
_TOK = None


def _worker_init(tokenizer_dir: str) -> None:
    global _TOK
    from transformers import AutoTokenizer

    _TOK = AutoTokenizer.from_pretrained(tokenizer_dir, local_files_only=True)


def _encode(item: tuple[Any, list[str]]) -> tuple[Any, list[list[int]]]:
    """(tag, documents) -> (tag, token ids): the tag (where the batch ends in its input) rides along."""
    tag, docs = item
    return tag, _TOK(docs)["input_ids"]


def is_val_document(doc_number: int, val_fraction: float) -> bool:
    """Deterministic document-level split: a fixed hash of the document's number (same on every run)."""
    if val_fraction <= 0:
        return False
    h = int.from_bytes(hashlib.blake2b(doc_number.to_bytes(8, "little"), digest_size=8).digest(), "little")
    return h / 2**64 < val_fraction


class _ShardWriter:
    """Collects documents into fixed-size token shards plus their document-start offsets."""

    def __init__(self, out: Path, prefix: str, dtype, shard_tokens: int):
        self.out, self.prefix, self.dtype, self.shard_tokens = out, prefix, dtype, shard_tokens
        self.pending: list[np.ndarray] = []
        self.pending_n = 0
        self.doc_starts: list[int] = []  # offsets (into the pending tokens) where a document begins
        self.shards: list[dict[str, Any]] = []
        self.num_documents = 0

    def add(self, ids: np.ndarray) -> None:
        self.doc_starts.append(self.pending_n)
        self.pending.append(ids)
        self.pending_n += len(ids)
        self.num_documents += 1
        self.flush(final=False)

    def flush(self, final: bool) -> None:
        while self.pending_n >= self.shard_tokens or (final and self.pending_n):
            flat = np.concatenate(self.pending)
            take, rest = flat[:self.shard_tokens], flat[self.shard_tokens:]
            starts = np.asarray(self.doc_starts, dtype=np.int64)
            name = f"{self.prefix}_{len(self.shards):05d}"
            digest = _write_array(self.out / f"{name}.bin", take)
            mine = starts[starts < take.size]
            _write_array(self.out / f"{name}.docs", mine)
            self.shards.append({"file": f"{name}.bin", "num_tokens": int(take.size), "sha256": digest,
                                "docs": f"{name}.docs", "num_doc_starts": int(mine.size)})
            self.doc_starts = [int(x) - take.size for x in starts[starts >= take.size]]
            self.pending, self.pending_n = ([rest] if rest.size else []), int(rest.size)


def prepare(inputs: list[str], tokenizer_dir: str, out_dir: str, shard_tokens: int = 1 << 28,
            jsonl_field: str = "text", txt_docs: str = "blank", add_eos: bool = True,
            batch_docs: int = 256, workers: int = 1, val_fraction: float = 0.0,
            progress: str = "off") -> dict[str, Any]:
    """Tokenize documents into flat shards with an index; returns the index.

    Files are streamed (never read whole, except --txt-docs file); batches of documents are
    tokenized by `workers` processes (in input order). Each document is encoded with the
    tokenizer's own special tokens (BOS for Llama 3) and ends with EOS (unless add_eos=False or the
    tokenizer already appended it). A `val_fraction` of the documents (chosen by a fixed hash of
    their number) goes to the validation shards. Every shard has a `.docs` file: the int64 offsets
    where documents start, so attention can be masked per document.

    progress: a progress.MODES value (stderr only; the output files are the same for every mode): bytes
    of the inputs read (compressed size for .gz) against their total, files done, tokens and tokens/s,
    advanced as tokenized batches arrive, so the ETA follows the tokenizing, not the reading ahead.
    """
    from transformers import AutoTokenizer

    from .progress import Progress

    if not os.path.isdir(tokenizer_dir):
        raise FileNotFoundError(f"tokenizer directory {tokenizer_dir} does not exist (nothing is downloaded)")
    for path in inputs:
        if not path.endswith(INPUT_SUFFIXES):
            raise ValueError(f"{path}: unsupported input; use one of {', '.join(INPUT_SUFFIXES)}")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"input {path} does not exist")
    if not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    tok = AutoTokenizer.from_pretrained(tokenizer_dir, local_files_only=True)
    vocab = len(tok)
    dtype = np.uint16 if vocab <= np.iinfo(np.uint16).max + 1 else np.uint32
    eos = tok.eos_token_id
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / INDEX_NAME).unlink(missing_ok=True)  # an index marks a complete directory
    for old in [*out.glob("shard_*"), *out.glob("val_*")]:
        old.unlink()

    train_w = _ShardWriter(out, "shard", dtype, shard_tokens)
    val_w = _ShardWriter(out, "val", dtype, shard_tokens)
    n_docs = 0
    t0 = time.time()

    sizes = [os.path.getsize(p) for p in inputs]

    def batches() -> Iterator[tuple[tuple[int, int], list[str]]]:
        """((input number, its bytes read at the batch's end), documents)."""
        for i, path in enumerate(inputs):
            where: list[Callable[[], int]] = [lambda: 0]
            for docs in _batched(_iter_documents(path, jsonl_field, txt_docs, where), batch_docs):
                try:
                    pos = where[0]()
                except ValueError:  # the last batch: the file is read to its end and closed
                    pos = sizes[i]
                yield (i, min(pos, sizes[i])), docs

    pool = None
    if workers > 1:
        import multiprocessing as mp

        pool = mp.get_context("fork").Pool(workers, initializer=_worker_init, initargs=(tokenizer_dir,))
        encoded = pool.imap(_encode, batches(), chunksize=1)  # ordered: the output is the same for any worker count
    else:
        encoded = ((tag, tok(b)["input_ids"]) for tag, b in batches())
    n_tokens, done_bytes = 0, 0
    meter = Progress(sum(sizes), "prepare", unit="B", unit_scale=True, mode=progress)

    def show(files_done: int, read: int) -> None:
        nonlocal done_bytes
        meter.set_postfix(f"files {files_done}/{len(inputs)}, {n_tokens:,} tokens, "
                          f"{n_tokens / max(time.time() - t0, 1e-9):,.0f} tokens/s")
        meter.update(read - done_bytes)
        done_bytes = read

    try:
        for (file_no, pos), ids_batch in encoded:
            for ids in ids_batch:
                if add_eos and eos is not None and (not ids or ids[-1] != eos):
                    ids = [*ids, eos]
                (val_w if is_val_document(n_docs, val_fraction) else train_w).add(np.asarray(ids, dtype=dtype))
                n_docs += 1
                n_tokens += len(ids)
            show(file_no, sum(sizes[:file_no]) + pos)
        show(len(inputs), sum(sizes))
    finally:
        meter.close()
        if pool is not None:
            pool.terminate()
    train_w.flush(final=True)
    val_w.flush(final=True)
    if not train_w.shards:
        raise ValueError(f"no tokens produced from {inputs}")

    index = {
        "format": FORMAT, "version": 2, "dtype": np.dtype(dtype).name, "vocab_size": vocab,
        "bos_id": tok.bos_token_id, "eos_id": eos, "tokenizer": os.path.abspath(tokenizer_dir),
        "num_tokens": sum(s["num_tokens"] for s in train_w.shards), "num_documents": train_w.num_documents,
        "shards": train_w.shards,
        "val_num_tokens": sum(s["num_tokens"] for s in val_w.shards), "val_num_documents": val_w.num_documents,
        "val_shards": val_w.shards, "val_fraction": val_fraction,
        "sources": [os.path.abspath(p) for p in inputs], "workers": workers,
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


MAX_OPEN_SHARDS = 64  # memory maps a dataset keeps open at a time (token and document-start files together)


class ShardMaps:
    """The memory maps of a dataset's shard files, opened on first use and kept in an LRU of at most `cap`:
    a 15T-token corpus has tens of thousands of shards, and every open map costs a mapping (vm.max_map_count,
    65530 by default), page-table and page-cache pressure. `maps[k]` is shard k's array; `len(maps)` the
    number of shards; `opened` counts the maps opened so far (tests)."""

    def __init__(self, root: str | Path, entries: list[dict[str, Any]], file_key: str, count_key: str, dtype,
                 cap: int = MAX_OPEN_SHARDS):
        if cap < 1:
            raise ValueError(f"the open shard cap must be >= 1, got {cap}")
        self.root, self.entries, self.file_key, self.count_key = Path(root), entries, file_key, count_key
        self.dtype, self.cap = np.dtype(dtype), cap
        self._open: OrderedDict[int, np.ndarray] = OrderedDict()
        self.opened = 0

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, k: int) -> np.ndarray:
        k = range(len(self.entries))[k]  # negative indices, IndexError as a list would
        arr = self._open.get(k)
        if arr is not None:
            self._open.move_to_end(k)
            return arr
        entry = self.entries[k]
        n = int(entry[self.count_key])
        arr = (np.memmap(self.root / entry[self.file_key], dtype=self.dtype, mode="r", shape=(n,)) if n
               else np.zeros(0, self.dtype))
        self._open[k] = arr
        self.opened += 1
        while len(self._open) > self.cap:
            self._open.popitem(last=False)  # the least recently used; numpy unmaps it once nothing refers to it
        return arr

    @property
    def open_count(self) -> int:
        return len(self._open)


class TokenDataset:
    """Read-only view of a prepared directory: one virtual stream over memory-mapped shards.

    A read finds its shard by bisection over the cumulative shard offsets (O(log shards), from the index:
    no file is opened to know the sizes); shard files are mapped on first use, at most `max_open_shards`
    token files (and as many document-start files) at a time (ShardMaps)."""

    def __init__(self, path: str, split: str = "train", max_open_shards: int = MAX_OPEN_SHARDS):
        index_path = Path(path) / INDEX_NAME
        if not index_path.is_file():
            raise FileNotFoundError(f"{index_path} not found: run `ascendops-train prepare` first "
                                    "(data.path must be its output directory)")
        self.path = str(path)
        self.index = json.loads(index_path.read_text())
        if self.index.get("format") != FORMAT:
            raise ValueError(f"{index_path} is not an {FORMAT} index")
        dtype = np.dtype(self.index["dtype"])
        entries = self.index["shards"] if split == "train" else self.index.get("val_shards", [])
        self.split = split
        self.shards = ShardMaps(path, entries, "file", "num_tokens", dtype, max_open_shards)
        # document starts per shard (int64 offsets within the shard); absent in version-1 directories
        self.has_boundaries = bool(entries) and all("docs" in s for s in entries)
        self.doc_starts = (ShardMaps(path, entries, "docs", "num_doc_starts", np.int64, max_open_shards)
                           if self.has_boundaries else None)
        self.starts = np.cumsum([0] + [int(s["num_tokens"]) for s in entries], dtype=np.int64)
        self.num_tokens = int(self.starts[-1])
        # Identifies the data for resume checks: changing the data under a run is refused.
        self.fingerprint = hashlib.sha256(
            json.dumps([(s["file"], s["num_tokens"], s.get("sha256")) for s in entries]).encode()
        ).hexdigest()[:16]

    @property
    def vocab_size(self) -> int:
        return int(self.index["vocab_size"])

    def _shard_range(self, start: int, length: int) -> range:
        """The shards holding tokens [start, start+length): bisection, O(log shards)."""
        first = int(np.searchsorted(self.starts, start, side="right")) - 1
        last = int(np.searchsorted(self.starts, start + length - 1, side="right")) - 1
        return range(max(first, 0), min(last, len(self.shards) - 1) + 1)

    def tokens(self, start: int, length: int) -> np.ndarray:
        """Tokens [start, start+length) of the stream, across shard boundaries."""
        if start < 0 or start + length > self.num_tokens:
            raise IndexError(f"tokens [{start}, {start + length}) outside the {self.num_tokens} of {self.path}")
        out = np.empty(length, dtype=np.int64)
        for k in self._shard_range(start, length):
            lo, hi = int(self.starts[k]), int(self.starts[k + 1])
            a, b = max(start, lo), min(start + length, hi)
            if a < b:
                out[a - start:b - start] = self.shards[k][a - lo:b - lo]
        return out

    def positions(self, start: int, length: int) -> np.ndarray:
        """Position ids of tokens [start, start+length): 0 at the range start and at every document start."""
        idx = np.arange(start, start + length, dtype=np.int64)
        is_start = np.zeros(length, dtype=bool)
        is_start[0] = True
        for k in self._shard_range(start, length) if self.doc_starts is not None else ():
            lo = int(self.starts[k])
            ds = self.doc_starts[k]
            if not len(ds):
                continue
            a = int(np.searchsorted(ds, start - lo, side="left"))
            b = int(np.searchsorted(ds, start + length - lo, side="left"))
            is_start[np.asarray(ds[a:b]) + lo - start] = True
        seg = np.maximum.accumulate(np.where(is_start, idx, start))
        return idx - seg

    def num_samples(self, seq_len: int) -> int:
        return max((self.num_tokens - 1) // seq_len, 0)

    def sample(self, i: int, seq_len: int) -> np.ndarray:
        return self.tokens(i * seq_len, seq_len + 1)


@dataclass
class PackedLayout:
    """A micro-batch packed into one row for the varlen attention kernel, computed on the host once per
    micro-batch (never per layer): position ids, cumulative sequence lengths, the longest sequence."""

    position_ids: np.ndarray  # [1, micro * seq_len] int64, restarting at every kept sequence start
    cu_seqlens: np.ndarray  # [k + 1] int32: 0, end of sequence 1, ..., micro * seq_len
    max_len: int
    merged: int  # document boundaries dropped to stay within the kernel's sequence limit


def pack_layout(positions: np.ndarray, max_sequences: int) -> PackedLayout:
    """The packed layout of a micro-batch from its position ids ([micro, seq_len + 1], 0 at every
    sample and document start; the last column is a target only).

    More sequences than the kernel takes in one call (npu_fusion_attention's TND layout: 2048) are
    merged: the shortest ones join the sequence before them (their tokens then also attend to that
    one), until `max_sequences` remain; the position ids are recomputed to match."""
    flat = np.ascontiguousarray(positions[:, :-1]).reshape(-1)
    starts = np.flatnonzero(flat == 0)
    merged = 0
    if len(starts) > max_sequences:
        lengths = np.diff(np.append(starts, flat.size))
        drop = len(starts) - max_sequences
        shortest = np.argsort(lengths[1:], kind="stable")[:drop] + 1  # never the first (it starts the row)
        keep = np.ones(len(starts), dtype=bool)
        keep[shortest] = False
        starts, merged = starts[keep], drop
        idx = np.arange(flat.size, dtype=np.int64)
        flat = idx - starts[np.searchsorted(starts, idx, side="right") - 1]
    cu = np.append(starts, flat.size).astype(np.int32)
    return PackedLayout(position_ids=flat.astype(np.int64).reshape(1, -1), cu_seqlens=cu,
                        max_len=int(np.diff(cu).max()), merged=merged)


class SamplePermutation:
    """A seeded permutation of range(n), evaluated at any position without materializing it.

    A balanced Feistel network over 2k-bit integers (2^2k >= n; ROUNDS rounds, round keys from
    numpy's SeedSequence of (seed, epoch), a splitmix64 finalizer as round function) is a bijection of
    [0, 4^k); cycle walking (apply it again while the value is >= n) makes it one of [0, n), because
    it only walks through values outside the range. 4^k < 4n: fewer than 4 applications on average.
    Same (n, seed, epoch) -> same order on every rank and every restart.
    """

    ROUNDS = 6
    _M1 = np.uint64(0xBF58476D1CE4E5B9)
    _M2 = np.uint64(0x94D049BB133111EB)

    def __init__(self, n: int, seed: int, epoch: int):
        if n < 1:
            raise ValueError(f"cannot permute {n} items")
        self.n = int(n)
        self.half = max(1, (max(self.n - 1, 1).bit_length() + 1) // 2)
        self.mask = np.uint64((1 << self.half) - 1)
        self.keys = np.random.SeedSequence([int(seed), int(epoch), 0x5EED]).generate_state(self.ROUNDS, np.uint64)

    def _round(self, r: np.ndarray, key: np.uint64) -> np.ndarray:
        z = r ^ key
        z = (z ^ (z >> np.uint64(30))) * self._M1
        z = (z ^ (z >> np.uint64(27))) * self._M2
        return (z ^ (z >> np.uint64(31))) & self.mask

    def _feistel(self, x: np.ndarray) -> np.ndarray:
        left, right = x >> np.uint64(self.half), x & self.mask
        for key in self.keys:
            left, right = right, left ^ self._round(right, key)
        return (left << np.uint64(self.half)) | right

    def __call__(self, positions: np.ndarray) -> np.ndarray:
        """The sample ids at `positions` (ints in [0, n)) of this permutation."""
        x = np.asarray(positions, dtype=np.uint64)
        with np.errstate(over="ignore"):  # uint64 products wrap on purpose
            out = self._feistel(x)
            outside = out >= self.n
            while outside.any():
                out[outside] = self._feistel(out[outside])
                outside = out >= self.n
        return out.astype(np.int64)


ORDER = "feistel-v1"  # LoaderState.order of new runs
LEGACY_ORDER = "numpy-permutation"  # checkpoints written before: resumed in their own order


@dataclass
class LoaderState:
    epoch: int = 0
    consumed: int = 0  # samples of this epoch already served, over all data-parallel ranks
    seed: int = 0
    seq_len: int = 0
    fingerprint: str = ""
    order: str = LEGACY_ORDER  # a state without this key comes from a run that used the explicit permutation


class DistributedLoader:
    """Endless iterator of [micro_batch, seq_len + 1] int64 batches for one data-parallel rank."""

    def __init__(self, dataset: TokenDataset, seq_len: int, micro_batch: int, dp_rank: int, dp_size: int,
                 seed: int, shuffle: bool = True, positions: bool = False, global_batch: int | None = None):
        """global_batch: samples per optimizer step over all ranks. An epoch then ends only between optimizer
        steps, when fewer samples than one step are left: the sequence of samples each optimizer step gets
        is the same at every world size (a resume on more or fewer ranks continues it exactly). Without it
        (evaluation), an epoch ends when fewer than one micro-step's samples are left."""
        self.ds, self.seq_len, self.micro, self.rank, self.world = dataset, seq_len, micro_batch, dp_rank, dp_size
        self.shuffle, self.with_positions = shuffle, positions
        self.n = dataset.num_samples(seq_len)
        self.per_step = micro_batch * dp_size
        self.per_optimizer_step = global_batch or self.per_step
        if self.n < self.per_optimizer_step:
            what = ("one optimizer step needs (train.global_batch_size)" if global_batch else
                    f"one micro-step needs ({micro_batch} x {dp_size} ranks)")
            raise ValueError(f"data at {dataset.path} has {dataset.num_tokens} tokens = {self.n} samples of "
                             f"{seq_len}+1 tokens, fewer than {what} = {self.per_optimizer_step}")
        self.state = LoaderState(seed=seed, seq_len=seq_len, fingerprint=dataset.fingerprint, order=ORDER)
        self._perm_key: tuple | None = None
        self._perm: Any = None

    def order(self, positions: np.ndarray) -> np.ndarray:
        """Sample ids at `positions` of the current epoch's order (O(len(positions)) memory)."""
        positions = np.asarray(positions, dtype=np.int64)
        if not self.shuffle:
            return positions
        key = (self.state.order, self.state.seed, self.state.epoch)
        if self._perm_key != key:
            if self.state.order == LEGACY_ORDER:  # O(n) memory: only to finish runs checkpointed before
                self._perm = np.random.default_rng([self.state.seed, self.state.epoch]).permutation(self.n)
            else:
                self._perm = SamplePermutation(self.n, self.state.seed, self.state.epoch)
            self._perm_key = key
        if isinstance(self._perm, np.ndarray):
            return self._perm[positions]
        return self._perm(positions)

    def next_indices(self) -> np.ndarray:
        """Sample indices of this rank's next micro-batch; advances the (global) position."""
        st = self.state
        step_start = st.consumed % self.per_optimizer_step == 0
        # drop the incomplete tail, next epoch: at an optimizer step's start when it would not fit whole (a
        # position of a checkpoint from before global_batch existed may be no step start: the micro-step rule)
        if (step_start and st.consumed + self.per_optimizer_step > self.n) or st.consumed + self.per_step > self.n:
            self.state.epoch += 1
            self.state.consumed = 0
            self.state.order = ORDER  # a legacy (explicit-permutation) order ends with its epoch
        lo = self.state.consumed + self.rank * self.micro
        idx = self.order(np.arange(lo, lo + self.micro))
        self.state.consumed += self.per_step
        return idx

    def __iter__(self):
        return self

    def __next__(self):
        return self.next_batch()[0]

    def next_batch(self):
        """(tokens [micro, seq_len + 1] int64, position ids of the same shape or None)."""
        import torch

        idx = self.next_indices()
        batch = np.stack([self.ds.sample(int(i), self.seq_len) for i in idx])
        if not self.with_positions:
            return torch.from_numpy(batch), None
        pos = np.stack([self.ds.positions(int(i) * self.seq_len, self.seq_len + 1) for i in idx])
        return torch.from_numpy(batch), torch.from_numpy(pos)

    def state_dict(self) -> dict[str, Any]:
        return dict(vars(self.state))

    def load_state_dict(self, sd: dict[str, Any]) -> None:
        st = LoaderState(**sd)
        if st.order not in (ORDER, LEGACY_ORDER):
            raise ValueError(f"checkpoint's data order {st.order!r} is unknown to this trainer (knows {ORDER}, "
                             f"{LEGACY_ORDER})")
        if st.fingerprint != self.ds.fingerprint:
            raise ValueError(f"checkpoint was trained on different data (fingerprint {st.fingerprint}, "
                             f"data.path has {self.ds.fingerprint}); refusing to resume on other data")
        if st.seq_len != self.seq_len:
            raise ValueError(f"checkpoint used data.seq_len={st.seq_len}, this run {self.seq_len}")
        self.state = st
