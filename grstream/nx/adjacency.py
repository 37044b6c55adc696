"""A NetworkX graph's edges as numpy arrays in one vectorised pass over its adjacency.

The pass iterates NetworkX's dicts with C-level iterators (``map``, ``itertools.chain``), no
Python code per edge: ``dst`` lists every adjacency entry in NetworkX's order (``G._adj``:
successors of a directed graph, both directions of an undirected one), so the position of an
edge in its source's adjacency, which decides NetworkX's traversal order, is kept.
"""
from itertools import chain
from operator import methodcaller

import numpy as np


class Edges:
    """Adjacency of a NetworkX graph in its insertion order, internal ids ``list(G)``.

    ``indptr``/``dst``: row ``u`` lists the distinct neighbours of ``u`` in NetworkX's order;
    ``mult`` (multigraphs) the parallel edges per entry; ``weight`` (or None) one value per
    edge, the entries repeated ``mult`` times.
    """

    def __init__(self, G, attr=None, default=1):
        adj = G._adj
        nodes = list(adj)
        n = len(nodes)
        self.nodes, self.n = nodes, n
        self.indptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.fromiter(map(len, adj.values()), np.int64, n), out=self.indptr[1:])
        m = int(self.indptr[-1])
        index = {label: i for i, label in enumerate(nodes)}
        self.dst = np.fromiter(map(index.__getitem__, chain.from_iterable(adj.values())),
                               np.int64, m)
        self.mult = None
        datas = chain.from_iterable(map(dict.values, adj.values()))
        if G.is_multigraph():
            keydicts = list(datas)
            self.mult = np.fromiter(map(len, keydicts), np.int64, m)
            datas = chain.from_iterable(map(dict.values, keydicts))
        self.weight = None
        if attr is not None:
            try:
                self.weight = np.fromiter(map(methodcaller("get", attr, default), datas),
                                          np.float64, self.num_entries())
            except (TypeError, ValueError):
                self.weight = False   # a non-number: can_run refuses, conversion raises

    def num_entries(self):
        """Adjacency entries counting parallel edges (each undirected edge twice, loops once)."""
        return len(self.dst) if self.mult is None else int(self.mult.sum())

    def src(self):
        return np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.indptr))

    def edges(self, directed):
        """``(src, dst, weight)`` of every edge once (undirected: the entry with ``src <= dst``),
        parallel edges repeated."""
        src, dst = self.src(), self.dst
        if self.mult is not None:
            src, dst = np.repeat(src, self.mult), np.repeat(dst, self.mult)
        w = self.weight if self.weight is not False else None
        if not directed:
            keep = src <= dst
            src, dst, w = src[keep], dst[keep], None if w is None else w[keep]
        return src, dst, w

    def order(self):
        """``(indptr, dst)`` when some row is not in increasing id order (NetworkX's order is not
        node order), else None."""
        return unsorted(self.indptr, self.dst)


def unsorted(indptr, dst):
    """``(indptr, dst)``, or None when every row is in increasing id order (node order)."""
    if len(dst) < 2:
        return None
    rising = np.diff(dst) > 0
    starts = indptr[1:-1]
    rising[starts[(starts > 0) & (starts < len(dst))] - 1] = True  # a new row may drop
    return None if rising.all() else (indptr, dst)


def copied(order, n, directed):
    """The neighbour order of a graph NetworkX builds by ``R.add_edges_from(G.edges())`` (as
    ``relabel_nodes`` and the unions do) from ``G`` with neighbour order ``order``. Directed:
    the same. Undirected: ``G.edges()`` gives each edge once, from the endpoint first in node
    order, row by row; each edge then appends to both endpoints' rows in that sequence."""
    if order is None or directed:
        return order
    indptr, dst = order
    row = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    keep = dst >= row     # the other endpoint not yet passed in node order (a loop: itself)
    u, v = row[keep], dst[keep]
    k = np.arange(len(u))
    two = u != v
    at = np.concatenate([u, v[two]])
    other = np.concatenate([v, u[two]])
    by = np.lexsort((np.concatenate([k, k[two]]), at))
    new = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(at, minlength=n), out=new[1:])
    return unsorted(new, other[by])


class Positions:
    """Position of an edge ``(u, v)`` in ``u``'s adjacency, NetworkX's order of ``u``'s
    neighbours; ``order`` None: node order, the position is ``v`` itself."""

    def __init__(self, order, n):
        self.n, self.order, self._key = n, order, None

    def __call__(self, u, v):
        if self.order is None:
            return v
        indptr, dst = self.order
        if self._key is None:
            key = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(indptr)) * self.n + dst
            self._by_key = np.argsort(key, kind="stable")
            self._key = key[self._by_key]
        found = self._by_key[np.searchsorted(self._key, u * self.n + v)]
        return found - indptr[u]
