"""Writing a build's shards and vertex arrays, and the totals its summary reports."""
import numpy as np

from ..store import format as fmt
from ..store.encode import encode_ids
from ..store.labels import write_labels
from .parallel_layout import executor
from .renumber import store_labels


class Result:
    def __init__(self, n, intervals, heavy, id_dtype):
        self.num_vertices = n
        self.intervals = intervals
        self.heavy = heavy
        self.id_dtype = id_dtype
        self.in_degree = np.zeros(n, dtype=np.int64)
        self.out_degree = np.zeros(n, dtype=np.int64)
        self.shard_edges = []
        self.nbytes = 0
        self.mode = None


def write_part(writer, result, plan, i, lo, hi, direction, parts, extra=None):
    edge_data = {"weight": parts[2]} if plan.options.weighted else {}
    edge_data.update(extra or {})
    nbytes = writer.shard_part(i, direction, parts[0], parts[1], edge_data, result.num_vertices)
    degree = result.in_degree if direction == "in" else result.out_degree
    degree[lo:hi] = np.diff(parts[0])
    return nbytes


def encoded_side(plan, num_vertices, side, ranges=None):
    """A shard side ``(indptr, ids, ...)`` with its ids encoded where the build compresses
    (:class:`~grstream.store.encode.EncodedIds`), else as it is.

    The builds call it on the threads that cut the sides: the compiled encoder releases the
    GIL, so a side encodes while the previous shard is written; ``ranges`` (from
    :func:`encoding_threads`) spreads a side's blocks over more threads.
    """
    if not plan.compress or not len(side[1]):
        return side
    return (side[0], encode_ids(side[1], num_vertices, executor=ranges)) + tuple(side[2:])


def encoding_threads(plan):
    """The executor that encodes ranges of a side's blocks: the build's threads but one (the
    writer's) where it compresses on more than two, else none of its own (two threads are
    busy already: one writes, one cuts and encodes the next side)."""
    return executor(plan.threads - 1 if plan.compress and plan.threads > 2 else 0)


def made_ahead(pool, make, count):
    """``make(0)``, ``make(1)``, ... ``make(count - 1)`` in turn, each made on ``pool`` while
    the one before it is used (a side encodes while the previous one is written)."""
    pending = pool.submit(make, 0) if count else None
    for i in range(count):
        made = pending.result()
        pending = pool.submit(make, i + 1) if i + 1 < count else None
        yield made
        del made


def finish_shard(writer, result, i, lo, hi, nbytes):
    num_in = int(result.in_degree[lo:hi].sum())
    num_out = int(result.out_degree[lo:hi].sum())
    writer.shard_attrs(i, lo, hi, num_in, num_out, nbytes)
    result.nbytes += nbytes
    result.shard_edges.append((num_in, num_out))


#: bytes written after which a keyed build starts the store's writeback to the disk
WRITEBACK_BYTES = 32 << 20


def finish_shard_writing_back(writer, result, i, lo, hi, nbytes, unsynced):
    """:func:`finish_shard`, then the store's pages start their writeback once ``unsynced`` +
    ``nbytes`` reach WRITEBACK_BYTES: they go to the disk while later shards are cut and
    written, not all in the commit's fsync. Returns the bytes not yet sent."""
    finish_shard(writer, result, i, lo, hi, nbytes)
    unsynced += nbytes
    if unsynced >= WRITEBACK_BYTES:
        writer.start_writeback()
        unsynced = 0
    return unsynced


def write_vertex_data(writer, result, plan):
    writer.dataset(fmt.INTERVALS, result.intervals)
    writer.dataset(fmt.IN_DEGREE, result.in_degree)
    writer.dataset(fmt.OUT_DEGREE, result.out_degree)
    labels = store_labels(plan, result.num_vertices)
    result.label_kind = "int" if labels is None else labels[0]
    result.labelled = labels is not None
    # an integer table out of order (a reordered input) needs a reader of version 2
    result.labels_increasing = labels is None or labels[0] != "int" or bool(
        np.all(labels[1][1:] > labels[1][:-1]))
    result.renumbered = plan.renumber
    if labels is not None:
        write_labels(writer, *labels)
