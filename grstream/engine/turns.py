"""Scheduled activation (``activate = "schedule"``): the program's ``schedule`` field, as init
left it, says in which iteration each vertex is active, so iteration ``t`` touches exactly the
vertices scheduled for ``t`` (and the shards holding them) however their neighbours changed.

The vertices are bucketed by turn once per run (a stable counting sort: each bucket's ids come
out sorted); before every iteration the engine hands the executor that iteration's bucket
(``Executor.set_active``) and the planner its counts per shard. A run ends after its last turn.
Lanes (Session.run_lanes) have one schedule each, an (n, lanes) key: :class:`LaneTurns` hands
the executor each iteration's (n, lanes) mask, and a lane stops after its own last turn.
"""
import numpy as np


def schedule(spec, state, intervals, lanes=None):
    """The turns of a run of ``spec`` from its vertex ``state`` (after init, or as a checkpoint
    saved it: apply never writes the schedule field); None for a program without a schedule."""
    if spec.activate != "schedule":
        return None
    return (Turns if lanes is None else LaneTurns)(state[spec.schedule], intervals)


class Turns:
    """The buckets of one run's schedule ``key`` (one int per vertex; 0 or less: never active)."""

    def __init__(self, key, intervals):
        key = np.asarray(key)
        self.intervals = np.asarray(intervals, dtype=np.int64)
        self.last = int(key.max(initial=0))
        if self.last <= 0:
            self.ids, self.offsets = np.zeros(0, dtype=np.int64), np.zeros(2, dtype=np.int64)
            self.last = 0
            return
        # the vertices ever active (turn 0 never runs), by turn: a stable sort of small ints
        # (numpy's radix sort for 16-bit keys, O(active))
        active = np.flatnonzero(key > 0)
        turn = key[active].astype(np.int16 if self.last < 2**15 else np.int64)
        sizes = np.bincount(turn, minlength=self.last + 1)
        sizes[0] = 0
        self.offsets = np.concatenate(([0], np.cumsum(sizes)))
        self.ids = active[np.argsort(turn, kind="stable")]

    def bucket(self, t):
        """The sorted ids active in iteration ``t`` (empty past the last turn)."""
        if t < 1 or t > self.last:
            return self.ids[:0]
        return self.ids[self.offsets[t]:self.offsets[t + 1]]

    def left(self, t):
        """Vertices scheduled for iteration ``t`` or later."""
        if t > self.last:
            return 0
        return int(self.offsets[-1] - self.offsets[max(t, 1)])

    def counts(self, ids):
        """Vertices of sorted ``ids`` per shard."""
        return np.diff(np.searchsorted(ids, self.intervals))

    def enter(self, ex, rb, t, local=None):
        """Make iteration ``t``'s bucket the executor's active set and ``rb``'s counts (``local``:
        the per-shard counts a rank plans, Ranks.local; ``rb.total_active`` the bucket's size)."""
        ids = self.bucket(t)
        ex.set_active(ids)
        counts = self.counts(ids)
        rb.shard_active = counts if local is None else local(counts)
        rb.total_active = len(ids)
        return rb


class LaneTurns:
    """The schedules of lanes: ``key`` (n, lanes), one column per lane. Each iteration compares
    the key with ``t`` (O(n lanes): lanes are for graphs where that is small)."""

    def __init__(self, key, intervals):
        self.key = np.asarray(key)
        self.intervals = np.asarray(intervals, dtype=np.int64)

    def left(self, t):
        """Vertices scheduled for iteration ``t`` or later, per lane."""
        return np.count_nonzero(self.key >= max(t, 1), axis=0)

    def enter(self, ex, rb, t, local=None):
        """As :meth:`Turns.enter`, with ``rb.lane_active`` the lanes' own counts."""
        mask = self.key == t
        ex.set_active(mask)
        ids = np.flatnonzero(mask.any(axis=1))
        counts = np.diff(np.searchsorted(ids, self.intervals))
        rb.shard_active = counts if local is None else local(counts)
        rb.total_active = len(ids)
        rb.lane_active = np.count_nonzero(mask, axis=0)
        return rb
