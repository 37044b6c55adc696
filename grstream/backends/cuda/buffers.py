"""The GPU executor's static device buffers and their bytes, free of CUDA calls so CI can test them.

GraphReduce Eq. 1: the device holds the static vertex state (every field twice: the values gather
reads and the values apply writes, degrees, two frontier bitmaps, the accumulator, the changed
flags, hoisted messages, mutable edge state) whatever the budget; the engine's memory model
(grstream/engine/memory.py) spends the rest on streaming slots and resident shards.
"""
import numpy as np

ALIGN = 256  # every device sub-array starts on a 256-byte boundary (coalescing, 16-byte loads)
#: bytes kept free below the device's free memory when no budget is given (context, modules,
#: library workspaces and fragmentation).
DEFAULT_MARGIN = 1 << 30


def push_degree_words(degree):
    """Each vertex's push degree as the kernels read it: unsigned 32-bit (it only feeds the
    walked-edge counters of the direction rule, and 4 bytes a vertex is what the device keeps),
    saturated at 2**32 - 1 rather than wrapped for a vertex with more edges."""
    out = np.empty(np.shape(degree), np.uint32)   # one pass, no int64 temporary
    np.minimum(degree, np.iinfo(np.uint32).max, out=out, casting="unsafe")
    return out


def align(nbytes):
    return (int(nbytes) + ALIGN - 1) // ALIGN * ALIGN


def lane_bytes(per_lane, lanes):
    """Bytes of ``lanes`` copies of a per-lane array of ``per_lane`` bytes, each aligned (the
    lane-major arrays of lane_runs.LaneRuns)."""
    return align(max(int(per_lane), 1)) * max(int(lanes), 1)


def static_buffers(n, field_dtypes, degrees, msg_itemsize, max_interval, num_shards, hoisted,
                   agg_itemsizes=(), acc_vertices=None, table_bytes=0, edge_state=None,
                   num_edges=0, permuted=(), max_in=0, push_id_itemsize=0, changed_sets=False,
                   lanes=None, args_itemsize=0):
    """Name -> bytes of every device buffer the GPU path allocates at setup and keeps for the run
    (GraphReduce Eq. 1): the state that stays resident whatever the budget. Each buffer appears
    once; the backend allocates exactly these.

    ``field_dtypes`` maps vertex fields to dtypes (lists are numbered), ``degrees`` names the degree
    arrays read; the accumulator covers one interval, or ``acc_vertices`` vertices when given
    (dense programs keep one message per vertex so that a single apply launch follows every
    shard's gather). ``table_bytes`` is the multi-shard gather tables' region; ``edge_state`` maps
    mutable edge properties to dtypes (twice ``num_edges`` each, and one shard's ``max_in``
    in-edges for those in ``permuted``). ``push_id_itemsize`` > 0 (the vertex-id size) adds the
    buffers of push plans: a per-vertex accumulator, the touched bitmap, two changed bitmaps
    (this iteration's and the previous one's), the degree each changed vertex pushes over, the
    changed queue, the per-shard queue cursors and the hub list of the push kernels
    (push_kernels.HUB_CAP rows). ``changed_sets``: the two changed bitmaps without the rest of
    push's buffers (a gather_from "changed" program gathers from the previous iteration's).
    ``lanes`` (Session.run_lanes): the per-instance arrays (fields, frontier bitmaps,
    accumulator, changed flags, hoisted messages) once per lane, each copy aligned
    (lane_runs.LaneRuns), and a table of every lane's ``args_itemsize``-byte kernel arguments.
    """
    from .push_kernels import HUB_CAP
    from .skeletons import AGG_BLOCKS
    if not isinstance(field_dtypes, dict):
        field_dtypes = {f"field{k}": dt for k, dt in enumerate(field_dtypes)}
    if not isinstance(degrees, (list, tuple)):
        degrees = [f"degree{k}" for k in range(int(degrees))]
    n, S = int(n), int(num_shards)
    words = (n + 31) // 32
    out = {}

    def each(nbytes):   # one per lane (lanes: each aligned), else exactly nbytes
        return nbytes if lanes is None else lane_bytes(nbytes, lanes)
    for f, dt in field_dtypes.items():
        out[f"cur {f}"] = out[f"nxt {f}"] = each(n * np.dtype(dt).itemsize)
    for d in degrees:
        out[d] = 8 * n
    out["frontier 0"] = out["frontier 1"] = each(4 * max(words, 1))
    acc = max_interval if acc_vertices is None else max(int(acc_vertices), max_interval)
    out["accumulator"] = each(msg_itemsize * max(acc, 1))
    out["changed flags"] = each(max(max_interval, 1))
    if hoisted:
        out["hoisted messages"] = each(msg_itemsize * n)
    if lanes is not None:
        out["lane arguments"] = int(args_itemsize) * int(lanes)
    out["intervals"] = 8 * (S + 1)
    # 3 counters, then 8 bytes per aggregate, then the active and the changed vertices of each shard
    out["readback block"] = 8 * (3 + len(agg_itemsizes) + 2 * max(S, 1))
    for k, _ in enumerate(agg_itemsizes):
        out[f"aggregate partials {k}"] = 8 * AGG_BLOCKS
    if table_bytes:
        out["shard tables"] = int(table_bytes)
    if push_id_itemsize:
        out["push accumulator"] = msg_itemsize * max(n, 1)
        out["touched"] = out["changed 0"] = out["changed 1"] = 4 * max(words, 1)
        out["push degree"] = 4 * max(n, 1)
        out["changed queue"] = int(push_id_itemsize) * max(n, 1)
        out["push cursors"] = 8 * max(S, 1)
        out["hub rows"] = 8 * (1 + 4 * HUB_CAP)   # a counter, then (vertex, beg, end, table row)
    elif changed_sets:
        out["changed 0"] = out["changed 1"] = 4 * max(words, 1)
    for p, dt in (edge_state or {}).items():
        size = np.dtype(dt).itemsize
        out[f"edge state {p}"] = out[f"edge state {p} (next)"] = int(num_edges) * size
        if p in permuted:
            out[f"edge state {p} (CSC)"] = max(int(max_in), 1) * size
    return out


def vertex_state_bytes(*args, **kwargs):
    """Device bytes of :func:`static_buffers` (same arguments), each aligned as allocated."""
    return int(sum(align(max(b, 1)) for b in static_buffers(*args, **kwargs).values()))


def bitmap_words(ids, n):
    """The device bitmap of ``n`` bits (vertex v: bit v & 31 of word v >> 5, as the kernels'
    ``gr_mark`` sets it) with the sorted ``ids`` set, as host uint32 words."""
    mask = np.zeros(((n + 31) // 32) * 32, dtype=bool)
    mask[np.asarray(ids, dtype=np.int64)] = True
    return np.packbits(mask, bitorder="little").view(np.uint32)


def bitmap_ids(words, n):
    """The sorted int64 ids of the bits set among the first ``n`` of host ``words`` (uint32)."""
    bits = np.unpackbits(np.ascontiguousarray(words, dtype=np.uint32).view(np.uint8), count=n,
                         bitorder="little")
    return np.flatnonzero(bits).astype(np.int64)
