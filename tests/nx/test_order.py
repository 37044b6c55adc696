"""Ordered results equal NetworkX's, order included, on graphs whose insertion order (of nodes
and of every node's neighbours) is shuffled: BFS trees, layers, paths, predecessor lists. A
call the backend cannot answer exactly raises NotImplementedError (NetworkX then answers)."""
import networkx as nx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from grstream.nx import convert_from_nx

GS = "grstream"
SOME = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def shuffled_graphs(draw, weighted=False):
    """``gnm``-like graphs, nodes and edges added in a random order (multigraphs too)."""
    directed, multi = draw(st.booleans()), draw(st.booleans())
    n = draw(st.integers(1, 12))
    nodes = draw(st.permutations(range(n)))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                          max_size=4 * n))
    cls = {(False, False): nx.Graph, (True, False): nx.DiGraph, (False, True): nx.MultiGraph,
           (True, True): nx.MultiDiGraph}[directed, multi]
    G = cls()
    G.add_nodes_from(f"n{i}" for i in nodes)
    for u, v in pairs:
        G.add_edge(f"n{u}", f"n{v}", **({"weight": draw(st.integers(1, 3))} if weighted else {}))
    return G


def both(call):
    """NetworkX's answer, and the backend's (None when it refuses the call)."""
    want = call({})
    try:
        return want, call({"backend": GS})
    except NotImplementedError:
        return want, None


def items(d):
    return list(d.items())


@SOME
@given(shuffled_graphs(), st.data())
def test_bfs_results_follow_insertion_order(G, data):
    nodes = list(G)
    s = data.draw(st.sampled_from(nodes))
    depth = data.draw(st.sampled_from([None, 1, 2]))
    assert list(nx.bfs_edges(G, s, depth_limit=depth, backend=GS)) == list(
        nx.bfs_edges(G, s, depth_limit=depth))
    assert list(nx.bfs_tree(G, s, backend=GS).edges) == list(nx.bfs_tree(G, s).edges)
    assert list(nx.bfs_predecessors(G, s, backend=GS)) == list(nx.bfs_predecessors(G, s))
    assert list(nx.bfs_successors(G, s, backend=GS)) == list(nx.bfs_successors(G, s))
    sources = data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=3))
    assert list(nx.bfs_layers(G, sources, backend=GS)) == list(nx.bfs_layers(G, sources))
    assert items(nx.single_source_shortest_path(G, s, backend=GS)) == items(
        nx.single_source_shortest_path(G, s))
    assert items(nx.single_source_shortest_path_length(G, s, depth, backend=GS)) == items(
        nx.single_source_shortest_path_length(G, s, depth))
    assert items(nx.predecessor(G, s, backend=GS)) == items(nx.predecessor(G, s))
    t = data.draw(st.sampled_from(nodes))
    want, got = both(lambda b: nx.shortest_path(G, s, t, **b) if nx.has_path(G, s, t) else 0)
    assert got is None or got == want
    if nx.has_path(G, s, t):
        assert nx.shortest_path_length(G, s, t, backend=GS) == nx.shortest_path_length(G, s, t)


@SOME
@given(shuffled_graphs(weighted=True), st.data())
def test_dijkstra_paths_equal_networkx_or_are_refused(G, data):
    s = data.draw(st.sampled_from(list(G)))
    want, got = both(lambda b: nx.single_source_dijkstra(G, s, **b))
    assert got is None or (items(got[0]) == items(want[0]) and items(got[1]) == items(want[1]))
    want, got = both(lambda b: nx.dijkstra_predecessor_and_distance(G, s, **b))
    assert got is None or (items(got[0]) == items(want[0]) and items(got[1]) == items(want[1]))
    sources = data.draw(st.lists(st.sampled_from(list(G)), min_size=1, max_size=3))
    want, got = both(lambda b: nx.multi_source_dijkstra(G, sources, **b))
    assert got is None or (items(got[0]) == items(want[0]) and items(got[1]) == items(want[1]))


def test_a_graph_in_node_order_keeps_no_order_arrays():
    G = nx.Graph()
    G.add_nodes_from(range(50))
    G.add_edges_from(sorted(tuple(sorted(e)) for e in nx.gnm_random_graph(50, 200, seed=1).edges))
    assert convert_from_nx(G).order is None
    H = nx.Graph()
    H.add_nodes_from([0, 1, 2])
    H.add_edges_from([(0, 2), (0, 1)])
    assert convert_from_nx(H).order is not None


def test_bfs_on_a_shuffled_large_graph_equals_networkx():
    import random
    G = nx.gnm_random_graph(3000, 12000, seed=5, directed=True)
    edges = list(G.edges)
    random.Random(1).shuffle(edges)
    H = nx.DiGraph()
    H.add_nodes_from(random.Random(2).sample(list(G), len(G)))
    H.add_edges_from(edges)
    assert list(nx.bfs_edges(H, 0, backend=GS)) == list(nx.bfs_edges(H, 0))
    assert list(nx.bfs_layers(H, [0, 7], backend=GS)) == list(nx.bfs_layers(H, [0, 7]))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shuffled_graphs(), shuffled_graphs(), st.data())
def test_relabelled_and_united_graphs_keep_networkx_order(G, H, data):
    assume(not G.is_multigraph())   # the backend keeps no edge keys: multigraphs are refused
    H = nx.relabel_nodes(H, lambda x: f"h{x}")
    if G.is_directed() != H.is_directed() or H.is_multigraph():
        H = nx.relabel_nodes(G, lambda x: f"h{x}")
    B, C = convert_from_nx(G), convert_from_nx(H)
    pairs = [(nx.relabel_nodes(B, lambda x: f"r{x}"), nx.relabel_nodes(G, lambda x: f"r{x}")),
             (nx.convert_node_labels_to_integers(B, 3), nx.convert_node_labels_to_integers(G, 3)),
             (nx.union(B, C), nx.union(G, H)),
             (nx.union_all([B, C], rename=("a", "b")), nx.union_all([G, H], rename=("a", "b"))),
             (nx.disjoint_union(B, C), nx.disjoint_union(G, H))]
    for got, want in pairs:
        s = data.draw(st.sampled_from(list(want)))
        assert list(nx.bfs_edges(got, s)) == list(nx.bfs_edges(want, s))
