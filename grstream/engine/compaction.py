"""Compaction of one shard: only the active vertices' rows, for the "compact" transfer.

A compacted shard keeps the layout every kernel already reads: each ``indptr`` array stays full
length (one row per vertex of the interval), inactive vertices' rows become empty, and the edge
arrays (neighbour ids, properties) hold only the active rows' edges, in row order. So a gather,
an apply (which counts the active vertices' edges), an activation or a push over changed vertices
(a subset of the active ones in a pull plan) sees exactly what it would see in the whole shard,
and no kernel needs a variant. Programs whose edges carry positions (mutable edge state: edge
ids, global CSR offsets) are never compacted (the planner's rule, grstream/engine/planner.py).

Both executors use :func:`pack`: the CPU one into a scratch buffer, the CUDA one into pinned
staging from its read-ahead thread, overlapped with the other units' copies.
"""
import numpy as np


def rows_of(ids, lo, hi):
    """The sorted global ids ``ids`` inside [lo, hi), as local rows (int64)."""
    a, b = np.searchsorted(ids, (lo, hi))
    return np.asarray(ids[a:b], dtype=np.int64) - lo


def edge_positions(indptr, rows):
    """Positions of the edges of ``rows`` (local, sorted) in row order, and their counts."""
    begin = indptr[rows]
    counts = indptr[rows + 1] - begin
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64), counts
    offsets = np.zeros(len(rows), dtype=np.int64)
    np.cumsum(counts[:-1], out=offsets[1:])
    # edge k of row j sits at begin[j] + (k - offsets[j])
    return np.repeat(begin - offsets, counts) + np.arange(total, dtype=np.int64), counts


def pack(arrays, names, rows, out, parts=1, run=None):
    """Write the compacted shard of ``arrays`` (name -> the whole shard's array) into ``out``.

    ``rows``: the active vertices' local rows, sorted. ``out(name, length, dtype)`` returns the
    array to write dataset ``name`` into (a view of staging memory). Returns the bytes written.
    ``parts`` > 1 splits each direction's rows into that many pieces of about equal edges, each
    gathering a contiguous range of the output; ``run(fn, items)`` runs ``fn`` over them (a
    thread pool's ``map``: numpy's ``take`` releases the GIL), default one after the other.
    """
    nbytes = 0
    for d in sorted({n.split("/", 1)[0] for n in names}):
        indptr = np.asarray(arrays[f"{d}/indptr"])
        counts = indptr[rows + 1] - indptr[rows]
        new = out(f"{d}/indptr", len(indptr), np.int64)
        new[...] = 0
        new[rows + 1] = counts
        np.cumsum(new, out=new)
        nbytes += new.nbytes
        total = int(new[-1])
        edge_names = [n for n in names if n.split("/", 1)[0] == d and not n.endswith("/indptr")]
        dests = {n: out(n, total, arrays[n].dtype) for n in edge_names}
        nbytes += sum(v.nbytes for v in dests.values())
        if not len(rows) or not edge_names:
            continue
        # row pieces of about equal edges: piece k covers rows[cut[k]:cut[k + 1]]
        k = max(1, min(int(parts), len(rows)))
        ends = new[rows + 1]
        cut = np.searchsorted(ends, total * np.arange(1, k) / k, side="left") if k > 1 else []
        bounds = [0] + sorted(set(int(c) for c in cut if 0 < c < len(rows))) + [len(rows)]

        def gather(span, indptr=indptr, dests=dests, new=new):
            r = rows[span[0]:span[1]]
            sel, _ = edge_positions(indptr, r)
            at = int(new[r[0]])
            for n, dst in dests.items():
                np.take(arrays[n], sel, out=dst[at:at + len(sel)])
        spans = list(zip(bounds, bounds[1:]))
        for _ in (run or map)(gather, spans):
            pass
    return nbytes
