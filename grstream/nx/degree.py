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
