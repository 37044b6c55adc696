"""Eigenvector and Katz centrality, strongly connected components, core numbers and BFS to a
target against NetworkX / scipy.sparse.csgraph on random stores with isolated vertices,
self-loops and parallel edges, under several shard counts and memory budgets."""
import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy.sparse import csgraph

import grstream as gr
from grstream.algorithms import eigenvector, kcore, reach, scc
from grstream.errors import UsageError

from .conftest import BUDGETS, budget_for, build, random_edges

CASES = settings(max_examples=25, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])
GRAPHS = dict(n=st.integers(1, 30), m=st.integers(0, 60), seed=st.integers(0, 2**31),
              shards=st.integers(1, 5), budget=st.sampled_from(BUDGETS))


def weighted_digraph(n, src, dst, w=None):
    """A DiGraph whose weights hold the multiplicity (times the weight) of each stored edge:
    what the programs see in a store with parallel edges."""
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    for u, v, x in zip(src.tolist(), dst.tolist(), (np.ones(len(src)) if w is None else w)):
        G.add_edge(u, v, weight=G.get_edge_data(u, v, {"weight": 0.0})["weight"] + x)
    return G


def as_array(d, n):
    return np.array([d[i] for i in range(n)])


@CASES
@given(weighted=st.booleans(), **GRAPHS)
def test_eigenvector_centrality_matches_networkx(tmp_path_factory, n, m, seed, shards, budget,
                                                 weighted):
    src, dst, w = random_edges(np.random.default_rng(seed), n, m, weighted=weighted)
    store = build(tmp_path_factory.mktemp("ev"), n, src, dst, w, num_shards=shards)
    cls = (eigenvector.WeightedEigenvectorCentrality if weighted
           else eigenvector.EigenvectorCentrality)
    mb = budget_for(budget, cls(), store)
    got, result = eigenvector.eigenvector_centrality(store, max_iter=300, weight="weight",
                                                     memory_budget=mb)
    try:
        want = nx.eigenvector_centrality(weighted_digraph(n, src, dst, w), max_iter=300,
                                         weight="weight")
    except nx.PowerIterationFailedConvergence:
        assert not result.converged
        return
    assert result.converged
    np.testing.assert_allclose(got, as_array(want, n), atol=1e-12)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # NetworkX's own overflow when diverging
@CASES
@given(alpha=st.sampled_from([0.05, 0.1]), weighted=st.booleans(), **GRAPHS)
def test_katz_centrality_matches_networkx(tmp_path_factory, n, m, seed, shards, budget, alpha,
                                          weighted):
    src, dst, w = random_edges(np.random.default_rng(seed), n, m, weighted=weighted)
    if weighted:
        w = w / 20.0   # keeps alpha * spectral radius below 1
    store = build(tmp_path_factory.mktemp("katz"), n, src, dst, w, num_shards=shards)
    beta = np.arange(n) % 3 + 1.0
    cls = eigenvector.WeightedKatzCentrality if weighted else eigenvector.KatzCentrality
    mb = budget_for(budget, cls(), store)
    got, result = eigenvector.katz_centrality(store, alpha=alpha, beta=beta, weight="weight",
                                              memory_budget=mb)
    G = weighted_digraph(n, src, dst, w)
    try:
        want = nx.katz_centrality(G, alpha=alpha, beta=dict(enumerate(beta)), weight="weight")
    except nx.PowerIterationFailedConvergence:
        assert not result.converged
        return
    assert result.converged
    np.testing.assert_allclose(got, as_array(want, n), atol=1e-12)


def test_katz_and_eigenvector_parameters_are_checked(tmp_path):
    store = build(tmp_path, 3, np.array([0, 1]), np.array([1, 2]))
    with pytest.raises(UsageError, match="beta must have a value for every vertex"):
        eigenvector.katz_centrality(store, beta={0: 1.0})
    with pytest.raises(UsageError, match="nstart must be finite and non-negative"):
        eigenvector.eigenvector_centrality(store, nstart=[1.0, -1.0, 1.0])
    with pytest.raises(UsageError, match="tol"):
        eigenvector.katz_centrality(store, tol=0)
    x, result = eigenvector.katz_centrality(store, alpha=0.5, normalized=False)
    assert result.converged and x.tolist() == [1.0, 1.5, 1.75]


def strong_reference(n, src, dst):
    mat = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    _, comp = csgraph.connected_components(mat, directed=True, connection="strong")
    smallest = np.full(comp.max() + 1, n, dtype=np.int64)
    np.minimum.at(smallest, comp, np.arange(n))
    return smallest[comp]


@CASES
@given(**GRAPHS)
def test_scc_matches_csgraph(tmp_path_factory, n, m, seed, shards, budget):
    src, dst, _ = random_edges(np.random.default_rng(seed), n, m)
    store = build(tmp_path_factory.mktemp("scc"), n, src, dst, num_shards=shards)
    mb = max(budget_for(budget, scc.ColourForward(), store) or 0,
             budget_for(budget, scc.ReachBackward(color=np.zeros(n, np.int64)), store) or 0)
    labels, result = scc.strongly_connected_components(store, memory_budget=mb or None)
    np.testing.assert_array_equal(labels, strong_reference(n, src, dst))
    assert result.info["runs"] >= 2


def test_scc_settles_a_path_in_one_round_either_way(tmp_path):
    ids = np.arange(99)
    for src, dst in ((ids, ids + 1), (ids + 1, ids)):
        store = build(tmp_path, 100, src, dst, num_shards=3, name=f"p{src[0]}")
        labels, result = scc.strongly_connected_components(store)
        assert labels.tolist() == list(range(100)) and result.info["runs"] <= 4


def core_reference(n, src, dst, undirected):
    """Core numbers by sequential peeling (smallest remaining degree first), self-loops left
    out and parallel edges counted, as the program defines them."""
    keep = src != dst
    pairs = list(zip(src[keep].tolist(), dst[keep].tolist()))
    deg = np.zeros(n, dtype=np.int64)
    for u, v in pairs:
        deg[u] += 1
        if not undirected:
            deg[v] += 1
    alive, core, k = np.ones(n, bool), np.zeros(n, np.int64), 0
    while alive.any():
        v = int(np.flatnonzero(alive)[np.argmin(deg[alive])])
        k = max(k, int(deg[v]))
        core[v], alive[v] = k, False
        for a, b in pairs:
            if a == v and alive[b]:
                deg[b] -= 1
            if b == v and alive[a] and not undirected:
                deg[a] -= 1
    return core


@CASES
@given(undirected=st.booleans(), **GRAPHS)
def test_core_number_matches_peeling(tmp_path_factory, n, m, seed, shards, budget, undirected):
    src, dst, _ = random_edges(np.random.default_rng(seed), n, m)
    if undirected:  # each edge stored both ways, a loop once: what an undirected build stores
        loops = src == dst
        src, dst = (np.concatenate([src, dst[~loops]]), np.concatenate([dst, src[~loops]]))
    store = build(tmp_path_factory.mktemp("core"), n, src, dst, num_shards=shards)
    if undirected:   # what an undirected build records
        store.directed = False
    cls = kcore.UndirectedCoreNumber if undirected else kcore.DirectedCoreNumber
    core, result = kcore.core_number(store, memory_budget=budget_for(budget, cls(), store))
    assert result.converged
    np.testing.assert_array_equal(core, core_reference(n, src, dst, undirected))


def test_core_number_is_networkx_on_an_undirected_build(tmp_path):
    G = nx.gnm_random_graph(60, 200, seed=4)
    edges = np.array(list(G.edges()))
    store = gr.open(gr.build_shards(edges, tmp_path / "u.h5", undirected=True, num_shards=3,
                                    progress=False))
    core, _ = kcore.core_number(store)
    assert dict(enumerate(core.tolist())) == nx.core_number(G)


def test_core_number_is_networkx_on_a_symmetric_input(tmp_path):
    # a symmetric Matrix Market file makes an undirected store without --undirected: each
    # neighbour counts once, not once per stored direction
    G = nx.gnm_random_graph(40, 120, seed=5)
    lines = [f"{v + 1} {u + 1}" for u, v in G.edges()]
    path = tmp_path / "g.mtx"
    path.write_text("%%MatrixMarket matrix coordinate pattern symmetric\n"
                    f"40 40 {len(lines)}\n" + "\n".join(lines) + "\n")
    store = gr.open(gr.build_shards(str(path), tmp_path / "s.h5", num_shards=3, progress=False))
    assert not store.directed
    core, _ = kcore.core_number(store)
    assert dict(enumerate(core.tolist())) == nx.core_number(G)


@CASES
@given(**GRAPHS)
def test_bfs_to_matches_csgraph(tmp_path_factory, n, m, seed, shards, budget):
    rng = np.random.default_rng(seed)
    src, dst, _ = random_edges(rng, n, m)
    store = build(tmp_path_factory.mktemp("to"), n, src, dst, num_shards=shards)
    target = int(rng.integers(0, n))
    mb = budget_for(budget, reach.ReverseBFS(source=target), store)
    level, _ = reach.bfs_to(store, target, memory_budget=mb)
    mat = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    dist = csgraph.shortest_path(mat.T.tocsr(), unweighted=True, indices=[target],
                                 directed=True)[0]
    np.testing.assert_array_equal(level, np.where(np.isinf(dist), -1, dist).astype(np.int64))


def test_empty_store(tmp_path):
    store = gr.open(gr.build_shards(sp.coo_matrix((0, 0)), tmp_path / "e.h5", progress=False))
    for f in (eigenvector.eigenvector_centrality, eigenvector.katz_centrality,
              scc.strongly_connected_components, kcore.core_number):
        values, _ = f(store)
        assert len(values) == 0
    with pytest.raises(UsageError, match="no vertices"):
        reach.bfs_to(store)


@CASES
@given(edges=st.sampled_from(["out", "in", "in+out"]), **GRAPHS)
def test_neighbour_sums_match_scipy(tmp_path_factory, n, m, seed, shards, budget, edges):
    from grstream.algorithms import neighbors
    rng = np.random.default_rng(seed)
    src, dst, _ = random_edges(rng, n, m)
    store = build(tmp_path_factory.mktemp("nb"), n, src, dst, num_shards=shards)
    values = rng.integers(-5, 50, n)
    program = neighbors.PROGRAMS[edges](values=values)
    sums, _ = neighbors.neighbour_sums(store, values, edges,
                                       memory_budget=budget_for(budget, program, store))
    A = sp.csr_matrix((np.ones(len(src), np.int64), (src, dst)), shape=(n, n))
    want = {"out": A @ values, "in": A.T @ values, "in+out": A @ values + A.T @ values}[edges]
    np.testing.assert_array_equal(sums, want)


@CASES
@given(chain=st.booleans(), **GRAPHS)
def test_is_semiconnected_matches_networkx(tmp_path_factory, n, m, seed, shards, budget, chain):
    rng = np.random.default_rng(seed)
    src, dst, _ = random_edges(rng, n, m // 3)
    if chain:   # a path through every vertex in a random order: semiconnected
        order = rng.permutation(n)
        src, dst = np.concatenate([src, order[:-1]]), np.concatenate([dst, order[1:]])
    store = build(tmp_path_factory.mktemp("semi"), n, src, dst, num_shards=shards)
    label, _ = scc.scc_labels(store, {})
    mb = budget_for(budget, scc.CondensationLevels(comp=label), store)
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    G.add_edges_from(zip(src.tolist(), dst.tolist()))
    assert scc.is_semiconnected(store, label, {"memory_budget": mb}) == nx.is_semiconnected(G)
