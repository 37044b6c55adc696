"""The order in which NetworkX's Dijkstra (and A* without a heuristic) settles vertices, from
final distances and the tight edges, without running a heap.

NetworkX pops ``(dist, counter, node)``: among equal distances the vertex pushed first, and a
vertex is pushed with its final distance by its first-settled tight predecessor (its parent),
as that one scans its neighbours in insertion order. So settling is ordered by the composite
key ``(dist, settling rank of the parent, position of the edge in the parent's neighbours)``,
computed here group by group of equal distances (only groups of two or more need the key;
the sources come first, in the order given). Zero-weight tight edges (a parent as far as its
child) are not covered: :func:`settle` returns None for them.
"""
import numpy as np

from .store_edges import in_edges


class Settled:
    """``rank`` (settling order of reached vertices, -1 elsewhere) and ``parent`` (-1 for
    sources and unreached ones); ``order`` lists the reached vertices as NetworkX settles them."""

    def __init__(self, rank, parent, order):
        self.rank, self.parent, self.order = rank, parent, order


def settle(G, dist, u, v, sources, reached):
    """:class:`Settled` for distances ``dist`` from internal ``sources`` (in NetworkX's
    iteration order), tight edges ``(u, v)`` and the ``reached`` mask; None with zero-weight
    tight edges."""
    if np.any(dist[u] == dist[v]):
        return None
    n = len(dist)
    sources = np.array(list(dict.fromkeys(int(s) for s in sources)), np.int64)
    sub = np.zeros(n, np.int64)   # order inside a group of equal distances
    sub[sources] = np.arange(len(sources))
    keep = reached[v]
    u, v = u[keep], v[keep]
    others = np.flatnonzero(reached)
    others = others[np.isin(others, sources, invert=True)]
    values, counts = np.unique(dist[others], return_counts=True)
    tied = values[counts > 1]
    if len(tied):
        in_tied = np.isin(dist[v], tied)
        tu, tv = u[in_tied], v[in_tied]
        by_dist = np.argsort(dist[tv], kind="stable")
        tu, tv = tu[by_dist], tv[by_dist]
        bounds = np.searchsorted(dist[tv], tied)
        ends = np.r_[bounds[1:], len(tv)]
        for lo, hi in zip(bounds.tolist(), ends.tolist()):
            gu, gv = tu[lo:hi], tv[lo:hi]
            best = np.lexsort((sub[gu], dist[gu], gv))
            gu, gv = gu[best], gv[best]
            head = np.r_[True, gv[1:] != gv[:-1]]
            p, x = gu[head], gv[head]
            order = np.lexsort((G.positions(p, x), sub[p], dist[p]))
            sub[x[order]] = np.arange(len(x))
    parent = np.full(n, -1, np.int64)
    best = np.lexsort((sub[u], dist[u], v))
    u, v = u[best], v[best]
    head = np.r_[True, v[1:] != v[:-1]] if len(v) else np.zeros(0, bool)
    parent[v[head]] = u[head]
    parent[sources] = -1
    ids = np.flatnonzero(reached)
    order = ids[np.lexsort((sub[ids], dist[ids]))]
    rank = np.full(n, -1, np.int64)
    rank[order] = np.arange(len(order))
    return Settled(rank, parent, order)


def discovery(G, settled, sources, dist, weighted, cutoff):
    """Reached vertices in the order NetworkX first pushes them (the order of its ``pred``
    dict): sources first, then by the first-settled in-neighbour that relaxes them
    (within ``cutoff``), and that edge's position in its neighbours. One pass over the store's
    in-edges."""
    n, rank = len(dist), settled.rank
    first = np.full(n, np.iinfo(np.int64).max, np.int64)
    limit = np.inf if cutoff is None else cutoff
    for src, dst, w in in_edges(G.store, weights=weighted):
        ok = (rank[src] >= 0) & (rank[dst] >= 0)
        ok &= dist[src] + (1.0 if w is None else w) <= limit
        np.minimum.at(first, dst[ok], rank[src[ok]])
    sources = list(dict.fromkeys(int(s) for s in sources))
    rest = settled.order[np.isin(settled.order, sources, invert=True)]
    rest = rest[first[rest] < np.iinfo(np.int64).max]   # pushed at all (within cutoff)
    by = settled.order[first[rest]]
    rest = rest[np.lexsort((G.positions(by, rest), first[rest]))]
    return np.concatenate([np.array(sources, np.int64), rest])
