"""Average shortest path length of NetworkX on the backend graph (one streamed run per node)."""
import networkx as nx
import numpy as np

from .runs import distances


def average_shortest_path_length(G, weight=None, method=None):
    """As :func:`networkx.average_shortest_path_length` for the single-source methods
    ("unweighted", "dijkstra", "bellman-ford"; ``can_run`` checks), one SSSP or BFS per node."""
    if method is None:
        method = "unweighted" if weight is None else "dijkstra"
    n = len(G)
    if n == 0:
        raise nx.NetworkXPointlessConcept(
            "the null graph has no paths, thus there is no average shortest path length")
    if n == 1:
        return 0
    total, weighted = 0, False
    for s in range(n):
        dist, weighted = distances(G, s, None if method == "unweighted" else weight)
        if not np.isfinite(dist).all():
            raise nx.NetworkXError("Graph is not strongly connected." if G.is_directed()
                                   else "Graph is not connected.")
        total += dist.sum() if weighted else int(dist.sum())
    return float(total) / (n * (n - 1))
