"""Compacted transfers of the GPU executor: host threads pack the active rows into pinned staging.

For a "compact" unit the read-ahead thread of :class:`~.movement.Mover` takes the shard's arrays
from the pinned host cache, finds the shard's active vertices in a host copy of the frontier
bitmap (downloaded once per iteration, n / 8 bytes, only when a plan compacts), and packs their
rows (:func:`grstream.engine.compaction.pack`: full-length offsets, the active rows' edges) into
a pinned staging buffer at the shard's usual array offsets, with ``threads`` host threads. The
read-ahead runs ahead of the copies, so packing one shard overlaps the copies and kernels of the
units before it; the staging buffer returns to its pool once the copy out of it finished.
The kernels are the ordinary ones: a compacted shard looks like a whole shard whose inactive
vertices have no edges. A compressed store's shards hold their ids as blocks: the packer decodes
the blocks of the active rows only and encodes the packed ids again (:func:`.compaction.pack_ids`),
so the kernels decode a compacted shard as they decode a whole one.
"""
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...engine.contract import ID_NAMES, compaction


class Packer:
    """Packs shards' active rows (see the module docstring); one per Mover."""

    def __init__(self, memory, intervals, threads=None):
        self.memory = memory
        self.intervals = np.asarray(intervals, dtype=np.int64)
        self.threads = max(1, int(threads or min(8, os.cpu_count() or 1)))
        self.pool = None        # threads start with the first shard packed
        self.bits = None        # the frontier as bytes (bit v of the bitmap = vertex v), None: all
        self.seconds = 0.0      # host seconds spent packing, since the last take_stats
        self.nbytes = 0

    def set_frontier(self, words):
        """The current frontier bitmap (uint32 words, host copy), or None when all are active."""
        self.bits = None if words is None else np.asarray(words).view(np.uint8)

    def rows(self, i):
        """Local rows of shard ``i``'s active vertices, sorted."""
        lo, hi = int(self.intervals[i]), int(self.intervals[i + 1])
        if self.bits is None:
            return np.arange(hi - lo, dtype=np.int64)
        first, shift = lo // 8, lo % 8
        bits = np.unpackbits(self.bits[first:(hi + 7) // 8], bitorder="little")
        return np.flatnonzero(bits[shift:shift + hi - lo]).astype(np.int64)

    def pack(self, i, views, staging):
        """Pack shard ``i`` (``views``: its whole arrays) into the staging buffer ``staging``;
        returns the packed arrays (views of ``staging``)."""
        t0 = time.perf_counter()
        offsets = self.memory.offsets[i]
        packed = {}

        def out(name, length, dtype):
            dt = np.dtype(dtype)
            off = offsets[name]
            packed[name] = staging[off:off + length * dt.itemsize].view(dt)
            return packed[name]
        if self.pool is None and self.threads > 1:
            self.pool = ThreadPoolExecutor(self.threads, thread_name_prefix="grstream-pack")
        run = self.pool.map if self.pool is not None else None
        # (the intervals end at the vertex count, which fixes a compressed id's bits)
        self.nbytes += compaction.pack(views, list(views), self.rows(i), out, parts=self.threads, run=run,
                                       num_vertices=int(self.intervals[-1]))
        self.seconds += time.perf_counter() - t0
        return packed

    def take_stats(self):
        """(bytes packed, seconds) since the last call."""
        out = (self.nbytes, self.seconds)
        self.nbytes, self.seconds = 0, 0.0
        return out

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True)
            self.pool = None


def packed_edges(views):
    """Edges per direction of a packed shard's arrays (``views``): its plain id arrays' lengths,
    else (compressed ids, re-encoded by the packer) the end of its indptr."""
    return {d: int(views[ids].size if ids in views else views[f"{d}/indptr"][-1])
            for d, ids in ID_NAMES.items() if ids in views or f"{d}/indptr" in views}
