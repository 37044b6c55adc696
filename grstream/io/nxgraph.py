"""networkx graphs: nodes must be the integers 0..n-1 (or any non-negative integers)."""
import numbers

import numpy as np

from ..errors import InputFormatError
from .arrays import array_source
from .texttable import mirror


def _node_id(node, name):
    if isinstance(node, numbers.Integral) and not isinstance(node, bool) and node >= 0:
        return int(node)
    raise InputFormatError(
        f"networkx node {node!r} is not a non-negative integer; relabel first, e.g. "
        "networkx.convert_node_labels_to_integers(G)", name)


def read_networkx(graph, *, weighted=None, chunk_edges=None, name="<networkx>"):
    """Open a networkx Graph, DiGraph or multigraph as an :class:`EdgeSource`.

    Undirected graphs give both directions of every edge (a self-loop once); each parallel edge
    of a multigraph is an edge. The ``weight`` attribute is the weight, 1.0 where missing
    (networkx's convention). ``num_vertices`` is the largest node + 1, so isolated nodes count.

    Parameters
    ----------
    graph : networkx.Graph
    weighted : bool or None
        None: weighted when any edge has a ``weight``; True: require one; False: ignore them.
    chunk_edges : int, optional
        Maximum edges per chunk.

    Raises
    ------
    InputFormatError
        A node that is not a non-negative integer, a non-numeric or non-finite weight.
    """
    num_vertices = 1 + max((_node_id(v, name) for v in graph.nodes), default=-1)
    edges = list(graph.edges(data="weight"))
    src = np.fromiter((_node_id(u, name) for u, _, _ in edges), np.int64, len(edges))
    dst = np.fromiter((_node_id(v, name) for _, v, _ in edges), np.int64, len(edges))
    has_weight = any(w is not None for _, _, w in edges)
    weight = None
    if has_weight and weighted is not False:
        try:
            weight = np.array([1.0 if w is None else float(w) for _, _, w in edges], np.float64)
        except (TypeError, ValueError) as exc:
            raise InputFormatError(f"an edge weight is not a number ({exc})", name) from None
    if not graph.is_directed():
        src, dst, weight = mirror(src, dst, weight)
    source = array_source(src, dst, weight, name=name, weighted=weighted, chunk_edges=chunk_edges,
                          fmt="networkx", num_vertices=num_vertices)
    source.symmetric = not graph.is_directed()
    return source
