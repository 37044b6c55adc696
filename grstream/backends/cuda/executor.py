"""The CUDA executor: runs the engine's plans (grstream/engine/executor.py) with generated kernels.

It makes no scheduling decision: the shards of each unit, their transfer, slot and load-balance
strategy, dense or per-unit apply, hoisting, the publish rule and every byte come from the
:class:`~grstream.engine.plan.IterationPlan` and the :class:`~grstream.engine.memory.MemoryModel`.
It executes them on the device: :mod:`.movement` delivers each unit's arrays, :mod:`.gathers`
and :class:`.device.DeviceState` launch the kernels, one readback per iteration reports the
counters, aggregates and the next frontier's active vertices per shard.

Its options are :class:`.options.CudaOptions`; its class-level facts (footprint, capabilities,
policies) are in :mod:`.facts`.
"""
import time

import numpy as np

from ...engine.contract import (Executor, Readback, RunState, activation_arrays, gather_directions,
                                is_dense, push_arrays, seed_ids, select)
from ...errors import InternalError
from . import loadbalance, transfer
from .compact import Packer
from .device import DeviceState
from .blockids import MERGE_WARP_ITEMS
from .facts import CudaFacts
from .phases import VertexPhases
from .runstart import RunStart
from .gathers import Gathers
from .lane_runs import LaneRuns
from .movement import Mover
from .pushes import Pushes
from .skeletons import MERGE_PER_THREAD
from .zerocopy import ZeroCopyKernels

class CudaExecutor(RunStart, VertexPhases, CudaFacts, Executor):
    """GAS plans on an NVIDIA GPU through PyCUDA (see the module docstring for the options)."""

    name = "cuda"
    pinned = True
    lanes = True   # (lane_runs.LaneRuns)

    # ------------------------------------------------------------------ setup
    def __init__(self, store, spec, memory, ledger, shared, setup):
        super().__init__(store, spec, memory, ledger, shared, setup)
        options = setup.options
        self.load_balance, self.deterministic = options.load_balance, options.deterministic
        merge_items, self.streams, hub_edges = options.merge_items, options.streams, options.push_hub_edges
        # the push buffers exist when the session planned memory for push (Setup.push)
        ks, static, scratch = self._buffers(store, spec, is_dense(spec), "push accumulator" in memory.static,
                                            setup.lanes)
        self.ks = ks
        if merge_items is None:   # the warps of the compressed merge split walk runs of edges
            merge_items = MERGE_WARP_ITEMS if ks.id_bits else MERGE_PER_THREAD
        loadbalance.check_strategy(self.load_balance, ks.merge_ok)
        self.dev = self.mover = self.packer = self.zc = self._origin = None
        self.mode_times = transfer.ModeTimes()
        self._host_state = {}   # field -> page-locked array, reused by every run of a session
        try:
            self.dev = DeviceState(store, spec, ks, {**static, **scratch}, set(scratch), ledger, self.streams)
            self.packer = Packer(memory, store.intervals)
            self.mover = Mover(store, memory, self.dev.ex, ledger, shared,
                               push_names=select(memory.names, push_arrays(spec)),
                               mapped=transfer.mapped(options), packer=self.packer)
            # zero-copy units run the warp-merged, aligned variant of the kernels; deterministic
            # runs keep the ordinary ones (the variant reduces short rows in another order), as do
            # lanes (each lane's launches take its arguments in the main module's constant)
            self.zc = (ZeroCopyKernels(self.dev, ks) if self.mover.cache_dev is not None
                       and not self.deterministic and not setup.lanes else None)
        except BaseException:
            self.close()
            raise
        self.dirs = gather_directions(spec)
        self.gathers = Gathers(self.dev, store, spec, ks, self.dirs, merge_items, scratch.get("shard tables", 0))
        self.pushes = Pushes(self.dev, ks, hub_edges, merge_items)
        act = activation_arrays(spec)
        self.act_pairs = [(act[k], act[k + 1]) for k in range(0, len(act), 2)]
        self.sizes = np.diff(self.dev.intervals)
        # gathered edges of every shard (dense plans count them on the host)
        infos = [store.shard_info(i) for i in range(store.num_shards)]
        self.shard_edges = np.array([sum(x.num_in_edges if d == "in" else x.num_out_edges for d in self.dirs)
                                     for x in infos], dtype=np.int64)
        self.seed_idx = None
        # gather_from "changed": the gathers read the previous iteration's changed set, the
        # bitmap pair the applies write (chg, shared with push plans where the kernels push)
        self.from_changed = spec.gather_from == "changed"
        self._active_h2d = 0   # bytes of the last set_active upload, counted by the next plan
        self.start_times = {}
        # the vertices a dense apply and a "copy" publish cover: every vertex, or an MPI rank's own
        # (setup.span; other ranks' values arrive through the exchange: distributed/gpu_rank.py)
        self.span, self.setup_span = setup.span or (0, int(store.num_vertices)), setup.span
        # lanes (Session.run_lanes): each phase once per lane with work, lane_runs.LaneRuns
        self.lane_runs = None
        if setup.lanes:
            most = int(self.sizes.max()) if len(self.sizes) else 0
            self.lane_runs = LaneRuns(self, setup.lanes, self.dev.n if is_dense(spec) else most, most)

    # ------------------------------------------------------------------ per run
    # (host_state, load_state, fill_state, state_span: runstart.RunStart)
    def set_frontier(self, mask, ids=None):
        t0 = time.perf_counter()
        if self.lane_runs is not None:   # an (n, lanes) seed: each lane's own, its union
            self.seed_idx = self.lane_runs.set_seed(mask)
        elif ids is not None:
            self.seed_idx = np.asarray(ids, dtype=np.int64)
        else:
            self.seed_idx = None if mask is None else seed_ids(mask)
        if self.pushes.available:
            self.pushes.seed(self.seed_idx, self.sizes)
        elif self.from_changed:   # the changed set before iteration 1: the seed, or every vertex
            self._changed_seed(self.seed_idx)
        self._seed_host = time.perf_counter() - t0

    def set_active(self, ids):
        """A scheduled program's next active set: its bitmap becomes the current frontier (one
        n / 8-byte upload, after the previous iteration's read back synchronised); lanes: an
        (n, lanes) mask, one bitmap per lane."""
        if self.lane_runs is not None:
            self._active_h2d = self.lane_runs.set_active(ids)
            return
        words = transfer.frontier_words(ids, self.dev.n)
        if words.size:
            self.dev.cuda.memcpy_htod(self.dev.front[0], words)
        self._active_h2d = words.nbytes

    def set_lanes(self, alive):
        """Run only the lanes marked in ``alive``; the union's active vertices per shard."""
        return self.lane_runs.set_alive(alive)

    # ------------------------------------------------------------------ per iteration
    def begin(self, plan):
        dev, cuda, s = self.dev, self.dev.cuda, self.dev.ex.compute
        if not plan.seed or self.spec.aggregates:   # the seeding pass reads no vertex state
            dev.wait_state()
        self.packer.set_frontier(transfer.host_frontier(dev, plan))   # compacted units' rows
        self._t0 = time.perf_counter()
        push = plan.direction == "push"
        if push and not self.pushes.available:
            raise InternalError(f"{self.spec.name}: a push plan for CUDA kernels that cannot push "
                                f"this program (no atomic for its monoid, edge state or scatter)")
        if plan.frontier_format not in ("bitmap", "queue"):
            raise InternalError(f"frontier format {plan.frontier_format!r} is not one of bitmap, queue")
        # a computing iteration (not a seeding or activation-only plan) writes a new changed set
        self._computing = not plan.seed and not plan.activation
        self._origin = self._origin or cuda.Event()   # (one event, recorded again by every plan)
        self._origin.record(s)
        self._mstats = {}
        self._gcounts = dict(self.gathers.counts)
        lanes = self.lane_runs
        self._h2d = (dev.upload_args(self.program) if lanes is None else lanes.upload(self.program)) + self._active_h2d
        self._active_h2d = 0
        dev.clear_counters(everything=plan.seed)
        if plan.frontier:   # (lanes: every lane's)
            words = (dev.n + 31) // 32 if lanes is None else lanes.count * lanes.front_stride // 4
            cuda.memset_d32_async(dev.front[1], 0, words, s)
        if self.pushes.available:
            self.pushes.begin(plan, self._computing)
        elif self.from_changed and self._computing:
            cuda.memset_d32_async(dev.chg[1], 0, (dev.n + 31) // 32, s)
        if self.from_changed:
            dev.point_changed(self.changed_sources())
        begun, self._begun = self._begun, False
        for _ in [None] if lanes is None else lanes.each(plan):
            self._begin_instance(plan, begun and lanes is None)

    def _begin_instance(self, plan, begun=False):
        """The hoisted messages and dense accumulator of the instance (lane) the device state
        points at (``begun``: queued behind the last read back); its frontier's addresses."""
        dev, push = self.dev, plan.direction == "push"
        begun = begun and plan.dense and plan.hoist and not push
        # push kernels call gather_map per edge from the changed vertices: a hoisted pass over every
        # vertex would cost O(n) for a sparse changed set, and no pull reads it this time
        if plan.hoist and not push:
            if not self.ks.hoisted:   # the planner and the code generator agree on hoisting
                raise InternalError(f"{self.spec.name}: the plan hoists but the kernels read per edge")
            if not begun:
                dev.launch("hoist", dev.n, dev.n, dev.hmsg)
        elif self.ks.hoisted and plan.units and "gather" in plan.phases and not push:
            raise InternalError(f"{self.spec.name}: the kernels read hoisted messages but the plan "
                                f"does not hoist them")
        if plan.dense and not push and not begun:
            lo, hi = self.span
            dev.launch("fill", hi - lo, self._acc_at(lo), hi - lo)
        self._front = 0 if plan.all_active else int(dev.front[0])
        self._hmsg = 0 if dev.hmsg is None else int(dev.hmsg)

    def load(self, plan):
        main = self.dev.fn
        items = self.mover.deliver(plan, self._mstats)
        try:
            for unit, data in items:
                if unit.transfer == "zerocopy" and self.zc is not None:
                    # mapped host rows are read by warps (zerocopy.py): the planner gave a pull
                    # unit's gathers TWC unless the user forced a strategy, and a push unit TWC,
                    # its kernels' one walk (Capabilities.zerocopy_balance, push_balance; the
                    # variant's push walks start at the 128-byte boundary too)
                    self.dev.fn = self.zc.enter()
                    yield unit, data
                    self.dev.fn = main
                else:
                    yield unit, data
        finally:
            self.dev.fn = main
            items.close()

    def done(self, plan, unit):
        self.mode_times.done(self.dev.ex, unit)
        self.dev.ex.shard_done(unit.slot if unit.transfer in ("copy", "compact", "held") else None)

    def shard_data(self, unit, data):
        """One shard's arrays at a time (``Batching.shard_phases``: the accumulator and the
        changed flags hold one interval, so the planner makes a pull unit of several shards --
        streamed shards sharing a copy -- run its phases shard by shard)."""
        return [[arrays] for arrays in data]

    def gather(self, plan, unit, data):
        if plan.direction == "push" or unit.direction == "push":
            if len(data) > 1 and unit.transfer in ("resident", "zerocopy") and plan.frontier_format == "bitmap":
                self.pushes.several(data, unit.transfer, unit.balance, self.gathers.table)
                return
            for arrays, strategy in zip(data, unit.balance):
                self.pushes.shard(plan, arrays, self.gathers.edge_prop, strategy)
            return
        self._lanes(self._gather, plan, unit, data)

    def apply(self, plan, unit, data):
        if unit is None and plan.direction == "push":
            self.pushes.apply(plan)
            return
        self._lanes(self._apply, plan, unit, data)

    def activate(self, plan, unit, data):
        self._lanes(self._activate, plan, unit, data)

    def _lanes(self, phase, plan, unit, data):
        """``phase`` over the unit's data, or in lanes once per lane with work in its shards."""
        if self.lane_runs is None:
            phase(plan, unit, data)
            return
        lanes = self.lane_runs
        for k in lanes.each(plan, None if unit is None else [a.shard for a in data]):
            if plan.seed:   # each lane marks the neighbours of its own seed
                self.seed_idx = lanes.seed_ids(k)
            phase(plan, unit, data)

    def scatter(self, plan, unit, data):
        self._scatter(plan, unit, data)

    def _gather(self, plan, unit, data):
        if plan.dense and unit.transfer == "resident" and len(data) > 1:
            # batched resident shards: their addresses never change, so the table is built once
            # (grouped streamed shards land in a different slot each time: one launch per shard)
            self.gathers.resident(data, unit.balance, self._hmsg)
            return
        strategy = dict(zip(unit.shards, unit.balance))   # data may be one shard of the unit
        for arrays in data:
            self.gathers.shard(arrays, strategy[arrays.shard], self._front, self._hmsg, plan.dense)

    def _apply(self, plan, unit, data):
        dev, spec = self.dev, self.spec
        if unit is None:   # dense: every vertex (of the span), one launch (phases.py)
            self._apply_all(plan)
            return
        # a computing iteration's changed vertices go into the changed bitmap a push walks next
        chg = dev.chg[1] if self._computing and (self.pushes.available or self.from_changed) else 0
        pdeg = dev.pdeg if chg and dev.pdeg is not None else 0
        for arrays in data:
            i = arrays.shard
            lo, nv = int(dev.intervals[i]), int(self.sizes[i])
            indptrs = [arrays[f"{d}/indptr"] for d in self.dirs] + [0, 0]
            dev.launch("apply", nv, lo, nv, self._front, dev.acc if spec.has_gather else 0,
                       dev.changed if plan.frontier or spec.has_scatter else 0,
                       indptrs[0], indptrs[1], chg, pdeg, dev.rb_dev)
            if plan.publish == "unit":   # Gauss-Seidel: the next units gather these values
                dev.publish_interval(plan.publish_fields, lo, nv)

    def _acc_at(self, v):
        """Device address of vertex ``v``'s entry of a dense plan's per-vertex accumulator (0:
        a program without one)."""
        acc = self.dev.acc
        return 0 if acc is None else int(acc) + v * self.ks.msg_dtype.itemsize

    def publish(self, plan):
        dev, cuda, s = self.dev, self.dev.cuda, self.dev.ex.compute
        if plan.publish_edges and dev.m_edges:
            for p, dt in dev.estate.items():
                cuda.memcpy_dtod_async(dev.ecur[p], dev.enxt[p], dev.m_edges * dt.itemsize, s)
        lanes = self.lane_runs
        if lanes is not None:
            self._publish_lanes(plan)
        elif plan.publish == "swap":
            for f in plan.publish_fields:
                dev.cur[f], dev.nxt[f] = dev.nxt[f], dev.cur[f]
            self._h2d += dev.upload_args(self.program)   # aggregates read the new cur
        elif plan.publish == "copy":
            dev.publish_interval(plan.publish_fields, self.span[0], self.span[1] - self.span[0])
        if plan.frontier and lanes is None:
            dev.front.reverse()
            dev.count_frontier()
        if self.pushes.available:
            self.pushes.publish(self._computing)
        elif self.from_changed and self._computing:
            dev.chg.reverse()

    def _publish_lanes(self, plan):
        """publish in lanes: the pairs of every lane at once, a copy lane by lane (the frontier
        counts come from the host's copy of the lanes' bitmaps, read_back)."""
        lanes = self.lane_runs
        if plan.publish == "swap":
            lanes.swap(plan.publish_fields)
            self._h2d += lanes.upload(self.program)
        elif plan.publish == "copy":
            for _ in lanes.each(plan):
                self.dev.publish_interval(plan.publish_fields, self.span[0], self.span[1] - self.span[0])
        if plan.frontier:
            lanes.front.reverse()
            lanes.leave()

    def read_back(self, plan, stats):
        dev = self.dev
        dev.ex.shard_done(None)
        d2h = dev.readback(self._early_begin if self._early_begin_ok(plan) else None)
        times = dev.ex.span_times(self._origin)   # (each timing event read once)
        self.mode_times.report(times, self._mstats, self.packer, stats)
        t_copy, t_kernel, hidden = dev.ex.timeline(self._origin, times)
        m = self._mstats
        stats.bytes_h2d += self._h2d + int(m.get("bytes_h2d", 0))
        stats.bytes_read += int(m.get("bytes_read", 0))
        stats.time_read += float(m.get("time_read", 0.0))
        stats.bytes_d2h += d2h
        stats.time_copy, stats.time_kernel, stats.copy_hidden = t_copy, t_kernel, hidden
        # GPU-only figures, as attributes (the bench reads them; to_dict keeps the common ones)
        stats.shards_copied, stats.copies = int(m.get("copied", 0)), int(m.get("copies", 0))
        counts_now = dict(self.gathers.counts)
        for k, attr in (("twc", "gather_twc"), ("merge", "gather_merge"), ("batched", "batched_shards")):
            setattr(stats, attr, counts_now[k] - self._gcounts[k])
        lanes = self.lane_runs
        if lanes is not None and plan.frontier:
            stats.bytes_d2h += lanes.download_frontier()
        counts = (dev.shard_counts() if plan.frontier else self.sizes.copy()) if lanes is None else lanes.union_counts()
        edges = int(self.shard_edges[list(plan.shards)].sum()) if plan.dense else int(dev.rb_host[1])
        if plan.seed:
            self.start_times["seed_s"] = time.perf_counter() - self._t0 + getattr(self, "_seed_host", 0.0)
        rb = Readback(shard_active=counts, changed_vertices=int(dev.rb_host[0]), active_edges=edges,
                      aggregates=dict(dev.aggregates))
        if lanes is not None:
            rb.lane_active = lanes.lane_active()
        if self.pushes.available:
            rb.shard_changed, rb.changed_edges = self.pushes.read_back(self._computing)
        return rb

    # ------------------------------------------------------------------ checkpoints
    def save_run(self):
        dev = self.dev
        fields, edges = dev.state(), dev.edge_state()
        active = None if self.spec.activate == "all" else dev.bitmap_ids(dev.front[0])
        changed = dev.bitmap_ids(dev.chg[0]) if self.pushes.available or self.from_changed else None
        sources = dev.bitmap_ids(self.changed_sources()) if self.from_changed else None
        return RunState(fields=fields, edges=edges, active=active, changed=changed, sources=sources)

    def restore_run(self, saved):
        self.load_state(saved.fields, saved.edges)   # (clears the push state)
        dev = self.dev
        dev.wait_upload()
        if saved.active is not None:
            dev.set_bitmap(dev.front[0], saved.active)
        if self.pushes.available:   # the changed set a push sends from, as the seed's is set
            self.pushes.seed(saved.changed, self.sizes)
        elif self.from_changed:   # (sources None: every vertex changed)
            self._changed_seed(saved.sources)
        self.seed_idx = None

    # ------------------------------------------------------------------ results
    def state(self):
        return self.dev.state() if self.lane_runs is None else self.lane_runs.download_state()

    def edge_state(self):
        return self.dev.edge_state()

    def info(self):
        dev, mem = self.dev, self.memory
        return {"backend": self.name, "device_name": dev.device.name(),
                "arch": "sm_%d%d" % dev.device.compute_capability(), "residency": mem.mode,
                "slots": mem.slots, "slot_bytes": mem.slot_bytes, "streams": self.streams,
                "pinned_host_bytes": self.mover.host_bytes(), "pinned_cached_shards": len(mem.pinned),
                "load_balance": self.load_balance, "deterministic": self.deterministic,
                "gather_strategies": {k: self.gathers.counts[k] for k in ("twc", "merge")},
                "batched_shards": self.gathers.counts["batched"], "start": dict(self.start_times),
                "kernel_key": self.ks.key[:16]}

    def close(self):
        """Give back every CUDA object now, on the owning thread: the packer's threads stop
        before the buffers they write go; the device state (its streams, the context) goes last."""
        if self.packer is not None:
            self.packer.close()
            self.packer = None
        if self.mover is not None:
            try:
                self.dev.ex.sync()
            except Exception:  # a failed launch already poisoned the context: still free
                pass
            self.mover.close()
            self.mover = None
        for name, arr in self._host_state.items():
            self.ledger.give("pinned", f"vertex state {name}", arr.nbytes)
        self._host_state = {}
        if getattr(self, "pushes", None) is not None:
            self.pushes.release()   # page-locked buffers go before the context
        self.lane_runs = self._origin = None   # (the lanes refer back to this executor)
        if self.dev is not None:
            self.dev.close()
            self.dev = None
