"""Centralities, strong components, cores and reachability through the backend equal
NetworkX's on random graphs (every call names ``backend="grstream"``: nothing falls back)."""
import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grstream.nx import convert_from_nx, convert_to_nx
from grstream.nx.checks import can_run

from .graphs import nx_graphs, shuffled

GS = "grstream"
def graphs(**kw):
    """nx_graphs plus the null graphs."""
    return st.one_of(st.sampled_from([nx.Graph(), nx.DiGraph()]), nx_graphs(**kw))


FEW = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def close(a, b, tol):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == pytest.approx(b[k], abs=tol), k


def outcome(f):
    """The value of ``f()``, or the type and message of what it raised."""
    try:
        return f()
    except (nx.NetworkXException, ZeroDivisionError) as exc:
        return type(exc), str(exc)


@FEW
@given(graphs(float_weights=True), st.sampled_from([None, "weight"]))
def test_eigenvector_centrality(G, weight):
    want = outcome(lambda: nx.eigenvector_centrality(G, weight=weight, max_iter=500))
    got = outcome(lambda: nx.eigenvector_centrality(G, weight=weight, max_iter=500, backend=GS))
    if isinstance(want, dict):
        close(got, want, 1e-9)
    else:
        assert got == want


@FEW
@given(graphs(float_weights=True), st.sampled_from([None, "weight"]),
       st.sampled_from([0.1, 0.05]), st.data())
def test_katz_centrality(G, weight, alpha, data):
    beta = data.draw(st.sampled_from([1.0, 0.5, "dict"]))
    if beta == "dict":
        beta = {v: i % 3 + 1 for i, v in enumerate(G)}
    normalized = data.draw(st.booleans())
    kw = dict(alpha=alpha, beta=beta, weight=weight, normalized=normalized)
    want = outcome(lambda: nx.katz_centrality(G, **kw))
    got = outcome(lambda: nx.katz_centrality(G, backend=GS, **kw))
    if isinstance(want, dict):
        close(got, want, 1e-9)
    else:
        assert got == want


def test_power_iteration_errors_are_networkx_errors():
    G = nx.gnp_random_graph(20, 0.3, seed=2, directed=True)
    with pytest.raises(nx.PowerIterationFailedConvergence):
        nx.eigenvector_centrality(G, max_iter=2, backend=GS)
    with pytest.raises(nx.PowerIterationFailedConvergence):
        nx.katz_centrality(G, alpha=0.5, max_iter=5, backend=GS)
    with pytest.raises(nx.NetworkXError, match="all zero"):
        nx.eigenvector_centrality(G, nstart=dict.fromkeys(G, 0), backend=GS)
    with pytest.raises(nx.NetworkXError, match="every node"):
        nx.katz_centrality(G, beta={0: 1}, backend=GS)
    with pytest.raises(nx.NetworkXPointlessConcept):
        nx.eigenvector_centrality(nx.DiGraph(), backend=GS)
    assert nx.katz_centrality(nx.DiGraph(), backend=GS) == {}


def test_eigenvector_centrality_with_nstart():
    G = nx.relabel_nodes(nx.gnp_random_graph(25, 0.2, seed=5), str)
    nstart = {v: i + 1 for i, v in enumerate(G)}
    close(nx.eigenvector_centrality(G, nstart=nstart, backend=GS),
          nx.eigenvector_centrality(G, nstart=nstart), 1e-12)


@FEW
@given(graphs())
def test_degree_centralities(G):
    for name in ("degree_centrality", "in_degree_centrality", "out_degree_centrality"):
        f = getattr(nx, name)
        want = outcome(lambda: f(G))
        got = outcome(lambda: f(G, backend=GS))
        if isinstance(want, dict):
            close(got, want, 1e-12)
        else:
            assert got == want


@FEW
@given(graphs())
def test_isolates(G):
    assert list(nx.isolates(G, backend=GS)) == list(nx.isolates(G))
    assert nx.number_of_isolates(G, backend=GS) == nx.number_of_isolates(G)
    for v in list(G)[:3] + ["missing"]:
        assert outcome(lambda: nx.is_isolate(G, v, backend=GS)) == outcome(
            lambda: nx.is_isolate(G, v))
    P = nx.path_graph(3)
    assert outcome(lambda: nx.is_isolate(P, 9, backend=GS)) == outcome(lambda: nx.is_isolate(P, 9))


@FEW
@given(graphs(weighted=False), st.data())
def test_degree_functions(G, data):
    for name in ("is_empty", "number_of_selfloops"):
        f = getattr(nx, name)
        assert f(G, backend=GS) == f(G), name
    sides = ["out", "in", "in+out"] if G.is_directed() else ["out"]
    source, target = data.draw(st.sampled_from(sides)), data.draw(st.sampled_from(sides))
    nodes = data.draw(st.sampled_from([None, list(G)[::-2] + ["missing"]]))
    kw = dict(source=source, target=target, nodes=nodes)
    assert (list(nx.average_neighbor_degree(G, backend=GS, **kw).items())
            == list(nx.average_neighbor_degree(G, **kw).items()))
    assert (outcome(lambda: nx.average_neighbor_degree(G, source="both", backend=GS))
            == outcome(lambda: nx.average_neighbor_degree(G, source="both")))


@FEW
@given(graphs(), st.integers(-3, 3))
def test_is_negatively_weighted(G, w):
    G = G.copy()
    if G.number_of_edges():
        u, v = next(iter(G.edges()))
        G[u][v]["weight"] = w
    assert nx.is_negatively_weighted(G, backend=GS) == nx.is_negatively_weighted(G)
    if G.number_of_edges():
        assert "edge" in str(can_run("is_negatively_weighted", (G, (u, v)), {}))


def test_degree_centrality_counts_self_loops_and_parallel_edges_as_networkx():
    for G in (nx.Graph([(0, 0), (0, 1)]), nx.DiGraph([(0, 0), (0, 1)]),
              nx.MultiGraph([(0, 1), (0, 1), (1, 1)]), nx.MultiDiGraph([(0, 1), (0, 1), (1, 1)])):
        assert nx.degree_centrality(G, backend=GS) == nx.degree_centrality(G)


@FEW
@given(graphs(), st.integers(0, 99))
def test_strong_components(G, seed):
    G = shuffled(G, seed)
    # the generators' order is NetworkX's, and so is each set's insertion (iteration) order
    want = outcome(lambda: [list(c) for c in nx.strongly_connected_components(G)])
    got = outcome(lambda: [list(c) for c in nx.strongly_connected_components(G, backend=GS)])
    assert got == want
    want = outcome(lambda: [list(c) for c in nx.attracting_components(G)])
    assert outcome(lambda: [list(c) for c in nx.attracting_components(G, backend=GS)]) == want
    # Kosaraju's order follows predecessor insertion order, which a store does not keep
    assert "kosaraju" in str(can_run("kosaraju_strongly_connected_components", (G,), {}))
    for name in ("number_strongly_connected_components", "is_strongly_connected",
                 "number_attracting_components", "is_attracting_component",
                 "is_directed_acyclic_graph", "is_semiconnected"):
        f = getattr(nx, name)
        assert outcome(lambda: f(G, backend=GS)) == outcome(lambda: f(G))


@FEW
@given(graphs())
def test_core_number(G):
    assert outcome(lambda: nx.core_number(G, backend=GS)) == outcome(lambda: nx.core_number(G))
    H = G.copy()
    H.remove_edges_from(list(nx.selfloop_edges(H)))
    assert nx.core_number(H, backend=GS) == nx.core_number(H)


def test_core_number_refuses_multigraphs_and_self_loops_as_networkx():
    with pytest.raises(nx.NetworkXNotImplemented, match="multigraph"):
        nx.core_number(nx.MultiGraph([(0, 1)]), backend=GS)
    with pytest.raises(nx.NetworkXNotImplemented, match="self loops"):
        nx.core_number(nx.Graph([(0, 0), (0, 1)]), backend=GS)


@FEW
@given(nx_graphs(), st.data())
def test_reachability(G, data):
    s = data.draw(st.sampled_from(list(G)))
    assert nx.ancestors(G, s, backend=GS) == nx.ancestors(G, s)
    assert nx.descendants(G, s, backend=GS) == nx.descendants(G, s)
    cutoff = data.draw(st.sampled_from([None, 0, 1, 3]))
    got = nx.single_target_shortest_path_length(G, s, cutoff=cutoff, backend=GS)
    assert got == nx.single_target_shortest_path_length(G, s, cutoff=cutoff)
    for f in (nx.ancestors, nx.descendants, nx.single_target_shortest_path_length):
        assert outcome(lambda: f(G, "missing", backend=GS)) == outcome(lambda: f(G, "missing"))


@FEW
@given(nx_graphs(directed=True, weighted=False))
def test_reverse(G):
    R = convert_to_nx(nx.reverse(G, backend=GS))
    assert list(R) == list(G)
    assert sorted(R.edges()) == sorted(G.reverse().edges())


def test_reverse_keeps_weights_and_refuses_undirected():
    G = nx.DiGraph()
    G.add_weighted_edges_from([("a", "b", 2.5), ("b", "c", 1.0)])
    R = nx.reverse(convert_from_nx(G, edge_attrs={"weight": 1}))
    assert nx.dijkstra_path_length(R, "c", "a", backend=GS) == 3.5
    assert convert_to_nx(R).edges["b", "a"]["weight"] == 2.5
    with pytest.raises(nx.NetworkXError, match="undirected"):
        nx.reverse(nx.Graph([(0, 1)]), backend=GS)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nx_graphs(weighted=False), st.sampled_from([None, 0, 1, 2]), st.randoms())
def test_k_cores(G, k, rnd):
    G = shuffled(G, rnd)
    G.remove_edges_from(list(nx.selfloop_edges(G)))
    for name in ("k_core", "k_shell", "k_crust", "k_corona"):
        f = getattr(nx, name)
        kk = 1 if name == "k_corona" and k is None else k
        want = outcome(lambda: f(G, kk))
        got = outcome(lambda: convert_to_nx(f(G, kk, backend=GS)))
        if isinstance(want, tuple):
            assert got == want
            continue
        assert list(got) == list(want), name
        assert {n: set(got[n]) for n in got} == {n: set(want[n]) for n in want}, name
        # the result is a backend graph that keeps NetworkX's neighbour order
        B = f(G, kk, backend=GS)
        for s in list(want)[:2]:
            assert list(nx.bfs_edges(B, s, backend=GS)) == list(nx.bfs_edges(want, s)), name


def test_k_core_with_given_core_numbers():
    G = nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 3)])
    core = {0: 2, 1: 2, 2: 2, 3: 1}
    got = convert_to_nx(nx.k_core(G, core_number=core, backend=GS))
    assert sorted(got.edges()) == sorted(nx.k_core(G, core_number=core).edges())


@pytest.mark.parametrize("directed", [False, True])
def test_small_k_core_takes_networkx_node_set_order(directed):
    import random
    rnd = random.Random(3)
    G = nx.gnm_random_graph(40, 50, seed=1, directed=directed)
    G.add_edges_from((f"c{i}", f"c{j}") for i in range(6) for j in range(6) if i != j)
    G = nx.relabel_nodes(shuffled(G, rnd), str)   # the clique: under half of the nodes
    for k in (None, 2):
        want = nx.k_core(G, k)
        B = nx.k_core(G, k, backend=GS)
        assert list(convert_to_nx(B)) == list(want)
        for s in list(want)[:3]:
            assert list(nx.bfs_edges(B, s, backend=GS)) == list(nx.bfs_edges(want, s))
