"""The in-memory build of edges without weights or edge ids, from packed keys.

Each chunk's two keys, ``src << 32 | dst`` (the CSR's order) and ``dst << 32 | src`` (the
CSC's), are made on the build's threads as the chunk is read, into two arrays of 8 B per edge;
the chunk is then let go. Both arrays are sorted at once (one thread each, or each cut into
key ranges sorted on several threads), the degrees are counted from the sorted keys, and each
shard's neighbour ids are cut from them while the previous shard is written. The input's
int64 pairs are never held: the build holds about the edge array's bytes, not two and a half
times them. The layouts are those of :func:`.layout.compress` (the same sorted keys), so the
store is the one the other paths write, for every thread count.

Renumbering (by default for sparse ids, or asked for) maps the sorted keys in place to the
positions of their ids among the ids that occur: the map is increasing, so they stay sorted.
The ids that occur come from the degrees over the input's ids where those arrays are small
beside the keys, else from the sorted keys' primaries; every pass over the keys (counts, ids,
lookups) runs slice by slice on the build's threads. Ids of 2**32 and beyond do not fit a key's half: the edges read so far are
then handed back as chunks (:class:`WideKeys`) for the general path.
"""
import numpy as np

from ..store import format as fmt
from ..store.labels import is_sparse
from .build_plan import plan_intervals, vertex_count
from .edge_chunks import without_repeats
from .layout import _drop_repeats
from .id_map import on_slices
from .parallel_layout import executor, place_grouped
from . import renumber as renumbering
from .shard_output import (Result, encoded_side, encoding_threads, finish_shard_writing_back,
                           write_part, write_vertex_data)

#: ids must lie below this to fit a key's 32-bit half
KEY_ID_LIMIT = 1 << 32
#: keys per slice of the passes that walk the sorted keys (bounded temporaries)
STEP = 1 << 22
#: buckets per thread of a sort on several threads (even out skewed key ranges)
BUCKETS_PER_THREAD = 4
#: keys each array holds first where the input does not declare its edge count; then it
#: grows by 1 / GROWTH of its size at a time (the last growth's unused part, zeroed, is
#: memory until the arrays shrink to the keys)
GROWN_KEYS = 1 << 23
GROWTH = 4
#: keys sampled to place a parallel sort's bucket bounds
SAMPLE_KEYS = 1 << 16
#: renumbering finds the ids that occur from degree arrays over the input's ids when these
#: (16 B per id up to the largest) take at most 16 B / this per key, else from the keys
COUNTED_IDS_PER_EDGE = 4
_SHIFT = np.uint64(32)
_LOW = np.uint64(0xFFFFFFFF)


class WideKeys(Exception):
    """An id does not fit a key: ``parts`` holds every chunk of the input, as read."""

    def __init__(self, parts):
        super().__init__()
        self.parts = parts


def applies(plan):
    """Unweighted edges without edge ids take this path."""
    return not plan.options.weighted and not plan.edge_ids


def build_from_keys(plan, writer):
    """Build the store from packed keys; raises :class:`WideKeys` for ids of 2**32 or more."""
    threads = max(1, plan.threads)
    forced = plan.renumber_from_keys
    auto = forced or renumbering.auto_applies(plan)
    with executor(threads if threads > 1 else 0) as pool:
        out_key, in_key = _read_keys(plan, pool, threads)

        def both(work):
            """``work(key, threads)`` of each direction, both at once: the CSC's on the pool,
            the CSR's here."""
            pending = pool.submit(work, in_key, threads // 2)
            return work(out_key, threads - threads // 2), pending.result()

        # each direction sorts on half the threads
        out_key, in_key = both(lambda key, part: _sort(key, part, pool))
        top = _top(out_key, in_key)
        counts = None
        if auto and (forced or len(out_key)):
            if top <= len(out_key) // COUNTED_IDS_PER_EDGE:
                # the ids with an edge, from the degrees over the input's ids
                counts = _counts(pool, (out_key, in_key), top)
                ids = np.flatnonzero((counts[0] > 0) | (counts[1] > 0))
            else:
                ids = _union(*_primaries(pool, (out_key, in_key)))
            if forced:
                renumbering.use_ids(plan, ids)
            elif is_sparse(top, len(ids)):
                renumbering.renumber_by_default(plan, ids, top)
            if plan.renumber:
                _renumber_sorted(pool, (out_key, in_key), plan.options.id_map)
                counts = None if counts is None else (counts[0][ids], counts[1][ids])
                top = len(ids)
            del ids
        n = vertex_count(plan, top)
        plan.vertices.check(n)
        id_dtype = fmt.id_dtype_for(n)
        if counts is None or len(counts[0]) != n:
            counts = _counts(pool, (out_key, in_key), n)
        out_degree, in_degree = counts
        del counts
        if plan.dedup:
            # intervals are balanced on the counts before repeated pairs are dropped
            out_key, in_key = both(lambda key, _: _drop_repeats(key, None, None)[0])
            offsets = [_offsets(c) for c in _counts(pool, (out_key, in_key), n)]
        else:
            offsets = _offsets(out_degree), _offsets(in_degree)
    intervals, heavy = plan_intervals(plan, in_degree, out_degree, id_dtype)
    del in_degree, out_degree
    result = Result(n, intervals, heavy, id_dtype)
    result.mode = "in-memory"
    _write(plan, writer, result, (out_key, in_key), offsets, threads)
    write_vertex_data(writer, result, plan)
    return result


def _read_keys(plan, pool, threads):
    """Both key arrays of the prepared chunks (the reader's pieces, any size), in input order;
    chunks keyed on the pool into two arrays, which grow in place where the input does not
    declare its edge count (:func:`_grow`)."""
    capacity = _capacity(plan)
    size = GROWN_KEYS if capacity is None else capacity
    arrays = (np.empty(size, dtype=np.uint64), np.empty(size, dtype=np.uint64))
    pending = []
    used = 0
    chunks = plan.prepared_chunks(even=False)
    with plan.bar("reading") as bar:
        for src, dst, _ in chunks:
            bar.update(len(src))
            if not len(src):
                continue
            if int(max(src.max(), dst.max())) >= KEY_ID_LIMIT:
                for future in pending:
                    future.result()
                raise WideKeys(_decoded(arrays[0][:used]) + [(src, dst, None)] + list(chunks))
            if used + len(src) > len(arrays[0]):
                for future in pending:      # no view of the arrays may outlive their growth
                    future.result()
                pending.clear()
                _grow(arrays, max(len(arrays[0]) + len(arrays[0]) // GROWTH, used + len(src)))
            targets = arrays[0][used:used + len(src)], arrays[1][used:used + len(src)]
            used += len(src)
            while len(pending) >= threads:
                pending.pop(0).result()
            pending.append(pool.submit(_pack, src, dst, targets))
            del src, dst, targets
        for future in pending:
            future.result()
        del pending
    if used < len(arrays[0]):
        _grow(arrays, used)     # gives back the pages past the keys
    return arrays


def _grow(arrays, size):
    """Resize each of ``arrays`` (no view of them alive) to ``size`` in place: a large block's
    ``realloc`` remaps its pages, so the keys written are neither copied nor touched again
    (numpy zeroes what is added)."""
    for key in arrays:
        key.resize(size, refcheck=False)


def _capacity(plan):
    """Most prepared edges of an input that declares its edge count (``.npy``), else None."""
    rows = plan.edges.meta.get("edges") if plan.edges.format == "npy" else None
    if rows is None:
        return None
    both = plan.options.undirected and not plan.options.both_ways_in_input
    return int(rows) * (2 if both else 1)


def _pack(src, dst, targets):
    for primary, secondary, key in ((src, dst, targets[0]), (dst, src, targets[1])):
        np.left_shift(primary.view(np.uint64), _SHIFT, out=key)
        key |= secondary.view(np.uint64)


def _decoded(key):
    """Chunks ``(src, dst, None)`` of CSR keys in input order (for :class:`WideKeys`)."""
    return [(np.right_shift(key[i:i + STEP], _SHIFT).view(np.int64),
             (key[i:i + STEP] & _LOW).view(np.int64), None) for i in range(0, len(key), STEP)]


def _sort(key, threads, pool):
    """``key`` sorted: in place on one thread; else cut into key ranges (at the quantiles of a
    sample) gathered into a new array and sorted range by range on the pool."""
    if threads <= 1 or len(key) < SAMPLE_KEYS:
        key.sort()
        return key
    sample = np.sort(key[::max(1, len(key) // SAMPLE_KEYS)])
    count = threads * BUCKETS_PER_THREAD
    bounds = np.unique(sample[(np.arange(1, count) * len(sample)) // count])
    slices = [slice(s, min(s + STEP, len(key))) for s in range(0, len(key), STEP)]

    def label(part):
        buckets = np.searchsorted(bounds, key[part], side="right").astype(np.uint16)
        return buckets, np.bincount(buckets, minlength=len(bounds) + 1)

    labels = list(pool.map(label, slices))
    per_slice = np.array([c for _, c in labels], dtype=np.int64)
    starts = np.zeros(per_slice.shape[1] + 1, dtype=np.int64)
    np.cumsum(per_slice.sum(axis=0), out=starts[1:])
    write_at = starts[:-1] + np.cumsum(per_slice, axis=0) - per_slice
    out = np.empty_like(key)

    list(pool.map(lambda k: place_grouped(out, key[slices[k]], labels[k][0], per_slice[k],
                                          write_at[k]), range(len(slices))))
    del labels, key
    list(pool.map(lambda b: out[starts[b]:starts[b + 1]].sort(), range(len(starts) - 1)))
    return out


def _top(out_key, in_key):
    """The largest id + 1 of sorted keys (0 without edges)."""
    if not len(out_key):
        return 0
    return int(max(out_key[-1] >> _SHIFT, in_key[-1] >> _SHIFT)) + 1


def _primaries(pool, keys):
    """The distinct primary ids of each of the sorted ``keys``, increasing (slices on the pool)."""
    def distinct(part):
        return without_repeats(np.right_shift(part, _SHIFT).view(np.int64))

    return [without_repeats(np.concatenate(found)) if found else np.empty(0, dtype=np.int64)
            for found in on_slices(pool, distinct, keys, STEP)]


def _union(a, b):
    both = np.concatenate((a, b))
    both.sort()
    return without_repeats(both)


def _renumber_sorted(pool, keys, id_map):
    """Replace both halves of the sorted ``keys`` by their ids' positions (in place, slices on
    the pool; the map is increasing, so the keys stay sorted)."""
    def renumber(part):
        low = id_map.unsigned((part & _LOW).view(np.int64))
        np.left_shift(id_map.unsigned(np.right_shift(part, _SHIFT).view(np.int64)), _SHIFT,
                      out=part)
        part |= low

    on_slices(pool, renumber, keys, STEP)


def _counts(pool, keys, n):
    """Edges per primary id of each of the sorted ``keys``, ids below ``n`` (slices counted on
    the pool; each slice's ids are sorted, so it counts a short range)."""
    def count(part):
        ids = np.right_shift(part, _SHIFT).view(np.int64)
        first = int(ids[0])
        ids -= first
        return first, np.bincount(ids)

    out = []
    for found in on_slices(pool, count, keys, STEP):
        counts = np.zeros(n, dtype=np.int64)
        for first, part in found:
            counts[first:first + len(part)] += part
        out.append(counts)
    return out


def _offsets(counts):
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr


def _side(key, indptr, lo, hi, id_dtype):
    """One shard side: local offsets and neighbour ids (new contiguous arrays)."""
    start, stop = int(indptr[lo]), int(indptr[hi])
    part = key[start:stop]
    if id_dtype.itemsize == 4:
        ids = part.view(np.uint32)[0 if np.little_endian else 1::2].astype(id_dtype)
    else:
        ids = (part & _LOW).astype(id_dtype)
    return indptr[lo:hi + 1] - start, ids, None


def _write(plan, writer, result, keys, offsets, threads):
    """Write every shard, the next shard's sides cut from the keys (and encoded, where the
    store is compressed) on other threads: one, or one per side with more than two."""
    intervals = result.intervals
    num_shards = len(intervals) - 1

    def side(i, key, indptr):
        lo, hi = int(intervals[i]), int(intervals[i + 1])
        return encoded_side(plan, result.num_vertices,
                            _side(key, indptr, lo, hi, result.id_dtype), ranges)

    def submit(i):
        return [pool.submit(side, i, key, indptr) for key, indptr in zip(keys, offsets)]

    with plan.bar("writing", total=num_shards, unit="shards") as bar, \
            executor(min(2, threads - 1)) as pool, encoding_threads(plan) as ranges:
        ahead = submit(0) if num_shards else None
        unsynced = 0
        for i in range(num_shards):
            lo, hi = int(intervals[i]), int(intervals[i + 1])
            out_side, in_side = (future.result() for future in ahead)
            if i + 1 < num_shards:
                ahead = submit(i + 1)
            nbytes = write_part(writer, result, plan, i, lo, hi, "out", out_side)
            nbytes += write_part(writer, result, plan, i, lo, hi, "in", in_side)
            del out_side, in_side
            unsynced = finish_shard_writing_back(writer, result, i, lo, hi, nbytes, unsynced)
            bar.update(1)
