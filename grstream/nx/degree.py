"""Degree centralities of NetworkX on the backend graph, from the store's degree arrays."""
import networkx as nx
import numpy as np

from .store_edges import out_edges


def _loops(G):
    """Self-loops per vertex: an undirected store holds a loop once, NetworkX counts it twice."""
    count = np.zeros(len(G), dtype=np.int64)
    for src, dst, _ in out_edges(G.store):
        np.add.at(count, src[src == dst], 1)
    return count


def _centrality(G, degree):
    labels = G.labels()
    if len(G) <= 1:
        return dict.fromkeys(labels, 1)
    scale = 1.0 / (len(G) - 1.0)
    return dict(zip(labels, (degree() * scale).tolist()))


def _directed_only(G):
    if not G.is_directed():
        raise nx.NetworkXNotImplemented("not implemented for undirected type")


def degree_centrality(G):
    """Degree over ``n - 1`` per node, as :func:`networkx.degree_centrality`."""
    if G.is_directed():
        return _centrality(G, lambda: G.store.in_degree() + G.store.out_degree())
    return _centrality(G, lambda: G.store.out_degree() + _loops(G))


def in_degree_centrality(G):
    """In-degree over ``n - 1`` per node, as :func:`networkx.in_degree_centrality`."""
    _directed_only(G)
    return _centrality(G, lambda: G.store.in_degree())


def out_degree_centrality(G):
    """Out-degree over ``n - 1`` per node, as :func:`networkx.out_degree_centrality`."""
    _directed_only(G)
    return _centrality(G, lambda: G.store.out_degree())


def _isolated(G):
    """Mask of the nodes without neighbours (a self-loop is a neighbour)."""
    if not len(G):
        return np.zeros(0, dtype=bool)
    return (G.store.in_degree() + G.store.out_degree()) == 0


def isolates(G):
    """Nodes without neighbours in node order, as :func:`networkx.isolates`."""
    labels = G.labels()
    return (labels[i] for i in np.flatnonzero(_isolated(G)).tolist())


def number_of_isolates(G):
    """How many nodes have no neighbours, as :func:`networkx.number_of_isolates`."""
    return int(_isolated(G).sum())


def is_isolate(G, n):
    """Whether ``n`` has no neighbours, as :func:`networkx.is_isolate`."""
    i = G.index_of(n)
    if i is None:
        try:   # NetworkX's G.degree(n) reads a non-node as a bunch of nodes: a view, not 0
            iter(n)
        except TypeError:
            raise nx.NetworkXError(f"Node {n} is not in the graph.") from None
        return False
    return bool(_isolated(G)[i])


def is_empty(G):
    """Whether ``G`` has no edges, as :func:`networkx.is_empty`."""
    return G.number_of_edges() == 0


def number_of_selfloops(G):
    """How many self-loops, as :func:`networkx.number_of_selfloops`."""
    return int(_loops(G).sum()) if len(G) else 0


def _degrees(G, which):
    """Degrees as NetworkX counts them: ``which`` is "in", "out" or "in+out" (directed)."""
    if not G.is_directed():
        return G.store.out_degree() + _loops(G)
    ins, outs = G.store.in_degree(), G.store.out_degree()
    return {"in": ins, "out": outs, "in+out": ins + outs}[which]


def average_neighbor_degree(G, source="out", target="out", nodes=None, weight=None):
    """Average degree of each node's neighbours, as :func:`networkx.average_neighbor_degree`
    without weights (``can_run`` checks): integer sums over the neighbours in one streamed
    pass (grstream/algorithms/neighbors.py), divided as NetworkX divides."""
    from ..algorithms.neighbors import neighbour_sums
    from .convert import run_options
    if G.is_directed():
        for name, value in (("source", source), ("target", target)):
            if value not in ("in", "out", "in+out"):
                raise nx.NetworkXError(
                    f"{name} argument {value} must be 'in', 'out' or 'in+out'")
    elif source != "out" or target != "out":
        raise nx.NetworkXError(
            "source and target arguments are only supported for directed graphs")
    labels = G.labels()
    ids = range(len(G)) if nodes is None else list(dict.fromkeys(
        i for i in (G.index_of(v) for v in nodes) if i is not None))
    if not len(G):
        return {}
    target_deg = _degrees(G, target)   # an undirected graph's: a pass for its self-loops
    sums, _ = neighbour_sums(G.store, target_deg,
                             source if G.is_directed() else "out", **run_options())
    deg = target_deg if source == target else _degrees(G, source)
    return {labels[i]: (int(sums[i]) / int(deg[i]) if deg[i] else 0.0) for i in ids}


def is_negatively_weighted(G, edge=None, weight="weight"):
    """Whether some edge has a negative ``weight``, as :func:`networkx.is_negatively_weighted`
    for the whole graph (``can_run`` checks), from one pass over the stored weights."""
    from .convert import weights
    return weights(G, weight).lo < 0
