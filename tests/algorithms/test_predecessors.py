import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import grstream as gr
from grstream.algorithms.predecessors import (BFSTree, ShortestPathTree, all_predecessors,
                                              bfs_predecessors, path, sssp_predecessors)
from grstream.algorithms.sssp import sssp
from grstream.errors import UsageError

from .conftest import budget_for, build, random_edges

nx = pytest.importorskip("networkx")


def small_graphs(test):
    """30 random graphs of up to 40 vertices, over 1 and 3 shards, in memory and streamed."""
    return settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])(given(
        n=st.integers(1, 40), m=st.integers(0, 120), seed=st.integers(0, 2**31),
        shards=st.sampled_from([1, 3]), budget=st.sampled_from(["all", "minimum"]))(test))


def multidigraph(n, src, dst, w=None):
    g = nx.MultiDiGraph()
    g.add_nodes_from(range(n))
    for i, (u, v) in enumerate(zip(src.tolist(), dst.tolist())):
        g.add_edge(u, v, **({} if w is None else {"weight": float(w[i])}))
    return g


def csr_lists(indptr, indices):
    return [indices[indptr[v]:indptr[v + 1]].tolist() for v in range(len(indptr) - 1)]


def check_bfs(store, g, source, budget):
    n = g.number_of_nodes()
    # the functions take the vertex's label (rome99's ids are 1-based), arrays are internal
    parent, result = bfs_predecessors(store, store.labels()[source],
                                      memory_budget=budget_for(budget, BFSTree(), store))
    level = result.values["level"]
    want = nx.single_source_shortest_path_length(g, source)
    np.testing.assert_array_equal(level, [want.get(v, -1) for v in range(n)])
    # NetworkX's predecessor lists: every in-neighbour one level up
    preds = nx.predecessor(g, source)
    got = csr_lists(*all_predecessors(store, level=level))
    assert got == [sorted(set(preds.get(v, []))) for v in range(n)]
    # the parent: the smallest of them (NetworkX's bfs_predecessors takes the first it meets)
    assert parent.tolist() == [min(p) if p else -1 for p in got]
    assert parent[source] == -1
    for v in range(n):
        if level[v] >= 0:
            assert nx.is_path(g, path(parent, source, v)) and len(path(parent, source, v)) == level[v] + 1


@small_graphs
def test_bfs_predecessors_match_networkx(tmp_path_factory, n, m, seed, shards, budget):
    rng = np.random.default_rng(seed)
    src, dst, _ = random_edges(rng, n, m)
    store = build(tmp_path_factory.mktemp("bfsp"), n, src, dst, num_shards=shards)
    check_bfs(store, multidigraph(n, src, dst), int(rng.integers(0, n)), budget)


def check_sssp(store, g, source, budget):
    n = g.number_of_nodes()
    low = budget_for(budget, ShortestPathTree(), store)
    parent, result = sssp_predecessors(store, store.labels()[source], memory_budget=low)
    dist, hops = result.values["dist"], result.values["hops"]
    pred, want = nx.dijkstra_predecessor_and_distance(g, source)
    np.testing.assert_array_equal(dist, [want.get(v, np.inf) for v in range(n)])
    got = csr_lists(*all_predecessors(store, dist=dist))
    assert got == [sorted(set(pred.get(v, []))) for v in range(n)]
    # hops: fewest edges of a shortest path; parent: smallest tight in-neighbour one hop up
    tight = nx.DiGraph([(u, v) for v, ps in enumerate(got) for u in ps])
    tight.add_nodes_from(range(n))
    fewest = nx.single_source_shortest_path_length(tight, source)
    np.testing.assert_array_equal(hops, [fewest.get(v, -1) for v in range(n)])
    for v in range(n):
        up = [u for u in got[v] if hops[u] == hops[v] - 1]
        assert parent[v] == (min(up) if v != source and up else -1)
        if np.isfinite(dist[v]):
            p = path(parent, source, v)
            assert p[0] == source and len(p) == hops[v] + 1
            assert nx.path_weight(g, p, "weight") == dist[v] if len(p) > 1 else dist[v] == 0
        else:
            with pytest.raises(UsageError, match="not reachable"):
                path(parent, source, v)


@small_graphs
def test_sssp_predecessors_match_networkx(tmp_path_factory, n, m, seed, shards, budget):
    rng = np.random.default_rng(seed)
    src, dst, _ = random_edges(rng, n, m)
    # few distinct weights, zeros among them: many equal-length paths and zero-weight cycles
    w = rng.integers(0, 3, len(src)).astype(np.float64)
    store = build(tmp_path_factory.mktemp("ssspp"), n, src, dst, w, num_shards=shards)
    # nx.path_weight on a MultiDiGraph takes the lightest parallel edge, as the store's paths do
    check_sssp(store, multidigraph(n, src, dst, w), int(rng.integers(0, n)), budget)


def test_predecessors_real_graphs(datasets_dir, tmp_path):
    for name, check in (("rome99.gr", check_sssp), ("p2p-Gnutella08.txt", check_bfs)):
        store = gr.open(gr.build_shards(datasets_dir / name, tmp_path / f"{name}.h5", num_shards=3,
                                        progress=False))
        src, dst, w = [], [], []  # the stored edges, parallel copies included
        for i in range(store.num_shards):
            ip = store.read(i, "out/indptr")
            src.append(np.repeat(np.arange(store.intervals[i], store.intervals[i + 1]), np.diff(ip)))
            dst.append(store.read(i, "out/dst"))
            if store.edge_props:
                w.append(store.read(i, "out/weight"))
        g = multidigraph(store.num_vertices, np.concatenate(src), np.concatenate(dst),
                         np.concatenate(w) if w else None)
        for budget in ("all", "minimum"):
            check(store, g, 0, budget)


def test_sssp_predecessors_reuse_distances(tmp_path, rng):
    src, dst, w = random_edges(rng, 30, 100, weighted=True)
    store = build(tmp_path, 30, src, dst, w, num_shards=2)
    dist, _ = sssp(store, 4)
    parent, res = sssp_predecessors(store, 4, dist=dist)
    np.testing.assert_array_equal(parent, sssp_predecessors(store, 4)[0])
    with pytest.raises(UsageError, match="distances from vertex 5"):
        sssp_predecessors(store, 5, dist=dist)


def test_predecessor_argument_errors(tmp_path):
    store = build(tmp_path, 3, np.array([0, 1]), np.array([1, 2]))
    with pytest.raises(UsageError, match="exactly one"):
        all_predecessors(store)
    with pytest.raises(UsageError, match="one entry per vertex"):
        all_predecessors(store, level=np.zeros(2))
    with pytest.raises(UsageError, match="weights"):
        all_predecessors(store, dist=np.zeros(3))
    with pytest.raises(UsageError, match="out of range"):
        bfs_predecessors(store, 3)
    parent, _ = bfs_predecessors(store, 0)
    assert path(parent, 0, 2) == [0, 1, 2] and path(parent, 0, 0) == [0]
    with pytest.raises(UsageError, match="out of range"):
        path(parent, 0, 7)
