"""When a build renumbers vertex ids, and the labels the store keeps for them.

``renumber=None`` (the default) renumbers when the ids are *sparse*: the input declares no
vertex count (no ``.mtx`` / DIMACS / KONECT size line, not an in-memory matrix or networkx
graph) and ``largest id + 1 > 2 * distinct ids``, i.e. more than half of ``0..max id`` would be
isolated vertices that exist only because of the numbering (README "Vertex ids"). The ids that
occur, in increasing order, become ``0..n-1``; the store keeps them as labels, so users keep
giving and getting the input's ids.
"""
import logging

import numpy as np

from ..readahead import read_ahead
from ..store.labels import SPARSE_FACTOR, is_sparse, label_table
from .edge_chunks import occurring_ids
from .id_map import IdMap, distinct_ids
from .parallel_layout import executor

log = logging.getLogger("grstream.partition")


def auto_applies(plan):
    """True when the default rule has to look at the ids (renumber=None, no declared count)."""
    edges = plan.edges
    return (plan.renumber_requested is None and edges.num_vertices is None
            and edges.labels is None)


def sparse_ids_in_parts(parts, top):
    """Sorted ids occurring in prepared chunks ``parts`` when they are sparse, else None.

    ``top`` is the largest id + 1. A bitmap over ``0..top-1`` counts the distinct ids when it
    is no larger than the edge arrays themselves; beyond that the ids are sparse for sure
    (``distinct <= 2 * edges < top / 2``) and a sort finds them without an O(top) array.
    """
    occurrences = 2 * sum(len(p[0]) for p in parts)
    if top > SPARSE_FACTOR * occurrences:
        return occurring_ids(parts)
    mark = np.zeros(top, dtype=bool)
    for src, dst, _ in parts:
        mark[src] = True
        mark[dst] = True
    distinct = int(np.count_nonzero(mark))
    return np.flatnonzero(mark) if is_sparse(top, distinct) else None


def sparse_ids_in_degrees(in_degree, out_degree):
    """Sorted ids with an edge, from degree arrays, when they are sparse, else None."""
    present = (in_degree > 0) | (out_degree > 0)
    distinct = int(np.count_nonzero(present))
    return np.flatnonzero(present) if is_sparse(len(present), distinct) else None


def renumber_parts(parts, id_map, threads=1):
    """Prepared chunks with ids replaced by their positions (``id_map``, an
    :class:`.id_map.IdMap`; chunks on ``threads`` threads)."""
    with executor(threads if threads > 1 else 0) as pool:
        futures = [pool.submit(lambda s, d: (id_map.positions(s), id_map.positions(d)), s, d)
                   for s, d, _ in parts]
        return [f.result() + (w,) for f, (_, _, w) in zip(futures, parts)]


#: bytes per renumbered vertex a dense renumbering table may take in memory, and the
#: least it may always take
MAP_BYTES_PER_VERTEX = 16
MIN_MAP_BYTES = 1 << 28
#: under a memory limit the table takes at most this part of it
MAP_SHARE_OF_LIMIT = 8


def map_budget(memory_limit, distinct):
    """Bytes the dense table of :class:`.id_map.IdMap` may take."""
    if memory_limit is not None:
        return memory_limit // MAP_SHARE_OF_LIMIT
    return max(MIN_MAP_BYTES, MAP_BYTES_PER_VERTEX * distinct)


def use_ids(plan, ids):
    """Renumber the build to the sorted ``ids``: chunks prepared from now on map through them."""
    plan.options.original_ids = ids
    plan.options.id_map = IdMap(ids, map_budget(plan.memory_limit, len(ids)))
    plan.renumber = True


def collect_ids(plan, chunks):
    """The sorted distinct ids of ``chunks`` (a pass over the input), marked on the build's
    threads (:func:`.id_map.distinct_ids`) in a table of at most an eighth of the memory
    limit, without one at most 2**32 bytes."""
    threads = max(1, plan.threads)
    ahead = threads if plan.memory_limit is None else max(1, threads // 2)
    mark_bytes = (1 << 32) if plan.memory_limit is None else plan.memory_limit // MAP_SHARE_OF_LIMIT
    with executor(threads if threads > 1 else 0) as pool, \
            plan.bar("renumbering") as bar:
        # read and checked on a thread of their own: this one only marks
        return distinct_ids(read_ahead(counted_chunks(chunks, bar)), pool, ahead, mark_bytes)


def counted_chunks(chunks, bar):
    """``chunks`` as they are, each one's edges counted on the progress bar (whose ``update``
    returns whether it redrew: not a value to pass on)."""
    for src, dst, w in chunks:
        bar.update(len(src))
        yield src, dst, w


def store_labels(plan, num_vertices):
    """``(kind, table)`` of labels the store keeps for its vertices, or None (labels = ids + base).

    Renumbered integer ids are kept as written in the input (``id_base`` added back); a source
    with labels of its own (names) keeps those, in the order of the store's vertices.
    """
    source = plan.edges.labels() if plan.edges.labels is not None else None
    if plan.renumber:
        ids = plan.options.original_ids
        if source is None:
            return "int", ids.astype(np.int64) + plan.edges.id_base
        table = np.empty(len(source), dtype=object)
        table[:] = list(source)
        return label_table(table[ids])
    if source is None:
        return None
    kind, table = label_table(source)
    if len(table) != num_vertices:
        # a declared count beyond the labelled vertices cannot be keyed by a label
        raise ValueError(f"{len(table)} labels for {num_vertices} vertices")
    return kind, table


def renumber_by_default(plan, ids, top):
    """Make the build renumber to the sorted ``ids`` (the default rule found them sparse)."""
    log.info("%s: %d distinct ids up to %d: renumbering (renumber=False keeps the ids)",
             plan.edges.name, len(ids), top - 1)
    use_ids(plan, ids)
    plan.renumber_requested = True


class SparseIds(Exception):
    """An external first pass stops: the default rule may renumber. ``ids`` occur (None: not
    known yet), ``top`` is the largest id + 1 seen."""

    def __init__(self, ids, top):
        super().__init__()
        self.ids, self.top = ids, top


def check_sparse(plan, counter):
    """After an external first pass: stop with the ids when the default renumbers them."""
    if auto_applies(plan):
        ids = sparse_ids_in_degrees(counter.in_degree, counter.out_degree)
        if ids is not None:
            raise SparseIds(ids, len(counter.in_degree))


def check_id_range(plan, vertex_bytes, top):
    """External first pass: ids whose per-vertex arrays (``vertex_bytes`` each) would exceed the
    memory limit are looked at before those arrays grow."""
    if vertex_bytes * top > plan.memory_limit and auto_applies(plan):
        raise SparseIds(None, top)


def decide_after_pass(plan, stop):
    """Renumber after :class:`SparseIds` when the ids are sparse; else never look again."""
    ids = stop.ids
    if ids is None:
        # one pass that keeps only the distinct ids: O(distinct) memory
        ids = collect_ids(plan, plan.prepared_chunks())
    top = int(ids[-1]) + 1 if len(ids) else 0
    if is_sparse(top, len(ids)):
        renumber_by_default(plan, ids, top)
    else:
        plan.renumber_requested = False
