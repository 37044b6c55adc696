"""Calls that once answered differently from NetworkX: unions of weighted backend graphs, and
an undirected view of a store built directed."""
import networkx as nx
import numpy as np
import pytest

import grstream as gr
from grstream.errors import UsageError
from grstream.nx import convert_from_nx, convert_to_nx, from_store
from grstream.nx.checks import can_run

GS = "grstream"


def weighted(edges, directed=True):
    G = (nx.DiGraph if directed else nx.Graph)()
    G.add_weighted_edges_from(edges)
    return G


@pytest.mark.parametrize("directed", [True, False])
def test_unions_of_weighted_backend_graphs_keep_the_weights(directed):
    G = weighted([(0, 1, 2.0), (1, 2, 0.5), (2, 0, 3.0)], directed)
    H = weighted([(5, 6, 4.0), (6, 7, 1.0)], directed)
    H.add_edge(7, 5)  # no weight: NetworkX counts 1
    B, C = (convert_from_nx(X, edge_attrs={"weight": 1}) for X in (G, H))
    for got, want in [(nx.union(B, C), nx.union(G, H)),
                      (nx.union_all([B, C]), nx.union_all([G, H])),
                      (nx.disjoint_union(B, C), nx.disjoint_union(G, H)),
                      (nx.disjoint_union_all([B, C, B]), nx.disjoint_union_all([G, H, G]))]:
        assert sorted(convert_to_nx(got).edges(data="weight", default=1)) == sorted(
            (u, v, float(w)) for u, v, w in want.edges(data="weight", default=1))
        a = list(want)[0]
        assert nx.single_source_dijkstra_path_length(got, a) == pytest.approx(
            nx.single_source_dijkstra_path_length(want, a))
        got_pr, want_pr = nx.pagerank(got), nx.pagerank(want)
        assert max(abs(got_pr[v] - want_pr[v]) for v in want) < 1e-12


def test_union_of_unweighted_and_weighted_backend_graphs_counts_missing_weights_as_one(tmp_path):
    G = weighted([("a", "b", 2.5)])
    H = nx.DiGraph([("c", "d")])
    B = convert_from_nx(G, edge_attrs={"weight": 1})
    C = from_store(gr.build_shards(np.array([[0, 1]]), tmp_path / "h.h5"))
    C = nx.relabel_nodes(C, {0: "c", 1: "d"})
    U = nx.union(B, C)
    assert nx.dijkstra_path_length(U, "a", "b") == 2.5
    assert nx.dijkstra_path_length(U, "c", "d") == nx.dijkstra_path_length(nx.union(G, H), "c", "d")


def test_union_of_graphs_weighted_under_different_attributes_is_refused():
    B = convert_from_nx(weighted([(0, 1, 2.0)]), edge_attrs={"weight": 1})
    C = convert_from_nx(nx.DiGraph([(2, 3, {"cost": 5.0})]), edge_attrs={"cost": 1})
    assert "different attributes" in can_run("union", (B, C), {})
    with pytest.raises(NotImplementedError):
        nx.union(B, C)


def test_from_store_refuses_an_undirected_view_of_a_directed_store(tmp_path):
    edges = np.array([[0, 1], [1, 2], [2, 0], [3, 0]])
    path = gr.build_shards(edges, tmp_path / "d.h5")
    with pytest.raises(UsageError, match="built directed"):
        from_store(path, directed=False)
    B = from_store(path)
    assert B.is_directed() and B.number_of_edges() == 4
    sym = gr.build_shards(edges, tmp_path / "u.h5", undirected=True)
    U = from_store(sym, directed=False)
    G = nx.Graph(edges.tolist())
    assert U.number_of_edges() == G.number_of_edges()
    assert list(nx.bfs_edges(U, 3)) == list(nx.bfs_edges(G, 3))


@pytest.mark.parametrize("call, error", [
    (lambda **b: nx.average_shortest_path_length(nx.path_graph(4), method="SPAM", **b),
     ValueError),
    (lambda **b: nx.shortest_path(nx.path_graph(4), method="SPAM", **b), ValueError),
    (lambda **b: nx.shortest_path_length(nx.path_graph(4), 0, method="SPAM", **b), ValueError),
    (lambda **b: nx.convert_node_labels_to_integers(nx.path_graph(4), ordering="SPAM", **b),
     nx.NetworkXError),
    (lambda **b: nx.pagerank(nx.path_graph(4), personalization={0: "x"}, **b), ValueError),
    (lambda **b: list(nx.bfs_layers(nx.path_graph(4), 9, **b)), TypeError),
])
def test_invalid_arguments_raise_networkx_errors(call, error):
    with pytest.raises(error):
        call()
    with pytest.raises(error):
        call(backend=GS)


def test_average_shortest_path_length_takes_every_networkx_method():
    G = nx.les_miserables_graph()
    for method in ("unweighted", "dijkstra", "bellman-ford", "floyd-warshall",
                   "floyd-warshall-numpy"):
        assert nx.average_shortest_path_length(G, weight="weight", method=method, backend=GS) \
            == pytest.approx(nx.average_shortest_path_length(G, weight="weight", method=method))


def test_multi_source_and_all_source_calls_run_once_and_equal_networkx(monkeypatch):
    import grstream.nx.algorithm_runs as runs
    G = nx.relabel_nodes(nx.gnm_random_graph(60, 150, seed=4, directed=True), str)
    for u, v in G.edges:
        G[u][v]["weight"] = (int(u) * 7 + int(v)) % 5 + 1
    B = convert_from_nx(G, edge_attrs={"weight": 1})
    calls = []
    real = runs.gr.run
    monkeypatch.setattr(runs.gr, "run", lambda *a, **k: calls.append(1) or real(*a, **k))
    sources = ["0", "5", "17", "33"]
    assert nx.multi_source_dijkstra_path_length(B, sources) == pytest.approx(
        nx.multi_source_dijkstra_path_length(G, sources))
    assert list(nx.bfs_layers(B, sources)) == list(nx.bfs_layers(G, sources))
    assert len(calls) == 2  # one streamed run per call, whatever the number of sources
    H = nx.path_graph(120)
    assert nx.average_shortest_path_length(H, backend=GS) == nx.average_shortest_path_length(H)
    C = nx.relabel_nodes(nx.cycle_graph(30, create_using=nx.DiGraph), str)
    for u, v in C.edges:
        C[u][v]["weight"] = int(u) % 3 + 0.5
    assert nx.average_shortest_path_length(C, weight="weight", backend=GS) == pytest.approx(
        nx.average_shortest_path_length(C, weight="weight"))
