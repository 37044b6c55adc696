"""Key runs read back shard by shard, the read-ahead thread, and the wide-id fallback."""
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grstream as gr
import grstream.partition.build as build
import grstream.partition.external_keys as external_keys
import grstream.partition.key_runs as runs_module
import grstream.partition.shard_output as shard_output
from grstream.io.release import release
from grstream.partition import build_shards
from grstream.partition.key_runs import KeyRuns

from .graphs import array_source, store_contents


@settings(max_examples=40, deadline=None)
@given(runs=st.lists(st.lists(st.integers(0, 40), max_size=60), max_size=6),
       cuts=st.lists(st.integers(1, 40), max_size=5), block=st.integers(1, 8))
def test_key_runs_give_each_interval_its_keys(tmp_path_factory, runs, cuts, block):
    tmp = tmp_path_factory.mktemp("runs")
    bounds = sorted(set(cuts)) + [41]
    saved = runs_module.MAX_BLOCK_KEYS, runs_module.MIN_BLOCK_KEYS
    # tiny blocks: a run's part of one interval takes several reads
    runs_module.MAX_BLOCK_KEYS, runs_module.MIN_BLOCK_KEYS = block, 1
    store = KeyRuns(tmp, "t")
    try:
        for run in runs:
            store.append("out", np.sort(np.array(run, dtype=np.uint64)))
        everything = np.array([k for run in runs for k in run], dtype=np.int64)
        lo = 0
        for hi in bounds:
            want = np.sort(everything[(everything >= lo) & (everything < hi)])
            got = store.load("out", hi, len(want))
            np.testing.assert_array_equal(np.sort(got), want)
            lo = hi
        assert store.load("in", 41, 0).size == 0
    finally:
        runs_module.MAX_BLOCK_KEYS, runs_module.MIN_BLOCK_KEYS = saved
        store.cleanup()
    assert not tmp.joinpath("t").exists() and not list(tmp.iterdir())


def test_key_runs_report_a_count_that_disagrees(tmp_path):
    store = KeyRuns(tmp_path, "t")
    try:
        store.append("in", np.array([1, 2, 5], dtype=np.uint64))
        with pytest.raises(RuntimeError, match="2 keys below the bound, degrees say 3"):
            store.load("in", 3, 3)
    finally:
        store.cleanup()


def test_wide_ids_fall_back_to_edge_records(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 300, 4000), rng.integers(0, 300, 4000)
    keyed = build_shards(array_source(src, dst, chunk=500), tmp_path / "k.h5", num_shards=5,
                         memory_limit=1 << 22, progress=False)
    # as if the ids did not fit a key's 32-bit half: the build must switch to edge records
    monkeypatch.setattr(external_keys, "KEY_ID_LIMIT", 100)
    calls = []
    monkeypatch.setattr(build, "build_records",
                        lambda *a, _f=build.build_records: calls.append(1) or _f(*a))
    wide = build_shards(array_source(src, dst, chunk=500), tmp_path / "w.h5", num_shards=5,
                        memory_limit=1 << 22, progress=False)
    assert calls == [1]
    assert store_contents(keyed) == store_contents(wide)
    with gr.open(wide) as store:
        assert store.build["mode"] == "external"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.h5", "w.h5"]


@pytest.mark.parametrize("deferred", [False, True])
@pytest.mark.parametrize("weight_dtype", [None, np.float64])
def test_key_runs_give_their_read_pages_back(tmp_path, weight_dtype, deferred):
    # runs of many pages, read in three shards: every key and weight as written, and the
    # files hold (almost) no blocks once every shard has been read; ``deferred``: each
    # shard's releases made after the next shard's load, into buffers touched beforehand
    rng = np.random.default_rng(5)
    store = KeyRuns(tmp_path, "t", weight_dtype)
    written = []
    try:
        for run, narrow in enumerate([np.float16, np.float64, np.float32, np.float16]):
            keys = np.sort(rng.integers(0, 3000, 20_000)).astype(np.uint64)
            weights = (keys % 7).astype(narrow)
            store.append("out", keys, weights if weight_dtype else None)
            written.append((keys, weights))
        full = sum(os.stat(p).st_blocks for p in store.directory.iterdir())
        lo = 0
        for hi in (1000, 2000, 3000):
            want = [(k[(k >= lo) & (k < hi)], w[(k >= lo) & (k < hi)]) for k, w in written]
            count = sum(len(k) for k, _ in want)
            if deferred:
                punches = []
                got = store.load("out", hi, count, KeyRuns.buffer(count), punches)
                if lo:
                    KeyRuns.punch(earlier)
                earlier = punches
            else:
                got = store.load("out", hi, count)
            keys, weights = got if weight_dtype else (got, None)
            np.testing.assert_array_equal(keys, np.concatenate([k for k, _ in want]))
            if weight_dtype:
                assert weights.dtype == np.float64
                np.testing.assert_array_equal(weights, np.concatenate([w for _, w in want]))
            lo = hi
        if deferred:
            KeyRuns.punch(earlier)
        left = sum(os.stat(p).st_blocks for p in store.directory.iterdir())
        probe = tmp_path / "probe.bin"
        probe.write_bytes(bytes(1 << 16))
        with open(probe, "r+b") as handle:
            if not release(handle.fileno(), 0, 1 << 16):
                pytest.skip("this file system cannot punch holes")
        assert left * 10 < full
    finally:
        store.cleanup()


def test_external_store_starts_its_writeback_every_few_megabytes(tmp_path, monkeypatch):
    from grstream.partition.writer import StoreWriter
    calls = []
    original = StoreWriter.start_writeback
    monkeypatch.setattr(StoreWriter, "start_writeback",
                        lambda self: calls.append(1) or original(self))
    rng = np.random.default_rng(2)
    src, dst = rng.integers(0, 2000, 30_000), rng.integers(0, 2000, 30_000)
    monkeypatch.setattr(shard_output, "WRITEBACK_BYTES", 50_000)
    path = build_shards(array_source(src, dst, chunk=4000), tmp_path / "w.h5", num_shards=20,
                        memory_limit=1 << 22, progress=False)
    # about 250 kB of ids and offsets in 20 shards: a writeback per 50 kB, not per shard
    assert 2 <= len(calls) < 10
    with gr.open(path, verify="always") as store:
        assert store.num_edges == 30_000


@pytest.mark.parametrize("threads", [1, 8])
def test_a_failing_chunk_stops_the_pass_with_the_first_error(tmp_path, threads):
    """Chunks are prepared, sorted and written on the pool, several at once: the error raised
    is the one of the first failing chunk in input order (as one thread raises it), the chunks
    still running end (none waits for a failed chunk's turn) and the runs are removed."""
    rng = np.random.default_rng(4)
    src, dst = rng.integers(0, 500, 8000), rng.integers(0, 500, 8000)
    w = np.ones(8000)
    w[1500], w[2100], w[7000] = 70000.0, 1e6, 2e6     # beyond float16, in chunks 3, 4 and 14
    runs = tmp_path / "runs"
    runs.mkdir()
    with pytest.raises(gr.errors.InputFormatError, match="weight 70000.0 is beyond"):
        build_shards(array_source(src, dst, w, chunk=500), tmp_path / "g.h5", num_shards=4,
                     memory_limit=1 << 22, weight_dtype="float16", threads=threads,
                     tmp_dir=runs, progress=False)
    assert not list(runs.iterdir()) and not (tmp_path / "g.h5").exists()


def test_chunks_sort_and_write_their_runs_on_several_threads(tmp_path, monkeypatch):
    """The runs are written by the chunks' threads, not by the one reading the input, and
    land in input order: the store is the one-thread store."""
    import threading
    writers = set()
    original = KeyRuns.write
    monkeypatch.setattr(KeyRuns, "write",
                        lambda self, *a: writers.add(threading.get_ident()) or original(self, *a))
    rng = np.random.default_rng(6)
    # many repeated pairs, whose weights the store keeps in input order
    src, dst = rng.integers(0, 300, 40_000), rng.integers(0, 300, 40_000)
    w = rng.integers(1, 50, 40_000) / 4
    built = {}
    for threads in (1, 8):
        writers.clear()
        built[threads] = store_contents(build_shards(
            array_source(src, dst, w, chunk=1000), tmp_path / f"{threads}.h5", num_shards=6,
            memory_limit=1 << 22, threads=threads, progress=False))
        assert (threading.get_ident() in writers) == (threads == 1)
    assert len(writers) > 1
    assert built[8] == built[1]
