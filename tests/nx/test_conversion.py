"""Conversion of NetworkX graphs: one pass over the adjacency shared with can_run, NetworkX's
cache keyed on the options that shape the store, tmp_dir checked."""
import networkx as nx
import pytest

import grstream.nx.adjacency as adjacency
from grstream.errors import UsageError
from grstream.nx import convert_from_nx, convert_to_nx

GS = "grstream"


@pytest.fixture
def passes(monkeypatch):
    count = [0]
    real = adjacency.Edges.__init__

    def counted(self, *args, **kwargs):
        count[0] += 1
        real(self, *args, **kwargs)
    monkeypatch.setattr(adjacency.Edges, "__init__", counted)
    return count


def test_a_cold_call_reads_the_edges_once(passes):
    G = nx.gnm_random_graph(200, 900, directed=True, seed=2)
    nx.set_edge_attributes(G, {e: i % 4 + 1 for i, e in enumerate(G.edges)}, "weight")
    with nx.config(cache_converted_graphs=False):
        got = nx.pagerank(G, backend=GS)   # can_run's weight check and the conversion
    assert passes[0] == 1
    want = nx.pagerank(G)
    assert max(abs(got[v] - want[v]) for v in G) < 1e-12
    assert not [k for k in G.__networkx_cache__ if k[:1] == ("grstream-edges",)]


def test_the_cache_is_keyed_on_num_shards_and_tmp_dir(tmp_path):
    G = nx.gnm_random_graph(100, 300, directed=True, seed=1)
    nx.pagerank(G, backend=GS)
    first, = G.__networkx_cache__["backends"][GS].values()
    nx.pagerank(G, backend=GS)
    assert list(G.__networkx_cache__["backends"][GS].values()) == [first]   # reused
    with nx.config.backends.grstream(num_shards=3):
        nx.pagerank(G, backend=GS)
        B, = G.__networkx_cache__["backends"][GS].values()
        assert B is not first and B.store.num_shards == 3
    with nx.config.backends.grstream(tmp_dir=str(tmp_path)):
        nx.pagerank(G, backend=GS)
        C, = G.__networkx_cache__["backends"][GS].values()
        assert str(C.store.path).startswith(str(tmp_path))


def test_tmp_dir_that_does_not_exist_is_a_usage_error(tmp_path):
    with nx.config.backends.grstream(tmp_dir=str(tmp_path / "missing")):
        with pytest.raises(UsageError, match="not an existing directory"):
            nx.pagerank(nx.path_graph(3), backend=GS)


@pytest.mark.parametrize("cls", [nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph])
def test_conversion_keeps_every_edge_weight_and_label(cls):
    G = cls()
    G.add_nodes_from(["z", "a", ("t", 1), 7])
    G.add_edge("a", "z", weight=2.5)
    G.add_edge(7, "a")
    G.add_edge(("t", 1), ("t", 1), weight=3)
    G.add_edge("a", "z", weight=0.5)   # a parallel edge in a multigraph, else an update
    B = convert_from_nx(G, edge_attrs={"weight": 1})
    assert list(B) == list(G) and B.number_of_edges() == G.number_of_edges()
    H = convert_to_nx(B)
    assert sorted(map(repr, H.edges(data="weight", default=1.0))) == sorted(
        repr((u, v, float(w))) for u, v, w in G.edges(data="weight", default=1))


def test_a_non_number_weight_is_refused():
    G = nx.DiGraph([(0, 1, {"weight": "heavy"})])
    with pytest.raises(NotImplementedError):
        nx.pagerank(G, backend=GS)
