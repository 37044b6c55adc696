"""Average shortest path length (every node a source, in lanes of one session) and the generic
shortest-path functions of NetworkX on the backend graph."""
import networkx as nx
import numpy as np

from .algorithm_runs import every_source


#: NetworkX's methods; on the finite non-negative weights ``can_run`` admits they all find the
#: same distances
_AVERAGE_METHODS = ("unweighted", "dijkstra", "bellman-ford", "floyd-warshall",
                    "floyd-warshall-numpy")


def average_shortest_path_length(G, weight=None, method=None):
    """As :func:`networkx.average_shortest_path_length` (``can_run`` checks the weights)."""
    if method is None:
        method = "unweighted" if weight is None else "dijkstra"
    if method not in _AVERAGE_METHODS:
        raise ValueError(f"method not supported: {method}")
    n = len(G)
    if n == 0:
        raise nx.NetworkXPointlessConcept(
            "the null graph has no paths, thus there is no average shortest path length")
    if n == 1:
        return 0
    weight = None if method == "unweighted" else weight
    total = 0
    for _, dist in every_source(G, weight):
        if not np.isfinite(dist).all():
            raise nx.NetworkXError("Graph is not strongly connected." if G.is_directed()
                                   else "Graph is not connected.")
        total += dist.sum()
    return float(total) / (n * (n - 1))


def _method(weight, method):
    if method not in ("dijkstra", "bellman-ford"):
        raise ValueError(f"method not supported: {method}")
    return "unweighted" if weight is None else method


def shortest_path(G, source=None, target=None, weight=None, method="dijkstra"):
    """As :func:`networkx.shortest_path` from a ``source`` (``can_run`` checks); Bellman-Ford
    on the non-negative weights ``can_run`` admits finds the same distances as Dijkstra."""
    from . import shortest_paths, unweighted
    if _method(weight, method) == "unweighted":
        if target is None:
            return unweighted.single_source_shortest_path(G, source)
        return unweighted.bidirectional_shortest_path(G, source, target)
    if target is None:
        return shortest_paths.single_source_dijkstra_path(G, source, weight=weight)
    try:
        return shortest_paths.dijkstra_path(G, source, target, weight=weight)
    except nx.NetworkXNoPath:
        raise nx.NetworkXNoPath(f"No path between {source} and {target}.") from None


def shortest_path_length(G, source=None, target=None, weight=None, method="dijkstra"):
    """As :func:`networkx.shortest_path_length` from a ``source`` (``can_run`` checks)."""
    from . import shortest_paths, traversal, unweighted
    if _method(weight, method) == "unweighted":
        if target is None:
            return traversal.single_source_shortest_path_length(G, source)
        return unweighted.hops(G, source, target)
    if target is None:
        return shortest_paths.single_source_dijkstra_path_length(G, source, weight=weight)
    return shortest_paths.dijkstra_path_length(G, source, target, weight=weight)
