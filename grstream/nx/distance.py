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


def _node_set(G, nodes):
    """``set(G.nbunch_iter(nodes))`` (all nodes for None), built in NetworkX's order so that it
    iterates in NetworkX's order."""
    labels = G.labels()
    return set(labels) if nodes is None else set(labels[i] for i in _wanted(G, nodes))


def harmonic_centrality(G, nbunch=None, distance=None, sources=None):
    """Sum of reciprocal distances from ``sources`` to each node of ``nbunch``, as
    :func:`networkx.harmonic_centrality`: each node's sum taken in NetworkX's order (its set of
    sources), each source's distances from one streamed run, 64 per pass. A call with fewer
    targets than sources, which NetworkX sums in the order of a set intersection with its
    search's dict, is refused by ``can_run``."""
    targets, starts = _node_set(G, nbunch), _node_set(G, sources)
    centrality = dict.fromkeys(targets, 0)
    if not starts or not targets:
        return centrality
    labels = G.labels()
    keep = np.zeros(len(G), bool)
    keep[[G.index_of(u) for u in targets]] = True
    for _, dist in every_source(G, distance, [G.index_of(v) for v in starts]):
        reached = np.flatnonzero(keep & np.isfinite(dist) & (dist != 0))
        for u, d in zip(reached.tolist(), dist[reached].tolist()):
            centrality[labels[u]] += 1 / d
    return centrality


def fewer_targets(G, nbunch, sources):
    """Whether a harmonic centrality call has fewer targets than sources (NetworkX then
    transposes it)."""
    def size(nodes):
        if nodes is None:
            return len(G)
        return len(set(G.nbunch_iter(nodes))) if hasattr(G, "nbunch_iter") else \
            len(_node_set(G, nodes))
    return size(nbunch) < size(sources)
