"""Triangles and clustering through the backend equal NetworkX's on random graphs, stores of
one and of several shards (the block product over shard pairs)."""
import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grstream.algorithms.triangles import triangle_counts
from grstream.nx.checks import can_run

from .graphs import nx_graphs

GS = "grstream"
FEW = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FEW
@given(nx_graphs(weighted=False, max_nodes=12), st.sampled_from([None, 1, 3]), st.data())
def test_triangles_and_clustering(G, shards, data):
    G.add_edges_from([("n0", "n0")])   # a self-loop: NetworkX leaves it out
    nodes = data.draw(st.sampled_from([None, "n0", ["n1", "n0", "missing"]]))
    with nx.config.backends.grstream(num_shards=shards):
        assert nx.clustering(G, nodes, backend=GS) == nx.clustering(G, nodes)
        assert nx.average_clustering(G, backend=GS) == nx.average_clustering(G)
        if not G.is_directed():
            assert nx.triangles(G, nodes, backend=GS) == nx.triangles(G, nodes)
            assert nx.transitivity(G, backend=GS) == nx.transitivity(G)
        else:
            with pytest.raises(nx.NetworkXNotImplemented):
                nx.triangles(G, backend=GS)


def test_triangle_counts_of_a_store(tmp_path):
    """diag(S^3) of the store itself: K4 has 3 triangles through each vertex (t = 6); a
    self-loop is no neighbour."""
    import grstream as gr
    edges = np.array([(u, v) for u in range(4) for v in range(u + 1, 4)] + [(4, 4)])
    path = gr.build_shards(edges, tmp_path / "k4.h5", undirected=True, num_shards=2,
                           progress=False)
    t, degree, mutual = triangle_counts(gr.open(path))
    assert t.tolist() == [6, 6, 6, 6, 0] and degree.tolist() == [3, 3, 3, 3, 0]
    assert not mutual.any()


def test_weighted_clustering_is_refused_unless_all_weights_are_one():
    G = nx.Graph([(0, 1, {"weight": 2}), (1, 2, {"weight": 1}), (0, 2, {"weight": 1})])
    assert "cube roots" in can_run("clustering", (G,), {"weight": "weight"})
    with pytest.raises(NotImplementedError):
        nx.clustering(G, weight="weight", backend=GS)
    H = nx.Graph([(0, 1, {"weight": 1}), (1, 2, {"weight": 1}), (0, 2, {"weight": 1})])
    assert nx.clustering(H, weight="weight", backend=GS) == nx.clustering(H, weight="weight")
