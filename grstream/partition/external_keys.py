"""The external build of edges without edge ids: sorted runs of packed keys on disk (with a
weight file beside them for weighted edges), gathered back one shard at a time."""
from collections import deque
from threading import Condition

import numpy as np

from ..readahead import read_ahead
from ..store import format as fmt
from .edge_chunks import DegreeCounter
from .layout import compress, compress_keys, pack_keys
from .weighted_keys import compress_weighted_keys, sorted_run
from . import renumber as renumbering
from .build_plan import SORT_VERTEX_BYTES, VERTEX_BYTES, plan_intervals, vertex_count
from .run_weights import narrowest
from .key_runs import KeyRuns
from .parallel_layout import executor
from .shard_output import (Result, encoded_side, finish_shard_writing_back, write_part,
                           write_vertex_data)

#: most vertices for packed keys: ids and ``hi << 32`` bounds below 2**64
KEY_ID_LIMIT = (1 << 32) - 1
#: store bytes written between two starts of their writeback to the disk


class WideIds(Exception):
    """An id does not fit a packed key's 32-bit half (or, weighted, a chunk's ids and edge
    indices do not fit the block sort of one run)."""


def build_keyed(plan, writer):
    """Edges without edge ids: one pass over the input writes sorted key runs (and their
    weights) and counts degrees; then each shard's keys are gathered from the runs, sorted
    and written."""
    counter = DegreeCounter()
    bucket_dir = plan.tmp_dir if plan.tmp_dir is not None else writer.path.parent
    weighted = plan.options.weighted
    runs = KeyRuns(bucket_dir, writer.path.name,
                   plan.options.weight_dtype if weighted else None)
    try:
        _write_runs(plan, runs, counter)
        renumbering.check_sparse(plan, counter)
        n = vertex_count(plan, len(counter.in_degree))
        if n > KEY_ID_LIMIT:
            raise WideIds()
        counter.grow(n)
        id_dtype = fmt.id_dtype_for(n)
        plan.keyed = True
        intervals, heavy = plan_intervals(plan, counter.in_degree, counter.out_degree, id_dtype)
        counts = {"in": _interval_sums(counter.in_degree, intervals),
                  "out": _interval_sums(counter.out_degree, intervals)}
        del counter
        result = Result(n, intervals, heavy, id_dtype)
        result.mode = "external"
        with plan.bar("writing", total=2 * (len(intervals) - 1), unit="shard sides") as bar:
            _write_keyed(plan, writer, result, runs, counts, bar)
    finally:
        plan.keyed = False
        runs.cleanup()
    write_vertex_data(writer, result, plan)
    return result


def sorting_chunks(threads):
    """Chunks whose runs sort at once (both directions of each on threads of their own)."""
    return max(1, threads // 2)


def _write_runs(plan, runs, counter):
    """Prepare each raw chunk (renumbered, doubled, ...) and sort its two runs on the pool,
    ``sorting_chunks`` chunks at once, and append the runs and count their degrees here, in
    input order (the runs' order is the input's)."""
    ahead = sorting_chunks(plan.threads)
    pending = deque()

    def chunk(src, dst, w):
        """Both runs of one raw chunk, the in-run sorted on a second thread, and the largest
        id + 1 (0 without edges)."""
        src, dst, w = plan.prepare(src, dst, w)
        if not len(src):
            return 0, None
        top = int(max(src.max(), dst.max())) + 1
        if top > KEY_ID_LIMIT:
            return top, None
        # narrower weights (:mod:`.run_weights`): fewer bytes to gather, write and read back
        w = None if w is None else narrowest(w)
        other = pool.submit(_counted_run, dst, src, w, top)
        return top, (_counted_run(src, dst, w, top), other.result())

    def finish():
        top, sides = pending.popleft().result()
        if not top:
            return
        renumbering.check_id_range(plan, VERTEX_BYTES, top)
        if top > KEY_ID_LIMIT:
            raise WideIds()
        counter.grow(top)
        for direction, degree, (key, weight, ids, counts) in zip(
                ("out", "in"), (counter.out_degree, counter.in_degree), sides):
            degree[ids] += counts
            runs.append(direction, key, weight)

    # a chunk's task waits for its second run: twice as many threads as chunks at once
    with plan.bar("reading + sorting runs") as bar, \
            executor(2 * ahead if plan.threads > 1 else 0) as pool:
        for src, dst, w in read_ahead(plan.raw_chunks()):
            bar.update(len(src))
            while len(pending) >= ahead:
                finish()
            pending.append(pool.submit(chunk, src, dst, w))
            del src, dst, w
        while pending:
            finish()


def _counted_run(primary, secondary, weight, top):
    """A sorted run (:func:`_sorted_run`) and its distinct primaries with their counts."""
    key, weight = _sorted_run(primary, secondary, weight, top)
    ids = np.right_shift(key, np.uint64(32)).view(np.int64)
    starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
    counts = np.diff(np.append(starts, len(ids)))
    return key, weight, ids[starts], counts


def _sorted_run(primary, secondary, weight=None, top=None):
    if weight is None:
        key = pack_keys(primary, secondary)
        key.sort()
        return key, None
    # weights follow a stable sort (equal keys in input order): the edge index rides in the
    # key, so the chunk's ids and index must fit the block sort
    run = sorted_run(primary, secondary, weight, top)
    if run is None:
        raise WideIds()
    return run


def _interval_sums(values, intervals):
    cumulative = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values, out=cumulative[1:])
    return cumulative[intervals[1:]] - cumulative[intervals[:-1]]


def shards_ahead(plan, counts, num_vertices):
    """Shards sorted ahead of the one being written: one, or with more threads as many as the
    memory limit holds at the largest shard's size (each side on a thread of its own)."""
    if plan.threads <= 1 or not len(counts["in"]):
        return 1
    largest = int((counts["in"] + counts["out"]).max()) * plan.sort_bytes_per_edge
    fit = (plan.memory_limit - SORT_VERTEX_BYTES * num_vertices) // max(1, largest)
    return int(max(1, min(sorting_chunks(plan.threads), fit - 1)))


def _write_keyed(plan, writer, result, runs, counts, bar):
    """The next shards' sides load and sort on the pool while shard ``i`` is written.

    A side's outputs (4 B ids per edge) wait for the writer while the next shard's sides sort
    (8 B keys and 4 B ids per edge): at most ``KEY_SORT_BYTES_PER_EDGE`` per edge of one
    shard, which the shard count keeps within the limit (:func:`shard_count`); more shards
    sort at once only where the limit holds them (:func:`shards_ahead`). A direction's runs
    are read through one cursor, so its sides load in shard order, one at a time.
    """
    intervals = result.intervals
    num_shards = len(intervals) - 1
    ahead = shards_ahead(plan, counts, result.num_vertices)
    turn = {"out": 0, "in": 0}
    turns = Condition()

    def load(direction, i, lo, hi):
        with turns:
            turns.wait_for(lambda: turn[direction] == i)
        try:
            return runs.load(direction, hi << 32, int(counts[direction][i]))
        finally:
            with turns:
                turn[direction] += 1
                turns.notify_all()

    def side(direction, i):
        # the keys are let go before the ids are encoded: an encoded side never beside them
        return encoded_side(plan, result.num_vertices, cut(direction, i))

    def cut(direction, i):
        lo, hi = int(intervals[i]), int(intervals[i + 1])
        keys = load(direction, i, lo, hi)
        if runs.weight_dtype is None:
            return compress_keys(keys, lo, hi, result.id_dtype, plan.dedup) + (None,)
        keys, weights = keys
        if plan.dedup:
            # numpy's minimum of 0.0 and -0.0 picks a different one in float16 than in float64:
            # the minimum of a repeated pair is taken in the store's dtype, as in memory
            weights = weights.astype(plan.options.weight_dtype, copy=False)
        parts = compress_weighted_keys(keys, weights, lo, hi, result.id_dtype, plan.dedup,
                                       result.num_vertices)
        if parts is None:
            # too wide for the block sort: the general path over the decoded ids
            primary = np.right_shift(keys, np.uint64(32)).view(np.int64)
            secondary = (keys & np.uint64(0xFFFFFFFF)).view(np.int64)
            parts = compress(primary, secondary, weights, lo, hi, result.num_vertices,
                             result.id_dtype, plan.dedup)
        # the runs' narrower weights convert back exactly
        return parts[:2] + (parts[2].astype(plan.options.weight_dtype, copy=False),)

    def submit(i):
        if i < num_shards:
            pending.append((pool.submit(side, "out", i), pool.submit(side, "in", i)))

    unsynced = 0
    pending = deque()
    with executor(2 * ahead if plan.threads > 1 else 0) as pool:
        for i in range(ahead):
            submit(i)
        for i in range(num_shards):
            lo, hi = int(intervals[i]), int(intervals[i + 1])
            out_parts, in_parts = (future.result() for future in pending.popleft())
            submit(i + ahead)
            nbytes = write_part(writer, result, plan, i, lo, hi, "out", out_parts)
            del out_parts
            bar.update(1)
            nbytes += write_part(writer, result, plan, i, lo, hi, "in", in_parts)
            del in_parts
            unsynced = finish_shard_writing_back(writer, result, i, lo, hi, nbytes, unsynced)
            bar.update(1)
