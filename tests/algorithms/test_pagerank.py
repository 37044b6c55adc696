import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import grstream as gr
from grstream.algorithms.pagerank import PageRank, pagerank

from .conftest import BUDGETS, budget_for, build, random_edges

nx = pytest.importorskip("networkx")


def reference(n, src, dst):
    g = nx.MultiDiGraph()  # duplicate edges weigh double, as they do in the store
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(src.tolist(), dst.tolist()))
    pr = nx.pagerank(g, alpha=0.85, tol=1e-10, max_iter=1000, weight=None)
    return np.array([pr[i] for i in range(n)])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 40), m=st.integers(0, 120), seed=st.integers(0, 2**31),
       shards=st.integers(1, 6), budget=st.sampled_from(BUDGETS))
def test_pagerank_matches_networkx(tmp_path_factory, n, m, seed, shards, budget):
    rng = np.random.default_rng(seed)
    src, dst, _ = random_edges(rng, n, m)
    store = build(tmp_path_factory.mktemp("pr"), n, src, dst, num_shards=shards)
    rank, result = pagerank(store, tol=1e-10, max_iter=1000,
                            memory_budget=budget_for(budget, PageRank(), store))
    assert result.converged
    np.testing.assert_allclose(rank, reference(n, src, dst), rtol=1e-6, atol=1e-12)
    assert abs(rank.sum() - 1.0) < 1e-9


def test_pagerank_same_iterations_as_networkx(datasets_dir, tmp_path):
    # default tolerance: the stopping rule (sum |x' - x| < n tol) must match, not just the limit
    g = nx.read_edgelist(datasets_dir / "p2p-Gnutella08.txt", nodetype=int, create_using=nx.DiGraph)
    store = gr.open(gr.build_shards(datasets_dir / "p2p-Gnutella08.txt", tmp_path / "p2p.h5",
                                    num_shards=4, progress=False))
    rank, result = pagerank(store)
    want = nx.pagerank(g, weight=None)
    got = {i: rank[i] for i in range(store.num_vertices)}
    np.testing.assert_allclose([got[k] for k in want], [want[k] for k in want], rtol=1e-9)


def test_pagerank_streams_whole_graph_each_iteration_under_small_budget(tmp_path, rng):
    src, dst, _ = random_edges(rng, 200, 1500)
    store = build(tmp_path, 200, src, dst, num_shards=6)
    low = budget_for("minimum", PageRank(), store)
    rank_small, small = pagerank(store, memory_budget=low)
    rank_all, full = pagerank(store)
    np.testing.assert_allclose(rank_small, rank_all, rtol=0, atol=0)
    # in-memory: shards are read once and cached; streaming: read every iteration
    assert sum(s.bytes_read for s in full.stats) == full.stats[0].bytes_read
    assert all(s.bytes_read == small.stats[0].bytes_read > 0 for s in small.stats)
    # no out-edges are needed: topology-driven, no activation
    assert small.info["arrays"] == ["in/indptr", "in/src"]


def test_pagerank_max_iter_not_converged(tmp_path, rng):
    src, dst, _ = random_edges(rng, 50, 300)
    store = build(tmp_path, 50, src, dst, num_shards=2)
    _, result = pagerank(store, max_iter=2)
    assert result.iterations == 2 and not result.converged
