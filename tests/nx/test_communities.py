"""Semi-synchronous label propagation through the backend gives NetworkX's communities, in
its order, on random graphs (self-loops, parallel edges, several shards)."""
import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from networkx.algorithms.community import label_propagation_communities as communities

from .graphs import nx_graphs, shuffled

GS = "grstream"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nx_graphs(directed=False, weighted=False, max_nodes=16), st.integers(0, 99),
       st.sampled_from([None, 3]), st.booleans())
def test_label_propagation_communities(G, seed, shards, multi):
    G = shuffled(G, seed)
    if multi:
        G = nx.MultiGraph(G)
        G.add_edges_from(list(G.edges())[:3])
    want = [list(c) for c in communities(G)]
    with nx.config.backends.grstream(num_shards=shards):
        got = [list(c) for c in communities(G, backend=GS)]
    assert got == want


def test_label_propagation_refuses_directed_graphs_as_networkx():
    with pytest.raises(nx.NetworkXNotImplemented, match="directed"):
        communities(nx.DiGraph([(0, 1)]), backend=GS)
    assert list(communities(nx.Graph(), backend=GS)) == []
