"""Breadth-first search functions of NetworkX on the backend graph."""
import networkx as nx
import numpy as np

from .algorithm_runs import levels, node_dict, node_id
from . import trees


def bfs_layers(G, sources):
    """Layers of a multi-source BFS, as :func:`networkx.bfs_layers` (a generator of lists)."""
    if sources in G:
        sources = [sources]
    first = list(set(sources))  # NetworkX's first layer is the set of sources, in set order
    ids = [node_id(G, s, nx.NetworkXError, f"The node {s} is not in the graph.") for s in first]
    if not ids:
        return
    level = levels(G, ids)
    order, _ = trees.bfs_tree(G, level, ids)
    labels = G.labels()
    ordered_levels = level[order]
    cuts = np.flatnonzero(np.diff(ordered_levels)) + 1
    for layer in np.split(order, cuts):
        yield [labels[i] for i in layer.tolist()]


def _tree_edges(G, source, depth_limit):
    s = node_id(G, source, nx.NetworkXError, f"The node {source} is not in the graph.")
    level = levels(G, [s])
    if depth_limit is not None:
        level[level > depth_limit] = -1
    order, parent = trees.bfs_tree(G, level, [s])
    labels = G.labels()
    for v in order[1:].tolist():
        yield labels[parent[v]], labels[v]


def bfs_edges(G, source, reverse=False, depth_limit=None, sort_neighbors=None):
    """Edges of the BFS tree from ``source`` in visiting order, as :func:`networkx.bfs_edges`
    with neighbours taken in node order."""
    yield from _tree_edges(G, source, depth_limit)


def bfs_predecessors(G, source, depth_limit=None, sort_neighbors=None):
    """``(node, parent)`` of the BFS tree, as :func:`networkx.bfs_predecessors`."""
    for parent, child in _tree_edges(G, source, depth_limit):
        yield child, parent


def single_source_shortest_path_length(G, source, cutoff=None):
    """``{node: hops}`` from ``source`` in NetworkX's order of discovery."""
    s = node_id(G, source, nx.NodeNotFound, f"Source {source} is not in G")
    level = levels(G, [s])
    if cutoff is not None:
        level[level > cutoff] = -1
    order, _ = trees.bfs_tree(G, level, [s])
    return node_dict(G, order, level[order])


def bfs_tree(G, source, reverse=False, depth_limit=None, sort_neighbors=None):
    """The BFS tree from ``source`` as a NetworkX DiGraph, as :func:`networkx.bfs_tree`."""
    T = nx.DiGraph()
    T.add_node(source)
    T.add_edges_from(_tree_edges(G, source, depth_limit))
    return T


def bfs_successors(G, source, depth_limit=None, sort_neighbors=None):
    """``(node, [children])`` of the BFS tree, as :func:`networkx.bfs_successors`."""
    parent, children = source, []
    for p, c in _tree_edges(G, source, depth_limit):
        if p == parent:
            children.append(c)
            continue
        yield parent, children
        parent, children = p, [c]
    yield parent, children


def descendants_at_distance(G, source, distance):
    """Nodes exactly ``distance`` hops from ``source``, as
    :func:`networkx.descendants_at_distance`."""
    s = node_id(G, source, nx.NetworkXError, f"The node {source} is not in the graph.")
    level = levels(G, [s])
    labels = G.labels()
    return {labels[i] for i in np.flatnonzero(level == distance).tolist()}
