"""Eccentricity and the measures built on it (diameter, radius, periphery, center) of
NetworkX on the backend graph: each node's distances from one streamed run per source, the
sources run in lanes of one session (:func:`~grstream.nx.algorithm_runs.every_source`).

``usebounds`` changes how NetworkX finds the answer (fewer searches), not the answer: every
call here computes the eccentricities it needs.
"""
import networkx as nx
import numpy as np

from .algorithm_runs import every_source, stored_weight


def _wanted(G, v):
    """Internal ids of ``v`` as :meth:`networkx.Graph.nbunch_iter` reads it (None: all nodes;
    a node; else an iterable of nodes, others skipped)."""
    if v is None:
        return list(range(len(G)))
    if v in G:
        return [G.index_of(v)]
    try:
        items = iter(v)
    except TypeError:
        raise nx.NetworkXError("nbunch is not a node or a sequence of nodes.") from None
    ids = []
    for x in items:
        try:
            hash(x)
        except TypeError:
            raise nx.NetworkXError(f"Node {x} in sequence nbunch is not a valid node.") from None
        i = G.index_of(x)
        if i is not None:
            ids.append(i)
    return ids


def _not_connected(G):
    if G.is_directed():
        return nx.NetworkXError("Found infinite path length because the digraph is not "
                                "strongly connected")
    return nx.NetworkXError("Found infinite path length because the graph is not connected")


def _from_sp(G, ids, sp):
    """NetworkX's eccentricities from given shortest-path lengths ``sp``."""
    labels, e = G.labels(), {}
    for i in ids:
        try:
            length = sp[labels[i]]
            size = len(length)
        except TypeError as err:
            raise nx.NetworkXError('Format of "sp" is invalid.') from err
        if size != len(G):
            raise _not_connected(G)
        e[labels[i]] = max(length.values())
    return e


def eccentricity(G, v=None, sp=None, weight=None):
    """Greatest distance from each node, as :func:`networkx.eccentricity` (``can_run`` checks
    the weights): hop counts as ints, weighted distances as floats.

    Raises
    ------
    networkx.NetworkXError
        When some node does not reach every other one.
    """
    ids = _wanted(G, v)
    if sp is not None:
        e = _from_sp(G, ids, sp)
    else:
        labels, e = G.labels(), {}
        number = float if stored_weight(G, weight) is not None else int
        for s, dist in every_source(G, weight, ids) if ids else ():
            if not np.isfinite(dist).all():
                raise _not_connected(G)
            e[labels[s]] = number(dist.max())
    return e[v] if v in G else e


def _eccentricities(G, e, weight):
    if e is None:
        e = eccentricity(G, weight=weight)
    return e


def diameter(G, e=None, usebounds=False, weight=None):
    """Greatest eccentricity, as :func:`networkx.diameter`."""
    return max(_eccentricities(G, e, weight).values())


def radius(G, e=None, usebounds=False, weight=None):
    """Least eccentricity, as :func:`networkx.radius`."""
    return min(_eccentricities(G, e, weight).values())


def periphery(G, e=None, usebounds=False, weight=None):
    """Nodes of greatest eccentricity in node order, as :func:`networkx.periphery`."""
    e = _eccentricities(G, e, weight)
    top = max(e.values())
    return [v for v in e if e[v] == top]


def center(G, e=None, usebounds=False, weight=None):
    """Nodes of least eccentricity in node order, as :func:`networkx.center`."""
    e = _eccentricities(G, e, weight)
    low = min(e.values())
    return [v for v in e if e[v] == low]
