"""One direction's compressed layout on several threads: edges bucketed by ranges of their
primary vertex, each bucket sorted and split on its own thread.

The buckets are vertex ranges, so their sorted keys laid end to end are the whole sorted key
array: the result is exactly :func:`.layout.compress_pieces`'s, whatever the thread count (the
keys are the same values, and with weights each key holds its global edge index, so equal
pairs keep input order). numpy's sorts, comparisons, gathers and bincounts release the GIL,
so threads scale with the cores.

Working memory beyond the keys (8 B per edge) and the neighbour ids (the id dtype's bytes):
per piece in flight its bucket numbers (1-2 B per edge), their order (8 B) and its keys (8 B).
"""
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from .layout import _KEY_BITS, _as_u64, _bits, _drop_repeats, compress_pieces, low_ids

#: edges sampled to place the bucket bounds
SAMPLE_EDGES = 1 << 16
#: the vertex range is cut into at most ``2**BLOCK_BITS`` blocks, whole blocks to a bucket
BLOCK_BITS = 12
#: buckets per thread: smaller buckets even out the threads' work on skewed graphs
BUCKETS_PER_THREAD = 4
#: fewest edges that take the bucketed path (below it one sort on one thread is as quick)
MIN_PARALLEL_EDGES = 1 << 16


def compress_parallel(primaries, secondaries, num_vertices, id_dtype, dedup=False, weight=None,
                      threads=1, pool=None):
    """:func:`.layout.compress_pieces` (without ``order``) on ``threads`` threads.

    ``pool``: an executor to run the pieces and buckets on (one is made for the call when
    None). Falls back to ``compress_pieces`` itself for one thread, few edges, or keys that do
    not fit 64 bits with their edge index.
    """
    num_edges = sum(len(p) for p in primaries)
    indexed = weight is not None
    pbits = _bits(num_vertices)
    sbits = pbits if indexed else 32
    ibits = _bits(num_edges) if indexed and num_edges else 0
    if (threads <= 1 or num_edges < MIN_PARALLEL_EDGES or num_vertices > 1 << 32
            or pbits + sbits + ibits > _KEY_BITS):
        return compress_pieces(primaries, secondaries, num_vertices, id_dtype, dedup, weight)
    if pool is None:
        with ThreadPoolExecutor(threads, thread_name_prefix="grstream-layout") as own:
            return _bucketed(primaries, secondaries, num_vertices, id_dtype, dedup, weight,
                             threads, own, sbits, ibits)
    return _bucketed(primaries, secondaries, num_vertices, id_dtype, dedup, weight, threads,
                     pool, sbits, ibits)


def _bucketed(primaries, secondaries, n, id_dtype, dedup, weight, threads, pool, sbits, ibits):
    id_dtype = np.dtype(id_dtype)
    shift, table, cuts = _bucket_bounds(primaries, n, threads * BUCKETS_PER_THREAD)
    num_buckets = len(cuts) - 1
    starts = np.cumsum([0] + [len(p) for p in primaries[:-1]], dtype=np.int64)

    def bucket_numbers(primary):
        # a vertex block's bucket from a small table: cheaper than a search per edge
        numbers = np.take(table, np.right_shift(primary, shift))
        return numbers, np.bincount(numbers, minlength=num_buckets)

    labelled = list(pool.map(bucket_numbers, primaries))
    per_piece = np.array([c for _, c in labelled], dtype=np.int64).reshape(len(primaries),
                                                                           num_buckets)
    bucket_sizes = per_piece.sum(axis=0)
    bucket_start = np.zeros(num_buckets + 1, dtype=np.int64)
    np.cumsum(bucket_sizes, out=bucket_start[1:])
    # where each piece's edges of each bucket go: after the earlier pieces' edges of that bucket
    write_at = bucket_start[:-1] + np.cumsum(per_piece, axis=0) - per_piece
    key = np.empty(int(bucket_start[-1]), dtype=np.uint64)

    def scatter(k):
        numbers = labelled[k][0]
        primary, secondary = primaries[k], secondaries[k]
        part = np.left_shift(_as_u64(primary), np.uint64(sbits + ibits))
        if ibits:
            part |= np.left_shift(_as_u64(secondary), np.uint64(ibits))
            part |= np.arange(starts[k], starts[k] + len(part), dtype=np.uint64)
        else:
            part |= _as_u64(secondary)
        place_grouped(key, part, numbers, per_piece[k], write_at[k])

    list(pool.map(scatter, range(len(primaries))))
    del labelled
    counts = np.zeros(n, dtype=np.int64)
    neighbours = None if dedup else np.empty(len(key), dtype=id_dtype)
    weights_out = None if weight is None or dedup else np.empty(len(key), dtype=weight.dtype)

    def layout(b):
        lo, hi = int(cuts[b]), int(cuts[b + 1])
        part = key[bucket_start[b]:bucket_start[b + 1]]
        part.sort()
        w = None
        if ibits:
            positions = (part & np.uint64((1 << ibits) - 1)).view(np.int64)
            part >>= np.uint64(ibits)
            w = np.take(weight, positions)
            del positions
        if dedup:
            part, w, _ = _drop_repeats(part, w, None)
        # sorted primaries: the count of each vertex of the bucket from its keys' high bits
        counts[lo:hi] = np.bincount(
            (part >> np.uint64(sbits)).view(np.int64) - lo, minlength=hi - lo)[:hi - lo]
        ids = low_ids(part, sbits, id_dtype)
        if dedup:
            return ids.astype(id_dtype), w
        region = slice(int(bucket_start[b]), int(bucket_start[b + 1]))
        neighbours[region] = ids
        if w is not None:
            weights_out[region] = w
        return None

    pieces = list(pool.map(layout, range(num_buckets)))
    del key
    if dedup:
        neighbours = _concat([p[0] for p in pieces], id_dtype)
        weights_out = None if weight is None else _concat([p[1] for p in pieces], weight.dtype)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr, neighbours, weights_out


def place_grouped(target, values, numbers, sizes, write_at):
    """Copy ``values`` into ``target`` bucket by bucket: bucket ``b`` (``numbers`` holds each
    value's) gets its ``sizes[b]`` values, in their order, at ``write_at[b]``."""
    # a stable radix sort of the small bucket numbers keeps each bucket's input order
    grouped = np.take(values, np.argsort(numbers, kind="stable"))
    offset = 0
    for b in np.flatnonzero(sizes):
        size = int(sizes[b])
        target[write_at[b]:write_at[b] + size] = grouped[offset:offset + size]
        offset += size


def _concat(arrays, dtype):
    return np.concatenate(arrays) if arrays else np.empty(0, dtype=dtype)


def _bucket_bounds(primaries, n, count):
    """Buckets of whole vertex blocks (``2**shift`` vertices each) holding about equal edges,
    cut at the quantiles of a strided sample of the primary ids (the result never depends on
    where they fall). Returns ``shift``, the bucket of each block and the vertex cuts."""
    shift = max(0, _bits(n) - BLOCK_BITS)
    blocks = ((n - 1) >> shift) + 1
    total = sum(len(p) for p in primaries)
    step = max(1, total // SAMPLE_EDGES)
    sample = np.concatenate([p[::step] for p in primaries]) >> shift
    load = np.cumsum(np.bincount(sample, minlength=blocks))
    targets = np.arange(1, count) * (load[-1] / count)
    block_cuts = np.unique(np.concatenate(
        ([0, blocks], np.searchsorted(load, targets, side="left") + 1)))
    block_cuts = block_cuts[block_cuts <= blocks]
    label = np.uint8 if len(block_cuts) <= 257 else np.uint16
    table = np.repeat(np.arange(len(block_cuts) - 1, dtype=label), np.diff(block_cuts))
    cuts = np.minimum(block_cuts << shift, n)
    return shift, table, cuts


def executor(workers):
    """A thread pool of ``workers`` threads, or for 0 one whose ``submit`` runs the call at once
    on the caller's thread (a one-thread build keeps the same code path)."""
    return ThreadPoolExecutor(workers, thread_name_prefix="grstream-build") if workers else Inline()


class Inline:
    """The executor of no threads of its own (:func:`executor`)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, *args):
        future = Future()
        future.set_result(fn(*args))
        return future
