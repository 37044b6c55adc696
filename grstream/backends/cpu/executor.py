"""The CPU executor: the engine's plans run as numpy passes over resident runs and streamed shards.

The reference implementation of grstream/engine/executor.py (and of the semantics in
grstream/engine/backend.py). The executor holds the vertex fields, the shard data and the run's
frontier (kept both as a mask and as a sorted id array, so an iteration with a small frontier
costs in proportion to the frontier, not to the graph); a strategy object runs each plan's
phases: pull, push or lanes (grstream/backends/cpu/strategy.py).
"""
import time

import numpy as np

from ...engine.contract import Executor, Readback, RunState, Touched, dataset_dtype, union_ids
from ...readahead import BufferPool, read_ahead
from . import changes, kernels
from .pieces import ResidentRuns, Slots
from .facts import CpuFacts
from .strategy import Frontier, Tally
from .strategy_lanes import Lanes
from .strategy_pull import Pull
from .strategy_compiled import CompiledPush, push_class
from ...program.views import VertexView, as_length


class CpuExecutor(CpuFacts, Executor):
    name = "cpu"
    lanes = True

    # ------------------------------------------------------------------ setup
    def __init__(self, store, spec, memory, ledger, shared, setup):
        super().__init__(store, spec, memory, ledger, shared, setup)
        self.threads = self._threads(setup.options)
        n = self.n = int(store.num_vertices)
        # lanes: several runs of one program class at once, every vertex field (n, lanes)
        L = self.L = setup.lanes
        shape = (n,) if L is None else (n * L,)   # lanes: flat, viewed as (n, lanes in use)
        self.intervals = np.asarray(store.intervals, dtype=np.int64)
        # the store's degrees (views of its arrays, counted once as "store")
        ledger.take("device", "store", memory.static["store"])
        self.builtins = {d: getattr(store, d)() for d in ("in_degree", "out_degree")
                         if d in spec.vertex_reads}
        sizes = np.diff(np.asarray(store.intervals, dtype=np.int64))
        step = max(int(sizes.max(initial=0)), 1)   # passes over every vertex: a shard at a time
        self._chunks = [(lo, min(lo + step, n)) for lo in range(0, n, step)] or [(0, 0)]
        lo, hi = setup.span or (0, n)   # an apply over every vertex: over the span only
        self._apply_chunks = [(max(a, lo), min(b, hi)) for a, b in self._chunks if min(b, hi) > max(a, lo)]
        self.cur, self.nxt = {}, {}
        for f, dt in spec.vertex_fields.items():
            for side, where in (("cur", self.cur), ("nxt", self.nxt)):
                where[f] = np.zeros(shape, dtype=dt)
                ledger.take("device", f"{side}/{f}", where[f].nbytes)
        masks = spec.activate != "all"   # (a schedule: per-lane masks only)
        if masks:
            ledger.take("device", "frontier", memory.static["frontier"])
        self.frontier = Frontier(n, self.intervals, spec.activate == "frontier")
        self.tally = Tally()
        self.sources = changes.ChangedSources(spec, n, memory, ledger)   # gather_from "changed"
        self.hoisted = self.acc_all = None
        self.hoisted_changed = False
        for name in ("hoisted", "acc"):
            if name in memory.static:
                ledger.take("device", name, memory.static[name])
        if "acc" in memory.static:
            self.acc_all = np.zeros(shape, dtype=spec.gather_dtype)
        self._full = {"cur": dict(self.cur), "nxt": dict(self.nxt), "acc": self.acc_all}
        self._handed_out = False   # state() gave nxt's arrays to a Result
        self.terms = None
        if "terms" in memory.static:   # aggregates' per-vertex terms, reduced at once
            ledger.take("device", "terms", memory.static["terms"])
            self.terms = np.zeros(memory.static["terms"], dtype=np.uint8)
        self.edges = {}
        for name, dt in spec.edge_state.items():
            ledger.take("device", f"edges/{name}", int(store.num_edges) * dt.itemsize)
        ledger.take("scratch", "unit temporaries", memory.scratch_bytes)

        def dtype_of(name):
            return dataset_dtype(store, name)
        self.runs = ResidentRuns(store, memory, dtype_of, ledger, shared)
        self.slots = Slots(store, memory, dtype_of, ledger)
        self.kern = kernels.Kernels(self, setup.options.kernels)
        # the strategies: lanes (an executor of lanes runs only them), else pull and, where the
        # model holds push's arrays, push
        self.lane_runs = Lanes(self, shape, masks) if L is not None else None
        self.cap = L
        if L is not None:
            self._use_lanes(L)
        self.push = None
        pushes = "push/acc" in memory.static
        self._kernels = setup.options.kernels
        cls, compiled = push_class(self, self._kernels, pushes)   # (where it qualifies)
        if pushes:
            self.push = cls(self, ledger) if compiled is None else cls(self, ledger, compiled)
        self.pull = Pull(self)
        self.push_degrees = [] if self.push is None else [
            store.out_degree() if d == "in" else store.in_degree() for d in self.push.dirs]
        self.mode = self.pull   # the strategy of the plan that runs
        self._pool = None

    def _use_lanes(self, count):
        """Run ``count`` lanes (at most the capacity allocated): views of the first rows."""
        if count > self.cap:
            raise ValueError(f"{count} lanes on an executor of {self.cap}")
        full, n = self._full, self.n
        self.L = count

        def view(a):   # the first n * count elements as a contiguous (n, count) array
            return a[:n * count].reshape(n, count)
        self.cur = {f: view(a) for f, a in full["cur"].items()}
        self.nxt = {f: view(a) for f, a in full["nxt"].items()}
        if full["acc"] is not None:
            self.acc_all = view(full["acc"])
        self.lane_runs.use(count)

    def vertex_chunks(self):
        """``[(lo, hi)]``: the vertex ranges of passes over every vertex (a shard's vertices at
        most each, so that a program's temporaries over them stay within the scratch)."""
        return self._chunks

    def apply_chunks(self):
        """``[(lo, hi)]``: the vertex ranges of an apply over every vertex (``unit`` None), within
        ``setup.span``."""
        return self._apply_chunks

    def strategy(self, plan):
        """The strategy that runs ``plan``."""
        if self.lane_runs is not None:
            return self.lane_runs
        return self.push if plan.direction == "push" else self.pull

    # ------------------------------------------------------------------ per run
    def bind(self, program):
        self.program = program

    def host_state(self, name, shape, dtype):
        """The initial state is written straight into ``nxt`` (load_state copies it to ``cur``),
        so that a run's start holds no third copy of the vertex fields."""
        self._renew()
        if self.L is not None:
            self._use_lanes(shape[1])
        out = self.nxt.get(name)
        if out is None or out.shape != tuple(shape) or out.dtype != np.dtype(dtype):
            return np.zeros(shape, dtype=dtype)
        return out   # (the engine's init writes every entry: engine/state.py)

    def _renew(self):
        """New ``nxt`` arrays where state() handed the last ones to a Result."""
        if self._handed_out:
            self.nxt = {f: np.empty_like(a) for f, a in self.nxt.items()}
            self._handed_out = False

    def load_state(self, state, edge_state):
        self._renew()
        if self.push is not None:
            self.push.forget()
        if self.L is not None:
            self._use_lanes(next(iter(state.values())).shape[1])
        for f, a in self.cur.items():
            a[...] = state[f]
            if state[f] is not self.nxt[f]:   # (host_state's arrays: init wrote nxt already)
                self.nxt[f][...] = a
        self.edges = {k: np.array(v, dtype=self.spec.edge_state[k]) for k, v in edge_state.items()}

    def set_frontier(self, mask, ids=None):
        if self.lane_runs is not None:
            mask, ids = self.lane_runs.start(mask), None
        ids = np.asarray(ids) if ids is not None else None if mask is None else np.flatnonzero(mask)
        self.frontier.start(ids)
        self.sources.record(ids)

    def set_active(self, active):
        """Sorted ids, or in lanes an (n, lanes) mask."""
        if self.lane_runs is not None:
            self.lane_runs.schedule(active)
        else:
            self.frontier.ids = np.asarray(active, dtype=np.int64)   # (publish left None)

    def set_lanes(self, alive):
        """Lanes only: run only the lanes marked in ``alive`` from now on (the others converged:
        their vertices stay as they are). Returns the active vertices per shard of the union."""
        return self.lane_runs.set_lanes(alive)

    # ------------------------------------------------------------------ per iteration
    def begin(self, plan):
        self.tally.reset()
        self.frontier.begin()
        self.mode = self.strategy(plan)
        self.mode.begin(plan)
        self.hoisted, self.hoisted_changed = None, False
        if plan.hoist:
            t0 = time.perf_counter()
            self.hoisted, self.hoisted_changed = changes.hoist(self)
            self.tally.timed("gather", t0)
        if plan.dense:
            self.acc_all.fill(self.spec.gather_reduce.identity(self.spec.gather_dtype))

    def load(self, plan):
        streamed = any(u.transfer in ("copy", "compact") for u in plan.units)
        if not streamed and sum(u.transfer == "load" for u in plan.units) > 1:
            # resident shards read for the first time: the next unit's are read (preadv, no GIL)
            # on the read-ahead thread while this one's compute runs
            yield from self._timed(read_ahead(self._produce(plan.units, None), depth=1))
            return
        if not streamed:
            for u in plan.units:
                if u.transfer == "load":
                    t0 = time.perf_counter()
                    self.tally.add(nbytes=sum(self.runs.load(i) for i in u.shards))
                    self.tally.timed("read", t0)
                yield u, self.runs.piece(u.shards[0])
            return
        self._pool = pool = BufferPool(self.memory.slots)
        yield from self._timed(read_ahead(self._produce(plan.units, pool),
                                          depth=max(self.memory.slots, 1), pool=pool))

    def _timed(self, items):
        """The read-ahead's items, the waits for them counted as reading."""
        while True:
            t0 = time.perf_counter()
            item = next(items, None)
            self.tally.timed("read", t0)
            if item is None:
                return
            yield item

    def _produce(self, units, pool):
        """Runs on the read-ahead thread: each unit's data in place, in plan order."""
        for u in units:
            if u.transfer in ("copy", "compact"):
                pool.acquire(u.slot)
                piece, nbytes = self.slots.read(u.shards[0], u.slot, self.frontier.ids, u.transfer)
            else:
                nbytes = sum(self.runs.load(i) for i in u.shards) if u.transfer == "load" else 0
                piece = self.runs.piece(u.shards[0])
            self.tally.add(nbytes=nbytes)
            yield u, piece

    def done(self, plan, unit):
        self.mode.done(unit)
        if unit.transfer in ("copy", "compact"):
            self._pool.release(unit.slot)

    def gather(self, plan, unit, piece):
        self.mode.gather(plan, unit, piece)

    def apply(self, plan, unit, piece):
        self.mode.apply(plan, unit, piece)

    def activate(self, plan, unit, piece):
        self.mode.activate(plan, unit, piece)

    def scatter(self, plan, unit, piece):
        self.mode.scatter(plan, unit, piece)

    def publish(self, plan):
        mode = self.mode
        if plan.publish == "swap":
            for f in plan.publish_fields:
                self.cur[f], self.nxt[f] = self.nxt[f], self.cur[f]
        elif plan.publish == "copy":
            for index, fields in mode.applied:
                for f in fields:
                    self.cur[f][index] = self.nxt[f][index]
        for positions, values in mode.edge_writes:
            for name, val in values.items():
                self.edges[name][positions] = val
        mode.publish(plan)

    def reduce(self, plan):
        t0 = time.perf_counter()
        self._aggregates = {}
        spec = self.spec
        for name in plan.reduce:
            # the terms computed a shard's vertices at a time into one buffer, reduced at once
            dtype = spec.aggregate_dtype[name]
            terms = self.terms[:self.n * dtype.itemsize].view(dtype)
            for lo, hi in self._chunks:
                view = VertexView(self.cur, self.builtins, slice(lo, hi), hi - lo)
                terms[lo:hi] = as_length(getattr(self.program, "aggregate_" + name)(view), hi - lo, dtype)
            self._aggregates[name] = spec.aggregates[name].reduce(terms, dtype).item()
        self.tally.timed("apply", t0)

    def read_back(self, plan, stats):
        tally, frontier = self.tally, self.frontier
        for phase, seconds in tally.seconds.items():
            setattr(stats, f"time_{phase}", getattr(stats, f"time_{phase}") + seconds)
        stats.bytes_read += tally.nbytes
        self.slots.report(stats)
        stats.local_rounds += tally.local_rounds
        rb = Readback(shard_active=frontier.counts(frontier.ids), changed_vertices=tally.changed,
                      active_edges=tally.edges, aggregates=dict(getattr(self, "_aggregates", {})))
        if self.push is not None:
            rb.shard_changed = frontier.counts(frontier.changed)
            rb.changed_edges = self.push.edges_of(frontier.changed, self.push_degrees)
        self.mode.read_back(plan, rb)
        return rb

    # ------------------------------------------------------------------ ranks
    def touched(self, plan):
        mode, tally = self.mode, self.tally
        parts = [np.arange(i.start, i.stop, dtype=np.int64) if isinstance(i, slice)
                 else np.asarray(i, dtype=np.int64) for i, _ in mode.applied]
        edges = [np.asarray(p, dtype=np.int64) for p, _ in mode.edge_writes]
        lanes = None if self.lane_runs is None or not plan.frontier else self.lane_runs.flat()
        return Touched(applied=union_ids(parts), frontier=self.frontier.ids if plan.frontier else None,
                       changed=mode.changed_ids, edges=union_ids(edges) if self.spec.edge_state else None,
                       changed_count=tally.changed, edges_walked=tally.edges,
                       lanes=lanes, lane_space=0 if lanes is None else self.n * self.L)

    def adopt(self, frontier=None, changed=None, lanes=None):
        if lanes is not None:
            self.lane_runs.adopt(lanes)
        elif frontier is not None:
            self.frontier.ids = frontier
        if changed is not None:
            self.sources.record(changed)
            if self.push is not None:
                self.frontier.changed = changed

    def vertex_arrays(self):
        return dict(self.cur)

    def edge_arrays(self):
        return dict(self.edges)

    def push_messages(self):
        return self.push.combine()

    def apply_messages(self, plan, receivers, values):
        t0 = time.perf_counter()
        self.push.receive(receivers, values)
        self.tally.timed("apply", t0)

    # ------------------------------------------------------------------ checkpoints
    def save_run(self):
        f = self.frontier
        return RunState(fields={k: a.copy() for k, a in self.cur.items()}, edges=self.edge_state(),
                        active=f.ids, changed=f.changed, sources=self.sources.ids)

    def restore_run(self, saved):
        self.load_state(saved.fields, saved.edges)
        f = self.frontier
        f.ids, f.seed, f.changed = saved.active, None, saved.changed
        self.sources.record(saved.sources)

    # ------------------------------------------------------------------ results
    def state(self):
        """The vertex fields: a single run's in ``nxt``'s arrays, which the next run replaces
        (the Result takes them without a further copy of the fields)."""
        if self.L is not None:
            return {f: a.copy() for f, a in self.cur.items()}
        for f, a in self.cur.items():
            self.nxt[f][...] = a
        self._handed_out = True
        return dict(self.nxt)

    def edge_state(self):
        return {k: a.copy() for k, a in self.edges.items()}

    def info(self):
        return {"backend": self.name, "threads": self.threads}

    def outdated(self):
        """A numpy push that ``kernels`` "auto" now compiles (this run's edges counted, as an
        executor made for the run counts them)."""
        if self.push is None or self._kernels == "numpy" or isinstance(self.push, CompiledPush):
            return False
        return push_class(self, self._kernels)[1] is not None

    def close(self):
        self.runs = self.slots = None

