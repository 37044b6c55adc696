"""``can_run`` and ``should_run``: which calls the backend answers exactly as NetworkX would.

``can_run`` returns True or a string saying why not; NetworkX then uses another backend (or
itself, with ``nx.config.fallback_to_nx``), so the backend never gives a different answer.
"""
import inspect
import math

import networkx as nx

from . import rules
from .convert import drop_stale_conversions, forget_adjacency, weights
from .graph import GrstreamGraph

#: below this many edges a NetworkX graph is faster in NetworkX than converted to a store
SMALL_GRAPH_EDGES = 100_000


def _bind(name, args, kwargs):
    # functions of subpackages (nx.community...) are not all attributes of nx itself
    function = getattr(nx, name, None) or nx.utils.backends._registered_algorithms[name]
    bound = inspect.signature(function).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.arguments


def _distribution(values, option, zero_sum_ok):
    try:
        x = [float(v) for v in values.values()]
    except (AttributeError, TypeError, ValueError):
        return True  # not numbers: the function raises NetworkX's error converting them
    if not all(math.isfinite(v) and v >= 0 for v in x):
        return f"grstream's PageRank takes finite non-negative {option} values"
    if not zero_sum_ok and not sum(x) > 0:
        return f"{option} sums to zero"
    return True


def _pagerank(a):
    for option in ("personalization", "nstart", "dangling"):
        if a[option] is not None:
            # a zero personalization raises ZeroDivisionError, as in NetworkX
            ok = _distribution(a[option], option, zero_sum_ok=option == "personalization")
            if ok is not True:
                return ok
    return _nonnegative(a["G"], a["weight"], "PageRank")


def _bfs_edges(a):
    if a.get("reverse") and a["G"].is_directed():
        return "grstream's BFS follows edges forward only (reverse=True)"
    if a["sort_neighbors"] is not None:
        return "sort_neighbors is not supported: neighbours are taken in node order"
    return True


def _nonnegative(G, weight, what):
    return rules.numeric_weights(G, weight, what, nonnegative=True)


def _dijkstra(a):
    return _nonnegative(a["G"], a["weight"], "SSSP")


def _betweenness(a):
    k = a["k"]
    if k is not None and not isinstance(k, int):
        return f"k={k!r} is not a sample size grstream takes"
    weight = a["weight"]
    if weight is None:
        return True
    w = weights(a["G"], weight)
    if not w.known:
        return f"the graph was converted without edge attribute {weight!r}"
    if not (w.numeric and w.finite and w.lo > 0):
        return f"grstream's weighted betweenness needs finite positive numbers as {weight!r}"
    return True


def _astar(a):
    if a["heuristic"] is not None:
        return "grstream's SSSP has no A* heuristic"
    return _dijkstra(a)


def _average_path(a):
    # any method finds the same distances on the weights admitted here; an unknown one
    # raises NetworkX's ValueError in the function
    if a["method"] == "unweighted" or a["method"] is None and a["weight"] is None:
        return True
    return _nonnegative(a["G"], a["weight"], "SSSP")


def _plain_graph(G):
    if G.is_multigraph():
        return "edge keys of a multigraph are not kept"
    if not isinstance(G, GrstreamGraph) and (any(d for _, d in G.nodes(data=True))
                                             or any(d for *_, d in G.edges(data=True))):
        return "the backend graph keeps no node or edge attributes"
    return True


def _convert_labels(a):
    if a["ordering"] in ("increasing degree", "decreasing degree"):
        return f"ordering {a['ordering']!r} is not supported (only 'default' and 'sorted')"
    if a["label_attribute"] is not None:
        return "the backend graph keeps no node attributes (label_attribute)"
    return _plain_graph(a["G"])


def _relabel(a):
    from .relabel import new_labels
    if not a["copy"]:
        return "relabelling in place would change the NetworkX graph (copy=False)"
    G = a["G"]
    try:
        labels = new_labels(G, a["mapping"])
        one_to_one = len(set(labels)) == len(G)
    except Exception as exc:  # noqa: BLE001 - NetworkX raises its own error for a bad mapping
        return f"the mapping cannot be applied here ({type(exc).__name__})"
    if not one_to_one:
        return "a mapping that merges nodes is not supported"
    return _plain_graph(G)


def _from_source(a):
    if a["method"] not in ("dijkstra", "bellman-ford"):
        return True  # the function raises NetworkX's ValueError
    if a["source"] is None:
        return "all-pairs and single-target searches are not supported: give a source"
    if a["weight"] is None:
        return True
    return _nonnegative(a["G"], a["weight"], "SSSP")


def _plain_graphs(a):
    from .operators import weight_conflict
    graphs = list(a["graphs"]) if "graphs" in a else [a["G"], a["H"]]
    for G in graphs:
        ok = _plain_graph(G)
        if ok is not True:
            return ok
    backend = [G for G in graphs if isinstance(G, GrstreamGraph)]
    return weight_conflict(backend) or True


def _always(a):
    return True


RULES = {
    "pagerank": _pagerank,
    "bfs_layers": _always,
    "bfs_edges": _bfs_edges,
    "bfs_predecessors": _bfs_edges,
    "single_source_shortest_path_length": _always,
    "single_source_dijkstra_path_length": _dijkstra,
    "single_source_dijkstra": _dijkstra,
    "dijkstra_predecessor_and_distance": _dijkstra,
    "connected_components": _always,
    "weakly_connected_components": _always,
    "number_connected_components": _always,
    "betweenness_centrality": _betweenness,
    "bfs_tree": _bfs_edges,
    "bfs_successors": _bfs_edges,
    "descendants_at_distance": _always,
    "multi_source_dijkstra": _dijkstra,
    "multi_source_dijkstra_path_length": _dijkstra,
    "multi_source_dijkstra_path": _dijkstra,
    "single_source_dijkstra_path": _dijkstra,
    "dijkstra_path": _dijkstra,
    "dijkstra_path_length": _dijkstra,
    "astar_path": _astar,
    "astar_path_length": _astar,
    "average_shortest_path_length": _average_path,
    "is_connected": _always,
    "node_connected_component": _always,
    "is_weakly_connected": _always,
    "number_weakly_connected_components": _always,
    "convert_node_labels_to_integers": _convert_labels,
    "relabel_nodes": _relabel,
    "shortest_path": _from_source,
    "shortest_path_length": _from_source,
    "single_source_shortest_path": _always,
    "bidirectional_shortest_path": _always,
    "has_path": _always,
    "union": _plain_graphs,
    "compose": _plain_graphs,
    "compose_all": _plain_graphs,
    "union_all": _plain_graphs,
    "disjoint_union": _plain_graphs,
    "disjoint_union_all": _plain_graphs,
    "predecessor": _always,
}
RULES.update(rules.RULES)


def _nx_graphs(a):
    graphs = list(a["graphs"]) if "graphs" in a else [a.get("G"), a.get("H")]
    return [G for G in graphs if G is not None and not isinstance(G, GrstreamGraph)
            and hasattr(G, "_adj")]


def can_run(name, args, kwargs):
    """True when the backend gives NetworkX's answer for this call, else the reason why not.
    NetworkX graphs' cached conversions built with other store options are dropped first
    (:func:`~grstream.nx.convert.drop_stale_conversions`)."""
    rule = RULES.get(name)
    if rule is None:
        return f"grstream does not implement {name}"
    a = _bind(name, args, kwargs)
    for G in _nx_graphs(a):
        drop_stale_conversions(G)
    ok = rule(a)
    if ok is not True:
        for G in _nx_graphs(a):
            forget_adjacency(G)
    return ok


def should_run(name, args, kwargs):
    """Prefer the backend for its own graphs and for NetworkX graphs worth converting, and
    NetworkX for the calls it answers faster (:data:`FASTER_IN_NETWORKX`)."""
    a = _bind(name, args, kwargs)
    G = a.get("G")  # None for the functions of several graphs
    why = None
    if isinstance(G, GrstreamGraph) or G is None:
        return True
    if G.number_of_edges() < SMALL_GRAPH_EDGES:
        why = (f"a graph of fewer than {SMALL_GRAPH_EDGES} edges runs faster in NetworkX than "
               "converted to a store")
    elif name in FASTER_IN_NETWORKX:
        why = FASTER_IN_NETWORKX[name]
    if why is not None:
        forget_adjacency(G)  # no conversion follows
        return why
    return True


#: calls NetworkX answers faster than a conversion plus streamed runs, whatever the size: a
#: search that stops at its target or at a cutoff touches a small part of the graph
FASTER_IN_NETWORKX = {
    name: "NetworkX's search stops early at the target; grstream streams the whole graph"
    for name in ("has_path", "bidirectional_shortest_path", "dijkstra_path",
                 "dijkstra_path_length", "astar_path", "astar_path_length")}
