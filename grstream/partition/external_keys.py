"""The external build of edges without edge ids: sorted runs of packed keys on disk (with a
weight file beside them for weighted edges), gathered back one shard at a time."""
from collections import deque
from concurrent.futures import wait
from threading import Condition, Lock

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
    """Each raw chunk's whole work on the pool, ``sorting_chunks`` chunks at once: prepared
    (renumbered, doubled, ...), its two runs sorted (the in-run on a second thread), their
    degrees counted and the runs written. This thread only reads ahead and hands chunks out.

    The runs take their places in the files in input order (:class:`.key_runs.KeyRuns`
    reserves them one chunk after another, :class:`_Turns`); the writes themselves run at once
    on the chunks' threads, the degree counts one chunk at a time (under a lock). Errors are
    raised in input order: the first chunk's in input order that failed.
    """
    ahead = sorting_chunks(plan.threads)
    pending = deque()
    turns = _Turns()
    counting = Lock()

    def chunk(k, src, dst, w):
        sides, top = _sorted_sides(plan, pool, src, dst, w)
        del src, dst, w
        with counting:   # (the counter grown to the chunk's largest id + 1 first)
            counter.grow(top)
            for degree, (_, _, ids, counts) in zip((counter.out_degree, counter.in_degree), sides):
                degree[ids] += counts
        # a failed chunk takes no turn: the later ones wait until its error stops the pass
        places = turns.take(k, lambda: [runs.reserve(direction, key, weight)
                                        for direction, (key, weight, _, _) in zip(("out", "in"), sides)])
        for place, (key, _, _, _) in zip(places, sides):
            runs.write(place, key)

    # a chunk's task waits for its second run: twice as many threads as chunks at once
    with plan.bar("reading + sorting runs") as bar, \
            executor(2 * ahead if plan.threads > 1 else 0) as pool:
        try:
            for k, (src, dst, w) in enumerate(read_ahead(plan.raw_chunks())):
                bar.update(len(src))
                while len(pending) >= ahead:
                    pending.popleft().result()
                pending.append(pool.submit(chunk, k, src, dst, w))
                del src, dst, w
            while pending:
                pending.popleft().result()
        finally:
            if pending:     # an error: the chunks still running end before the runs go
                turns.stop()
                wait([future for future in pending if not future.cancel()])


def _sorted_sides(plan, pool, src, dst, w):
    """One raw chunk prepared (the targets' lookups on ``pool``), its out- and in-run sorted
    (the in-run on ``pool``) with their distinct primaries and counts, and its largest id + 1:
    ``(sides, top)``; no sides for a chunk left empty."""
    src, dst, w = plan.prepare(src, dst, w, pool)
    if not len(src):
        return (), 0
    top = int(max(src.max(), dst.max())) + 1
    renumbering.check_id_range(plan, VERTEX_BYTES, top)
    if top > KEY_ID_LIMIT:
        raise WideIds()
    # narrower weights (:mod:`.run_weights`): fewer bytes to gather, write and read back
    w = None if w is None else narrowest(w)
    other = pool.submit(_counted_run, dst, src, w, top)
    try:
        out_side = _counted_run(src, dst, w, top)
    finally:
        in_side = other.result()
    return (out_side, in_side), top


class _Turns:
    """Chunks reserve their runs' places one after another in input order: chunk ``k``'s
    turn comes once chunk ``k - 1`` has had its own; :meth:`stop` ends every wait (the pass
    failed: nothing more is placed)."""

    def __init__(self):
        self._next = 0
        self._stopped = False
        self._cond = Condition()

    def take(self, k, reserve):
        """``reserve()`` in chunk ``k``'s turn, its result; ``[]`` once stopped."""
        with self._cond:
            self._cond.wait_for(lambda: self._next == k or self._stopped)
            if self._stopped:
                return []
            try:
                return reserve()
            finally:
                self._next = k + 1
                self._cond.notify_all()

    def stop(self):
        with self._cond:
            self._stopped = True
            self._cond.notify_all()


def _counted_run(primary, secondary, weight, top):
    """A sorted run (:func:`sorted_key_run`) and its distinct primaries with their counts."""
    key, weight = sorted_key_run(primary, secondary, weight, top)
    ids = np.right_shift(key, np.uint64(32)).view(np.int64)
    starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
    counts = np.diff(np.append(starts, len(ids)))
    return key, weight, ids[starts], counts


def sorted_key_run(primary, secondary, weight=None, top=None):
    """The edges' packed keys sorted, and their weights in the same order."""
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
        # the buffer's page faults before the turn, the read stretches' releases after it:
        # a direction's loads in turn only read
        count = int(counts[direction][i])
        buffer, punches = runs.buffer(count), []
        with turns:
            turns.wait_for(lambda: turn[direction] == i)
        try:
            keys = runs.load(direction, hi << 32, count, buffer, punches)
        finally:
            with turns:
                turn[direction] += 1
                turns.notify_all()
        runs.punch(punches)
        return keys

    def side(direction, i):
        # the keys are let go before the ids are encoded: an encoded side never beside them
        return encoded_side(plan, result.num_vertices, cut(direction, i))

    def cut(direction, i):
        lo, hi = int(intervals[i]), int(intervals[i + 1])
        return keyed_side(plan, load(direction, i, lo, hi), runs.weight_dtype is not None,
                          lo, hi, result.id_dtype, result.num_vertices)

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


def keyed_side(plan, loaded, weighted, lo, hi, id_dtype, num_vertices):
    """One shard side ``(indptr, ids, weights or None)`` from the keys of its vertices
    ``[lo, hi)`` loaded from key runs (:meth:`.KeyRuns.load`: the keys, or ``(keys, weights)``
    where ``weighted``)."""
    if not weighted:
        return compress_keys(loaded, lo, hi, id_dtype, plan.dedup) + (None,)
    keys, weights = loaded
    if plan.dedup:
        # numpy's minimum of 0.0 and -0.0 picks a different one in float16 than in float64:
        # the minimum of a repeated pair is taken in the store's dtype, as in memory
        weights = weights.astype(plan.options.weight_dtype, copy=False)
    parts = compress_weighted_keys(keys, weights, lo, hi, id_dtype, plan.dedup, num_vertices)
    if parts is None:
        # too wide for the block sort: the general path over the decoded ids
        primary = np.right_shift(keys, np.uint64(32)).view(np.int64)
        secondary = (keys & np.uint64(0xFFFFFFFF)).view(np.int64)
        parts = compress(primary, secondary, weights, lo, hi, num_vertices, id_dtype,
                         plan.dedup)
    # the runs' narrower weights convert back exactly
    return parts[:2] + (parts[2].astype(plan.options.weight_dtype, copy=False),)
