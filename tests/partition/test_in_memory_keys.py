"""The in-memory build from packed keys: its parallel sort, and ids too wide for a key."""
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grstream.partition import build_shards, in_memory_keys
from grstream.partition.parallel_layout import executor

from .graphs import store_contents


@settings(max_examples=60, deadline=None)
@given(m=st.integers(0, 2000), bits=st.integers(1, 63), threads=st.integers(2, 9),
       repeats=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_parallel_sort_is_numpys_sort(m, bits, threads, repeats, seed):
    rng = np.random.default_rng(seed)
    key = rng.integers(0, 1 << bits, m, dtype=np.uint64)
    if repeats:
        key = key[rng.integers(0, max(m, 1), m)] if m else key
    want = np.sort(key)
    with mock.patch.object(in_memory_keys, "SAMPLE_KEYS", 8), \
            mock.patch.object(in_memory_keys, "STEP", 97), executor(threads) as pool:
        got = in_memory_keys._sort(key.copy(), threads, pool)
    assert got.dtype == np.uint64 and np.array_equal(got, want)


@pytest.mark.parametrize("suffix", [".npy", ".txt"])
@pytest.mark.parametrize("renumber", [None, True])
def test_an_id_too_wide_for_a_key_after_some_chunks(tmp_path, suffix, renumber):
    """Keys made from the first chunks go back to chunks when a later id needs 64 bits: the
    store is the one the records path writes (here: against the external build)."""
    rng = np.random.default_rng(3)
    edges = rng.integers(0, 1000, (5000, 2))
    edges[4321] = (7, 3 << 40)
    path = tmp_path / f"g{suffix}"
    if suffix == ".npy":
        np.save(path, edges)
    else:
        path.write_text("".join(f"{s} {d}\n" for s, d in edges.tolist()))
    options = {"num_shards": 3, "renumber": renumber, "progress": False}
    with mock.patch("grstream.partition.build.MAX_CHUNK_EDGES", 1000):
        for threads in (1, 2):
            build_shards(str(path), tmp_path / f"m{threads}.h5", threads=threads, **options)
        build_shards(str(path), tmp_path / "e.h5", memory_limit=1 << 22, **options)
    want = store_contents(tmp_path / "e.h5")
    want.pop("@num_shards", None)
    for threads in (1, 2):
        got = store_contents(tmp_path / f"m{threads}.h5")
        assert got["@num_vertices"] == want["@num_vertices"] == 1001
        for name in ("vertex/in_degree", "vertex/out_degree", "vertex/original_id"):
            assert got[name] == want[name], name


@pytest.mark.parametrize("name", ["g.txt", "g.txt.gz"])
def test_text_pieces_grow_the_keys_into_the_npy_store(tmp_path, name):
    """The keyed build takes a text reader's blocks as they come (no even chunks) into key
    arrays that grow as the edges come (the text declares no count): the store is the
    ``.npy``'s, also reordered and with a weight column left out (those replace the chunks,
    so the blocks must not bypass them)."""
    import gzip
    from grstream.io import texttable
    from grstream.io.generate import rmat

    src, dst = rmat(10, 8, seed=9)
    weight = np.arange(len(src)) % 7 + 1
    np.save(tmp_path / "g.npy", np.column_stack([src, dst]))
    text = "# SNAP\n" + "".join(f"{s}\t{d}\t{w}\n" for s, d, w in zip(src, dst, weight))
    if name.endswith(".gz"):
        with gzip.open(tmp_path / name, "wt") as f:
            f.write(text)
    else:
        (tmp_path / name).write_text(text)
    for options in ({}, {"reorder": "degree"}, {"renumber": True}):
        build_shards(str(tmp_path / "g.npy"), tmp_path / "want.h5", num_shards=4,
                     progress=False, **options)
        want = store_contents(tmp_path / "want.h5")
        grown = []
        real_grow = in_memory_keys._grow

        def grow(arrays, size):
            grown.append(size)
            real_grow(arrays, size)
        with mock.patch.object(texttable, "PARALLEL_TEXT_BYTES", 0), \
                mock.patch.object(texttable, "BLOCK_BYTES", 1 << 12), \
                mock.patch.object(in_memory_keys, "GROWN_KEYS", 100), \
                mock.patch.object(in_memory_keys, "_grow", grow):
            for threads in (1, 2):
                build_shards(str(tmp_path / name), tmp_path / "got.h5", num_shards=4,
                             threads=threads, weighted=False, progress=False, **options)
                assert store_contents(tmp_path / "got.h5") == want, (options, threads)
        assert grown[-1] == len(src)            # grown, then cut to the keys
        if "reorder" not in options:            # (reordered: one chunk of the new ids)
            assert len(grown) > 20
