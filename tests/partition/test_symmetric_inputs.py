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
    # symmetric: an undirected store either way
    assert num_edges == 156 and directed is False
    np.testing.assert_array_equal(matrix, nx.to_numpy_array(graph, nodelist=range(34)))


def test_konect_sym_and_networkx_graph_are_not_doubled(tmp_path):
    (tmp_path / "out.s").write_text("% sym unweighted\n% 3 3 3\n1 2\n2 3\n3 3\n")
    graph = nx.Graph([(0, 1), (1, 2), (2, 2)])
    want = nx.to_numpy_array(graph, nodelist=range(3))
    for name, source in (("konect", tmp_path / "out.s"), ("nx", graph)):
        for undirected in (True, False):
            path = build_shards(source, tmp_path / f"{name}.h5", undirected=undirected,
                                progress=False)
            num_edges, directed, matrix = _adjacency(path)
            # two edges both ways and the self-loop once, an undirected store without the option
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


SYMMETRIC_MTX = """%%MatrixMarket matrix coordinate pattern symmetric
% a path 1-2-3-4 and a triangle 3-5-6: listed once per undirected edge
6 6 6
2 1
3 2
4 3
5 3
6 3
6 5
"""


def _symmetric_mtx(tmp_path):
    path = tmp_path / "sym.mtx"
    path.write_text(SYMMETRIC_MTX)
    graph = nx.Graph([(u - 1, v - 1) for u, v in
                      ((2, 1), (3, 2), (4, 3), (5, 3), (6, 3), (6, 5))])
    return path, graph


@pytest.mark.parametrize("memory_limit", [None, 1 << 24])
def test_a_symmetric_mtx_makes_an_undirected_store_and_resharding_keeps_it(tmp_path,
                                                                            memory_limit):
    path, _ = _symmetric_mtx(tmp_path)
    first = build_shards(path, tmp_path / "s.h5", memory_limit=memory_limit, progress=False)
    assert _adjacency(first)[:2] == (12, False)
    # re-sharded, without --undirected, with other options: still undirected, not doubled
    again = build_shards(first, tmp_path / "s2.h5", num_shards=2, memory_limit=memory_limit,
                         progress=False)
    assert _adjacency(again)[:2] == (12, False)
    np.testing.assert_array_equal(_adjacency(again)[2], _adjacency(first)[2])


def test_a_general_input_stays_directed(tmp_path):
    path = build_shards(np.array([[0, 1], [1, 0]]), tmp_path / "g.h5", progress=False)
    assert _adjacency(path)[1] is True


def _networkx_bc(graph, n):
    scores = nx.betweenness_centrality(graph, normalized=False)
    return np.array([scores.get(v, 0.0) for v in range(n)])


def test_betweenness_of_a_symmetric_mtx_is_networkx_s(tmp_path):
    from grstream.algorithms import bc
    path, graph = _symmetric_mtx(tmp_path)
    store = gr.open(build_shards(path, tmp_path / "s.h5", progress=False))
    scores, _ = bc.betweenness(store)
    np.testing.assert_allclose(scores, _networkx_bc(graph, 6))


def test_betweenness_of_karate_from_the_cli_is_networkx_s(datasets_dir, tmp_path, capsys):
    from grstream.cli import main
    store = tmp_path / "k.h5"
    out = tmp_path / "bc.npy"
    assert main(["shard", str(datasets_dir / "karate.mtx"), "-o", str(store), "--quiet"]) == 0
    assert main(["run", "bc", str(store), "-o", str(out), "--quiet"]) == 0
    values = np.load(out)
    values = values["value"] if values.dtype.names else values
    graph = nx.from_scipy_sparse_array(scipy.io.mmread(datasets_dir / "karate.mtx"))
    np.testing.assert_allclose(values, _networkx_bc(graph, 34))
    assert abs(values[0] - 231.0714) < 1e-3
