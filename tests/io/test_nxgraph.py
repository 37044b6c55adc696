import networkx as nx
import numpy as np
import pytest

from grstream.errors import InputFormatError
from grstream.io.nxgraph import read_networkx

from ._util import collect


def edge_set(source):
    src, dst, weight = collect(source)
    weight = [None] * len(src) if weight is None else weight.tolist()
    return sorted(zip(src.tolist(), dst.tolist(), weight))


def test_undirected_graph_gives_both_directions_and_self_loops_once():
    g = nx.Graph([(0, 1), (1, 2), (2, 2)])
    g.add_node(5)
    source = read_networkx(g)
    assert source.num_vertices == 6 and not source.weighted
    assert edge_set(source) == [(0, 1, None), (1, 0, None), (1, 2, None), (2, 1, None),
                                (2, 2, None)]


def test_directed_weights_default_to_one_where_missing():
    g = nx.DiGraph()
    g.add_edge(0, 1, weight=2.5)
    g.add_edge(1, np.int64(2))
    assert edge_set(read_networkx(g)) == [(0, 1, 2.5), (1, 2, 1.0)]
    assert edge_set(read_networkx(g, weighted=False)) == [(0, 1, None), (1, 2, None)]
    with pytest.raises(InputFormatError, match="weights were requested"):
        read_networkx(nx.DiGraph([(0, 1)]), weighted=True)


def test_multigraph_keeps_parallel_edges():
    g = nx.MultiDiGraph([(0, 1), (0, 1)])
    assert len(collect(read_networkx(g))[0]) == 2


def test_karate_matches_networkx_adjacency():
    g = nx.karate_club_graph()
    src, dst, weight = collect(read_networkx(g))
    expected = nx.to_scipy_sparse_array(g, nodelist=range(34), weight="weight").toarray()
    got = np.zeros((34, 34))
    np.add.at(got, (src, dst), weight)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("graph, labels", [
    (nx.Graph([("a", "b")]), ["a", "b"]),                 # names, in node order
    (nx.Graph([(0, -1)]), [0, -1]),                        # not ids: node order
    (nx.Graph([(True, 1)]), [True]),                       # True == 1: one node
    (nx.DiGraph([(10, 900), (900, 4)]), [4, 10, 900]),      # sparse ints: increasing
])
def test_any_hashable_nodes_become_labels(graph, labels):
    # today: "networkx node 'a' is not a non-negative integer"
    source = read_networkx(graph)
    assert source.labels() == labels and source.num_vertices == len(labels)
    src, dst, _ = collect(source)
    named = {(labels[s], labels[d]) for s, d in zip(src.tolist(), dst.tolist())}
    want = set(graph.edges) | ({(v, u) for u, v in graph.edges} if not graph.is_directed() else set())
    assert named == want


def test_dense_integer_nodes_are_their_own_ids():
    g = nx.Graph([(0, 2)])
    g.add_node(1)
    assert read_networkx(g).labels is None


def test_bad_weights():
    with pytest.raises(InputFormatError, match="not a number"):
        read_networkx(nx.DiGraph([(0, 1, {"weight": "heavy"})]))
    with pytest.raises(InputFormatError, match="not finite"):
        read_networkx(nx.DiGraph([(0, 1, {"weight": float("inf")})]))
