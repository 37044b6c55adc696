"""Sorted runs of packed edge keys on disk, read back shard by shard through per-run cursors.

An external build of unweighted edges sorts each chunk's keys ``primary << 32 | secondary``
and appends them to one file per direction: the runs are placed one after another in input
order (:meth:`KeyRuns.reserve`) and written at their places on the chunks' own threads. The runs need no
shard intervals while they are written, so degrees can be counted in the same pass. Shard
``i`` takes, from every run, the keys below its upper bound: each run's keys for shard ``i``
directly follow those for shard ``i - 1``, so a cursor per run reads every key once (plus one
short over-read per run and shard, which the next run's read overwrites).

Weighted edges add a weight file per direction holding each run's weights in the order of its
keys (the run sorted stably, so equal keys keep input order); a shard's weights are read from
the same ranges its keys came from. A run's weights may be narrower than the store's
(:mod:`.run_weights`): each run keeps its own dtype.

What a shard has read is punched out of the files (:func:`..io.release.release`), so the
store's writes reuse those pages instead of fresh ones.
"""
import contextlib
import errno
import os
import shutil

import numpy as np

from ..io.atomic import make_bucket_dir
from ..io.release import PAGE as _PAGE, release
from .run_weights import widest

#: keys read per run at most at once; the shard buffer holds this many beyond the shard's keys
MAX_BLOCK_KEYS = 1 << 17
MIN_BLOCK_KEYS = 1 << 10
_KEY = np.dtype(np.uint64)
#: bytes of one write call (a run is written in pieces of at most this)
_WRITE_BLOCK = 64 << 20


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
        # per run: its weights' dtype and their first byte in the weight file
        self._weight_runs = {d: [] for d in self._files}
        self._weight_bytes = {d: 0 for d in self._files}
        self._cursor = {}
        self._released = {}

    def append(self, direction, keys, weights=None):
        """Append one sorted run of uint64 keys (and their weights, when weighted: in their own
        float dtype, which must hold them as ``weight_dtype`` would)."""
        place = self.reserve(direction, keys, weights)
        if place is not None:
            self.write(place, keys)

    def reserve(self, direction, keys, weights=None):
        """The next run's place in the files (None for no keys), for :meth:`write`: runs are
        placed one at a time in run order, and written at their places on any thread."""
        if len(keys) == 0:
            return None
        weight_at = None
        if self.weight_dtype is not None:
            if weights.dtype.kind != "f" or weights.dtype.itemsize > self.weight_dtype.itemsize:
                weights = weights.astype(self.weight_dtype)
            weight_at = self._weight_bytes[direction]
            self._weight_runs[direction].append((weights.dtype, weight_at))
            self._weight_bytes[direction] += weights.nbytes
        self._starts[direction].append(self._size[direction])
        self._size[direction] += len(keys)
        self._ends[direction].append(self._size[direction])
        return direction, self._starts[direction][-1] * _KEY.itemsize, weights, weight_at

    def write(self, place, keys):
        """Write a run's ``keys`` (and the weights :meth:`reserve` kept) at its ``place``."""
        if place is None:
            return
        direction, key_at, weights, weight_at = place
        _pwrite(self._files[direction], keys, key_at)
        if weights is not None:
            _pwrite(self._weights[direction], weights, weight_at)

    @staticmethod
    def buffer(count):
        """A buffer for :meth:`load` of ``count`` keys, its pages touched: a caller that makes
        it before its turn to load leaves the page faults out of the loads in turn."""
        buffer = np.empty(count + MAX_BLOCK_KEYS, dtype=_KEY)
        buffer.view(np.uint8)[::_PAGE] = 0
        return buffer

    def load(self, direction, bound, count, buffer=None, punches=None):
        """The next ``count`` keys below ``bound`` over all runs, runs concatenated (each sorted).

        ``count`` must be exactly how many keys below ``bound`` are left (the shard's degree
        sum); the cursors then stand at the first key of the next shard in every run. Weighted
        runs return ``(keys, weights)``, the weights in the keys' order and in the widest dtype
        of the runs they came from (at most ``weight_dtype``). ``buffer``: one of
        :meth:`buffer` for the keys. ``punches``: a list that takes the read stretches'
        releases instead of their being made here; :meth:`punch` makes them later (none lies
        in what later loads read, so a caller may do so while the next load runs).
        """
        handle = self._files[direction]
        if direction not in self._cursor:
            handle.flush()
            self._cursor[direction] = np.array(self._starts[direction], dtype=np.int64)
        cursor = self._cursor[direction]
        ends = np.array(self._ends[direction], dtype=np.int64)
        left_total = int((ends - cursor).sum())
        if buffer is None:
            buffer = np.empty(count + MAX_BLOCK_KEYS, dtype=_KEY)
        bound = np.uint64(bound)
        fill = 0
        fd = handle.fileno()
        taken_from = []         # (run, its position, buffer position) per run
        for k in range(len(cursor)):
            taken_from.append((k, int(cursor[k]), fill))
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
            # everything of the run before its cursor has been read
            self._release("keys", direction, k, fd, self._starts[direction][k] * _KEY.itemsize,
                          int(cursor[k]) * _KEY.itemsize, punches)
        if fill != count:
            raise RuntimeError(f"run files hold {fill} keys below the bound, degrees say {count}")
        if self.weight_dtype is None:
            return buffer[:count]
        self._weights[direction].flush()
        stops = [t[2] for t in taken_from[1:]] + [fill]
        parts = [(k, position, start, stop) for (k, position, start), stop
                 in zip(taken_from, stops) if stop > start]
        return buffer[:count], self._load_weights(direction, parts, count, punches)

    def _load_weights(self, direction, parts, count, punches=None):
        """The weights of ``parts`` (run, its first key, buffer start, stop), in one array."""
        runs = self._weight_runs[direction]
        starts = self._starts[direction]
        dtype = widest([runs[k][0] for k, *_ in parts] or [self.weight_dtype])
        weights = np.empty(count, dtype=dtype)
        fd = self._weights[direction].fileno()
        # narrower runs among wider ones are read aside, the longest of them at most
        aside = [(stop - start) * runs[k][0].itemsize for k, _, start, stop in parts
                 if runs[k][0] != dtype]
        scratch = np.empty(max(aside), dtype=np.uint8) if aside else None
        for k, position, start, stop in parts:
            run_dtype, first = runs[k]
            offset = first + (position - starts[k]) * run_dtype.itemsize
            if run_dtype == dtype:
                _pread(fd, weights[start:stop], offset)
            else:
                narrow = scratch[:(stop - start) * run_dtype.itemsize].view(run_dtype)
                _pread(fd, narrow, offset)
                weights[start:stop] = narrow
            self._release("weights", direction, k, fd, first,
                          offset + (stop - start) * run_dtype.itemsize, punches)
        return weights

    def _release(self, kind, direction, k, fd, first, stop, punches=None):
        """Give back the pages of run ``k`` from its first byte ``first`` up to ``stop``,
        starting where the last call for that run left off (punching a hole again costs a
        walk over it); into ``punches`` when given, for :meth:`punch`."""
        start = max(first, self._released.get((kind, direction, k), first))
        if punches is None:
            release(fd, start, stop)
        else:
            punches.append((fd, start, stop))
        # the page holding ``stop`` is still partly unread: it goes with the next shard
        self._released[(kind, direction, k)] = stop // _PAGE * _PAGE

    @staticmethod
    def punch(punches):
        """Make the releases a :meth:`load` left in ``punches``."""
        for fd, start, stop in punches:
            release(fd, start, stop)

    def cleanup(self):
        for handle in list(self._files.values()) + list(self._weights.values()):
            with contextlib.suppress(OSError):  # a full disk fails the last flush: remove anyway
                handle.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def _pwrite(handle, array, position):
    """Write ``array``'s bytes at byte ``position`` of the file ``handle`` (a full disk's
    error names the file)."""
    view = memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))
    done = 0
    try:
        while done < len(view):
            wrote = os.pwrite(handle.fileno(), view[done:done + _WRITE_BLOCK], position + done)
            if wrote <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            done += wrote
    except OSError as exc:
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, handle.name) from exc
        raise


def _pread(fd, out, position):
    view = memoryview(out).cast("B")
    done = 0
    while done < len(view):
        got = os.preadv(fd, [view[done:]], position + done)
        if got <= 0:
            raise OSError(f"run file ended at byte {position + done}")
        done += got
