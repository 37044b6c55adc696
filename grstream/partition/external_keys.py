"""The external build of unweighted edges without edge ids: sorted runs of packed keys on disk,
gathered back one shard at a time."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..readahead import read_ahead
from ..store import format as fmt
from .edges import DegreeCounter
from .layout import compress_keys, count_into, pack_keys
from . import renumber as renumbering
from .plan import VERTEX_BYTES, plan_intervals, vertex_count
from .runs import KeyRuns
from .shard_output import Result, finish_shard, write_part, write_vertex_data

#: most vertices for packed keys: ids and ``hi << 32`` bounds below 2**64
KEY_ID_LIMIT = (1 << 32) - 1


class WideIds(Exception):
    """An id does not fit a packed key's 32-bit half."""


def build_keyed(plan, writer):
    """Unweighted edges without edge ids: one pass over the input writes sorted key runs and
    counts degrees; then each shard's keys are gathered from the runs, sorted and written."""
    counter = DegreeCounter()
    bucket_dir = plan.tmp_dir if plan.tmp_dir is not None else writer.path.parent
    runs = KeyRuns(bucket_dir, writer.path.name)
    try:
        with plan.bar("reading + sorting runs") as bar, ThreadPoolExecutor(1) as pool:
            for src, dst, _ in read_ahead(plan.prepared_chunks(bar)):
                if len(src) == 0:
                    continue
                top = int(max(src.max(), dst.max())) + 1
                renumbering.check_id_range(plan, VERTEX_BYTES, top)
                if top > KEY_ID_LIMIT:
                    raise WideIds()
                counter.grow(top)
                # each direction packs, sorts, counts and writes its run on its own thread
                pending = pool.submit(_run, runs, "out", src, dst, counter.out_degree)
                _run(runs, "in", dst, src, counter.in_degree)
                pending.result()
                del src, dst, pending
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


def _run(runs, direction, primary, secondary, degree):
    key = pack_keys(primary, secondary)
    key.sort()
    # sorted primaries make the counting pass sequential
    count_into(degree, np.right_shift(key, np.uint64(32)).view(np.int64))
    runs.append(direction, key)


def _interval_sums(values, intervals):
    cumulative = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values, out=cumulative[1:])
    return cumulative[intervals[1:]] - cumulative[intervals[:-1]]


def _write_keyed(plan, writer, result, runs, counts, bar):
    """Shard ``i + 1``'s two sides load and sort on two threads while shard ``i`` is written.

    A side's outputs (4 B ids per edge) wait for the writer while the next shard's sides sort
    (8 B keys and 4 B ids per edge): at most ``KEY_SORT_BYTES_PER_EDGE`` per edge of one
    shard, which the shard count keeps within the limit (:func:`shard_count`).
    """
    intervals = result.intervals
    num_shards = len(intervals) - 1

    def side(direction, i):
        lo, hi = int(intervals[i]), int(intervals[i + 1])
        keys = runs.load(direction, hi << 32, int(counts[direction][i]))
        return compress_keys(keys, lo, hi, result.id_dtype, plan.dedup) + (None,)

    def submit(i):
        # the in-side cursor and the out-side cursor are separate: one thread each
        return (pool.submit(side, "out", i), pool.submit(side, "in", i)) if i < num_shards else None

    with ThreadPoolExecutor(2) as pool:
        pending = submit(0)
        for i in range(num_shards):
            lo, hi = int(intervals[i]), int(intervals[i + 1])
            out_parts, in_parts = pending[0].result(), pending[1].result()
            pending = submit(i + 1)
            nbytes = write_part(writer, result, plan, i, lo, hi, "out", out_parts)
            del out_parts
            bar.update(1)
            nbytes += write_part(writer, result, plan, i, lo, hi, "in", in_parts)
            del in_parts
            finish_shard(writer, result, i, lo, hi, nbytes)
            bar.update(1)
