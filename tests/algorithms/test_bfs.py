import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy.sparse import csgraph

import grstream as gr
from grstream.algorithms.bfs import BFS, bfs
from grstream.errors import UsageError

from .conftest import BUDGETS, budget_for, build, random_edges


def reference(n, src, dst, source):
    mat = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    d = csgraph.shortest_path(mat, directed=True, unweighted=True, indices=source)
    return np.where(np.isinf(d), -1, d).astype(np.int64)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 40), m=st.integers(0, 120), seed=st.integers(0, 2**31),
       shards=st.integers(1, 6), budget=st.sampled_from(BUDGETS))
def test_bfs_matches_scipy(tmp_path_factory, n, m, seed, shards, budget):
    rng = np.random.default_rng(seed)
    src, dst, _ = random_edges(rng, n, m)
    store = build(tmp_path_factory.mktemp("bfs"), n, src, dst, num_shards=shards)
    source = int(rng.integers(0, n))
    levels, result = bfs(store, source, memory_budget=budget_for(budget, BFS(source=source), store))
    np.testing.assert_array_equal(levels, reference(n, src, dst, source))
    assert result.values["level"] is levels


def test_bfs_skips_shards_without_active_vertices(tmp_path):
    # a path 0->1->...->39 in 8 shards: each iteration touches only the frontier's shard
    n = 40
    src = np.arange(n - 1)
    store = build(tmp_path, n, src, src + 1, num_shards=8)
    levels, result = bfs(store, 0)
    np.testing.assert_array_equal(levels, np.arange(n))
    assert all(s.shards_processed == 1 for s in result.stats)
    assert sum(s.shards_skipped for s in result.stats) == 7 * len(result.stats)
    every = sum(store.shard_info(i).nbytes for i in range(store.num_shards))
    assert sum(s.bytes_read for s in result.stats) < every


def test_bfs_real_graphs(datasets_dir, tmp_path):
    nx = pytest.importorskip("networkx")
    g = nx.read_edgelist(datasets_dir / "p2p-Gnutella08.txt", nodetype=int, create_using=nx.DiGraph)
    for shards in (1, 7):
        store = gr.open(gr.build_shards(datasets_dir / "p2p-Gnutella08.txt",
                                        tmp_path / f"p2p{shards}.h5", num_shards=shards, progress=False))
        levels, _ = bfs(store, 0)
        want = nx.single_source_shortest_path_length(g, 0)
        expect = np.full(store.num_vertices, -1)
        for k, d in want.items():
            expect[k] = d
        np.testing.assert_array_equal(levels, expect)


def test_bfs_bad_source(tmp_path):
    store = build(tmp_path, 5, np.array([0, 1]), np.array([1, 2]))
    with pytest.raises(UsageError, match="out of range"):
        bfs(store, 5)
    with pytest.raises(UsageError, match="out of range"):
        bfs(store, -1)


def test_bfs_empty_graph(tmp_path):
    store = build(tmp_path, 3, np.zeros(0, np.int64), np.zeros(0, np.int64))
    levels, result = bfs(store, 1)
    np.testing.assert_array_equal(levels, [-1, 0, -1])
    assert result.iterations == 0


def test_bfs_finish_maps_unreached_in_place():
    # the Result owns the final arrays: finish maps the sentinel to -1 without a second array
    level = np.array([0, 1, 1 << 62, 2, 1 << 62], dtype=np.int64)
    values = BFS(source=0).finish({"level": level})
    assert values["level"] is level
    np.testing.assert_array_equal(level, [0, 1, -1, 2, -1])
