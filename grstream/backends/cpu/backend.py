"""The CPU backend: GAS iterations as numpy kernels over streamed or cached shards.

This is the reference implementation of the semantics in grstream/engine/backend.py and the
default on machines without a GPU.
"""
import collections
import concurrent.futures
import os
import time

import numpy as np

from ...engine.backend import Backend, IterationStats, check_edge_props
from ...engine.schedule import (activation_arrays, active_shards, needed_arrays, plan_memory,
                                shard_bytes)
from ...errors import UsageError
from .feeder import ShardFeeder
from ...program.monoid import sum as sum_monoid
from .segments import expand_ranges, reduce_segments, spmv
from .views import EdgeView, ExpandedView, VertexView, as_length

# Below this fraction of active vertices in an interval, gather and activation select the active
# vertices' edges instead of sweeping the whole shard.
SPARSE_FRACTION = 0.25


class CpuBackend(Backend):
    name = "cpu"

    def __init__(self, store, program, memory_budget=None, progress=False, threads=None):
        super().__init__(store, program, memory_budget, progress)
        # numpy and scipy release the GIL in the heavy loops, so shards compute in parallel
        self.threads = max(1, int(threads or min(8, os.cpu_count() or 1)))
        spec = self.spec
        check_edge_props(store, spec)
        n = self.n = int(store.num_vertices)
        self.intervals = np.asarray(store.intervals, dtype=np.int64)
        self.builtins = {}
        if "in_degree" in spec.vertex_reads:
            self.builtins["in_degree"] = store.in_degree()
        if "out_degree" in spec.vertex_reads:
            self.builtins["out_degree"] = store.out_degree()
        self.names = needed_arrays(spec)
        if "in/eid" in self.names and store.num_shards and "in/eid" not in store.dataset_names(0):
            raise UsageError(f"{spec.name} gathers mutable edge state over in-edges, which needs "
                             f"edge ids in the store: rebuild it with --edge-ids")
        counts = [store.shard_info(i).num_out_edges for i in range(store.num_shards)]
        self.out_offset = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))
        edge_bytes = int(store.num_edges) * sum(dt.itemsize for dt in spec.edge_state.values())
        self.act_names = activation_arrays(spec)
        uses = getattr(spec.analysis, "gather_uses", None)
        self.hoist = spec.has_gather and uses is not None and uses <= {"src"}
        vertex_bytes = (2 * sum(n * dt.itemsize for dt in spec.vertex_fields.values())
                        + sum(a.nbytes for a in self.builtins.values())
                        + 2 * n  # active masks, this iteration and the next
                        + (n * spec.gather_dtype.itemsize if self.hoist else 0)
                        + edge_bytes)
        self.plan = plan_memory(shard_bytes(store, self.names), vertex_bytes, memory_budget)
        self.feeder = ShardFeeder(store, self.names, self.plan)
        self.pool = concurrent.futures.ThreadPoolExecutor(self.threads, thread_name_prefix="grstream-cpu")
        self.cur = self.nxt = None
        self.edges = {}
        self.active = None
        self._aggregates = {}

    # ----------------------------------------------------------------- lifecycle
    def start(self, state, seed):
        spec = self.spec
        self.cur = {f: np.ascontiguousarray(state[f], dtype=dt) for f, dt in spec.vertex_fields.items()}
        self.nxt = {f: a.copy() for f, a in self.cur.items()}
        self.edges = self._initial_edge_state()
        n = self.n
        if seed is None or spec.activate == "all":
            self.active = np.ones(n, dtype=bool)
        else:
            seed = np.asarray(seed, dtype=bool)
            nxt = np.zeros(n, dtype=bool)
            shards, _ = active_shards(self.intervals, seed)
            for i, arrays, _, _, release in self.feeder.stream(shards):
                lo, hi = self.intervals[i], self.intervals[i + 1]
                try:
                    self._activate(arrays, np.flatnonzero(seed[lo:hi]), hi - lo, nxt)
                finally:
                    release()
            self.active = nxt
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            self._aggregates = self._compute_aggregates()
        return int(self.active.sum())

    def _initial_edge_state(self):
        """Edge state in global CSR order: zeros, or the stored property of the same name."""
        out = {}
        m = int(self.store.num_edges)
        for name, dtype in self.spec.edge_state.items():
            if name in self.store.edge_props:
                parts = [self.store.read(i, f"out/{name}") for i in range(self.store.num_shards)]
                out[name] = (np.concatenate(parts) if parts else np.zeros(0)).astype(dtype)
            else:
                out[name] = np.zeros(m, dtype=dtype)
        return out

    def edge_state(self):
        return {k: a.copy() for k, a in self.edges.items()}

    def aggregates(self):
        return dict(self._aggregates)

    def state(self):
        return {f: a.copy() for f, a in self.cur.items()}

    def close(self):
        self.pool.shutdown(wait=True)

    def info(self):
        return {"backend": self.name, "threads": self.threads, "memory": self.plan.to_dict(), "arrays": self.names,
                "hoisted_gather": self.hoist}

    # ----------------------------------------------------------------- one iteration
    def iterate(self, iteration):
        # IEEE semantics as on the GPU: x/0 gives inf or nan without a warning
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return self._iterate(iteration)

    def _iterate(self, iteration):
        t_start = time.perf_counter()
        spec, program, n = self.spec, self.program, self.n
        program.iteration = iteration
        act = self.active
        st = IterationStats(iteration=iteration)
        st.active_vertices = int(act.sum())
        if spec.activate == "all":
            shards = np.arange(self.store.num_shards)
            next_active = None
        else:
            shards, _ = active_shards(self.intervals, act)
            next_active = np.zeros(n, dtype=bool)
        st.shards_processed = len(shards)
        st.shards_skipped = self.store.num_shards - len(shards)

        hoisted = None
        if self.hoist and len(shards):
            t0 = time.perf_counter()
            everyone = VertexView(self.cur, self.builtins, slice(0, n), n)
            hoisted = as_length(program.gather_map(everyone, None, None), n, spec.gather_dtype)
            st.time_gather += time.perf_counter() - t0

        applied = []
        pending = collections.deque()

        edge_writes = []

        def finish(future):
            index, written, changed, times, edges, scattered = future.result()
            if index is not None:
                applied.append((index, written))
            if scattered is not None:
                edge_writes.append(scattered)
            st.time_scatter += times[3]
            st.changed_vertices += changed
            st.active_edges += edges
            st.time_gather += times[0]
            st.time_apply += times[1]
            st.time_activate += times[2]

        try:
            for i, arrays, nbytes, waited, release in self.feeder.stream(shards):
                st.bytes_read += nbytes
                st.time_read += waited
                pending.append(self.pool.submit(self._shard, i, arrays, release, act, hoisted,
                                                next_active))
                while len(pending) >= self.threads:
                    finish(pending.popleft())
            while pending:
                finish(pending.popleft())
        finally:
            for f in pending:  # an error stopped the loop: let running work end
                f.cancel()
            concurrent.futures.wait(pending)

        # bulk-synchronous: publish the new values only after every shard has gathered
        for index, fields in applied:
            for f in fields:
                self.cur[f][index] = self.nxt[f][index]
        for positions, values in edge_writes:
            for name, val in values.items():
                self.edges[name][positions] = val
        if next_active is None:
            self.active = np.ones(n, dtype=bool)
        else:
            self.active = next_active
        st.next_active_vertices = int(self.active.sum())
        t0 = time.perf_counter()
        self._aggregates = self._compute_aggregates()
        st.aggregates = dict(self._aggregates)
        st.time_apply += time.perf_counter() - t0
        st.time_total = time.perf_counter() - t_start
        return st

    # ----------------------------------------------------------------- phases
    def _shard(self, i, arrays, release, act, hoisted, next_active):
        """Gather, apply and activate one shard; runs on a worker thread.

        Shards write disjoint interval ranges of ``nxt`` and only set flags in ``next_active``,
        so workers need no locks.
        """
        try:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                lo, hi = int(self.intervals[i]), int(self.intervals[i + 1])
                local = act[lo:hi]
                count = int(local.sum())
                if count == 0:
                    return None, (), 0, (0.0, 0.0, 0.0, 0.0), 0, None
                rows = None if count == hi - lo else np.flatnonzero(local)
                t0 = time.perf_counter()
                if rows is not None and count > SPARSE_FRACTION * (hi - lo):
                    # a dense sweep with the inactive results dropped beats selecting edges;
                    # statistics still count only the active vertices' edges
                    acc, _ = self._gather(arrays, lo, hi, None, hoisted, i)
                    acc = acc[rows]
                    edges = self._edges_of(arrays, rows)
                else:
                    acc, edges = self._gather(arrays, lo, hi, rows, hoisted, i)
                t1 = time.perf_counter()
                index = slice(lo, hi) if rows is None else rows + lo
                v = VertexView(self.cur, self.builtins, index, count, writable=True)
                changed = as_length(self.program.apply(v, acc), count, np.bool_)
                written = v.assigned()
                for f, val in written.items():
                    self.nxt[f][index] = val
                t2 = time.perf_counter()
                ch = np.flatnonzero(changed)
                if next_active is not None and len(ch):
                    self._activate(arrays, ch if rows is None else rows[ch], hi - lo, next_active)
                t3 = time.perf_counter()
                scattered = None
                if self.spec.has_scatter and len(ch):
                    scattered = self._scatter(arrays, i, lo, ch if rows is None else rows[ch],
                                              written)
                t4 = time.perf_counter()
                return (index, tuple(written), len(ch), (t1 - t0, t2 - t1, t3 - t2, t4 - t3), edges,
                        scattered)
        finally:
            release()

    def _edges_of(self, arrays, rows):
        """How many edges the active ``rows`` gather over."""
        total = 0
        for direction in ("in", "out"):
            if self.spec.gather_edges in (direction, "all"):
                indptr = arrays[f"{direction}/indptr"]
                total += int((indptr[rows + 1] - indptr[rows]).sum())
        return total

    def _edge_arrays(self, arrays, direction, i):
        """Edge properties of a shard's in- or out-edges, stored and mutable (lazily sliced)."""
        props = {p: arrays[f"{direction}/{p}"] for p in self.spec.edge_reads}
        for name in self.spec.edge_state:
            if direction == "out":
                lo, hi = self.out_offset[i], self.out_offset[i + 1]
                props[name] = self.edges[name][lo:hi]
            else:
                props[name] = (lambda name=name: self.edges[name][arrays["in/eid"]])
        return props

    def _scatter(self, arrays, i, lo, changed_local, written):
        """Run scatter over the out-edges of the changed vertices; return (positions, values)."""
        indptr, dst_ids = arrays["out/indptr"], arrays["out/dst"]
        sel, seg = expand_ranges(indptr, np.asarray(changed_local, dtype=np.int64))
        if len(sel) == 0:
            return None
        fields = {f: (self.nxt[f] if f in written else a) for f, a in self.cur.items()}
        src = ExpandedView(VertexView(fields, self.builtins, changed_local + lo, len(changed_local)),
                           np.diff(seg))
        dst = VertexView(self.cur, self.builtins, dst_ids[sel], len(sel))
        edge = EdgeView(self._edge_arrays(arrays, "out", i), sel, writable=True)
        self.program.scatter(src, dst, edge)
        positions = self.out_offset[i] + sel
        values = {k: as_length(v, len(sel), self.spec.edge_state[k]).copy()
                  for k, v in edge.assigned().items()}
        return positions, values

    def _gather(self, arrays, lo, hi, rows, hoisted, i):
        """(accumulator per active vertex of the interval, edges gathered over)."""
        spec = self.spec
        dtype = spec.gather_dtype
        count = (hi - lo) if rows is None else len(rows)
        if not spec.has_gather:
            return np.full(count, spec.gather_dtype.type(0), dtype=dtype), 0
        monoid = spec.gather_reduce
        acc = None
        edges = 0
        for direction in ("in", "out"):
            if spec.gather_edges not in (direction, "all"):
                continue
            ids_name = "in/src" if direction == "in" else "out/dst"
            indptr = arrays[f"{direction}/indptr"]
            ids = arrays[ids_name]
            if rows is None:
                sel, seg = None, indptr
                other = ids
            else:
                sel, seg = expand_ranges(indptr, rows)
                other = ids[sel]
            m = int(seg[-1])
            edges += m

            def own(seg=seg):
                # the gathering vertex of every selected edge
                base = np.arange(lo, hi, dtype=np.int64) if rows is None else rows + lo
                return np.repeat(base, np.diff(seg))

            if hoisted is not None and monoid is sum_monoid and direction == "in" and dtype.kind in "fi":
                # sum of a per-source value over in-edges is a sparse matrix-vector product: let
                # scipy's fused C loop do the gather and the reduction in one pass
                part = spmv(seg, other, hoisted)
                acc = part if acc is None else acc + part
                continue
            if hoisted is not None:
                msg = hoisted[other] if direction == "in" else hoisted[own()]
            else:
                props = self._edge_arrays(arrays, direction, i)
                other_view = VertexView(self.cur, self.builtins, other, m)
                own_index = slice(lo, hi) if rows is None else rows + lo
                own_view = ExpandedView(VertexView(self.cur, self.builtins, own_index, count),
                                        np.diff(seg))
                src, dst = (other_view, own_view) if direction == "in" else (own_view, other_view)
                msg = as_length(self.program.gather_map(src, dst, EdgeView(props, sel)), m, dtype)
            part = reduce_segments(msg, seg, monoid, dtype)
            acc = part if acc is None else monoid.ufunc(acc, part).astype(dtype, copy=False)
        return acc, edges

    def _activate(self, arrays, changed_local, interval_len, next_active):
        """Mark every vertex that gathers from a changed vertex as active next iteration."""
        direction = self.spec.gather_edges or "in"
        pairs = []
        if direction in ("in", "all"):
            pairs.append(("out/indptr", "out/dst"))
        if direction in ("out", "all"):
            pairs.append(("in/indptr", "in/src"))
        for ptr_name, ids_name in pairs:
            indptr, ids = arrays[ptr_name], arrays[ids_name]
            if len(changed_local) > SPARSE_FRACTION * interval_len:
                mask = np.zeros(interval_len, dtype=bool)
                mask[changed_local] = True
                next_active[ids[np.repeat(mask, np.diff(indptr))]] = True
            else:
                sel, _ = expand_ranges(indptr, np.asarray(changed_local, dtype=np.int64))
                next_active[ids[sel]] = True

    def _compute_aggregates(self):
        spec, n = self.spec, self.n
        out = {}
        if not spec.aggregates:
            return out
        view = VertexView(self.cur, self.builtins, slice(0, n), n)
        for name, monoid in spec.aggregates.items():
            dtype = spec.aggregate_dtype[name]
            terms = as_length(getattr(self.program, "aggregate_" + name)(view), n, dtype)
            out[name] = monoid.reduce(terms, dtype).item()
        return out
