"""The CPU executor: the engine's plans run as numpy passes over resident runs and streamed shards.

The reference implementation of grstream/engine/executor.py (and of the semantics in
grstream/engine/backend.py). The frontier is kept both as a mask and as a sorted id array, so an
iteration with a small frontier costs in proportion to the frontier, not to the graph.
"""
import threading
import time

import numpy as np

from ...engine.executor import Executor
from ...engine.plan import Readback
from ...engine.schedule import dataset_dtype
from ...readahead import BufferPool, read_ahead
from . import changes, kernels, local
from .pieces import ResidentRuns, Slots, unit_spans
from .facts import CpuFacts
from .lanes import LaneMethods
from .push import Pusher
from ...program.views import VertexView, as_length


class CpuExecutor(CpuFacts, LaneMethods, Executor):
    name = "cpu"
    lanes = True

    # ------------------------------------------------------------------ setup
    def __init__(self, store, spec, memory, ledger, shared, **options):
        super().__init__(store, spec, memory, ledger, shared)
        self.threads = self._threads(options)
        n = self.n = int(store.num_vertices)
        # lanes: several runs of one program class at once, every vertex field (n, lanes)
        L = self.L = options.get("lanes")
        shape = (n,) if L is None else (n * L,)   # lanes: flat, viewed as (n, lanes in use)
        self.intervals = np.asarray(store.intervals, dtype=np.int64)
        self.builtins = {}
        for d in ("in_degree", "out_degree"):
            if d in spec.vertex_reads:
                ledger.take("device", d, 8 * n)
                self.builtins[d] = getattr(store, d)()
        self.cur, self.nxt = {}, {}
        for f, dt in spec.vertex_fields.items():
            for side, where in (("cur", self.cur), ("nxt", self.nxt)):
                where[f] = np.zeros(shape, dtype=dt)
                ledger.take("device", f"{side}/{f}", where[f].nbytes)
        self.mask = self.lmask = self.lnext = None
        if spec.activate != "all":
            ledger.take("device", "frontier", memory.static["frontier"])
            self.mask = np.zeros(n, dtype=bool)
            if L is not None:   # each lane's frontier, this iteration and the next
                self.lmask, self.lnext = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
        changes.allocate(self, memory, ledger)   # gather_from "changed": prev_mask, prev_ids
        self.alive = None
        self.cap = L
        self.hoisted = self.acc_all = None
        for name in ("hoisted", "acc"):
            if name in memory.static:
                ledger.take("device", name, memory.static[name])
        if "acc" in memory.static:
            self.acc_all = np.zeros(shape, dtype=spec.gather_dtype)
        self._full = {"cur": dict(self.cur), "nxt": dict(self.nxt), "lmask": self.lmask,
                      "lnext": self.lnext, "acc": self.acc_all}
        if L is not None:
            self._use_lanes(L)
        self.edges = {}
        for name, dt in spec.edge_state.items():
            ledger.take("device", f"edges/{name}", int(store.num_edges) * dt.itemsize)
        ledger.take("scratch", "unit temporaries", memory.scratch_bytes)

        def dtype_of(name):
            return dataset_dtype(store, name)
        self.runs = ResidentRuns(store, memory, dtype_of, ledger, shared)
        self.slots = Slots(store, memory, dtype_of, ledger)
        self.kern = kernels.Kernels(self)
        # push: the changed set of the last iteration (None: every vertex) is kept
        # for the next push plan and for Readback.shard_changed / changed_edges
        self.pusher = Pusher(self, ledger) if "push/acc" in memory.static else None
        self.changed_ids = None
        self.push_degrees = [] if self.pusher is None else [
            store.out_degree() if d == "in" else store.in_degree() for d in self.pusher.dirs]
        self.front_ids = None      # sorted active ids; None: every vertex active
        self.seed_ids = None
        self._pool = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ per run
    def bind(self, program):
        self.program = program

    def load_state(self, state, edge_state):
        if self.L is not None:
            self._use_lanes(next(iter(state.values())).shape[1])
        for f, a in self.cur.items():
            a[...] = state[f]
            self.nxt[f][...] = a
        self.edges = {k: np.array(v, dtype=self.spec.edge_state[k]) for k, v in edge_state.items()}

    def set_frontier(self, mask, ids=None):
        self.alive = None if self.L is None else np.ones(self.L, dtype=bool)
        if mask is None:
            self.front_ids = self.seed_ids = self.changed_ids = None
            changes.record(self, None)
            if self.lmask is not None:
                self.lmask.fill(True)
            return
        if self.L is not None:
            self.seed_lanes = np.asarray(mask, dtype=bool)
            mask = self.seed_lanes.any(axis=1)
        self.seed_ids = np.flatnonzero(mask) if ids is None or self.L is not None else np.asarray(ids)
        self.front_ids = self.changed_ids = self.seed_ids
        changes.record(self, self.seed_ids)

    # ------------------------------------------------------------------ per iteration
    def begin(self, plan):
        self._st = {"gather": 0.0, "apply": 0.0, "activate": 0.0, "scatter": 0.0, "read": 0.0}
        self._changed = 0
        self._edges = 0
        self._bytes = 0
        self._next = []            # next frontier ids, one array per unit
        self._mask_used = False    # some units marked the mask instead
        self._applied = []         # (index, fields) per unit, for publish "copy"
        self._edge_writes = []
        # each unit's changed ids (the changed set a push sends from, the sources a
        # gather_from "changed" program reads); local rounds run
        self._changed_parts, self._local = [], 0
        if plan.direction == "push":
            self.pusher.begin(plan.frontier_format, plan.push_async)
            if plan.push_async:
                self.pusher.start_async(self.changed_ids)
        self._ctx = {}
        self.hoisted, self.hoisted_changed = None, False
        if plan.hoist:
            t0 = time.perf_counter()
            self.hoisted, self.hoisted_changed = changes.hoist(self)
            self._st["gather"] += time.perf_counter() - t0
        if plan.dense:
            self.acc_all.fill(self.spec.gather_reduce.identity(self.spec.gather_dtype))

    def load(self, plan):
        if not any(u.transfer in ("copy", "compact") for u in plan.units):
            for u in plan.units:
                if u.transfer == "load":
                    t0 = time.perf_counter()
                    for i in u.shards:
                        self._bytes += self.runs.load(i)
                    self._st["read"] += time.perf_counter() - t0
                yield u, self.runs.piece(u.shards[0])
            return
        self._pool = pool = BufferPool(self.memory.slots)
        items = read_ahead(self._produce(plan.units, pool), depth=max(self.memory.slots, 1), pool=pool)
        while True:
            t0 = time.perf_counter()
            item = next(items, None)
            self._st["read"] += time.perf_counter() - t0
            if item is None:
                return
            yield item

    def _produce(self, units, pool):
        """Runs on the read-ahead thread: each unit's data in place, in plan order."""
        for u in units:
            if u.transfer in ("copy", "compact"):
                pool.acquire(u.slot)
                piece, nbytes = self.slots.read(u.shards[0], u.slot, self.front_ids, u.transfer)
            else:
                nbytes = sum(self.runs.load(i) for i in u.shards) if u.transfer == "load" else 0
                piece = self.runs.piece(u.shards[0])
            with self._lock:
                self._bytes += nbytes
            yield u, piece

    def done(self, plan, unit):
        self._ctx.pop(unit, None)
        if unit.transfer in ("copy", "compact"):
            self._pool.release(unit.slot)

    def _timed(self, phase, t0):
        dt = time.perf_counter() - t0
        with self._lock:
            self._st[phase] += dt

    def gather(self, plan, unit, piece):
        t0 = time.perf_counter()
        if plan.direction == "push":
            edges = self.pusher.gather(unit, piece, self.changed_ids)
            with self._lock:
                self._edges += edges
            return self._timed("gather", t0)
        ctx = self._ctx.setdefault(unit, {})
        lo, hi, rows = self._rows(unit)
        acc, edges = self.kern.gather(piece, lo, hi, rows, unit.balance[0])
        if plan.dense:
            self.acc_all[lo:hi] = acc
        ctx["acc"] = acc
        with self._lock:
            self._edges += edges
        self._timed("gather", t0)

    def apply(self, plan, unit, piece):
        t0 = time.perf_counter()
        spec = self.spec
        if plan.direction == "push":
            index, written, changed = self.pusher.apply()
            if plan.push_async:   # (cur holds the values already; the changed set: publish)
                self._changed += len(changed)
            else:
                self._applied.append((index, tuple(written)))
                self.changed_ids, self._changed = changed, len(changed)
            return self._timed("apply", t0)
        if unit is None:
            index, count, acc, ctx = slice(0, self.n), self.n, self.acc_all, {}
        else:
            ctx = self._ctx.setdefault(unit, {})
            lo, hi, rows = self._rows(unit)
            index = slice(lo, hi) if rows is None else rows
            count = (hi - lo) if rows is None else len(rows)
            acc = ctx.get("acc")
            if acc is None:
                acc = np.full(count if self.L is None else (count, self.L),
                              spec.gather_dtype.type(0), dtype=spec.gather_dtype)
        v = VertexView(self.cur, self.builtins, index, count, writable=True, lanes=self.L)
        changed = as_length(self.program.apply(v, acc), count, np.bool_, self.L)
        written = v.assigned()
        if self.L is not None:
            changed, written = self._mask_lanes(index, changed, written)
        for f, val in written.items():
            self.nxt[f][index] = val
        if self.L is None:
            ch = np.flatnonzero(changed)
            ctx["changed"] = ch + index.start if isinstance(index, slice) else index[ch]
            nchanged = len(ch)
            if plan.local_rounds and unit is not None:   # asynchronous rounds (local.py)
                ctx["changed"] = local.rounds(self, plan, unit, piece, ctx["changed"], written)
                nchanged = len(ctx["changed"])
            if self.pusher is not None or self.prev_mask is not None:
                with self._lock:
                    self._changed_parts.append(ctx["changed"])
        else:
            ctx["rows"] = np.arange(index.start, index.stop) if isinstance(index, slice) else index
            ctx["changed"] = changed
            nchanged = int(changed.sum())
        self._applied.append((index, tuple(written)))
        ctx["written"] = written
        with self._lock:
            self._changed += nchanged
        self._timed("apply", t0)

    def activate(self, plan, unit, piece):
        t0 = time.perf_counter()
        if self.L is not None:
            self._activate_lanes(plan, unit, piece)
        elif plan.seed:
            changed = self._slice_ids(self.seed_ids, unit)
        elif plan.activation == "changed":   # after a push: the pull frontier of its changed set
            changed = self._slice_ids(self.changed_ids, unit)
        else:
            changed = self._ctx[unit]["changed"]
        if self.L is None and len(changed):
            targets = self.kern.activate(piece, changed, unit_spans(self.intervals, unit.shards))
            if plan.frontier_format == "bitmap" or len(targets) * 16 >= self.n:
                # many: mark them in the mask (workers only ever set flags, no lock needed)
                self.mask[targets] = True
                self._mask_used = True
            else:
                self._next.append(targets)
        self._timed("activate", t0)

    def scatter(self, plan, unit, piece):
        t0 = time.perf_counter()
        ctx = self._ctx[unit]
        if len(ctx["changed"]):
            out = self.kern.scatter(piece, ctx["changed"], ctx["written"])
            if out is not None:
                self._edge_writes.append(out)
        self._timed("scatter", t0)

    def publish(self, plan):
        if plan.publish == "swap":
            for f in plan.publish_fields:
                self.cur[f], self.nxt[f] = self.nxt[f], self.cur[f]
        elif plan.publish == "copy":
            for index, fields in self._applied:
                for f in fields:
                    self.cur[f][index] = self.nxt[f][index]
        for positions, values in self._edge_writes:
            for name, val in values.items():
                self.edges[name][positions] = val
        changes.publish(self, plan, self._changed_parts)
        if plan.frontier and self.L is not None:
            self.lmask, self.lnext = self.lnext, self.lmask
            self.lnext.fill(False)
            self.front_ids = np.flatnonzero(self.lmask.any(axis=1))
        elif plan.direction == "push":   # the record after a push is its changed set
            if plan.push_async:
                self.changed_ids = self.pusher.end_async()
            self.front_ids = self.changed_ids
        elif plan.frontier:
            self.front_ids = self._merge_next()
            if self.pusher is not None and not plan.seed and not plan.activation:
                parts = self._changed_parts
                self.changed_ids = (np.sort(np.concatenate(parts)) if parts
                                    else np.zeros(0, dtype=np.int64))
        else:
            self.front_ids = None

    def _merge_next(self):
        """The next frontier as sorted unique ids (through the mask when it is large)."""
        parts = self._next
        if not parts and not self._mask_used:
            return np.zeros(0, dtype=np.int64)
        total = sum(len(p) for p in parts)
        if not self._mask_used and total * 16 < self.n:
            return np.unique(np.concatenate(parts) if len(parts) > 1 else parts[0])
        mask = self.mask
        for p in parts:
            mask[p] = True
        ids = np.flatnonzero(mask)
        mask[ids] = False
        return ids

    def reduce(self, plan):
        t0 = time.perf_counter()
        self._aggregates = {}
        spec = self.spec
        if plan.reduce:
            view = VertexView(self.cur, self.builtins, slice(0, self.n), self.n)
            for name in plan.reduce:
                dtype = spec.aggregate_dtype[name]
                terms = as_length(getattr(self.program, "aggregate_" + name)(view), self.n, dtype)
                self._aggregates[name] = spec.aggregates[name].reduce(terms, dtype).item()
        self._timed("apply", t0)

    def read_back(self, plan, stats):
        if self.front_ids is None:
            counts = np.diff(self.intervals)
        else:
            counts = np.diff(np.searchsorted(self.front_ids, self.intervals))
        st = self._st
        stats.time_gather += st["gather"]
        stats.time_apply += st["apply"]
        stats.time_activate += st["activate"]
        stats.time_scatter += st["scatter"]
        stats.time_read += st["read"]
        stats.bytes_read += self._bytes
        self.slots.report(stats)
        stats.local_rounds += self._local
        rb = Readback(shard_active=counts, changed_vertices=self._changed,
                      active_edges=self._edges, aggregates=dict(getattr(self, "_aggregates", {})))
        if self.pusher is not None:
            ids = self.changed_ids
            rb.shard_changed = (np.diff(self.intervals) if ids is None
                                else np.diff(np.searchsorted(ids, self.intervals)))
            rb.changed_edges = self.pusher.edges_of(ids, self.push_degrees)
        if self.L is not None:
            rb.lane_active = (self.lmask.sum(axis=0) if self.lmask is not None
                              else self.alive * self.n)
        return rb

    # ------------------------------------------------------------------ helpers
    def _rows(self, unit, ids=None):
        """(lo, hi, rows): the unit's vertex span and its active ids (None: all of [lo, hi))."""
        first, last = unit.shards[0], unit.shards[-1]
        lo, hi = int(self.intervals[first]), int(self.intervals[last + 1])
        if unit.balance[0] == "full" or (ids is None and self.front_ids is None):
            return lo, hi, None
        return lo, hi, self._slice_ids(self.front_ids if ids is None else ids, unit)

    def _slice_ids(self, ids, unit):
        shards = unit.shards
        if shards[-1] - shards[0] + 1 == len(shards):
            a, b = np.searchsorted(ids, (self.intervals[shards[0]], self.intervals[shards[-1] + 1]))
            return ids[a:b]
        bounds = np.searchsorted(ids, np.stack([self.intervals[list(shards)],
                                                self.intervals[[i + 1 for i in shards]]]))
        return np.concatenate([ids[a:b] for a, b in bounds.T])

    # ------------------------------------------------------------------ results
    def state(self):
        return {f: a.copy() for f, a in self.cur.items()}

    def edge_state(self):
        return {k: a.copy() for k, a in self.edges.items()}

    def info(self):
        return {"backend": self.name, "threads": self.threads}

    def close(self):
        self.runs = self.slots = None
