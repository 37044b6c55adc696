"""Reachability functions of NetworkX on the backend graph: ancestors (BFS over in-edges),
descendants, single-target shortest path lengths, and the reversed graph."""
import networkx as nx
import numpy as np

import grstream as gr

from .algorithm_runs import levels, node_dict
from .convert import run_options, temp_store
from .graph import GrstreamGraph
from .store_edges import edge_arrays


def _missing(G, node):
    kind = "digraph" if G.is_directed() else "graph"
    return nx.NetworkXError(f"The node {node} is not in the {kind}.")


def target_levels(G, t):
    """Hops from every vertex to internal ``t`` (-1 when it cannot reach it)."""
    from ..algorithms.reach import ReverseBFS
    if not G.is_directed():   # stored both ways: the forward search is the same
        return levels(G, [t])
    level = gr.run(ReverseBFS(source=int(t)), G.store, **run_options()).values["level"]
    return level


def _others(G, level, t):
    labels = G.labels()
    return {labels[i] for i in np.flatnonzero(level >= 0).tolist() if i != t}


def descendants(G, source):
    """Nodes reachable from ``source``, as :func:`networkx.descendants`."""
    s = G.index_of(source)
    if s is None:
        raise _missing(G, source)
    return _others(G, levels(G, [s]), s)


def ancestors(G, source):
    """Nodes that reach ``source``, as :func:`networkx.ancestors`."""
    t = G.index_of(source)
    if t is None:
        raise _missing(G, source)
    return _others(G, target_levels(G, t), t)


def single_target_shortest_path_length(G, target, cutoff=None):
    """``{node: hops to target}``, as :func:`networkx.single_target_shortest_path_length`
    (ordered by hops, then node order)."""
    t = G.index_of(target)
    if t is None:
        raise nx.NodeNotFound(f"Target {target} is not in G")
    level = target_levels(G, t)
    reached = np.flatnonzero((level >= 0) & (level <= (np.inf if cutoff is None else cutoff)))
    reached = reached[np.argsort(level[reached], kind="stable")]
    return node_dict(G, reached, level[reached])


def reverse(G, copy=True):
    """The graph with every edge reversed, as :func:`networkx.reverse` (a new store; weights
    kept)."""
    if not G.is_directed():
        raise nx.NetworkXError("Cannot reverse an undirected graph.")
    labels = G.labels()
    if not labels:
        return GrstreamGraph(None, [], directed=True, multigraph=G.is_multigraph(),
                             graph_attrs=G.graph)
    src, dst, weight = edge_arrays(G.store, True, weights=True)
    store, tmp_dir = temp_store(dst, src, weight, len(labels), True, "<reverse>")
    return GrstreamGraph(store, labels, directed=True, multigraph=G.is_multigraph(),
                         weight=G.weight if weight is not None else None,
                         attrs_known=G.attrs_known, num_edges=G.number_of_edges(),
                         tmp_dir=tmp_dir, graph_attrs=G.graph)
