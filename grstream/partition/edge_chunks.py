"""Edge chunks as the store will hold them: renumbered, self-loops dropped, both directions.

Every step is applied chunk by chunk and is independent of where the chunks are cut (an
undirected edge's reverse follows it directly), so an external build that re-chunks its input
sees the same edge sequence as an in-memory build.
"""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import InputFormatError
from .layout import count_into


@dataclass
class EdgeOptions:
    """How input edges become stored edges."""

    undirected: bool = False
    self_loops: bool = True
    weighted: bool = False
    weight_dtype: np.dtype = np.dtype(np.float64)
    #: sorted ids occurring in the input when renumbering, else None
    original_ids: Optional[np.ndarray] = None
    #: their positions (an :class:`.id_map.IdMap`), set with them
    id_map: Optional[object] = None
    #: the input already holds both directions of each edge (a symmetric input): an
    #: undirected build keeps its edges as they are
    both_ways_in_input: bool = False


def split_chunks(chunks, max_edges):
    """Re-cut a chunk stream so no chunk holds more than ``max_edges`` edges (bounds working memory)."""
    for src, dst, w in chunks:
        if len(src) <= max_edges:
            yield src, dst, w
            continue
        for start in range(0, len(src), max_edges):
            stop = start + max_edges
            yield src[start:stop], dst[start:stop], None if w is None else w[start:stop]


def check_chunk(src, dst, w, name, weighted):
    """Reject what a reader should never hand over but an in-memory EdgeSource might."""
    if len(src) != len(dst) or (w is not None and len(w) != len(src)):
        raise InputFormatError("edge chunk arrays differ in length", path=name)
    if len(src) and (src.min() < 0 or dst.min() < 0):
        raise InputFormatError("negative vertex id", path=name)
    if weighted:
        if w is None:
            raise InputFormatError("weighted input yielded a chunk without weights", path=name)
        if len(w) and not np.isfinite(w).all():
            raise InputFormatError("NaN or infinite edge weight", path=name)


def prepare_chunk(src, dst, w, options, name=None, pool=None):
    """Apply renumbering, self-loop removal and undirected doubling to one chunk; its weights
    become the store's dtype (:func:`stored_weights`; ``name`` is the input, for errors).
    ``pool``: an executor that looks the targets' new ids up while this thread looks up the
    sources'."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    w = stored_weights(w, options.weight_dtype, name) if options.weighted else None
    if not options.self_loops:
        # before renumbering: a vertex whose only edges are self-loops may have no position
        keep = src != dst
        if not keep.all():
            src, dst = src[keep], dst[keep]
            w = None if w is None else w[keep]
    if options.id_map is not None:
        later = None if pool is None else pool.submit(options.id_map.positions, dst)
        src = options.id_map.positions(src)
        dst = options.id_map.positions(dst) if later is None else later.result()
    if options.undirected and not options.both_ways_in_input:
        src, dst, w = with_reverse_edges(src, dst, w)
    return src, dst, w


def stored_weights(w, dtype, name=None):
    """``w`` (finite) as ``dtype``, refusing a value the dtype cannot hold: one that would
    become infinite (70000 in float16) or a nonzero one that would become 0 (1e-50 in float32).
    Values between representable ones are rounded, as any float conversion does.

    Raises
    ------
    InputFormatError
        Naming the first such value and the dtype.
    """
    w = np.asarray(w)
    if w.dtype == dtype:
        return w
    with np.errstate(over="ignore", under="ignore"):
        stored = w.astype(dtype)
    lost = np.isinf(stored) | ((stored == 0) & (w != 0))
    if lost.any():
        value = float(w[np.argmax(lost)])
        info = np.finfo(dtype)
        if abs(value) > 1:
            why = (f"beyond the largest {dtype} ({float(info.max):g}): it would be stored as "
                   f"{'inf' if value > 0 else '-inf'}")
        else:
            why = (f"below the smallest nonzero {dtype} ({float(info.smallest_subnormal):g}): "
                   "it would be stored as 0")
        raise InputFormatError(f"weight {value!r} is {why}; choose a wider --weight-dtype "
                               "(weight_dtype)", path=name)
    return stored


def with_reverse_edges(src, dst, w):
    """Each edge followed by its reverse, with its weight repeated (a self-loop once)."""
    k = len(src)
    both_src = np.empty(2 * k, dtype=np.int64)
    both_dst = np.empty(2 * k, dtype=np.int64)
    both_src[0::2], both_src[1::2] = src, dst
    both_dst[0::2], both_dst[1::2] = dst, src
    both_w = None
    if w is not None:
        both_w = np.repeat(w, 2)
    loops = src == dst
    if loops.any():
        # a self-loop's reverse is itself: store it once
        keep = np.ones(2 * k, dtype=bool)
        keep[1::2] = ~loops
        both_src, both_dst = both_src[keep], both_dst[keep]
        both_w = None if both_w is None else both_w[keep]
    return both_src, both_dst, both_w


class DegreeCounter:
    """In- and out-degree of every vertex seen so far, growing with the largest id."""

    def __init__(self, num_vertices=0):
        self.in_degree = np.zeros(num_vertices, dtype=np.int64)
        self.out_degree = np.zeros(num_vertices, dtype=np.int64)

    def add(self, src, dst):
        if len(src) == 0:
            return
        top = int(max(src.max(), dst.max())) + 1
        if top > len(self.in_degree):
            self.grow(top)
        count_into(self.out_degree, src)
        count_into(self.in_degree, dst)

    def grow(self, size):
        if size > len(self.in_degree):
            extra = size - len(self.in_degree)
            self.in_degree = np.concatenate((self.in_degree, np.zeros(extra, dtype=np.int64)))
            self.out_degree = np.concatenate((self.out_degree, np.zeros(extra, dtype=np.int64)))


def occurring_ids(chunks):
    """Sorted distinct ids over a chunk stream (O(distinct ids) memory), for renumbering.

    Each chunk's distinct ids wait in a list until they outnumber the ids merged so far, so
    every id takes part in O(log chunks) merges instead of one per chunk.
    """
    seen = np.empty(0, dtype=np.int64)
    pending, pending_size = [], 0
    for src, dst, _ in chunks:
        if len(src):
            part = sorted_distinct(np.concatenate((src, dst)).astype(np.int64, copy=False))
            pending.append(part)
            pending_size += len(part)
            if pending_size > len(seen):
                seen = sorted_distinct(np.concatenate([seen] + pending))
                pending, pending_size = [], 0
    if pending:
        seen = sorted_distinct(np.concatenate([seen] + pending))
    return seen


def sorted_distinct(ids):
    """The sorted distinct values of int64 ``ids`` (sorted in place: numpy's ``unique`` takes a
    hash path for integers, many times slower on millions of ids)."""
    ids.sort()
    return without_repeats(ids)


def without_repeats(ids):
    """Sorted ``ids`` without their repeats."""
    if len(ids) < 2:
        return ids
    keep = np.empty(len(ids), dtype=bool)
    keep[0] = True
    np.not_equal(ids[1:], ids[:-1], out=keep[1:])
    return ids[keep]
