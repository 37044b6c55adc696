"""Semi-synchronous label propagation (Cordasco and Gargano), as
``networkx.community.label_propagation_communities``: vertices are coloured greedily
(largest degree first, NetworkX's ``greedy_color``), every vertex starts with its own id as
label, and each colour class in turn takes, per vertex, the most frequent label among its
neighbours (keeping its own label when it is among the most frequent, else the largest of
them), until every vertex with neighbours holds one of its most frequent labels.

Vertices of one colour are never neighbours, so a class updates as one synchronous step: a
streamed pass over the store's edges, shard by shard, counting (vertex, neighbour label)
pairs. The most frequent label is not a reduction of per-vertex scalars (no GAS monoid
computes it), so the passes are numpy passes on the CPU; the greedy colouring is sequential
by definition (each vertex takes the least colour its earlier neighbours left), a pass in
memory over the adjacency.
"""
import numpy as np


def _neighbour_pairs(store, chosen):
    """Distinct ``(vertex, neighbour)`` pairs, over all edges of an undirected store, of the
    vertices where ``chosen`` is True (a multigraph's parallel edges once)."""
    n = int(store.num_vertices)
    keys = []
    for i in range(store.num_shards):
        lo = int(store.intervals[i])
        indptr = store.read(i, "out/indptr")
        src = np.repeat(np.arange(lo, lo + len(indptr) - 1, dtype=np.int64), np.diff(indptr))
        dst = store.read(i, "out/dst").astype(np.int64, copy=False)
        keep = chosen[src]
        keys.append(np.unique(src[keep] * n + dst[keep]))
    key = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    return key // max(n, 1), key % max(n, 1)


def _most_frequent(store, label, chosen):
    """``(vertices, keeps, best)``: for each chosen vertex with neighbours, whether its own
    label is among its neighbours' most frequent ones, and the largest of those."""
    v, u = _neighbour_pairs(store, chosen)
    n = max(int(store.num_vertices), 1)
    pair, count = np.unique(v * n + label[u], return_counts=True)
    pv, pl = pair // n, pair % n
    if not len(pv):
        return pv, np.zeros(0, bool), pv
    starts = np.flatnonzero(np.r_[True, pv[1:] != pv[:-1]])
    top = np.maximum.reduceat(count, starts)
    high = count == np.repeat(top, np.diff(np.r_[starts, len(pv)]))
    vertices = pv[starts]
    own = np.zeros(len(pv), bool)
    own[high] = pl[high] == label[pv[high]]
    keeps = np.logical_or.reduceat(own, starts)
    best = np.maximum.reduceat(np.where(high, pl, -1), starts)
    return vertices, keeps, best


def greedy_colours(indptr, dst, degree):
    """NetworkX's ``greedy_color(G, "largest_first")`` over an adjacency in memory: vertices
    by decreasing degree (ties in id order), each the least colour its coloured neighbours do
    not have."""
    n = len(degree)
    order = np.argsort(-np.asarray(degree), kind="stable").tolist()
    starts, nbrs = indptr.tolist(), dst.tolist()
    colour = [-1] * n
    for u in order:
        used = {colour[w] for w in nbrs[starts[u]:starts[u + 1]]}
        c = 0
        while c in used:
            c += 1
        colour[u] = c
    return np.asarray(colour, np.int64)


def semi_synchronous_labels(store, colour):
    """Final label of every vertex (int64, internal ids as labels) from the colouring
    ``colour`` (module docstring); one streamed pass per colour class and per check."""
    n = int(store.num_vertices)
    label = np.arange(n, dtype=np.int64)
    classes = [colour == c for c in range(int(colour.max()) + 1)] if n else []
    everyone = np.ones(n, bool)
    while True:
        _, keeps, _ = _most_frequent(store, label, everyone)
        if keeps.all():
            return label
        for chosen in classes:
            vertices, keeps, best = _most_frequent(store, label, chosen)
            label[vertices[~keeps]] = best[~keeps]
