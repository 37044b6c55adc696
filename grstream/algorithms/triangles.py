"""Triangles through every vertex, streamed as a block product over pairs of shards.

With ``S`` the symmetric 0/1 adjacency without self-loops (an undirected store's edges; a
directed store's ``B + B^T``, ``B`` its 0/1 adjacency, entries 0..2), ``t = diag(S^3)``: per
vertex, the sum over its neighbours ``j`` (with multiplicity) of the common neighbours of the
two; for an undirected graph twice its triangles, for a directed one NetworkX's directed
triangle count (``networkx.clustering``). Vertex intervals are shards: the rows ``I`` of
shard ``a`` need ``S[I, J] @ S[J, :]`` for every shard ``b`` (rows ``J``), so a pass reads
shard ``a`` once and every shard after it, two shards in memory at a time (``S^2`` shard
reads for ``S`` shards). Not a GAS program: the intersection of two neighbour sets is not a
reduction of per-vertex scalars, so it runs on the CPU (scipy's sparse products).
"""
import numpy as np
from scipy import sparse


def _rows(store, i, side):
    """Shard ``i``'s ``side`` ("out" or "in") rows as a 0/1 CSR (local rows, all columns)
    without self-loops or repeated entries."""
    lo = int(store.intervals[i])
    indptr = store.read(i, f"{side}/indptr").astype(np.int64)
    far = store.read(i, f"{side}/{'dst' if side == 'out' else 'src'}").astype(np.int64)
    rows = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    keep = far != rows + lo
    m = sparse.csr_matrix((np.ones(int(keep.sum())), (rows[keep], far[keep])),
                          shape=(len(indptr) - 1, int(store.num_vertices)))
    m.sum_duplicates()
    m.data[:] = 1.0
    return m


def _symmetric(store, i, directed):
    """``S``'s rows of shard ``i``: out-rows (undirected), out- plus in-rows (directed)."""
    out = _rows(store, i, "out")
    return out if not directed else out + _rows(store, i, "in")


def triangle_counts(store, directed=None):
    """``(t, degree, mutual)`` per vertex (int64 arrays, internal order): ``t = diag(S^3)``
    (module docstring), ``degree`` the row sums of ``S`` (neighbours other than itself; a
    directed store: in plus out) and ``mutual`` the neighbours both ways (0 when undirected).
    ``directed``: read the store as directed (None: ``store.directed``)."""
    directed = store.directed if directed is None else directed
    n, shards = int(store.num_vertices), int(store.num_shards)
    t = np.zeros(n, np.int64)
    degree = np.zeros(n, np.int64)
    mutual = np.zeros(n, np.int64)
    for a in range(shards):
        lo, hi = int(store.intervals[a]), int(store.intervals[a + 1])
        if hi == lo:
            continue
        rows = _symmetric(store, a, directed)
        degree[lo:hi] = np.asarray(rows.sum(axis=1)).ravel().round().astype(np.int64)
        if directed:
            both = _rows(store, a, "out").multiply(_rows(store, a, "in"))
            mutual[lo:hi] = np.asarray(both.sum(axis=1)).ravel().round().astype(np.int64)
        acc = np.zeros(hi - lo)
        for b in range(shards):
            blo, bhi = int(store.intervals[b]), int(store.intervals[b + 1])
            if bhi == blo:
                continue
            block = rows[:, blo:bhi]
            if block.nnz == 0:
                continue
            other = rows if b == a else _symmetric(store, b, directed)
            acc += np.asarray((block @ other).multiply(rows).sum(axis=1)).ravel()
        t[lo:hi] = acc.round().astype(np.int64)
    return t, degree, mutual
