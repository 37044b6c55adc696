"""networkx graphs: nodes are any hashable labels; the store keeps them (README "Vertex ids").

Non-negative integer nodes that are dense (``max + 1 <= 2 * nodes``) are the vertex ids as they
are, isolated nodes included. Other nodes get ids ``0..n-1``: sparse integer nodes in increasing
order, anything else (names, tuples, mixed types) in the graph's node order; the store keeps
integers as integers and anything else as its ``str``.
"""
import numbers

import numpy as np

from ..errors import InputFormatError
from ..store.labels import is_sparse
from .arrays import array_source
from .texttable import mirror


def _is_id(node):
    return isinstance(node, numbers.Integral) and not isinstance(node, bool) and node >= 0


def node_order(graph):
    """``(ids, labels)``: the vertex id of every node and the label of every id, or
    ``(None, None)`` when the nodes are dense non-negative integers (their own ids)."""
    nodes = list(graph.nodes)
    if all(_is_id(v) for v in nodes):
        top = 1 + max(nodes, default=-1)
        if not is_sparse(top, len(nodes)):
            return None, None
        nodes = sorted(nodes)
    return {v: i for i, v in enumerate(nodes)}, nodes


def read_networkx(graph, *, weighted=None, chunk_edges=None, name="<networkx>"):
    """Open a networkx Graph, DiGraph or multigraph as an :class:`EdgeSource`.

    Undirected graphs give both directions of every edge (a self-loop once); each parallel edge
    of a multigraph is an edge. The ``weight`` attribute is the weight, 1.0 where missing
    (networkx's convention). Every node is a vertex, isolated ones included.

    Parameters
    ----------
    graph : networkx.Graph
    weighted : bool or None
        None: weighted when any edge has a ``weight``; True: require one; False: ignore them.
    chunk_edges : int, optional
        Maximum edges per chunk.

    Returns
    -------
    EdgeSource
        With ``labels`` (the nodes in id order) unless the nodes are dense integers.

    Raises
    ------
    InputFormatError
        A non-numeric or non-finite weight.
    """
    ids, labels = node_order(graph)
    num_vertices = 1 + max(graph.nodes, default=-1) if ids is None else len(labels)
    edges = list(graph.edges(data="weight"))
    key = (lambda v: v) if ids is None else ids.__getitem__
    src = np.fromiter((key(u) for u, _, _ in edges), np.int64, len(edges))
    dst = np.fromiter((key(v) for _, v, _ in edges), np.int64, len(edges))
    has_weight = any(w is not None for _, _, w in edges)
    weight = None
    if has_weight and weighted is not False:
        try:
            weight = np.array([1.0 if w is None else float(w) for _, _, w in edges], np.float64)
        except (TypeError, ValueError) as exc:
            raise InputFormatError(f"an edge weight is not a number ({exc})", name) from None
    if not graph.is_directed():
        src, dst, weight = mirror(src, dst, weight)
    source = array_source(src, dst, weight, name=name, weighted=weighted,
                          chunk_edges=chunk_edges, fmt="networkx", num_vertices=num_vertices)
    if labels is not None:
        source.labels = lambda: labels
    source.symmetric = not graph.is_directed()
    return source
