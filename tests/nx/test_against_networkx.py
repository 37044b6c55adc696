"""The backend's answers equal NetworkX's on random graphs with string labels, weights, both
directions (every call names ``backend="grstream"``, so nothing falls back to NetworkX)."""
import random

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .graphs import nx_graphs

GS = "grstream"
FEW = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def close(a, b, tol=1e-9):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == pytest.approx(b[k], abs=tol, nan_ok=True), k


@FEW
@given(nx_graphs(float_weights=True), st.sampled_from([None, "weight"]),
       st.sampled_from([0.85, 0.5]))
def test_pagerank(G, weight, alpha):
    close(nx.pagerank(G, alpha=alpha, weight=weight, backend=GS),
          nx.pagerank(G, alpha=alpha, weight=weight), 1e-12)


@FEW
@given(nx_graphs(weighted=True), st.data())
def test_pagerank_personalization_nstart_dangling(G, data):
    nodes = list(G)
    pick = st.dictionaries(st.sampled_from(nodes), st.integers(1, 4), min_size=1)
    options = {"personalization": data.draw(pick), "nstart": data.draw(pick),
               "dangling": data.draw(pick)}
    close(nx.pagerank(G, backend=GS, **options), nx.pagerank(G, **options), 1e-12)


def test_pagerank_that_does_not_converge_raises_like_networkx():
    G = nx.relabel_nodes(nx.gnp_random_graph(30, 0.2, seed=1, directed=True), str)
    with pytest.raises(nx.PowerIterationFailedConvergence):
        nx.pagerank(G, max_iter=2, backend=GS)


@FEW
@given(nx_graphs(), st.data())
def test_bfs_functions(G, data):
    nodes = list(G)
    s = data.draw(st.sampled_from(nodes))
    assert list(nx.bfs_edges(G, s, backend=GS)) == list(nx.bfs_edges(G, s))
    assert list(nx.bfs_predecessors(G, s, backend=GS)) == list(nx.bfs_predecessors(G, s))
    assert list(nx.bfs_edges(G, s, depth_limit=2, backend=GS)) == list(
        nx.bfs_edges(G, s, depth_limit=2))
    assert (nx.single_source_shortest_path_length(G, s, backend=GS)
            == nx.single_source_shortest_path_length(G, s))
    sources = data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=3))
    assert list(nx.bfs_layers(G, sources, backend=GS)) == list(nx.bfs_layers(G, sources))


@FEW
@given(nx_graphs(weighted=True, float_weights=True), st.data())
def test_dijkstra_functions(G, data):
    s = data.draw(st.sampled_from(list(G)))
    cutoff = data.draw(st.sampled_from([None, 3.0]))
    assert (nx.single_source_dijkstra_path_length(G, s, cutoff=cutoff, backend=GS)
            == nx.single_source_dijkstra_path_length(G, s, cutoff=cutoff))
    dist, paths = nx.single_source_dijkstra(G, s, backend=GS)
    want_dist, _ = nx.single_source_dijkstra(G, s)
    assert dist == want_dist
    for t, path in paths.items():  # ties may pick another, equally short path
        assert path[0] == s and path[-1] == t
        assert nx.path_weight(G, path, "weight") == pytest.approx(want_dist[t])
    pred, d = nx.dijkstra_predecessor_and_distance(G, s, backend=GS)
    want_pred, want_d = nx.dijkstra_predecessor_and_distance(G, s)
    assert d == want_d
    assert {v: sorted(p) for v, p in pred.items()} == {v: sorted(p) for v, p in want_pred.items()}


@FEW
@given(nx_graphs(directed=False))
def test_connected_components(G):
    assert list(nx.connected_components(G, backend=GS)) == list(nx.connected_components(G))
    assert (nx.number_connected_components(G, backend=GS)
            == nx.number_connected_components(G))


@FEW
@given(nx_graphs(directed=True))
def test_weakly_connected_components(G):
    assert (list(nx.weakly_connected_components(G, backend=GS))
            == list(nx.weakly_connected_components(G)))


@FEW
@given(nx_graphs(float_weights=True), st.booleans(), st.booleans(), st.data())
def test_betweenness(G, normalized, endpoints, data):
    k = data.draw(st.sampled_from([None, 1, 2, len(G)]))
    k = None if k is not None and k > len(G) else k
    seed = data.draw(st.integers(0, 5))
    weight = data.draw(st.sampled_from([None, "weight"]))
    options = {"k": k, "normalized": normalized, "endpoints": endpoints, "weight": weight}
    close(nx.betweenness_centrality(G, seed=random.Random(seed), backend=GS, **options),
          nx.betweenness_centrality(G, seed=random.Random(seed), **options))


def test_uniformly_weighted_betweenness_is_the_unweighted_one():
    G = nx.relabel_nodes(nx.les_miserables_graph(), lambda v: v.lower())
    nx.set_edge_attributes(G, 2.5, "weight")
    close(nx.betweenness_centrality(G, weight="weight", backend=GS),
          nx.betweenness_centrality(G, weight="weight"))


def test_multigraph_pagerank_counts_parallel_edges():
    G = nx.MultiDiGraph([("a", "b"), ("a", "b"), ("a", "c"), ("c", "a"), ("b", "c")])
    close(nx.pagerank(G, backend=GS), nx.pagerank(G), 1e-12)
