"""Connected components of NetworkX on the backend graph (streamed label propagation)."""
import networkx as nx
import numpy as np

from .convert import run_options


def _labels(G):
    from ..algorithms.cc import connected_components as cc
    return cc(G.store, **run_options())[0]


def _components(G):
    if not len(G):
        return
    label = _labels(G)
    order = np.argsort(label, kind="stable")
    cuts = np.flatnonzero(np.diff(label[order])) + 1
    names = G.labels()
    # a component's label is its first node in node order: NetworkX's order of components
    for members in np.split(order, cuts):
        yield {names[i] for i in members.tolist()}


def connected_components(G):
    """Sets of nodes, one per component, as :func:`networkx.connected_components`."""
    yield from _components(G)


def weakly_connected_components(G):
    """Sets of nodes, one per weak component, as :func:`networkx.weakly_connected_components`."""
    yield from _components(G)


def number_connected_components(G):
    """How many components, as :func:`networkx.number_connected_components`."""
    return int(len(np.unique(_labels(G)))) if len(G) else 0


def number_weakly_connected_components(G):
    """How many weak components, as :func:`networkx.number_weakly_connected_components`."""
    return number_connected_components(G)


def is_connected(G):
    """Whether ``G`` is one component, as :func:`networkx.is_connected`."""
    if not len(G):
        raise nx.NetworkXPointlessConcept("Connectivity is undefined for the null graph.")
    return number_connected_components(G) == 1


def is_weakly_connected(G):
    """Whether ``G`` is one weak component, as :func:`networkx.is_weakly_connected`."""
    return is_connected(G)


def node_connected_component(G, n):
    """The set of nodes in ``n``'s component, as :func:`networkx.node_connected_component`."""
    i = G.index_of(n)
    if i is None:
        raise KeyError(n)
    label = _labels(G)
    names = G.labels()
    return {names[j] for j in np.flatnonzero(label == label[i]).tolist()}
