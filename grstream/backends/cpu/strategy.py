"""What every CPU plan strategy shares: the interface, the iteration's counters and the frontier.

The CPU executor runs a plan through one strategy object: pull (grstream/backends/cpu/
strategy_pull.py), push (strategy_push.py) or lanes (strategy_lanes.py). Each owns the state
of its kind of plan and implements the plan primitives of grstream/engine/executor.py that
differ between them (``begin``, ``gather``, ``apply``, ``activate``, ``scatter``,
``publish``, ``read_back``); the executor moves the data and calls the strategy the plan
names. What several strategies read or write lives in the objects below, changed through their
methods: the :class:`Tally` of the iteration (units add to it from worker threads) and the
:class:`Frontier` of the run (the active, seed and changed vertex ids).
"""
import threading
import time

import numpy as np

from ...engine.contract import PHASES as PLAN_PHASES

#: phases timed per iteration (IterationStats.time_<phase>): the plan's phases and the reads
PHASES = PLAN_PHASES + ("read",)


class Tally:
    """One iteration's counters: seconds per phase, changed vertices, edges walked, bytes read
    and asynchronous local rounds; units add to them from their worker threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self.changed = self.edges = self.nbytes = self.local_rounds = 0

    def add(self, changed=0, edges=0, nbytes=0, local_rounds=0):
        with self.lock:
            self.changed += changed
            self.edges += edges
            self.nbytes += nbytes
            self.local_rounds += local_rounds

    def timed(self, phase, t0):
        """Add the seconds since ``t0`` to ``phase``."""
        dt = time.perf_counter() - t0
        with self.lock:
            self.seconds[phase] += dt


class Frontier:
    """The vertex sets of one run: ``ids`` the active vertices (sorted; None: every vertex),
    ``seed`` the seed's ids, ``changed`` the vertices changed by the last plan that records
    them (None: every vertex), and the next frontier the units of a pull plan collect (as id
    arrays, or marked in a per-vertex mask where they are many)."""

    def __init__(self, n, intervals, mask):
        self.n, self.intervals = n, intervals
        self.mask = np.zeros(n, dtype=bool) if mask else None
        self.ids = self.seed = self.changed = None
        self.begin()

    def start(self, ids):
        """A run starts from seed ``ids`` (sorted; None: every vertex is active)."""
        self.ids = self.seed = self.changed = ids

    def begin(self):
        """A plan starts: no next frontier collected yet."""
        self._next, self._queued, self._mask_used = [], 0, False
        self._lock = threading.Lock()

    def add(self, targets, limit):
        """Units found ``targets`` (duplicates possible) for the next frontier. Once the ids
        collected would exceed the plan's ``limit`` (IterationPlan.next_queue; 0 in a bitmap
        plan) they are marked in the mask instead, so the ids held stay within it whatever the
        edges walked."""
        if limit > 0 and not self._mask_used:
            with self._lock:
                if self._queued + len(targets) <= limit:
                    self._next.append(targets)
                    self._queued += len(targets)
                    return
                parts, self._next, self._mask_used = self._next, [], True
            for p in parts:
                self.mask[p] = True
        self.mask[targets] = True   # (workers only ever set flags: no lock needed)
        self._mask_used = True

    def merge(self, limit):
        """The next frontier collected since :meth:`begin`, as sorted unique ids (through the
        mask beyond the plan's ``limit``, IterationPlan.next_queue)."""
        parts = self._next
        if not parts and not self._mask_used:
            return np.zeros(0, dtype=np.int64)
        total = sum(len(p) for p in parts)
        if not self._mask_used and total <= limit:   # (always, while it holds ids)
            return np.unique(np.concatenate(parts) if len(parts) > 1 else parts[0])
        mask = self.mask
        for p in parts:
            mask[p] = True
        ids = np.flatnonzero(mask)
        mask[ids] = False
        return ids

    def counts(self, ids):
        """Vertices of sorted ``ids`` (None: every vertex) per shard."""
        if ids is None:
            return np.diff(self.intervals)
        return np.diff(np.searchsorted(ids, self.intervals))

    def span(self, unit):
        """(lo, hi): the vertex span of a unit's shards."""
        return int(self.intervals[unit.shards[0]]), int(self.intervals[unit.shards[-1] + 1])

    def rows(self, unit):
        """(lo, hi, rows): the unit's vertex span and its active ids (None: all of [lo, hi))."""
        lo, hi = self.span(unit)
        if unit.balance[0] == "full" or self.ids is None:
            return lo, hi, None
        return lo, hi, self.slice(self.ids, unit)

    def slice(self, ids, unit):
        """The part of sorted ``ids`` in the unit's shards."""
        shards, bounds = unit.shards, self.intervals
        if shards[-1] - shards[0] + 1 == len(shards):
            a, b = np.searchsorted(ids, (bounds[shards[0]], bounds[shards[-1] + 1]))
            return ids[a:b]
        cut = np.searchsorted(ids, np.stack([bounds[list(shards)], bounds[[i + 1 for i in shards]]]))
        return np.concatenate([ids[a:b] for a, b in cut.T])


class Strategy:
    """How one kind of plan runs. ``ex``: the executor, whose vertex fields (``cur``, ``nxt``,
    ``builtins``), kernels, frontier and tally the strategy works on. ``applied`` lists the
    (index, fields) each apply wrote, which a "copy" publish copies; ``edge_writes`` the
    scatters' (positions, values); ``changed_ids`` the sorted ids the plan changed where a next
    plan reads them (push senders, gather_from "changed" sources; None: not kept)."""

    def __init__(self, ex):
        self.ex = ex
        self.applied, self.edge_writes, self.changed_ids = [], [], None

    def begin(self, plan):
        self.applied, self.edge_writes, self.changed_ids = [], [], None

    def gather(self, plan, unit, piece):
        raise NotImplementedError

    def apply(self, plan, unit, piece):
        raise NotImplementedError

    def activate(self, plan, unit, piece):
        raise NotImplementedError

    def scatter(self, plan, unit, piece):
        raise NotImplementedError

    def publish(self, plan):
        """After the values are published: the frontier and changed set the plan leaves."""
        raise NotImplementedError

    def read_back(self, plan, rb):
        """Add the strategy's facts to the read back ``rb``."""
