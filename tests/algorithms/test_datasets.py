"""Every algorithm on every real graph in ../shared/datasets, against scipy / networkx.

References are computed from the edges the reader yields (independent of the partition engine),
over one shard and several, in memory and with the smallest budget the engine accepts.
"""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

import grstream as gr
from grstream.algorithms import bc, bfs, cc, pagerank, sssp
from grstream.io import open_source

from .conftest import minimum_budget

nx = pytest.importorskip("networkx")

DATASETS = ["karate.mtx", "dolphins.mtx", "netscience.mtx", "rome99.gr", "p2p-Gnutella08.txt"]
WEIGHTED = ["netscience.mtx", "rome99.gr"]


def edges_of(path):
    source = open_source(path)
    parts = list(source.chunks())
    src = np.concatenate([p[0] for p in parts])
    dst = np.concatenate([p[1] for p in parts])
    w = np.concatenate([p[2] for p in parts]) if source.weighted else None
    n = max(source.num_vertices or 0, int(max(src.max(), dst.max())) + 1)
    return n, src, dst, w


@pytest.fixture(scope="module", params=DATASETS)
def dataset(request, tmp_path_factory, datasets_dir):
    path = datasets_dir / request.param
    n, src, dst, w = edges_of(path)
    stores = {}
    for shards in (1, 6):
        out = tmp_path_factory.mktemp("ds") / f"g{shards}.h5"
        stores[shards] = gr.open(gr.build_shards(path, out, num_shards=shards, progress=False))
    return request.param, n, src, dst, w, stores


def budgets(program, store):
    return (None, minimum_budget(program, store))


def test_bfs(dataset):
    name, n, src, dst, _, stores = dataset
    mat = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    ref = csgraph.shortest_path(mat, unweighted=True, indices=0)
    ref = np.where(np.isinf(ref), -1, ref).astype(np.int64)
    for store in stores.values():
        for b in budgets(bfs.BFS(), store):
            np.testing.assert_array_equal(bfs.bfs(store, store.labels()[0], memory_budget=b)[0], ref)


def test_sssp(dataset):
    name, n, src, dst, w, stores = dataset
    if w is None:
        pytest.skip(f"{name} has no weights")
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    for u, v, x in zip(src.tolist(), dst.tolist(), w.tolist()):
        if not g.has_edge(u, v) or g[u][v]["weight"] > x:
            g.add_edge(u, v, weight=x)
    ref = np.full(n, np.inf)
    for k, d in nx.single_source_dijkstra_path_length(g, 0).items():
        ref[k] = d
    for store in stores.values():
        for b in budgets(sssp.SSSP(), store):
            np.testing.assert_allclose(sssp.sssp(store, store.labels()[0], memory_budget=b)[0], ref, rtol=1e-12)


def test_pagerank(dataset):
    # weighted datasets: weighted PageRank by default, as nx.pagerank's weight="weight"
    name, n, src, dst, w, stores = dataset
    g = nx.MultiDiGraph()
    g.add_nodes_from(range(n))
    if w is None:
        g.add_edges_from(zip(src.tolist(), dst.tolist()))
    else:
        g.add_weighted_edges_from(zip(src.tolist(), dst.tolist(), w.tolist()))
    want = nx.pagerank(g, tol=1e-15, max_iter=1000)
    ref = np.array([want[i] for i in range(n)])
    for store in stores.values():
        for b in budgets(pagerank.pagerank_program(store), store):
            got, res = pagerank.pagerank(store, tol=1e-12, max_iter=1000, memory_budget=b)
            assert res.info["program"] == ("WeightedPageRank" if w is not None else "PageRank")
            np.testing.assert_allclose(got, ref, rtol=1e-8)


def test_cc(dataset):
    name, n, src, dst, _, stores = dataset
    mat = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    _, comp = csgraph.connected_components(mat, directed=True, connection="weak")
    smallest = np.full(comp.max() + 1, n)
    np.minimum.at(smallest, comp, np.arange(n))
    for store in stores.values():
        for b in budgets(cc.ConnectedComponents(), store):
            np.testing.assert_array_equal(cc.connected_components(store, memory_budget=b)[0],
                                          smallest[comp])


def test_bc(dataset):
    name, n, src, dst, _, stores = dataset
    store = stores[6]
    # a symmetric .mtx makes an undirected store: NetworkX's values for the undirected graph
    g = nx.DiGraph() if store.directed else nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(src.tolist(), dst.tolist()))
    if n <= 100:
        want = nx.betweenness_centrality(g, normalized=False)
        got, _ = bc.betweenness(store)
    else:  # exact all-sources BC on the larger graphs is left to the small ones: use 12 sources
        sources = np.random.default_rng(0).choice(n, 12, replace=False).tolist()
        want = nx.betweenness_centrality_subset(g, sources, list(g), normalized=False)
        got, _ = bc.betweenness(store, sources=store.to_labels(sources))
    np.testing.assert_allclose(got, [want[i] for i in range(n)], rtol=1e-9, atol=1e-9)
