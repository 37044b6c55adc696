"""Past 2**31 edges without that much memory: a store whose shard 0 holds 2**31 + k edges in
sparse datasets (tests/store/wide.py), opened, read where it is small, and planned over."""
import os

import h5py
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.pagerank import PageRank
from grstream.backends.cpu.segments import expand_ranges
from grstream.backends.cpu.strategy_push import push_static, stamp_dtype
from grstream.engine.capabilities import BatchResident, Batching, Capabilities
from grstream.engine.memory import Footprint, plan_memory
from grstream.engine.planner import Planner, shard_facts
from grstream.engine.schedule import needed_arrays

from ..algorithms.conftest import build
from ..store.wide import widen
from .contract_helpers import policies_for

EXTRA = 2 ** 31 + 7


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wide")
    src = np.array([1, 2, 3, 4, 5, 6, 7, 0, 3])
    dst = np.array([0, 0, 1, 5, 6, 7, 4, 2, 6])
    small = build(tmp, 8, src, dst, num_shards=2)
    path = small.path
    before = {i: {n: small.read(i, n).copy() for n in small.dataset_names(i)} for i in range(2)}
    small.close()
    try:
        widen(path, EXTRA)
    except (OSError, ValueError) as exc:   # a file system without sparse files
        pytest.skip(f"no room for a sparse store: {exc}")
    if os.stat(path).st_blocks * 512 > 1 << 30:
        pytest.skip("the file system wrote the holes")
    store = gr.open(path)
    yield store, before
    store.close()


def test_the_store_opens_past_2_31_edges_and_reads_where_it_is_small(wide):
    store, before = wide
    assert store.num_edges == 9 + EXTRA > 2 ** 31 and store.id_dtype == np.int32
    info = store.shard_info(0)
    assert info.num_in_edges == len(before[0]["in/src"]) + EXTRA > 2 ** 31
    assert info.num_out_edges == len(before[0]["out/dst"]) + EXTRA
    assert info.dataset_nbytes["in/src"] == 4 * info.num_in_edges > 2 ** 33
    assert store.in_degree()[0] == EXTRA + 2 and store.out_degree()[0] == EXTRA + 1
    # shard 1's datasets sit past the 16 GiB of shard 0's in the file: read at 64-bit offsets
    for name, data in before[1].items():
        np.testing.assert_array_equal(store.read(1, name), data)
    indptr = store.read(0, "in/indptr")
    assert indptr.dtype == np.int64 and int(indptr[1]) == EXTRA + 2 and int(indptr[-1]) == info.num_in_edges
    # the CPU's edge positions of rows after the big one lie past 2**31 and find their edges
    positions, offsets = expand_ranges(indptr, np.array([1, 2, 3]))
    assert positions.dtype == np.int64 and int(positions.min()) > 2 ** 31
    with h5py.File(store.path, "r") as f:
        got = f["shards/0/in/src"][np.sort(positions)]
    old = before[0]["in/indptr"]
    np.testing.assert_array_equal(got, before[0]["in/src"][old[1]:old[4]])


def test_memory_plans_and_tiers_count_past_2_32_bytes(wide):
    store, _ = wide
    caps = Capabilities("cuda", batching=Batching(BatchResident.DENSE))
    fp = Footprint({"state": 1000}, alignment=256)
    names = needed_arrays(PageRank.spec)
    full = plan_memory(store, names, fp, pinned=False)
    big = full.regions[0]
    assert big > 2 ** 33 and full.lengths[0]["in/src"] == store.shard_info(0).num_in_edges
    # a device too small for shard 0 beside the state: both shards stream; the host holds both
    model = plan_memory(store, names, fp, budget=1000 + big, host=8 * big)
    assert model.resident == () and model.pinned == (0, 1) and model.pinned_cache_bytes > 2 ** 33
    planner = Planner(PageRank.spec, store, model, caps, policies_for(caps))
    facts = shard_facts(store, PageRank.spec)
    assert dict(facts[0].edges)["in"] == store.shard_info(0).num_in_edges
    assert dict(facts[0].max_degree)["in"] == EXTRA + 2
    counts = np.diff(np.asarray(store.intervals))
    first = planner.plan(1, counts, True)
    second = planner.plan(2, counts, True)
    assert dict((t, b) for t, _, b in first.tiers)["store"] == sum(model.regions) > 2 ** 33
    assert dict((t, b) for t, _, b in second.tiers) == {"resident": 0, "pinned": sum(model.regions),
                                                         "store": 0}
    assert second.bytes_store == 0 and first.bytes_store == sum(model.regions)


def test_push_stamps_stay_distinct_past_2_31_messages(wide):
    """A push plan stamps each message with its position: 2**31 edges and more need 64-bit
    stamps even where the vertex ids fit 32 bits."""
    store, _ = wide
    assert stamp_dtype(store.num_vertices, store.num_edges) == np.int64
    assert stamp_dtype(1000, 2 ** 30 - 1) == np.int32 and stamp_dtype(2 ** 31, 10) == np.int64
    assert push_static(BFS.spec, store.num_vertices, store.num_edges)["push/stamp"] == 8 * 8
    assert push_static(BFS.spec, 8, 9)["push/stamp"] == 4 * 8
    # the positions a plan of that many messages hands out keep their order (no wrap)
    last = np.arange(2 ** 31 - 2, 2 ** 31 + 2, dtype=stamp_dtype(8, store.num_edges))
    assert np.all(np.diff(last) == 1)
