"""Triangles and clustering coefficients of NetworkX on the backend graph, from the streamed
triangle counts of grstream/algorithms/triangles.py (integers, so every ratio is NetworkX's
own float division)."""
import networkx as nx

from .distance import _wanted


def _counts(G):
    from ..algorithms.triangles import triangle_counts
    if G.is_multigraph():
        raise nx.NetworkXNotImplemented("not implemented for multigraph type")
    if not len(G):
        return [], [], []
    t, degree, mutual = triangle_counts(G.store, directed=G.is_directed())
    return t.tolist(), degree.tolist(), mutual.tolist()


def _keyed(G, nodes, values):
    """``{node: values[i]}`` for ``nodes`` as NetworkX's ``nbunch_iter`` reads them."""
    labels = G.labels()
    return {labels[i]: values[i] for i in _wanted(G, nodes)}


def triangles(G, nodes=None):
    """Triangles through each node, as :func:`networkx.triangles`."""
    if G.is_directed():
        raise nx.NetworkXNotImplemented("not implemented for directed type")
    t, _, _ = _counts(G)
    counts = _keyed(G, nodes, [x // 2 for x in t])
    return counts[nodes] if nodes is not None and nodes in G else counts


def clustering(G, nodes=None, weight=None):
    """Clustering coefficient of each node, as :func:`networkx.clustering` without stored
    weights (``can_run`` checks; weights all 1 give the same values as floats)."""
    t, d, db = _counts(G)
    one = 1.0 if weight is not None else 1   # NetworkX's weighted sums are floats
    if G.is_directed():
        c = [0 if x == 0 else x * one / ((n * (n - 1) - 2 * b) * 2) for x, n, b in zip(t, d, db)]
    else:
        c = [0 if x == 0 else x * one / (n * (n - 1)) for x, n in zip(t, d)]
    values = _keyed(G, nodes, c)
    return values[nodes] if nodes is not None and nodes in G else values


def average_clustering(G, nodes=None, weight=None, count_zeros=True):
    """Mean clustering coefficient, as :func:`networkx.average_clustering`."""
    c = clustering(G, nodes, weight=weight).values()
    if not count_zeros:
        c = [v for v in c if abs(v) > 0]
    return sum(c) / len(c)


def transitivity(G):
    """Three times the triangles over the connected triples, as :func:`networkx.transitivity`
    of an undirected graph (``can_run`` checks)."""
    t, d, _ = _counts(G)
    if not t:
        return 0
    triangles, contri = sum(t), sum(n * (n - 1) for n in d)
    return 0 if triangles == 0 else triangles / contri
