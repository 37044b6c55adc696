"""compose / compose_all and the eccentricity measures through the backend equal NetworkX's
on random graphs (every call names ``backend="grstream"``: nothing falls back)."""
import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grstream.nx import convert_from_nx, convert_to_nx

from .graphs import nx_graphs, shuffled

GS = "grstream"
FEW = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outcome(f):
    try:
        return f()
    except (nx.NetworkXException, ValueError) as exc:
        return type(exc), str(exc)


@FEW
@given(nx_graphs(weighted=False), nx_graphs(weighted=False), st.integers(0, 99))
def test_compose_nodes_edges_and_order(G, H, seed):
    if G.is_directed() != H.is_directed():
        with pytest.raises(nx.NetworkXError, match="directed or undirected"):
            nx.compose(G, H, backend=GS)
        return
    G, H = shuffled(G, seed), shuffled(nx.relabel_nodes(H, {f"n{i}": f"n{i + 3}"
                                                            for i in range(len(H))}), seed + 1)
    want = nx.compose(G, H)
    got = nx.compose(G, H, backend=GS)
    back = convert_to_nx(got)
    assert list(got) == list(want)
    assert sorted(back.edges()) == sorted(want.edges())
    assert got.number_of_edges() == want.number_of_edges()
    for s in list(want)[:3]:   # neighbour order decides the BFS tree
        assert list(nx.bfs_edges(got, s)) == list(nx.bfs_edges(want, s))


def test_compose_keeps_the_second_graphs_weight_and_compose_all_folds():
    G = nx.Graph([(0, 1, {"weight": 2.0}), (1, 2, {"weight": 5.0})])
    H = nx.Graph([(1, 0, {"weight": 7.0}), (2, 3, {"weight": 1.0})])
    B = nx.compose(convert_from_nx(G, edge_attrs={"weight": 1}),
                   convert_from_nx(H, edge_attrs={"weight": 1}), backend=GS)
    assert nx.get_edge_attributes(convert_to_nx(B), "weight") == \
        nx.get_edge_attributes(nx.compose(G, H), "weight")
    K = nx.path_graph([9, 2, 7])
    plain = [nx.Graph(G.edges()), nx.Graph(H.edges()), K]
    got = nx.compose_all(plain, backend=GS)
    assert list(got) == list(nx.compose_all(plain))
    assert sorted(convert_to_nx(got).edges()) == sorted(nx.compose_all(plain).edges())
    with pytest.raises(ValueError, match="empty list"):
        nx.compose_all([], backend=GS)


@FEW
@given(nx_graphs(), st.sampled_from([None, "weight"]), st.data())
def test_eccentricity_measures(G, weight, data):
    if data.draw(st.booleans()):   # mostly connected graphs: a path through every node
        nodes = list(G)
        G.add_edges_from(zip(nodes, nodes[1:]))
        if G.is_directed():
            G.add_edges_from(zip(nodes[1:], nodes))
    for f in (nx.eccentricity, nx.diameter, nx.radius, nx.periphery, nx.center):
        want = outcome(lambda: f(G, weight=weight))
        got = outcome(lambda: f(G, weight=weight, backend=GS))
        assert got == want, f.__name__
        if not G.is_directed() and f is not nx.eccentricity:
            assert outcome(lambda: f(G, weight=weight, usebounds=True, backend=GS)) == want
    v = data.draw(st.sampled_from(list(G) + [list(G)[:2], "missing"]))
    assert outcome(lambda: nx.eccentricity(G, v=v, weight=weight, backend=GS)) == \
        outcome(lambda: nx.eccentricity(G, v=v, weight=weight))


def test_eccentricity_types_and_given_lengths():
    G = nx.cycle_graph(5)
    e = nx.eccentricity(G, backend=GS)
    assert e == {v: 2 for v in G} and all(type(x) is int for x in e.values())
    sp = dict(nx.shortest_path_length(G))
    assert nx.eccentricity(G, sp=sp, backend=GS) == e
    assert nx.diameter(G, e={0: 3, 1: 1}, backend=GS) == 3
    with pytest.raises(nx.NetworkXError, match="not connected"):
        nx.eccentricity(nx.Graph([(0, 1), (2, 3)]), backend=GS)
    with pytest.raises(nx.NetworkXError, match="strongly connected"):
        nx.diameter(nx.DiGraph([(0, 1)]), backend=GS)
    assert nx.eccentricity(nx.Graph(), backend=GS) == {}


@FEW
@given(nx_graphs(float_weights=True), st.sampled_from([None, "weight"]), st.data())
def test_harmonic_centrality(G, distance, data):
    nodes = list(G)
    nbunch = data.draw(st.sampled_from([None, nodes[:3], nodes[1:]]))
    sources = data.draw(st.sampled_from([None, nodes[:2], nodes[::2]]))
    kw = dict(nbunch=nbunch, distance=distance, sources=sources)
    want = nx.harmonic_centrality(G, **kw)
    try:
        got = nx.harmonic_centrality(G, backend=GS, **kw)
    except NotImplementedError:   # NetworkX sums these in its search's order
        targets = nodes if nbunch is None else nbunch   # an empty nbunch is no target
        assert len(set(targets)) < len(set(nodes if sources is None else sources))
        return
    assert list(got.items()) == list(want.items())
