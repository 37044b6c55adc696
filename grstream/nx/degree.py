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
