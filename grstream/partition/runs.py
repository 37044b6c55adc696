"""Sorted runs of packed edge keys on disk, read back shard by shard through per-run cursors.

An external build of unweighted edges sorts each chunk's keys ``primary << 32 | secondary``
and appends them to one file per direction with a single sequential write. The runs need no
shard intervals while they are written, so degrees can be counted in the same pass. Shard
``i`` takes, from every run, the keys below its upper bound: each run's keys for shard ``i``
directly follow those for shard ``i - 1``, so a cursor per run reads every key once (plus one
short over-read per run and shard, which the next run's read overwrites).

Weighted edges add a weight file per direction holding each run's weights in the order of its
keys (the run sorted stably, so equal keys keep input order); a shard's weights are read from
the same ranges its keys came from.
"""
import contextlib
import os
import shutil

import numpy as np

from ..io.atomic import make_bucket_dir, write_array

#: keys read per run at most at once; the shard buffer holds this many beyond the shard's keys
MAX_BLOCK_KEYS = 1 << 17
MIN_BLOCK_KEYS = 1 << 10
_KEY = np.dtype(np.uint64)


class KeyRuns:
    """Temporary run files ``out.bin`` / ``in.bin`` in a directory under ``directory``, and
    ``out.w.bin`` / ``in.w.bin`` for weights of ``weight_dtype`` when given."""

    def __init__(self, directory, name, weight_dtype=None):
        self.directory = make_bucket_dir(directory, name)
        self._files = {d: open(self.directory / f"{d}.bin", "w+b") for d in ("out", "in")}
        self.weight_dtype = None if weight_dtype is None else np.dtype(weight_dtype)
        self._weights = {} if weight_dtype is None else {
            d: open(self.directory / f"{d}.w.bin", "w+b") for d in ("out", "in")}
        self._starts = {d: [] for d in self._files}
        self._ends = {d: [] for d in self._files}
        self._size = {d: 0 for d in self._files}
        self._cursor = {}

    def append(self, direction, keys, weights=None):
        """Append one sorted run of uint64 keys (and their weights, when weighted)."""
        if len(keys) == 0:
            return
        write_array(self._files[direction], keys)
        if self.weight_dtype is not None:
            write_array(self._weights[direction], weights.astype(self.weight_dtype, copy=False))
        self._starts[direction].append(self._size[direction])
        self._size[direction] += len(keys)
        self._ends[direction].append(self._size[direction])

    def load(self, direction, bound, count):
        """The next ``count`` keys below ``bound`` over all runs, runs concatenated (each sorted).

        ``count`` must be exactly how many keys below ``bound`` are left (the shard's degree
        sum); the cursors then stand at the first key of the next shard in every run. Weighted
        runs return ``(keys, weights)``, the weights in the keys' order.
        """
        handle = self._files[direction]
        if direction not in self._cursor:
            handle.flush()
            self._cursor[direction] = np.array(self._starts[direction], dtype=np.int64)
        cursor = self._cursor[direction]
        ends = np.array(self._ends[direction], dtype=np.int64)
        left_total = int((ends - cursor).sum())
        buffer = np.empty(count + MAX_BLOCK_KEYS, dtype=_KEY)
        bound = np.uint64(bound)
        fill = 0
        fd = handle.fileno()
        taken_from = []         # (run position, buffer position, keys) per run
        for k in range(len(cursor)):
            taken_from.append((int(cursor[k]), fill))
            left = int(ends[k] - cursor[k])
            # the run's share of this shard, a little over, so one read usually suffices
            guess = left * count // max(left_total, 1)
            while left and fill < count:
                want = min(left, MAX_BLOCK_KEYS, max(MIN_BLOCK_KEYS, guess + guess // 8 + 64))
                block = buffer[fill:fill + want]
                _pread(fd, block, int(cursor[k]) * _KEY.itemsize)
                taken = int(np.searchsorted(block, bound))
                fill += taken
                cursor[k] += taken
                left -= taken
                guess -= taken
                if taken < want:
                    break
        if fill != count:
            raise RuntimeError(f"run files hold {fill} keys below the bound, degrees say {count}")
        if self.weight_dtype is None:
            return buffer[:count]
        self._weights[direction].flush()
        weights = np.empty(count, dtype=self.weight_dtype)
        wfd = self._weights[direction].fileno()
        size = self.weight_dtype.itemsize
        for (position, start), stop in zip(taken_from, [t[1] for t in taken_from[1:]] + [fill]):
            if stop > start:
                _pread(wfd, weights[start:stop], position * size)
        return buffer[:count], weights

    def cleanup(self):
        for handle in list(self._files.values()) + list(self._weights.values()):
            with contextlib.suppress(OSError):  # a full disk fails the last flush: remove anyway
                handle.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def _pread(fd, out, position):
    view = memoryview(out).cast("B")
    done = 0
    while done < len(view):
        got = os.preadv(fd, [view[done:]], position + done)
        if got <= 0:
            raise OSError(f"run file ended at byte {position + done}")
        done += got
