"""The renumbering map: every occurring id's position among the sorted ids that occur.

A binary search per id (``np.searchsorted`` over tens of millions of ids) misses the cache at
nearly every step; a dense table of positions (4 B per id up to the largest) makes each lookup
one gather instead, many times faster. The table is built where it is small beside the build's
other memory (a byte budget the caller gives), else lookups search. Either way an id maps to
the same position, so the store does not depend on which one ran.

Ids are looked up only where they occur (the map is of the same input's ids): an id that does
not occur has no position.
"""
import itertools
from collections import deque

import numpy as np

#: slices of an array looked up or marked on one thread at a time (bounded temporaries)
STEP = 1 << 22


class IdMap:
    """Positions of the sorted, distinct ``ids``; a dense table when ``4 * (largest + 1)``
    bytes fit ``dense_budget``."""

    def __init__(self, ids, dense_budget=0):
        self.ids = ids
        top = int(ids[-1]) + 1 if len(ids) else 0
        self.rank = None
        if len(ids) and 4 * top <= dense_budget and len(ids) <= 1 << 32:
            rank = np.zeros(top, dtype=np.uint32)
            rank[ids] = np.arange(len(ids), dtype=np.uint32)
            self.rank = rank

    def __len__(self):
        return len(self.ids)

    def unsigned(self, values):
        """Positions of ``values`` (non-negative int64) as an unsigned array (uint32 from the
        table, uint64 from a search)."""
        if self.rank is not None:
            return self.rank.take(values)
        return np.searchsorted(self.ids, values).view(np.uint64)

    def positions(self, values):
        """Positions of ``values`` as int64."""
        if self.rank is not None:
            return self.rank.take(values).astype(np.int64)
        return np.searchsorted(self.ids, values)


def on_slices(pool, work, arrays, step=STEP):
    """``work(part)`` for every ``step`` slice of every array, on the pool's threads (``pool``:
    an executor of :func:`.parallel_layout.executor`); per array the results in order."""
    futures = [[pool.submit(work, array[s:s + step]) for s in range(0, len(array), step)]
               for array in arrays]
    return [[future.result() for future in row] for row in futures]


def distinct_ids(chunks, pool, ahead, mark_bytes):
    """Sorted distinct ids of a chunk stream ``(src, dst, _)``.

    Each chunk's ids are marked on the pool's threads (``ahead`` chunks at once) in a table of
    one byte per id up to the largest, grown as larger ids come, while it fits ``mark_bytes``;
    the marks are plain byte stores of the same value, so threads marking at once agree. Past
    that bound the marked ids and the rest of the stream are merged as sorted distinct ids
    (:func:`.edge_chunks.occurring_ids`, O(distinct ids) memory).
    """
    from .edge_chunks import occurring_ids
    mark = np.zeros(0, dtype=bool)
    pending = deque()

    def settle(limit):
        while len(pending) > limit:
            pending.popleft().result()

    chunks = iter(chunks)
    for src, dst, w in chunks:
        if not len(src):
            continue
        top = int(max(src.max(), dst.max())) + 1
        if top > len(mark):
            settle(0)
            if top > mark_bytes:
                seen = np.flatnonzero(mark)
                del mark
                rest = itertools.chain([(seen, seen[:0], None), (src, dst, w)], chunks)
                return occurring_ids(rest)
            grown = np.zeros(min(mark_bytes, max(top, len(mark) + len(mark) // 2)), dtype=bool)
            grown[:len(mark)] = mark
            mark = grown
        settle(ahead - 1)
        pending.append(pool.submit(_mark, mark, src, dst))
        del src, dst, w
    settle(0)
    return np.flatnonzero(mark)


def _mark(mark, src, dst):
    mark[src] = True
    mark[dst] = True
