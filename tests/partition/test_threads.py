"""Builds on several threads write the same store as one thread, in memory and external."""
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grstream.errors import InputFormatError, UsageError
from grstream.io import open_source
from grstream.io.generate import rmat
from grstream.partition import build_shards, parallel_layout
from grstream.partition.build import default_threads
from grstream.partition.layout import compress_pieces

from .graphs import array_source, store_contents

THREADS = (1, 2, 3, 8)
OPTION_NAMES = ("undirected", "self_loops", "duplicates", "renumber")


def _build(source, path, **options):
    build_shards(source, path, progress=False, **options)
    return store_contents(path)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edges=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(1, 4)),
                   max_size=120),
    weighted=st.booleans(),
    flags=st.fixed_dictionaries({name: st.booleans() for name in OPTION_NAMES}),
    num_shards=st.integers(1, 6),
    chunk=st.integers(1, 60),
    weight_dtype=st.sampled_from(["float64", "float16"]),
)
def test_every_thread_count_writes_the_serial_store(tmp_path_factory, edges, weighted, flags,
                                                    num_shards, chunk, weight_dtype):
    tmp = tmp_path_factory.mktemp("t")
    src = [e[0] for e in edges]
    dst = [e[1] for e in edges]
    w = [e[2] / 2 for e in edges] if weighted else None

    def build(tag, threads, memory_limit):
        return _build(array_source(src, dst, w, chunk=chunk), tmp / f"{tag}.h5",
                      num_shards=num_shards, memory_limit=memory_limit, threads=threads,
                      weight_dtype=weight_dtype, **flags)

    serial = build("serial", 1, None)
    # the bucketed layouts take graphs of any size here, so these small ones reach them
    with mock.patch.object(parallel_layout, "MIN_PARALLEL_EDGES", 1), \
            mock.patch.object(parallel_layout, "SAMPLE_EDGES", 7):
        for threads in THREADS[1:]:
            assert build(f"m{threads}", threads, None) == serial, threads
    for threads in THREADS:
        assert build(f"e{threads}", threads, 1 << 22) == serial, threads


@pytest.mark.parametrize("weighted", [False, True])
def test_rmat_npy_across_threads_and_memory_limits(tmp_path, weighted):
    """An RMAT graph large enough for the bucketed layouts and several reader chunks."""
    src, dst, *rest = rmat(13, 16, seed=3, weights=weighted)
    table = np.column_stack([src, dst] + rest).astype(np.float64 if weighted else np.int64)
    path = tmp_path / "g.npy"
    np.save(path, table)
    # float16 weights take the bucketed layouts, float64 the counting sorts
    options = {"num_shards": 9, "weight_dtype": "float16" if weighted else "float64"}
    with mock.patch("grstream.partition.build.MAX_CHUNK_EDGES", 20000):
        # a tight limit makes more shards: each limit is compared with its own serial build
        for limit in (None, 4 << 20, 1 << 20):
            serial = _build(str(path), tmp_path / f"serial-{limit}.h5", threads=1,
                            memory_limit=limit, **options)
            for threads in THREADS[1:]:
                got = _build(str(path), tmp_path / f"{threads}-{limit}.h5", threads=threads,
                             memory_limit=limit, **options)
                assert got == serial, (threads, limit)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 3000),
    m=st.integers(0, 3000),
    skew=st.integers(0, 12),
    dedup=st.booleans(),
    weighted=st.booleans(),
    threads=st.sampled_from([2, 3, 8, 40]),
    seed=st.integers(0, 2 ** 16),
)
def test_bucketed_layout_equals_one_sort(n, m, skew, dedup, weighted, threads, seed):
    rng = np.random.default_rng(seed)
    # skewed ids pile edges onto the first vertices, as a power-law graph does
    src = (rng.integers(0, n, m) >> rng.integers(0, skew + 1, m)).astype(np.int64)
    dst = rng.integers(0, n, m).astype(np.int64)
    w = rng.integers(0, 4, m).astype(np.float64) if weighted else None
    cut = m // 3
    pieces = ([src[:cut], src[cut:]], [dst[:cut], dst[cut:]])
    want = compress_pieces(*pieces, n, np.dtype(np.int32), dedup, w)
    with mock.patch.object(parallel_layout, "MIN_PARALLEL_EDGES", 1), \
            mock.patch.object(parallel_layout, "SAMPLE_EDGES", 50):
        got = parallel_layout.compress_parallel(*pieces, n, np.dtype(np.int32), dedup, w,
                                                threads=threads)
    for a, b in zip(want, got):
        if a is None:
            assert b is None
        else:
            assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("threads", THREADS)
def test_npy_chunks_and_errors_do_not_depend_on_threads(tmp_path, threads):
    table = np.arange(2000, dtype=np.int64).reshape(1000, 2) % 97
    path = tmp_path / "g.npy"
    np.save(path, table)
    source = open_source(str(path), chunk_edges=64, threads=threads)
    chunks = list(source.chunks())
    assert [len(c[0]) for c in chunks] == [64] * 15 + [40]
    np.testing.assert_array_equal(np.concatenate([c[0] for c in chunks]), table[:, 0])
    np.testing.assert_array_equal(np.concatenate([c[1] for c in chunks]), table[:, 1])
    # the first bad row in file order is the one reported, as one thread reports it
    table[[300, 900], 1] = -1
    np.save(path, table)
    with pytest.raises(InputFormatError, match="row 300: negative vertex id"):
        list(open_source(str(path), chunk_edges=64, threads=threads).chunks())


@pytest.mark.parametrize("threads", [0, -2, 1.5, True, "2"])
def test_bad_thread_counts_are_refused(tmp_path, threads):
    with pytest.raises(UsageError, match="threads must be a positive integer"):
        build_shards(np.array([[0, 1]]), tmp_path / "g.h5", threads=threads, progress=False)


def test_default_is_the_cores_available():
    import os
    assert default_threads() == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("weighted", [False, True])
def test_text_inputs_write_the_npy_store(tmp_path, weighted):
    """A SNAP text edge list (plain and gzip) parsed on worker processes, in memory and within
    a memory limit, writes the store the same edges write from a ``.npy``."""
    import gzip

    from grstream.io import texttable
    from grstream.partition import build

    src, dst, *rest = rmat(11, 8, seed=5, weights=weighted)
    table = np.column_stack([src, dst] + rest)
    np.save(tmp_path / "g.npy", table.astype(np.float64 if weighted else np.int64))
    lines = "".join(("{}\t{}\t{:g}\n" if weighted else "{}\t{}\n").format(*row)
                    for row in table.tolist())
    text = "# Directed graph (each unordered pair of nodes is saved once)\n" + lines
    (tmp_path / "g.txt").write_text(text)
    with gzip.open(tmp_path / "g.txt.gz", "wt") as f:
        f.write(text)
    options = {"num_shards": 5, "weight_dtype": "float32" if weighted else "float64"}
    for limit in (None, 1 << 20):
        want = _build(str(tmp_path / "g.npy"), tmp_path / f"npy-{limit}.h5", threads=1,
                      memory_limit=limit, **options)
        # blocks of 16 KiB: several per worker; workers even within the small limit
        with mock.patch.object(texttable, "PARALLEL_TEXT_BYTES", 0), \
                mock.patch.object(texttable, "BLOCK_BYTES", 1 << 14), \
                mock.patch.object(build, "TEXT_WORKER_BYTES", 1 << 10):
            for name in ("g.txt", "g.txt.gz"):
                for threads in (1, 2):
                    got = _build(str(tmp_path / name), tmp_path / f"{name}-{threads}-{limit}.h5",
                                 threads=threads, memory_limit=limit, **options)
                    assert got == want, (name, threads, limit)
