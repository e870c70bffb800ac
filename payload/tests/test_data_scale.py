"""Data at scale: a read finds its shards by bisection (no loop over every shard), the memory maps open
at a time are capped, and the results equal the straightforward scan over all shards."""

from __future__ import annotations

import json
from pathlib import Path

import _trainer_helpers  # noqa: F401  (puts payload/src on sys.path)
import numpy as np
import pytest

from ascendops_trainer.data import FORMAT, INDEX_NAME, TokenDataset


def _synthetic_dir(root: Path, shards: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A prepared directory of `shards` shards of uneven size (some tiny, one empty of documents); returns the
    whole token stream and the global document starts."""
    rng = np.random.default_rng(seed)
    entries, stream, starts, offset = [], [], [], 0
    for k in range(shards):
        n = int(rng.integers(1, 400)) if k % 7 else int(rng.integers(1, 4))
        tokens = rng.integers(0, 60000, n).astype(np.uint16)
        docs = np.sort(rng.choice(n, size=min(n, int(rng.integers(0, 5))), replace=False)).astype(np.int64)
        if k == 0:
            docs = np.union1d(docs, [0]).astype(np.int64)
        tokens.tofile(root / f"shard_{k:05d}.bin")
        docs.tofile(root / f"shard_{k:05d}.docs")
        entries.append({"file": f"shard_{k:05d}.bin", "num_tokens": n, "docs": f"shard_{k:05d}.docs",
                        "num_doc_starts": int(docs.size)})
        stream.append(tokens)
        starts.extend(int(d) + offset for d in docs)
        offset += n
    (root / INDEX_NAME).write_text(json.dumps({"format": FORMAT, "version": 2, "dtype": "uint16", "vocab_size": 60000,
                                               "shards": entries, "val_shards": []}))
    return np.concatenate(stream).astype(np.int64), np.asarray(starts, dtype=np.int64)


def _positions_by_scan(ds: TokenDataset, start: int, length: int) -> np.ndarray:
    """The former lookup: every shard visited for every read."""
    idx = np.arange(start, start + length, dtype=np.int64)
    is_start = np.zeros(length, dtype=bool)
    is_start[0] = True
    for k in range(len(ds.doc_starts)):
        docs = ds.doc_starts[k]
        lo, hi = int(ds.starts[k]), int(ds.starts[k + 1])
        if hi <= start or lo >= start + length or not len(docs):
            continue
        a = int(np.searchsorted(docs, start - lo, side="left"))
        b = int(np.searchsorted(docs, start + length - lo, side="left"))
        is_start[np.asarray(docs[a:b]) + lo - start] = True
    seg = np.maximum.accumulate(np.where(is_start, idx, start))
    return idx - seg


@pytest.mark.parametrize("cap", [1, 3, 64])
def test_lookup_equals_the_full_scan_and_the_open_maps_stay_capped(tmp_path, cap):
    stream, doc_starts = _synthetic_dir(tmp_path, shards=120)
    ds = TokenDataset(str(tmp_path), max_open_shards=cap)
    assert ds.num_tokens == stream.size and ds.shards.opened == 0  # sizes come from the index: nothing mapped yet
    rng = np.random.default_rng(1)
    for seq_len in (1, 7, 64, 700):
        for i in rng.integers(0, ds.num_samples(seq_len), 40):
            start = int(i) * seq_len
            np.testing.assert_array_equal(ds.sample(int(i), seq_len), stream[start:start + seq_len + 1])
            got = ds.positions(start, seq_len + 1)
            np.testing.assert_array_equal(got, _positions_by_scan(ds, start, seq_len + 1))
            # and against the global document starts directly: the distance to the last start in the range
            idx = np.arange(start, start + seq_len + 1)
            last = np.maximum(doc_starts[np.searchsorted(doc_starts, idx, side="right") - 1], start)
            np.testing.assert_array_equal(got, idx - last)
            assert ds.shards.open_count <= cap and ds.doc_starts.open_count <= cap
    with pytest.raises(IndexError):
        ds.tokens(ds.num_tokens - 2, 3)


def test_a_read_touches_only_its_own_shards(tmp_path):
    """The lookup bisects: a sample inside one shard maps that shard alone (the old loop touched every
    shard's document starts for every sample)."""
    _synthetic_dir(tmp_path, shards=200)
    ds = TokenDataset(str(tmp_path), max_open_shards=4)
    k = 150
    lo, hi = int(ds.starts[k]), int(ds.starts[k + 1])
    if hi - lo < 3:
        k, lo, hi = next((j, int(ds.starts[j]), int(ds.starts[j + 1])) for j in range(k, 200)
                         if ds.starts[j + 1] - ds.starts[j] >= 3)
    ds.tokens(lo + 1, 2), ds.positions(lo + 1, 2)
    assert ds.shards.opened == 1 and ds.doc_starts.opened == 1
    ds.tokens(int(ds.starts[20]), int(ds.starts[30] - ds.starts[20]))  # 10 shards through a cap of 4
    assert ds.shards.open_count == 4 and ds.shards.opened == 11
    with pytest.raises(ValueError, match="cap must be >= 1"):
        TokenDataset(str(tmp_path), max_open_shards=0)
