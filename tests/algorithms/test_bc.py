import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import grstream as gr
from grstream.algorithms import bc
from grstream.algorithms.bc import (BrandesBackward, BrandesForward, DagLevels,
                                    WeightedBrandesBackward, WeightedBrandesForward, betweenness,
                                    source_dependencies)
from grstream.algorithms.bfs import BFS
from grstream.algorithms.sssp import SSSP
from grstream.errors import UsageError

from .conftest import BUDGETS, budget_for, build, random_edges

nx = pytest.importorskip("networkx")


def nx_graph(n, src, dst, w=None, directed=True):
    # MultiDiGraph: betweenness sees each neighbour once and the lightest parallel edge
    g = nx.MultiDiGraph() if directed else nx.MultiGraph()
    g.add_nodes_from(range(n))
    for i, (u, v) in enumerate(zip(src.tolist(), dst.tolist())):
        g.add_edge(u, v, **({} if w is None else {"weight": float(w[i])}))
    return g


def one_budget(kind, store, weighted):
    """One budget serves every pass of a source: the largest of their needs."""
    programs = ((SSSP(), DagLevels(), WeightedBrandesForward(), WeightedBrandesBackward())
                if weighted else (BFS(), BrandesForward(), BrandesBackward()))
    need = [budget_for(kind, p, store) for p in programs]
    return None if None in need else max(need)


def as_array(d, n):
    return np.array([d[i] for i in range(n)])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 30), m=st.integers(0, 90), seed=st.integers(0, 2**31),
       shards=st.sampled_from([1, 3]), budget=st.sampled_from(BUDGETS), weighted=st.booleans(),
       undirected=st.booleans(), normalized=st.booleans(), endpoints=st.booleans())
def test_bc_exact_matches_networkx(tmp_path_factory, n, m, seed, shards, budget, weighted,
                                   undirected, normalized, endpoints):
    rng = np.random.default_rng(seed)
    # parallel edges stay in the store; bc must count them once, as networkx does
    src, dst, _ = random_edges(rng, n, m)
    w = rng.integers(1, 4, len(src)).astype(np.float64) if weighted else None  # ties: equal paths
    store = build(tmp_path_factory.mktemp("bc"), n, src, dst, w, num_shards=shards,
                  undirected=undirected)
    assert store.directed is not undirected
    values, _ = betweenness(store, normalized=normalized, endpoints=endpoints,
                            weight="weight" if weighted else None,
                            memory_budget=one_budget(budget, store, weighted))
    want = nx.betweenness_centrality(nx_graph(n, src, dst, w, directed=not undirected),
                                     normalized=normalized, endpoints=endpoints,
                                     weight="weight" if weighted else None)
    np.testing.assert_allclose(values, as_array(want, n), rtol=1e-9, atol=1e-9)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(2, 30), m=st.integers(0, 90), seed=st.integers(0, 2**31),
       k=st.integers(1, 30), weighted=st.booleans(), undirected=st.booleans(),
       normalized=st.booleans(), endpoints=st.booleans())
def test_bc_sampled_matches_networkx(tmp_path_factory, n, m, seed, k, weighted, undirected,
                                     normalized, endpoints):
    # the same seed samples the same sources as networkx, rescaled as networkx 3.6 rescales
    k = min(k, n)
    rng = np.random.default_rng(seed)
    src, dst, _ = random_edges(rng, n, m)
    w = rng.integers(1, 4, len(src)).astype(np.float64) if weighted else None
    store = build(tmp_path_factory.mktemp("bck"), n, src, dst, w, num_shards=3,
                  undirected=undirected)
    weight = "weight" if weighted else None
    values, _ = betweenness(store, k=k, seed=seed, normalized=normalized, endpoints=endpoints,
                            weight=weight)
    want = nx.betweenness_centrality(nx_graph(n, src, dst, w, directed=not undirected), k=k,
                                     seed=seed, normalized=normalized, endpoints=endpoints,
                                     weight=weight)
    np.testing.assert_allclose(values, as_array(want, n), rtol=1e-9, atol=1e-9)


def stored_edges(store):
    coo = store.to_scipy("csr").tocoo()
    return coo.row, coo.col, coo.data


def test_bc_karate_undirected(datasets_dir, tmp_path):
    # karate's symmetric file read as stored; once per pair, then built undirected
    first = gr.open(gr.build_shards(datasets_dir / "karate.mtx", tmp_path / "k.h5", progress=False))
    src, dst, _ = stored_edges(first)
    once = src < dst
    edges = np.stack([src[once], dst[once]], axis=1)
    store = gr.open(gr.build_shards(edges, tmp_path / "ku.h5", undirected=True, num_shards=3,
                                    progress=False))
    g = nx.Graph(edges.tolist())
    for normalized in (False, True):
        values, _ = betweenness(store, normalized=normalized)
        want = nx.betweenness_centrality(g, normalized=normalized)
        np.testing.assert_allclose(values, as_array(want, store.num_vertices), rtol=1e-9)
    # the symmetric file makes an undirected store by itself: NetworkX's values
    assert not first.directed
    values, _ = betweenness(first)
    want = as_array(nx.betweenness_centrality(g, normalized=False), first.num_vertices)
    np.testing.assert_allclose(values, want, rtol=1e-9)
    # a directed store of an edge list listing both directions counts each pair twice
    both = gr.open(gr.build_shards(np.stack([src, dst], axis=1), tmp_path / "kd.h5",
                                   progress=False))
    assert both.directed
    values, _ = betweenness(both)
    np.testing.assert_allclose(values, 2 * want, rtol=1e-9)


def test_bc_weighted_rome99_sampled(datasets_dir, tmp_path):
    store = gr.open(gr.build_shards(datasets_dir / "rome99.gr", tmp_path / "rome.h5", num_shards=3,
                                    progress=False))
    src, dst, w = [], [], []
    for i in range(store.num_shards):
        ip = store.read(i, "out/indptr")
        src.append(np.repeat(np.arange(store.intervals[i], store.intervals[i + 1]), np.diff(ip)))
        dst.append(store.read(i, "out/dst"))
        w.append(store.read(i, "out/weight"))
    g = nx_graph(store.num_vertices, np.concatenate(src), np.concatenate(dst), np.concatenate(w))
    values, _ = betweenness(store, k=4, seed=11, weight="weight", normalized=True)
    want = nx.betweenness_centrality(g, k=4, seed=11, weight="weight", normalized=True)
    np.testing.assert_allclose(values, as_array(want, store.num_vertices), rtol=1e-9, atol=1e-15)
    assert values.max() > 0


def test_bc_explicit_sources_like_networkx_subset(tmp_path, rng):
    n = 25
    src, dst, _ = random_edges(rng, n, 80)
    store = build(tmp_path, n, src, dst, num_shards=2)
    sources = [3, 9, 17]
    g = nx.DiGraph(nx_graph(n, src, dst))
    for normalized in (False, True):
        values, _ = betweenness(store, sources=sources, normalized=normalized)
        want = nx.betweenness_centrality_subset(g, sources, list(g), normalized=normalized)
        np.testing.assert_allclose(values, as_array(want, n), rtol=1e-9, atol=1e-12)
    exact, _ = betweenness(store)
    np.testing.assert_array_equal(betweenness(store, k=n)[0], exact)  # k = n: every source


def test_bc_bad_arguments(tmp_path):
    store = build(tmp_path, 4, np.array([0, 1, 2]), np.array([1, 2, 3]))
    for k, match in ((5, "at most 4"), (0, "at least 1"), (1.5, "integer"), (True, "integer")):
        with pytest.raises(UsageError, match=match):
            betweenness(store, k=k)
    with pytest.raises(UsageError, match="weight"):
        betweenness(store, weight="weight")  # no weights stored
    with pytest.raises(UsageError, match="sources or k"):
        betweenness(store, k=2, sources=[0])
    weighted = build(tmp_path, 3, np.array([0, 1]), np.array([1, 2]), np.array([1.0, 0.0]),
                     name="zero")
    with pytest.raises(UsageError, match="positive weights"):
        betweenness(weighted, weight="weight")
    np.testing.assert_array_equal(betweenness(weighted)[0], [0, 1, 0])  # hops: weights unused


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shards", [1, 4])
def test_each_pass_walks_each_edge_once_per_source(tmp_path, rng, weighted, shards):
    # Brandes' bound: the forward pass gathers over the in-edges and the backward pass over the
    # out-edges of every vertex the source reaches (not the source), each exactly once
    n = 60
    src, dst, _ = random_edges(rng, n, 300)
    src, dst = np.unique(np.stack([src, dst], axis=1), axis=0).T   # no parallel edges
    w = rng.integers(1, 4, len(src)).astype(np.float64) if weighted else None
    store = build(tmp_path, n, src, dst, w, num_shards=shards)
    indeg, outdeg = np.bincount(dst, minlength=n), np.bincount(src, minlength=n)
    for s in (0, 7, 31):
        delta, reached, results = source_dependencies(store, s, weighted=weighted)
        fwd, back = results[-2], results[-1]
        assert back.info["program"].endswith("BrandesBackward")
        inner = reached.copy()
        inner[s] = False
        assert sum(st.active_edges for st in fwd.stats) == int(indeg[inner].sum())
        assert sum(st.active_edges for st in back.stats) == int(outdeg[inner].sum())
        assert sum(st.active_vertices for st in fwd.stats) == int(inner.sum())
        assert sum(st.active_vertices for st in back.stats) == int(inner.sum())
        g = nx.DiGraph(nx_graph(n, src, dst, w))
        want = nx.betweenness_centrality_subset(g, [s], list(g), normalized=False,
                                                weight="weight" if weighted else None)
        np.testing.assert_allclose(delta, as_array(want, n), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_sources_one_after_the_other_equal_lanes(tmp_path, rng, monkeypatch, weighted):
    # large graphs run one source after the other, small ones in lanes: the same sums
    n = 50
    src, dst, _ = random_edges(rng, n, 200)
    w = rng.integers(1, 4, len(src)).astype(np.float64) if weighted else None
    store = build(tmp_path, n, src, dst, w, num_shards=3)
    weight = "weight" if weighted else None
    lanes, results = betweenness(store, k=12, seed=3, weight=weight)
    assert any(r.info.get("lanes", 0) > 1 for r in results)
    monkeypatch.setattr(bc, "LANE_ELEMENTS", 1)
    single, results = betweenness(store, k=12, seed=3, weight=weight)
    assert not any(r.info.get("lanes", 0) > 1 for r in results)
    np.testing.assert_allclose(single, lanes, rtol=1e-12, atol=1e-12)
    want = nx.betweenness_centrality(nx_graph(n, src, dst, w), k=12, seed=3, normalized=False,
                                     weight=weight)
    np.testing.assert_allclose(single, as_array(want, n), rtol=1e-9, atol=1e-9)
