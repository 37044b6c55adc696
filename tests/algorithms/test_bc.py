import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import grstream as gr
from grstream.algorithms.bc import BrandesBackward, BrandesForward, betweenness

from .conftest import BUDGETS, budget_for, build, random_edges

nx = pytest.importorskip("networkx")


def digraph(n, src, dst):
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(src.tolist(), dst.tolist()))
    return g


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 30), m=st.integers(0, 90), seed=st.integers(0, 2**31),
       shards=st.integers(1, 5), budget=st.sampled_from(BUDGETS))
def test_bc_exact_matches_networkx(tmp_path_factory, n, m, seed, shards, budget):
    rng = np.random.default_rng(seed)
    # parallel edges stay in the store; bc must count them once, as a DiGraph does
    src, dst, _ = random_edges(rng, n, m)
    store = build(tmp_path_factory.mktemp("bc"), n, src, dst, num_shards=shards)
    # one budget serves both passes: the larger of their needs
    need = [budget_for(budget, p, store) for p in (BrandesForward(), BrandesBackward())]
    values, _ = betweenness(store, memory_budget=None if None in need else max(need))
    want = nx.betweenness_centrality(digraph(n, src, dst), normalized=False)
    np.testing.assert_allclose(values, [want[i] for i in range(n)], rtol=1e-9, atol=1e-9)


def test_bc_karate(datasets_dir, tmp_path):
    store = gr.open(gr.build_shards(datasets_dir / "karate.mtx", tmp_path / "k.h5", num_shards=3,
                                    progress=False))
    coo = store.to_scipy("csr").tocoo()
    values, _ = betweenness(store)
    want = nx.betweenness_centrality(digraph(store.num_vertices, coo.row, coo.col), normalized=False)
    np.testing.assert_allclose(values, [want[i] for i in range(store.num_vertices)], rtol=1e-9)


def test_bc_sampled_sources_rescale_like_networkx(tmp_path, rng):
    # sampling k sources: the estimate is rescaled exactly as networkx rescales its own sample
    n = 30
    src, dst, _ = random_edges(rng, n, 120, duplicates=False)
    store = build(tmp_path, n, src, dst, num_shards=3, duplicates=False)
    values, results = betweenness(store, k=10, seed=7)
    chosen = np.sort(np.random.default_rng(7).choice(n, size=10, replace=False))
    partial, _ = betweenness(store, sources=chosen.tolist())
    scale = np.full(n, (n - 1) / 10)
    scale[chosen] = (n - 1) / 9
    np.testing.assert_allclose(values, partial * scale, rtol=1e-12)
    # with k = n the sample is the whole graph: exact
    exact, _ = betweenness(store)
    full, _ = betweenness(store, k=n)
    np.testing.assert_allclose(full, exact)
