"""The backend's interface: conversions, stores opened as graphs, config, can_run reasons."""
import gc
import os
import re

import networkx as nx
import numpy as np
import pytest

import grstream as gr
from grstream.errors import MemoryBudgetError
from grstream.nx import GrstreamGraph, convert_from_nx, convert_to_nx, from_store
from grstream.nx.checks import RULES, can_run, should_run

GS = "grstream"


def labelled(G):
    return nx.relabel_nodes(G, {v: f"v{v}" for v in G})


def test_registered_with_networkx():
    assert "grstream" in nx.utils.backends.backend_info
    assert "pagerank" in nx.utils.backends.backend_info["grstream"]["functions"]
    assert set(nx.config.backends.grstream) >= {"memory_budget", "device", "progress"}


def test_conversion_round_trip_keeps_labels_direction_weights_and_multi_edges():
    for G in (labelled(nx.les_miserables_graph()),
              nx.MultiDiGraph([("a", "b", {"weight": 2.0}), ("a", "b", {"weight": 3.0}),
                               ("b", "b", {"weight": 1.5}), ("c", "a")])):
        B = convert_from_nx(G, edge_attrs={"weight": 1})
        assert isinstance(B, GrstreamGraph) and list(B) == list(G)
        assert (B.is_directed(), B.is_multigraph()) == (G.is_directed(), G.is_multigraph())
        assert B.number_of_edges() == G.number_of_edges()
        H = convert_to_nx(B)
        assert type(H) is type(G)
        assert sorted(H.edges(data="weight", default=1.0)) == sorted(
            (u, v, float(w)) for u, v, w in G.edges(data="weight", default=1))


def test_temporary_store_is_removed_with_the_graph():
    B = convert_from_nx(nx.path_graph(4))
    directory = os.path.dirname(B.store.path)
    assert os.path.isdir(directory)
    del B
    gc.collect()
    assert not os.path.exists(directory)


def test_empty_graph():
    B = convert_from_nx(nx.DiGraph())
    assert len(B) == 0 and nx.pagerank(B, weight=None) == {}
    assert nx.pagerank(nx.DiGraph(), backend=GS) == {}
    assert list(nx.weakly_connected_components(B)) == []


@pytest.fixture
def store_path(tmp_path):
    G = nx.gnm_random_graph(2000, 40000, seed=3, directed=True)
    edges = np.array(G.edges(), dtype=np.int64)
    path = gr.build_shards(edges, tmp_path / "g.h5", num_shards=6)
    return G, path


def test_from_store_dispatches_to_the_backend_and_streams_within_the_budget(store_path):
    G, path = store_path
    B = from_store(path)
    assert B.is_directed() and len(B) == 2000
    want = nx.pagerank(G)
    with nx.config.backends.grstream(memory_budget=1000):
        with pytest.raises(MemoryBudgetError) as refused:
            nx.pagerank(B)
    # the engine's minimum (vertex state + largest shard) plus half the shards: they stream
    least = int(re.search(r"minimum ([\d,]+) B", str(refused.value)).group(1).replace(",", ""))
    budget = least + B.store.nbytes() // 2
    with nx.config.backends.grstream(memory_budget=budget):
        got = nx.pagerank(B)  # no backend= needed: B is a grstream graph
    assert got.keys() == want.keys()
    assert max(abs(got[v] - want[v]) for v in G) < 1e-12
    assert (nx.single_source_shortest_path_length(B, 0)
            == nx.single_source_shortest_path_length(G, 0))


def test_from_store_of_a_renumbered_store_speaks_its_original_ids(tmp_path):
    edges = np.array([[10, 20], [20, 30], [30, 10], [40, 30]])
    path = gr.build_shards(edges, tmp_path / "r.h5", renumber=True)
    B = from_store(path)
    G = nx.DiGraph(edges.tolist())
    assert sorted(B) == [10, 20, 30, 40]
    assert list(nx.bfs_edges(B, 40)) == list(nx.bfs_edges(G, 40))
    bc, want = nx.betweenness_centrality(B), nx.betweenness_centrality(G)
    assert all(abs(bc[v] - want[v]) < 1e-12 for v in G)


def test_can_run_says_why_not():
    G = nx.path_graph(4, create_using=nx.DiGraph)
    assert can_run("pagerank", (G,), {}) is True
    nx.set_edge_attributes(G, {(0, 1): -1.0}, "weight")
    assert "non-negative" in can_run("pagerank", (G,), {})
    assert "weight function" in can_run("single_source_dijkstra", (G, 0),
                                        {"weight": lambda u, v, d: 1})
    assert "positive" in can_run("betweenness_centrality", (G,), {"weight": "weight"})
    assert "reverse" in can_run("bfs_edges", (G, 0), {"reverse": True})
    assert "does not implement" in can_run("louvain_communities", (G,), {})
    assert "non-negative" in can_run("hits", (G,), {})
    with pytest.raises(NotImplementedError):  # no fallback when the backend is named
        nx.single_source_dijkstra_path_length(G, 0, backend=GS)


def test_should_run_prefers_networkx_for_small_graphs():
    assert should_run("pagerank", (nx.path_graph(5),), {}) is not True
    assert should_run("pagerank", (convert_from_nx(nx.path_graph(5)),), {}) is True


def test_config_is_checked():
    with pytest.raises(ValueError):
        nx.config.backends.grstream.device = "tpu"
    with pytest.raises(Exception):
        nx.config.backends.grstream.memory_budget = "lots"


def test_backend_info_lists_exactly_the_implemented_functions():
    from grstream.nx.backend_info import FUNCTIONS
    from grstream.nx.interface import MODULES
    implemented = {name for names in MODULES.values() for name in names}
    assert set(FUNCTIONS) == implemented
    assert implemented == set(RULES)


def test_isolated_nodes_keep_their_places():
    G = nx.Graph()
    G.add_nodes_from(f"n{i}" for i in range(100))
    G.add_edge("n0", "n99")
    assert nx.single_source_shortest_path_length(G, "n0", backend=GS) == {"n0": 0, "n99": 1}
    assert nx.number_connected_components(G, backend=GS) == 99
