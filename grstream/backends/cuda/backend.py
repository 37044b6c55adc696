"""The CUDA backend: GAS iterations as generated kernels over shards the movement engine delivers.

Implements the bulk-synchronous semantics of grstream/engine/backend.py exactly as the CPU backend
does: gather reads ``cur``, apply writes ``nxt`` (which equals ``cur`` outside the vertices applied
this iteration), and after every shard ``cur`` takes ``nxt``. The frontier is a bitmap on the
device; per-shard active counts, computed on the device after each iteration, decide which shards
the next iteration touches (a shard with no active vertex is never copied).
"""
import time
from dataclasses import dataclass

import numpy as np

from ...engine.backend import Backend, IterationStats, check_edge_props
from ...engine.schedule import activation_arrays, needed_arrays
from ...errors import DeviceError, MemoryBudgetError, UsageError
from . import loadbalance
from .compile import load_module, module_source
from .movement import CudaExecutor, Mover
from .schedule import (DEFAULT_MARGIN, plan_device, plan_host_cache, shard_region_bytes,
                       vertex_state_bytes)
from .skeletons import AGG_BLOCKS, BLOCK, MERGE_PER_THREAD

_SIGNATURES = {
    "fill": "Pq", "hoist": "qP", "apply": "qqPPPPPP", "activate": "PPqqPP", "count": "PqPiP",
}


@dataclass
class CudaIterationStats(IterationStats):
    """IterationStats plus what only the GPU path measures."""

    h2d_gbps: float = 0.0          # bytes_h2d / time_total: the achieved streaming rate
    copy_gbps: float = 0.0         # bytes_h2d / time_copy: the rate while the copy engine ran
    shards_copied: int = 0
    gather_twc: int = 0            # shards whose gather used each load-balance strategy
    gather_merge: int = 0


def _host_mem_available():
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class CudaBackend(Backend):
    """GAS programs on an NVIDIA GPU through PyCUDA.

    Parameters
    ----------
    store, program, memory_budget, progress
        As for every backend; ``memory_budget`` is device bytes (default: free device memory less
        1 GiB).
    load_balance : {"auto", "twc", "merge"}
        Gather strategy; ``auto`` chooses per shard (see :mod:`.loadbalance`).
    streams : int
        Copy streams the shard arrays are sprayed over.
    host_cache : int, optional
        Pinned host bytes for keeping streamed shards between iterations (default: half of the
        host's available memory; 0 reads them from the store every time).
    slots : int
        Streaming slots on the device when the graph does not fit (2 = double buffering).
    merge_items : int
        Edges per thread of the merge-path gather.
    """

    name = "cuda"

    def __init__(self, store, program, memory_budget=None, progress=False, *, load_balance="auto",
                 streams=4, host_cache=None, slots=2, merge_items=MERGE_PER_THREAD):
        super().__init__(store, program, memory_budget, progress)
        from . import require
        require()
        import pycuda.driver as cuda
        self.cuda = cuda
        spec = self.spec
        check_edge_props(store, spec)
        self._mem, self._ctx, self.mover = [], None, None
        if int(merge_items) < 1:
            raise UsageError(f"merge_items must be >= 1, not {merge_items}")
        self.merge_items = int(merge_items)
        cuda.init()
        if cuda.Context.get_current() is None:
            self._ctx = cuda.Device(0).retain_primary_context()
            self._ctx.push()
        try:
            self._setup(load_balance, streams, host_cache, slots)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ setup
    def _alloc(self, nbytes, what):
        cuda = self.cuda
        try:
            mem = cuda.mem_alloc(max(int(nbytes), 256))
        except cuda.MemoryError:
            free, total = cuda.mem_get_info()
            raise DeviceError(f"CUDA out of memory allocating {int(nbytes):,} B for {what} "
                              f"({free:,} of {total:,} B free); lower memory_budget") from None
        self._mem.append(mem)
        return mem

    def _setup(self, load_balance, streams, host_cache, slots):
        cuda, spec, store = self.cuda, self.spec, self.store
        self.device = cuda.Context.get_device()
        n = self.n = int(store.num_vertices)
        S = self.S = int(store.num_shards)
        self.intervals = np.asarray(store.intervals, dtype=np.int64)
        ks = self.ks = module_source(spec, store.id_dtype, store.edge_props)
        loadbalance.check_strategy(load_balance, ks.merge_ok)
        self.load_balance = load_balance
        mod = self.mod = load_module(ks, self.device)
        self.fn = {}
        gather_sig = "PP" + "P" * len(ks.gather_props) + "Pqq"
        for phase, kname in ks.kernels.items():
            f = mod.get_function(kname)
            if phase.startswith("gather_twc"):
                sig = gather_sig + "PPi"
            elif phase.startswith("gather_merge"):
                sig = gather_sig + "qPPq"
            elif phase.startswith("aggregate_"):
                sig = "qP"
            elif phase.startswith("aggfinal_"):
                sig = "PiP"
            else:
                sig = _SIGNATURES[phase]
            f.prepare(sig)
            self.fn[phase] = f
        self.g_ptr, g_size = mod.get_global("g")
        self.translated = ks.translated
        if g_size != self.translated.args_dtype.itemsize:
            raise DeviceError(f"GasArgs layout mismatch: device {g_size} B, host "
                              f"{self.translated.args_dtype.itemsize} B")

        self.names = needed_arrays(spec)
        region = shard_region_bytes(store, self.names)
        sizes = np.diff(self.intervals)
        max_interval = int(sizes.max()) if S else 0
        degrees = [d for d in ("in_degree", "out_degree") if d in spec.vertex_reads]
        vbytes = vertex_state_bytes(n, list(spec.vertex_fields.values()), len(degrees),
                                    ks.msg_dtype.itemsize, max_interval, S, ks.hoisted,
                                    [dt.itemsize for dt in ks.aggregates.values()])
        free, total = cuda.mem_get_info()
        self.device_free, self.device_total = free, total
        budget = self.memory_budget
        if budget is None:
            budget = max(free - DEFAULT_MARGIN, 0)
            if budget < vbytes + int(region.max() if S else 0):
                raise MemoryBudgetError(f"the GPU has {free:,} B free, less than the minimum "
                                        f"{vbytes + int(region.max() if S else 0):,} B this program "
                                        f"needs on this store", minimum=vbytes + int(region.max() if S else 0))
        self.plan = plan_device(region, vbytes, int(budget), slots)

        # static device state (GraphReduce Eq. 1): stays for the whole run
        self.cur = {f: self._alloc(n * dt.itemsize, f"vertex field {f}") for f, dt in spec.vertex_fields.items()}
        self.nxt = {f: self._alloc(n * dt.itemsize, f"vertex field {f}") for f, dt in spec.vertex_fields.items()}
        self.deg = {d: self._alloc(8 * n, d) for d in degrees}
        words = (n + 31) // 32
        self.front = [self._alloc(4 * words, "frontier"), self._alloc(4 * words, "frontier")]
        self.acc = self._alloc(ks.msg_dtype.itemsize * max(max_interval, 1), "accumulator")
        self.changed = self._alloc(max(max_interval, 1), "changed flags")
        self.hmsg = self._alloc(ks.msg_dtype.itemsize * n, "hoisted messages") if ks.hoisted else None
        self.intervals_dev = self._alloc(8 * (S + 1), "intervals")
        cuda.memcpy_htod(self.intervals_dev, self.intervals)
        self.counts_dev = self._alloc(8 * max(S, 1), "shard counts")
        self.counters_dev = self._alloc(16, "counters")
        self.agg_dev = {a: (self._alloc(AGG_BLOCKS * dt.itemsize, "aggregate"), self._alloc(dt.itemsize, "aggregate"))
                        for a, dt in ks.aggregates.items()}
        # small pinned host mirrors: one round trip per iteration
        self.counts_host = cuda.pagelocked_zeros(max(S, 1), np.uint64)
        self.counters_host = cuda.pagelocked_zeros(2, np.uint64)
        self.agg_host = {a: cuda.pagelocked_zeros(1, dt) for a, dt in ks.aggregates.items()}
        self.args_host = cuda.pagelocked_zeros(self.translated.args_dtype.itemsize, np.uint8)
        for d, mem in self.deg.items():
            cuda.memcpy_htod(mem, np.ascontiguousarray(getattr(store, d)(), dtype=np.int64))

        self.ex = CudaExecutor(streams)
        self.streams = streams
        limit = host_cache
        if limit is None:
            avail = _host_mem_available()
            limit = None if avail is None else avail // 2
        streamed = [i for i in range(S) if i not in set(self.plan.cached)]
        try:
            self.mover = Mover(store, self.names, self.plan, _Tracking(self.ex, self._mem),
                               plan_host_cache(region, streamed, limit))
        except cuda.MemoryError:
            raise DeviceError("CUDA out of memory allocating shard slots; lower memory_budget") from None
        # degree statistics per shard and gather direction, for the load-balance choice
        self.gather_dirs = [] if not spec.has_gather else (
            ["in", "out"] if spec.gather_edges == "all" else [spec.gather_edges])
        degs = {"in": np.asarray(store.in_degree()), "out": np.asarray(store.out_degree())}
        self.deg_stats = {d: [loadbalance.degree_stats(degs[d][self.intervals[i]:self.intervals[i + 1]])
                              for i in range(S)] for d in self.gather_dirs}
        act = activation_arrays(spec)
        self.act_pairs = [(act[k], act[k + 1]) for k in range(0, len(act), 2)]
        self.all_active = True
        self.front_counts = sizes.astype(np.int64)
        self._aggregates = {}
        self._strategies = {"twc": 0, "merge": 0}

    # ------------------------------------------------------------------ helpers
    def _grid(self, count):
        return (int((count + BLOCK - 1) // BLOCK), 1)

    def _launch(self, phase, count, *args):
        if count <= 0:
            return
        args = [int(a) if hasattr(a, "free") else a for a in args]  # DeviceAllocation -> address
        self.fn[phase].prepared_async_call(self._grid(count), (BLOCK, 1, 1), self.ex.compute, *args)

    def _upload_args(self):
        pointers = {}
        members = set(self.translated.pointer_members)
        for f in self.spec.vertex_fields:
            pointers["cur_" + f] = int(self.cur[f])
            pointers["nxt_" + f] = int(self.nxt[f])
        for d, mem in self.deg.items():
            pointers[d] = int(mem)
        pointers = {k: v for k, v in pointers.items() if k in members}
        self.args_host[:] = np.frombuffer(self.translated.pack_args(self.program, pointers), np.uint8)
        self.cuda.memcpy_htod_async(self.g_ptr, self.args_host, self.ex.compute)
        return self.args_host.nbytes

    def _count_frontier(self):
        """Active vertices per shard of the frontier just computed (device popcounts)."""
        cuda, s = self.cuda, self.ex.compute
        cuda.memset_d32_async(self.counts_dev, 0, 2 * max(self.S, 1), s)
        words = (self.n + 31) // 32
        self._launch("count", words, self.front[0], np.int64(self.n), self.intervals_dev,
                     np.int32(self.S), self.counts_dev)
        cuda.memcpy_dtoh_async(self.counts_host, self.counts_dev, s)
        return self.counts_host.nbytes

    def _reduce_aggregates(self):
        cuda, s = self.cuda, self.ex.compute
        nbytes = 0
        for a, (partials, out) in self.agg_dev.items():
            blocks = max(1, min(AGG_BLOCKS, (self.n + BLOCK - 1) // BLOCK))
            self.fn["aggregate_" + a].prepared_async_call((blocks, 1), (BLOCK, 1, 1), s, np.int64(self.n),
                                                          int(partials))
            self.fn["aggfinal_" + a].prepared_async_call((1, 1), (BLOCK, 1, 1), s, int(partials),
                                                         np.int32(blocks), int(out))
            cuda.memcpy_dtoh_async(self.agg_host[a], out, s)
            nbytes += self.agg_host[a].nbytes
        return nbytes

    def _collect_aggregates(self):
        self._aggregates = {a: self.agg_host[a][0].item() for a in self.agg_dev}

    # ------------------------------------------------------------------ Backend API
    def start(self, state, seed):
        cuda, spec, n = self.cuda, self.spec, self.n
        for f, dt in spec.vertex_fields.items():
            host = np.ascontiguousarray(state[f], dtype=dt)
            if host.shape != (n,):
                raise UsageError(f"initial state of {f!r} has shape {host.shape}, expected ({n},)")
            if n:
                cuda.memcpy_htod(self.cur[f], host)
                cuda.memcpy_htod(self.nxt[f], host)
        self._upload_args()
        if seed is None or spec.activate == "all":
            self.all_active = True
            self.front_counts = np.diff(self.intervals)
            active = n
        else:
            seed = np.ascontiguousarray(np.broadcast_to(np.asarray(seed, dtype=bool), (n,))).view(np.uint8)
            seed_dev = self._alloc(n, "seed")
            cuda.memcpy_htod(seed_dev, seed)
            cuda.memset_d32_async(self.front[1], 0, (n + 31) // 32, self.ex.compute)
            csum = np.concatenate(([0], np.cumsum(seed, dtype=np.int64)))
            shards = np.flatnonzero(csum[self.intervals[1:]] - csum[self.intervals[:-1]])
            for dev in self.mover.stream(shards):
                lo, hi = int(self.intervals[dev.shard]), int(self.intervals[dev.shard + 1])
                for ptr, ids in self.act_pairs:
                    self._launch("activate", hi - lo, dev[ptr], dev[ids], np.int64(lo), np.int64(hi - lo),
                                 int(seed_dev) + lo, self.front[1])
            self.front.reverse()
            self._count_frontier()
            self.ex.sync()
            self._mem.remove(seed_dev)
            seed_dev.free()
            self.all_active = False
            self.front_counts = self.counts_host[:self.S].astype(np.int64)
            active = int(self.front_counts.sum())
        self._reduce_aggregates()
        self.ex.sync()
        self.ex.reset()
        self._collect_aggregates()
        return active

    def iterate(self, iteration):
        t_start = time.perf_counter()
        cuda, spec, program, ks, n = self.cuda, self.spec, self.program, self.ks, self.n
        program.iteration = iteration
        st = CudaIterationStats(iteration=iteration)
        counts = self.front_counts
        st.active_vertices = int(counts.sum())
        if spec.activate == "all":
            shards = list(range(self.S))
        else:
            shards = [int(i) for i in np.flatnonzero(counts)]
        st.shards_processed = len(shards)
        st.shards_skipped = self.S - len(shards)
        s = self.ex.compute
        origin = cuda.Event()
        origin.record(s)
        st.bytes_h2d += self._upload_args()
        cuda.memset_d32_async(self.counters_dev, 0, 4, s)
        frontier_mode = spec.activate != "all"
        if frontier_mode:
            cuda.memset_d32_async(self.front[1], 0, (n + 31) // 32, s)
        if ks.hoisted and shards:
            self._launch("hoist", n, np.int64(n), self.hmsg)
        front = 0 if self.all_active else int(self.front[0])
        hmsg = 0 if self.hmsg is None else int(self.hmsg)
        mstats = {}
        for dev in self.mover.stream(shards, mstats):
            i = dev.shard
            lo, hi = int(self.intervals[i]), int(self.intervals[i + 1])
            nv = hi - lo
            if nv == 0:
                continue
            frac = counts[i] / nv
            acc_valid = False
            indptrs = []
            for d in self.gather_dirs:
                ids = "in/src" if d == "in" else "out/dst"
                indptr, nbr = dev[f"{d}/indptr"], dev[ids]
                indptrs.append(indptr)
                props = [dev[f"{d}/{p}"] for p in ks.gather_props]
                ne = int(dev.lengths[ids])
                strategy = loadbalance.choose(self.deg_stats[d][i], frac, self.load_balance, ks.merge_ok)
                if strategy == "merge":
                    st.gather_merge += 1
                    if not acc_valid:
                        self._launch("fill", nv, self.acc, np.int64(nv))
                        acc_valid = True
                    threads = (ne + self.merge_items - 1) // self.merge_items
                    self._launch("gather_merge_" + d, threads, indptr, nbr, *props, hmsg, np.int64(lo),
                                 np.int64(nv), np.int64(ne), front, self.acc, np.int64(self.merge_items))
                else:
                    st.gather_twc += 1
                    self._launch("gather_twc_" + d, nv, indptr, nbr, *props, hmsg, np.int64(lo),
                                 np.int64(nv), front, self.acc, np.int32(1 if acc_valid else 0))
                    acc_valid = True
            indptrs += [0] * (2 - len(indptrs))
            self._launch("apply", nv, np.int64(lo), np.int64(nv), front,
                         self.acc if spec.has_gather else 0, self.changed if frontier_mode else 0,
                         indptrs[0], indptrs[1], self.counters_dev)
            if frontier_mode:
                for ptr, ids in self.act_pairs:
                    self._launch("activate", nv, dev[ptr], dev[ids], np.int64(lo), np.int64(nv),
                                 self.changed, self.front[1])
        # bulk-synchronous: publish nxt only after every shard has gathered from cur
        if shards:
            for f in spec.analysis.apply_writes:
                nbytes = n * spec.vertex_fields[f].itemsize
                if nbytes:
                    cuda.memcpy_dtod_async(self.cur[f], self.nxt[f], nbytes, s)
        d2h = 0
        if frontier_mode:
            self.front.reverse()
            d2h += self._count_frontier()
        d2h += self._reduce_aggregates()
        cuda.memcpy_dtoh_async(self.counters_host, self.counters_dev, s)
        d2h += self.counters_host.nbytes
        self.ex.sync()
        t_copy, t_kernel, hidden = self.ex.timeline(origin)
        self._collect_aggregates()
        if frontier_mode:
            self.all_active = False
            self.front_counts = self.counts_host[:self.S].astype(np.int64)
        else:
            self.front_counts = np.diff(self.intervals)
        st.next_active_vertices = int(self.front_counts.sum())
        st.changed_vertices = int(self.counters_host[0])
        st.active_edges = int(self.counters_host[1])
        st.bytes_h2d += int(mstats.get("bytes_h2d", 0))
        st.bytes_read = int(mstats.get("bytes_read", 0))
        st.time_read = float(mstats.get("time_read", 0.0))
        st.shards_copied = int(mstats.get("copied", 0))
        st.bytes_d2h = d2h
        st.time_copy, st.time_kernel, st.copy_hidden = t_copy, t_kernel, hidden
        st.aggregates = dict(self._aggregates)
        st.time_total = time.perf_counter() - t_start
        st.h2d_gbps = st.bytes_h2d / st.time_total / 1e9 if st.time_total > 0 else 0.0
        st.copy_gbps = st.bytes_h2d / t_copy / 1e9 if t_copy > 0 else 0.0
        self._strategies["twc"] += st.gather_twc
        self._strategies["merge"] += st.gather_merge
        return st

    def aggregates(self):
        return dict(self._aggregates)

    def state(self):
        out = {}
        for f, dt in self.spec.vertex_fields.items():
            host = np.empty(self.n, dtype=dt)
            if self.n:
                self.cuda.memcpy_dtoh(host, self.cur[f])
            out[f] = host
        return out

    def info(self):
        plan = self.plan
        if plan.all_cached:
            mode = "in-memory"
        elif plan.cached:
            mode = "partial"
        else:
            mode = "streaming"
        return {"backend": self.name, "device_name": self.device.name(),
                "arch": "sm_%d%d" % self.device.compute_capability(),
                "memory": plan.to_dict(), "residency": mode, "arrays": self.names,
                "slots": plan.num_buffers, "streams": self.streams,
                "host_cached_shards": len(self.mover.host_cached) if self.mover else 0,
                "pinned_host_bytes": self.mover.host_bytes() if self.mover else 0,
                "load_balance": self.load_balance, "gather_strategies": dict(self._strategies),
                "hoisted_gather": self.ks.hoisted, "kernel_key": self.ks.key[:16]}

    def close(self):
        if self.mover is not None:
            try:
                self.ex.sync()
            except Exception:  # a failed launch already poisoned the context: still free
                pass
            self.mover = None
        for mem in self._mem:
            try:
                mem.free()
            except Exception:
                pass
        self._mem = []
        if self._ctx is not None:
            self.cuda.Context.pop()
            self._ctx = None


class _Tracking:
    """Wraps the executor so device memory the mover allocates is freed with the backend's."""

    def __init__(self, ex, registry):
        self._ex, self._registry = ex, registry

    def device_alloc(self, nbytes):
        mem = self._ex.device_alloc(nbytes)
        self._registry.append(mem)
        return mem

    def device_free(self, mem):
        if mem in self._registry:
            self._registry.remove(mem)
        mem.free()

    def __getattr__(self, name):
        return getattr(self._ex, name)
