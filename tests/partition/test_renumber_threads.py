"""Renumbering on the build's threads: the ids that occur marked at once, their positions from
a dense table or a search, and the same store whichever way and on however many threads."""
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grstream.io.generate import rmat
from grstream.partition import build_shards, id_map, in_memory_keys
from grstream.partition import renumber as renumbering
from grstream.partition.id_map import IdMap, distinct_ids

from .graphs import store_contents


@settings(max_examples=60, deadline=None)
@given(ids=st.sets(st.integers(0, 5000), max_size=300), seed=st.integers(0, 99))
def test_table_and_search_give_the_same_positions(ids, seed):
    ids = np.array(sorted(ids), dtype=np.int64)
    values = np.random.default_rng(seed).choice(ids, 50) if len(ids) else ids
    table, search = IdMap(ids, 1 << 20), IdMap(ids, 0)
    assert (table.rank is not None) == bool(len(ids)) and search.rank is None
    expected = np.searchsorted(ids, values)
    for got in (table.positions(values), search.positions(values)):
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(table.unsigned(values).astype(np.int64), expected)
    np.testing.assert_array_equal(search.unsigned(values).astype(np.int64), expected)


@settings(max_examples=60, deadline=None)
@given(chunks=st.lists(st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 3000)),
                                max_size=40), max_size=8),
       mark_bytes=st.sampled_from([0, 100, 1500, 1 << 20]), ahead=st.integers(1, 3))
def test_marked_ids_are_the_distinct_ids(chunks, mark_bytes, ahead):
    """Marked on threads, grown as larger ids come, merged past the table's bound."""
    arrays = [(np.array([e[0] for e in c], dtype=np.int64),
               np.array([e[1] for e in c], dtype=np.int64), None) for c in chunks]
    every = [a for s, d, _ in arrays for a in (s, d)]
    expected = np.unique(np.concatenate(every)) if every else np.empty(0, dtype=np.int64)
    with ThreadPoolExecutor(3) as pool:
        got = distinct_ids(iter(arrays), pool, ahead, mark_bytes)
    np.testing.assert_array_equal(got, expected)


def _rmat_npy(tmp_path):
    src, dst = rmat(12, 8, seed=5)[:2]
    path = tmp_path / "g.npy"
    # ids spread out (half of 0..max unused): the default renumbers them, as RMAT's
    np.save(path, np.column_stack([2 * src, 2 * dst]).astype(np.int64))
    return str(path)


def test_every_way_of_renumbering_writes_the_same_store(tmp_path):
    """From degrees or from the keys' primaries, through a table or a search, in memory or
    under a limit, on one thread or several: one store."""
    path = _rmat_npy(tmp_path)
    want = None
    ways = {"counted": {}, "primaries": {"COUNTED_IDS_PER_EDGE": 1 << 40}}
    maps = {"table": {"MIN_MAP_BYTES": renumbering.MIN_MAP_BYTES}, "search": {"MIN_MAP_BYTES": 0, "MAP_BYTES_PER_VERTEX": 0,
                                    "MAP_SHARE_OF_LIMIT": 1 << 40}}
    for way, patches in ways.items():
        for kind, map_patches in maps.items():
            for threads in (1, 3):
                for limit in (None, 1 << 22):
                    for renumber in (True, None):
                        with mock.patch.multiple(in_memory_keys, STEP=1000, **patches), \
                                mock.patch.multiple(renumbering, **map_patches), \
                                mock.patch("grstream.partition.build.MAX_CHUNK_EDGES", 5000):
                            out = tmp_path / f"{way}-{kind}-{threads}-{limit}-{renumber}.h5"
                            build_shards(path, out, num_shards=7, threads=threads,
                                         memory_limit=limit, renumber=renumber, progress=False)
                        got = store_contents(out)
                        want = got if want is None else want
                        assert got == want, (way, kind, threads, limit, renumber)


@pytest.mark.parametrize("limit", [None, 1 << 22])
def test_ids_are_looked_up_on_several_threads(tmp_path, limit):
    """The lookups of a renumbered build run on the build's threads, not on one."""
    path = _rmat_npy(tmp_path)
    seen = set()
    lookups = {name: getattr(IdMap, name) for name in ("positions", "unsigned")}

    def recorded(name):
        def lookup(self, values):
            seen.add(threading.get_ident())
            time.sleep(0.005)     # long enough for the pool's other threads to take a slice
            return lookups[name](self, values)
        return lookup

    with mock.patch.object(IdMap, "positions", recorded("positions")), \
            mock.patch.object(IdMap, "unsigned", recorded("unsigned")), \
            mock.patch.object(in_memory_keys, "STEP", 500), \
            mock.patch.object(id_map, "STEP", 500), \
            mock.patch("grstream.partition.build.MAX_CHUNK_EDGES", 2000):
        build_shards(path, tmp_path / "g.h5", num_shards=5, threads=4, memory_limit=limit,
                     renumber=True, progress=False)
    assert len(seen) > 1
