"""Compaction of one shard: only the active vertices' rows, for the "compact" transfer.

A compacted shard keeps the layout every kernel already reads: each ``indptr`` array stays full
length (one row per vertex of the interval), inactive vertices' rows become empty, and the edge
arrays (neighbour ids, properties) hold only the active rows' edges, in row order. So a gather,
an apply (which counts the active vertices' edges), an activation or a push over changed vertices
(a subset of the active ones in a pull plan) sees exactly what it would see in the whole shard,
and no kernel needs a variant. Programs whose edges carry positions (mutable edge state: edge
ids, global CSR offsets) are never compacted (the planner's rule, grstream/engine/planner.py).

A compressed store's ids held as their parts (docs/FORMAT.md, "Compressed ids": the GPU's
regions) are packed by decoding only the blocks that hold the active rows' edges (a row decodes
from its own blocks, found by its positions) and encoding the packed ids again
(:func:`pack_ids`): the result is the compressed form of the packed id array, which the kernels
decode as they decode a whole shard. Where that encoding would not fit the room of the shard's
own parts (a packed block may compress worse than the blocks it came from), the direction is
written whole instead: its rows keep their edges, as a copy's do.

Both executors use :func:`pack`: the CPU one into a scratch buffer, the CUDA one into pinned
staging from its read-ahead thread, overlapped with the other units' copies.
"""
import numpy as np

from .schedule import logical_name


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


def pack_ids(parts, positions, num_vertices):
    """The compressed parts of the ids at the sorted edge ``positions`` of the compressed ids
    ``parts`` (``{"offsets", "masks", "widths", "words"}``): only the blocks holding them are
    decoded."""
    from ..store import codec
    from ..store.decode import decode_ids
    from ..store.encode import encode_ids
    block = positions // codec.BLOCK
    first = np.ones(len(block), dtype=bool)
    first[1:] = block[1:] != block[:-1]
    blocks = block[first]
    offsets = np.asarray(parts["offsets"], dtype=np.int64)
    lengths = offsets[blocks + 1] - offsets[blocks]
    starts = np.zeros(len(blocks) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    words = np.asarray(parts["words"])[np.repeat(offsets[blocks] - starts[:-1], lengths)
                                       + np.arange(int(starts[-1]), dtype=np.int64)]
    sub = {"offsets": starts.astype(np.uint32), "masks": np.asarray(parts["masks"])[blocks],
           "widths": np.asarray(parts["widths"])[blocks], "words": words}
    decoded = decode_ids(sub, len(blocks) * codec.BLOCK, num_vertices, np.int64)
    # edge e is lane e % BLOCK of its block's place among the decoded blocks
    rank = np.cumsum(first) - 1
    return encode_ids(decoded[rank * codec.BLOCK + positions % codec.BLOCK], num_vertices).parts


def _pack_coded(arrays, names, coded, positions, out, num_vertices):
    """Write the compressed id parts ``coded`` of one direction's edges at ``positions``
    (:func:`pack_ids`); returns (bytes written, whole): ``whole`` where the encoding outgrew
    the shard's own parts and every array of the direction (``names``) went whole instead."""
    part = {n: n.rpartition(".")[2] for n in coded}
    packed = pack_ids({part[n]: arrays[n] for n in coded}, positions, num_vertices)
    whole = any(len(packed[part[n]]) > len(arrays[n]) for n in coded)
    nbytes = 0
    for n in (names if whole else coded):
        src = arrays[n] if whole else packed[part[n]]
        dst = out(n, len(src), arrays[n].dtype)
        dst[...] = src
        nbytes += dst.nbytes
    return nbytes, whole


def pack(arrays, names, rows, out, parts=1, run=None, num_vertices=None):
    """Write the compacted shard of ``arrays`` (name -> the whole shard's array) into ``out``.

    ``rows``: the active vertices' local rows, sorted. ``out(name, length, dtype)`` returns the
    array to write dataset ``name`` into (a view of staging memory). Returns the bytes written.
    ``parts`` > 1 splits each direction's rows into that many pieces of about equal edges, each
    gathering a contiguous range of the output; ``run(fn, items)`` runs ``fn`` over them (a
    thread pool's ``map``: numpy's ``take`` releases the GIL), default one after the other.
    ``num_vertices``: the store's, where ``names`` hold compressed id parts (module docstring).
    """
    nbytes = 0
    for d in sorted({n.split("/", 1)[0] for n in names}):
        indptr = np.asarray(arrays[f"{d}/indptr"])
        coded = [n for n in names if n.split("/", 1)[0] == d and logical_name(n) != n]
        if coded:
            written, whole = _pack_coded(arrays, [n for n in names if n.split("/", 1)[0] == d], coded,
                                         edge_positions(indptr, rows)[0], out, num_vertices)
            nbytes += written
            if whole:
                continue
        counts = indptr[rows + 1] - indptr[rows]
        new = out(f"{d}/indptr", len(indptr), np.int64)
        new[...] = 0
        new[rows + 1] = counts
        np.cumsum(new, out=new)
        nbytes += new.nbytes
        total = int(new[-1])
        edge_names = [n for n in names if n.split("/", 1)[0] == d and not n.endswith("/indptr")
                      and n not in coded]
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
