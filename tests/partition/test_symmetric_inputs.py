"""An undirected build of an input that already lists both directions stores each edge once per
direction (docs/FORMAT.md, "Options")."""
import networkx as nx
import numpy as np
import pytest
import scipy.io

import grstream as gr
from grstream.partition import build_shards


def _adjacency(path):
    with gr.open(path) as store:
        return store.num_edges, store.directed, store.to_scipy(weights=False).toarray()


@pytest.mark.parametrize("undirected", [False, True])
def test_karate_symmetric_mtx_matches_networkx(datasets_dir, tmp_path, undirected):
    graph = nx.from_scipy_sparse_array(scipy.io.mmread(datasets_dir / "karate.mtx"))
    assert graph.number_of_edges() == 78
    path = build_shards(datasets_dir / "karate.mtx", tmp_path / "k.h5", undirected=undirected,
                        num_shards=3, progress=False)
    num_edges, directed, matrix = _adjacency(path)
    assert num_edges == 156 and directed == (not undirected)
    np.testing.assert_array_equal(matrix, nx.to_numpy_array(graph, nodelist=range(34)))


def test_konect_sym_and_networkx_graph_are_not_doubled(tmp_path):
    (tmp_path / "out.s").write_text("% sym unweighted\n% 3 3 3\n1 2\n2 3\n3 3\n")
    graph = nx.Graph([(0, 1), (1, 2), (2, 2)])
    want = nx.to_numpy_array(graph, nodelist=range(3))
    for name, source in (("konect", tmp_path / "out.s"), ("nx", graph)):
        path = build_shards(source, tmp_path / f"{name}.h5", undirected=True, progress=False)
        num_edges, directed, matrix = _adjacency(path)
        # two edges both ways and the self-loop once
        assert (num_edges, directed) == (5, False)
        np.testing.assert_array_equal(matrix, want)


def test_a_general_input_is_still_doubled(tmp_path):
    # an edge list is directed: --undirected adds every reverse, even one listed already
    path = build_shards(np.array([[0, 1], [1, 0], [1, 2]]), tmp_path / "g.h5", undirected=True,
                        progress=False)
    num_edges, _, matrix = _adjacency(path)
    assert num_edges == 6
    np.testing.assert_array_equal(matrix, [[0, 2, 0], [2, 0, 1], [0, 1, 0]])


def test_an_undirected_store_resharded_undirected_is_not_doubled(datasets_dir, tmp_path):
    first = build_shards(datasets_dir / "karate.mtx", tmp_path / "k.h5", undirected=True,
                         progress=False)
    again = build_shards(first, tmp_path / "k2.h5", undirected=True, num_shards=2,
                         progress=False)
    assert _adjacency(again)[0] == 156
    np.testing.assert_array_equal(_adjacency(again)[2], _adjacency(first)[2])
