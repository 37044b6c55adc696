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
from .kernelargs import PreparedKernel
from .movement import CudaExecutor, Mover
from .schedule import (DEFAULT_MARGIN, align, plan_device, plan_host_cache, shard_region_bytes,
                       static_buffers)
from .skeletons import AGG_BLOCKS, BLOCK, MERGE_PER_THREAD, tab_width

DENSE_SLOT_BYTES = 64 << 20  # default slot target of dense programs (see CudaBackend: slot_bytes)
#: seeds up to this many mark their neighbours edge-parallel (start); more go through activation
SEED_LIST = 64
_COUNTERS = 2   # readback words: changed vertices, gathered edges; then aggregates, shard counts


@dataclass
class CudaIterationStats(IterationStats):
    """IterationStats plus what only the GPU path measures."""

    h2d_gbps: float = 0.0          # bytes_h2d / time_total: the achieved streaming rate
    copy_gbps: float = 0.0         # bytes_h2d / time_copy: the rate while the copy engine ran
    shards_copied: int = 0
    copies: int = 0                # copy units (consecutive streamed shards travel as one)
    gather_twc: int = 0            # shards whose gather used each load-balance strategy
    gather_merge: int = 0
    batched_shards: int = 0        # resident shards gathered by the multi-shard launches


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
    slots : int, optional
        Streaming slots on the device when the graph does not fit (as many of them as the budget
        holds; 2 = double buffering). Default: 2 when shards are grouped, else 3.
    slot_bytes : int, optional
        Target size of one streaming slot: slots grow from the largest shard towards it (taking at
        most half of what the budget leaves for resident shards) so that consecutive streamed
        shards travel as one copy; 0 keeps one shard per slot. Default: 64 MiB for dense programs
        (every vertex active: copy-bound, where grouping took PageRank at RMAT 24 from 76% to 91%
        of the link), 0 for frontier programs (their per-shard kernels are as long as the copies;
        grouping gave BFS at RMAT 24 no consistent gain over one-shard units with three slots).
    merge_items : int
        Edges per thread of the merge-path gather.
    deterministic : bool
        Gather without floating-point atomics (TWC only: one owner per destination, reductions in
        a fixed tree order), so that results are bit-identical from run to run and under every
        budget. Default False: the merge-path split combines the parts of a vertex cut by a
        thread boundary with atomics, whose order varies (docs/GPU.md).
    """

    name = "cuda"

    def __init__(self, store, program, memory_budget=None, progress=False, *, load_balance="auto",
                 streams=4, host_cache=None, slots=None, slot_bytes=None,
                 merge_items=MERGE_PER_THREAD, deterministic=False):
        super().__init__(store, program, memory_budget, progress)
        from . import require
        require()
        import pycuda.driver as cuda
        self.cuda = cuda
        spec = self.spec
        check_edge_props(store, spec)
        self._mem, self._ctx, self.mover, self._static_mem = [], None, None, {}
        if slot_bytes is None:
            slot_bytes = DENSE_SLOT_BYTES if spec.activate == "all" and spec.has_gather else 0
        if int(slot_bytes) < 0:
            raise UsageError(f"slot_bytes must be >= 0, not {slot_bytes}")
        self.slot_bytes = int(slot_bytes)
        if slots is None:
            slots = 2 if self.slot_bytes else 3
        if int(merge_items) < 1:
            raise UsageError(f"merge_items must be >= 1, not {merge_items}")
        self.merge_items = int(merge_items)
        self.deterministic = bool(deterministic)
        if self.deterministic:
            if load_balance == "merge":
                raise UsageError("deterministic=True gathers without atomics: load_balance must be "
                                 "'twc' or 'auto', not 'merge'")
            load_balance = "twc"
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

    def _static(self, name):
        """Allocate static buffer ``name`` of :func:`.schedule.static_buffers` (once)."""
        mem = self._static_mem[name] = self._alloc(self.buffers[name], name)
        return mem

    def _setup(self, load_balance, streams, host_cache, slots):
        cuda, spec, store = self.cuda, self.spec, self.store
        self.device = cuda.Context.get_device()
        n = self.n = int(store.num_vertices)
        S = self.S = int(store.num_shards)
        self.intervals = np.asarray(store.intervals, dtype=np.int64)
        ks = self.ks = module_source(spec, store.id_dtype, store.edge_props)
        self.scatter_props = list(ks.translated.edge_props.get("scatter", []))
        loadbalance.check_strategy(load_balance, ks.merge_ok)
        self.load_balance = load_balance
        mod = self.mod = load_module(ks, self.device)
        # each kernel prepared from, and launched through, its typed argument list
        self.fn = {phase: PreparedKernel(mod.get_function(kname), ks.args[phase])
                   for phase, kname in ks.kernels.items()}
        self.g_ptr, g_size = mod.get_global("g")
        self.translated = ks.translated
        if g_size != self.translated.args_dtype.itemsize:
            raise DeviceError(f"GasArgs layout mismatch: device {g_size} B, host "
                              f"{self.translated.args_dtype.itemsize} B")

        self.names = needed_arrays(spec)
        if "in/eid" in self.names and S and "in/eid" not in store.dataset_names(0):
            raise UsageError(f"{spec.name} gathers mutable edge state over in-edges, which needs "
                             f"edge ids in the store: rebuild it with --edge-ids")
        region = shard_region_bytes(store, self.names)
        sizes = np.diff(self.intervals)
        max_interval = int(sizes.max()) if S else 0
        degrees = [d for d in ("in_degree", "out_degree") if d in spec.vertex_reads]
        # Dense programs (every vertex active every iteration) keep one message per vertex: every
        # shard's gather lands in it and a single apply launch follows (no per-shard apply).
        # (edge state is written per shard after apply and read per shard by gather: no batching)
        self.dense = spec.activate == "all" and spec.has_gather and not spec.edge_state
        self.estate = dict(spec.edge_state)
        counts = [store.shard_info(i).num_out_edges for i in range(S)]
        self.out_offset = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))
        m = self.m_edges = int(store.num_edges)
        # edge state stays on the device, twice (current and this iteration's writes), plus one
        # shard's worth in CSC order for gathers over in-edges
        self.permuted = [p for p in ks.gather_props if p in self.estate] if "in" in (
            ["in", "out"] if spec.gather_edges == "all" else [spec.gather_edges or ""]) else []
        max_in = max((store.shard_info(i).num_in_edges for i in range(S)), default=0)
        self.gather_dirs = [] if not spec.has_gather else (
            ["in", "out"] if spec.gather_edges == "all" else [spec.gather_edges])
        # multi-shard gather tables: a row per resident shard and direction, allocated here at
        # their largest (counted in the budget), uploaded asynchronously on the compute stream
        table_bytes = 8 * tab_width(len(ks.gather_props)) * S * len(self.gather_dirs) if self.dense else 0
        self.buffers = static_buffers(
            n, dict(spec.vertex_fields), degrees, ks.msg_dtype.itemsize, max_interval, S, ks.hoisted,
            [dt.itemsize for dt in ks.aggregates.values()], acc_vertices=n if self.dense else None,
            table_bytes=table_bytes, edge_state=self.estate, num_edges=m, permuted=self.permuted,
            max_in=max_in)
        vbytes = int(sum(align(max(b, 1)) for b in self.buffers.values()))
        free, total = cuda.mem_get_info()
        self.device_free, self.device_total = free, total
        budget = self.memory_budget
        if budget is None:
            budget = max(free - DEFAULT_MARGIN, 0)
            if budget < vbytes + int(region.max() if S else 0):
                raise MemoryBudgetError(f"the GPU has {free:,} B free, less than the minimum "
                                        f"{vbytes + int(region.max() if S else 0):,} B this program "
                                        f"needs on this store", minimum=vbytes + int(region.max() if S else 0))
        self.plan = plan_device(region, vbytes, int(budget), slots, self.slot_bytes)

        # static device state (GraphReduce Eq. 1): stays for the whole run
        buf = self._static
        self.cur = {f: buf(f"cur {f}") for f in spec.vertex_fields}
        self.nxt = {f: buf(f"nxt {f}") for f in spec.vertex_fields}
        self.deg = {d: buf(d) for d in degrees}
        self.front = [buf("frontier 0"), buf("frontier 1")]
        self.acc = buf("accumulator")
        self.changed = buf("changed flags")
        self.hmsg = buf("hoisted messages") if ks.hoisted else None
        self.ecur = {p: buf(f"edge state {p}") for p in self.estate}
        self.enxt = {p: buf(f"edge state {p} (next)") for p in self.estate}
        self.escratch = {p: buf(f"edge state {p} (CSC)") for p in self.permuted}
        self.intervals_dev = buf("intervals")
        self.tab_dev = buf("shard tables") if table_bytes else None
        self.tab_host = cuda.pagelocked_zeros(max(table_bytes // 8, 1), np.int64)
        self._tab_used = 0
        cuda.memcpy_htod(self.intervals_dev, self.intervals)
        # one readback block: counters, then 8 bytes per aggregate, then active vertices per shard;
        # the iteration's only device -> host copy
        self.agg_names = list(ks.aggregates)
        self.counts_word = _COUNTERS + len(self.agg_names)
        words = self.counts_word + max(S, 1)
        self.rb_dev = buf("readback block")
        self.rb_host = cuda.pagelocked_zeros(words, np.uint64)
        self.agg_partials = [buf(f"aggregate partials {k}") for k in range(len(self.agg_names))]
        if set(self._static_mem) != set(self.buffers):  # every one allocated, as the budget counted
            raise DeviceError(f"static buffers allocated differ from those counted: "
                              f"{sorted(set(self._static_mem) ^ set(self.buffers))}")
        # two argument buffers: the second upload (after cur/nxt swap) must not overwrite the
        # pinned source of the first before the copy engine has read it
        self.args_host = [cuda.pagelocked_zeros(self.translated.args_dtype.itemsize, np.uint8)
                          for _ in range(2)]
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
        degs = {"in": np.asarray(store.in_degree()), "out": np.asarray(store.out_degree())}
        self.deg_stats = {d: [loadbalance.degree_stats(degs[d][self.intervals[i]:self.intervals[i + 1]])
                              for i in range(S)] for d in self.gather_dirs}
        act = activation_arrays(spec)
        self.act_pairs = [(act[k], act[k + 1]) for k in range(0, len(act), 2)]
        self.all_active = True
        self.front_counts = sizes.astype(np.int64)
        self._aggregates = {}
        self._strategies = {"twc": 0, "merge": 0}
        self._tables = {}   # (direction, strategy, shards) -> (device table, rows, blocks)
        # apply writes every field it assigns for every vertex it applies (program/cuda.py), so
        # when every vertex is applied every iteration, nxt can become cur by a pointer swap
        self.swap = spec.activate == "all"

    # ------------------------------------------------------------------ helpers
    def _grid(self, count):
        return (int((count + BLOCK - 1) // BLOCK), 1)

    def _launch(self, phase, count, *args, stream=None):
        if count <= 0:
            return
        self.fn[phase].launch(self._grid(count), (BLOCK, 1, 1), stream or self.ex.compute, *args)

    def _table(self, d, strategy, shards):
        """The device table of a multi-shard gather over resident ``shards``, written into the
        table region allocated at setup (pinned mirror, asynchronous copy on the compute stream:
        kernels queued before it have already read what it overwrites). Built once per key."""
        key = (d, strategy, tuple(shards))
        if key not in self._tables:
            ids = "in/src" if d == "in" else "out/dst"
            rows, block = [], 0
            for i in shards:
                dev = self.mover.resident_arrays(i)
                lo, hi = int(self.intervals[i]), int(self.intervals[i + 1])
                ne = int(dev.lengths[ids])
                work = hi - lo if strategy == "twc" else (ne + self.merge_items - 1) // self.merge_items
                blocks = (work + BLOCK - 1) // BLOCK
                if blocks == 0:
                    continue
                rows.append([dev[f"{d}/indptr"], dev[ids]] + [dev[f"{d}/{p}"] for p in self.ks.gather_props]
                            + [lo, hi - lo, ne, block])
                block += blocks
            table = np.asarray(rows, dtype=np.int64).reshape(-1)
            if self._tab_used + table.size > self.tab_host.size:
                # every key's table fits at once in a dense run (each resident shard appears in
                # one key per direction); other shard groupings start over once the copies and
                # kernels using the old tables are done
                self.ex.compute.synchronize()
                self._tables, self._tab_used = {}, 0
            off = self._tab_used
            addr = 0
            if rows:
                self.tab_host[off:off + table.size] = table
                addr = int(self.tab_dev) + 8 * off
                self.cuda.memcpy_htod_async(addr, self.tab_host[off:off + table.size], self.ex.compute)
                self._tab_used += table.size
            self._tables[key] = (addr, len(rows), block)
        return self._tables[key]

    def _gather_resident(self, shards, hmsg, st):
        """Gather of resident, already copied shards: one launch per direction and strategy."""
        if not len(shards):
            return
        shards = [int(i) for i in shards]
        st.batched_shards += len(shards)
        groups = {}
        for d in self.gather_dirs:
            edges = sum(self.deg_stats[d][i].edges for i in shards)
            for i in shards:
                strategy = loadbalance.choose(self.deg_stats[d][i], 1.0, self.load_balance, self.ks.merge_ok,
                                              launch_edges=edges)
                groups.setdefault((d, strategy), []).append(i)
        for (d, strategy), members in groups.items():
            mem, rows, blocks = self._table(d, strategy, members)
            if strategy == "merge":
                st.gather_merge += len(members)
            else:
                st.gather_twc += len(members)
            if not rows:
                continue
            extra = self.merge_items if strategy == "merge" else 1
            self.fn[f"gather_{strategy}_multi_{d}"].launch(
                (blocks, 1), (BLOCK, 1, 1), self.ex.compute, mem, rows, hmsg, 0, self.acc, extra)

    def _shard_kernels(self, dev, st, counts, front, hmsg, dense, frontier_mode):
        """Gather (and unless dense, apply and activation) of one shard the mover delivered."""
        spec, ks = self.spec, self.ks
        i = dev.shard
        lo, hi = int(self.intervals[i]), int(self.intervals[i + 1])
        nv = hi - lo
        if nv == 0:
            return
        frac = counts[i] / nv
        acc = int(self.acc) + lo * ks.msg_dtype.itemsize if dense else int(self.acc)
        acc_valid = dense  # dense: acc was filled for every vertex before the first gather
        indptrs = []
        for d in self.gather_dirs:
            ids = "in/src" if d == "in" else "out/dst"
            indptr, nbr = dev[f"{d}/indptr"], dev[ids]
            indptrs.append(indptr)
            ne = int(dev.lengths[ids])
            props = [self._edge_prop(dev, d, p, i, ne) for p in ks.gather_props]
            strategy = loadbalance.choose(self.deg_stats[d][i], frac, self.load_balance, ks.merge_ok)
            if strategy == "merge":
                st.gather_merge += 1
                if not acc_valid:
                    self._launch("fill", nv, acc, np.int64(nv))
                    acc_valid = True
                threads = (ne + self.merge_items - 1) // self.merge_items
                self._launch("gather_merge_" + d, threads, indptr, nbr, *props, hmsg, np.int64(lo),
                             np.int64(nv), np.int64(ne), front, acc, np.int64(self.merge_items))
            else:
                st.gather_twc += 1
                self._launch("gather_twc_" + d, nv, indptr, nbr, *props, hmsg, np.int64(lo),
                             np.int64(nv), front, acc, np.int32(1 if acc_valid else 0))
                acc_valid = True
        if dense:
            return
        indptrs += [0] * (2 - len(indptrs))
        self._launch("apply", nv, np.int64(lo), np.int64(nv), front,
                     acc if spec.has_gather else 0,
                     self.changed if frontier_mode or spec.has_scatter else 0,
                     indptrs[0], indptrs[1], self.rb_dev)
        if frontier_mode:
            for ptr, ids in self.act_pairs:
                self._launch("activate", nv, dev[ptr], dev[ids], np.int64(lo), np.int64(nv),
                             self.changed, self.front[1])
        if spec.has_scatter:
            self._launch("scatter", nv, dev["out/indptr"], dev["out/dst"],
                         *[dev[f"out/{p}"] for p in self.scatter_props], np.int64(lo), np.int64(nv),
                         np.int64(self.out_offset[i]), self.changed)

    def _edge_prop(self, dev, d, p, i, ne):
        """Device address of edge property ``p`` of shard ``i``'s ``d``-edges, in their order.

        Mutable edge state lives in the global CSR order: out-edges find shard i's part at its
        offset, in-edges get it permuted through ``in/eid`` into a scratch buffer first.
        """
        if p not in self.estate:
            return dev[f"{d}/{p}"]
        size = self.estate[p].itemsize
        if d == "out":
            return int(self.ecur[p]) + int(self.out_offset[i]) * size
        self._launch(f"permute{size}", ne, dev["in/eid"], self.ecur[p], self.escratch[p], np.int64(ne))
        return int(self.escratch[p])

    def _upload_args(self, which=0):
        pointers = {}
        members = set(self.translated.pointer_members)
        for f in self.spec.vertex_fields:
            pointers["cur_" + f] = int(self.cur[f])
            pointers["nxt_" + f] = int(self.nxt[f])
        for d, mem in self.deg.items():
            pointers[d] = int(mem)
        for p in self.estate:
            pointers["ecur_" + p] = int(self.ecur[p])
            pointers["enxt_" + p] = int(self.enxt[p])
        pointers = {k: v for k, v in pointers.items() if k in members}
        buf = self.args_host[which]
        buf[:] = np.frombuffer(self.translated.pack_args(self.program, pointers), np.uint8)
        self.cuda.memcpy_htod_async(self.g_ptr, buf, self.ex.compute)
        return buf.nbytes

    def _count_frontier(self):
        """Active vertices per shard of the frontier just computed (device popcounts)."""
        cuda, s = self.cuda, self.ex.compute
        counts = int(self.rb_dev) + 8 * self.counts_word
        cuda.memset_d32_async(counts, 0, 2 * max(self.S, 1), s)
        words = (self.n + 31) // 32
        self._launch("count", words, self.front[0], np.int64(self.n), self.intervals_dev,
                     np.int32(self.S), counts)

    def _reduce_aggregates(self):
        if not self.agg_names:
            return
        s = self.ex.compute
        blocks = max(1, min(AGG_BLOCKS, (self.n + BLOCK - 1) // BLOCK))
        parts = [int(p) for p in self.agg_partials]
        self.fn["aggregates"].launch((blocks, 1), (BLOCK, 1, 1), s, self.n, *parts)
        self.fn["aggfinal"].launch((1, 1), (BLOCK, 1, 1), s, blocks, int(self.rb_dev) + 8 * _COUNTERS, *parts)

    def _readback(self):
        """The one device -> host copy of an iteration (counters, aggregates, shard counts)."""
        self.cuda.memcpy_dtoh_async(self.rb_host, self.rb_dev, self.ex.compute)
        return self.rb_host.nbytes

    def _collect_aggregates(self):
        raw = self.rb_host.view(np.uint8)
        self._aggregates = {}
        for k, a in enumerate(self.agg_names):
            dt = self.ks.aggregates[a]
            off = 8 * (_COUNTERS + k)
            self._aggregates[a] = raw[off:off + dt.itemsize].view(dt)[0].item()

    def _shard_counts(self):
        return self.rb_host[self.counts_word:self.counts_word + self.S].astype(np.int64)

    # ------------------------------------------------------------------ Backend API
    def start(self, state, seed):
        cuda, spec, n = self.cuda, self.spec, self.n
        t0 = time.perf_counter()
        for f, dt in spec.vertex_fields.items():
            host = np.ascontiguousarray(state[f], dtype=dt)
            if host.shape != (n,):
                raise UsageError(f"initial state of {f!r} has shape {host.shape}, expected ({n},)")
            if n:  # one upload; nxt takes it on the device
                cuda.memcpy_htod(self.cur[f], host)
                cuda.memcpy_dtod_async(self.nxt[f], self.cur[f], host.nbytes, self.ex.compute)
        for p, dt in self.estate.items():
            # zeros, or the stored property of the same name, in the global CSR order
            if p in self.store.edge_props:
                parts = [np.asarray(self.store.read(i, f"out/{p}")) for i in range(self.S)]
                host = np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros(0), dtype=dt)
            else:
                host = np.zeros(self.m_edges, dtype=dt)
            if self.m_edges:
                cuda.memcpy_htod(self.ecur[p], host)
                cuda.memcpy_dtod_async(self.enxt[p], self.ecur[p], host.nbytes, self.ex.compute)
        self._upload_args()
        self.cuda.memset_d32_async(self.rb_dev, 0, 2 * self.rb_host.size, self.ex.compute)
        self.ex.sync()
        t1 = time.perf_counter()
        seeded = seed is not None and spec.activate != "all"
        if seeded:
            self._seed(seed)
        else:
            self.all_active = True
            self.front_counts = np.diff(self.intervals)
        self._reduce_aggregates()
        self._readback()
        self.ex.sync()
        self.ex.reset()
        if seeded:
            self.front_counts = self._shard_counts()
        self._collect_aggregates()
        self.start_times = {"state_s": t1 - t0, "seed_s": time.perf_counter() - t1}
        return int(self.front_counts.sum())

    def _seed(self, seed):
        """The first frontier: neighbours (per the activation rule) of the seed vertices.

        Only the shards holding a seed vertex move. Up to ``SEED_LIST`` seeds mark their edges
        directly, a thread per edge (their edge ranges come from the degree arrays on the host);
        more become the shards' changed flags for the ordinary activation kernel. Host work is one
        pass over the mask (``flatnonzero``) plus the seed shards' slices.
        """
        cuda = self.cuda
        idx = np.flatnonzero(np.broadcast_to(np.asarray(seed, dtype=bool), (self.n,)))
        cuda.memset_d32_async(self.front[1], 0, (self.n + 31) // 32, self.ex.compute)
        cuts = np.searchsorted(idx, self.intervals)   # idx is sorted: shard i's seeds are a slice
        shards = np.flatnonzero(np.diff(cuts))
        few = idx.size <= SEED_LIST
        degree = {"out/indptr": self.store.out_degree, "in/indptr": self.store.in_degree}
        with self.mover.streaming(shards) as delivered:
            for dev in delivered:
                i = dev.shard
                lo, hi = int(self.intervals[i]), int(self.intervals[i + 1])
                local = idx[cuts[i]:cuts[i + 1]] - lo
                if few:
                    for ptr, ids in self.act_pairs:
                        deg = np.asarray(degree[ptr]())[lo:hi]
                        # edge offset of each seed in the shard's CSR/CSC: its row start
                        first = ([int(deg[:k].sum()) for k in local] if len(local) <= 4
                                 else np.concatenate(([0], np.cumsum(deg)))[local])
                        for k, f in zip(local, first):
                            self._launch("mark", int(deg[k]), dev[ids], int(f), int(deg[k]), self.front[1])
                    continue
                flags = np.zeros(hi - lo, np.uint8)
                flags[local] = 1
                # synchronous copy: the previous shard's activation has read the flags before
                cuda.memcpy_htod(self.changed, flags)
                for ptr, ids in self.act_pairs:
                    self._launch("activate", hi - lo, dev[ptr], dev[ids], lo, hi - lo, self.changed, self.front[1])
        self.front.reverse()
        self._count_frontier()
        self.all_active = False

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
        cuda.memset_d32_async(self.rb_dev, 0, 2 * _COUNTERS, s)
        frontier_mode = spec.activate != "all"
        if frontier_mode:
            cuda.memset_d32_async(self.front[1], 0, (n + 31) // 32, s)
        if ks.hoisted and shards:
            self._launch("hoist", n, np.int64(n), self.hmsg)
        front = 0 if self.all_active else int(self.front[0])
        hmsg = 0 if self.hmsg is None else int(self.hmsg)
        dense = self.dense and bool(shards)
        chunks = []
        if dense:
            # one message per vertex: filled once, every shard's gather accumulates into its part
            self._launch("fill", n, self.acc, np.int64(n))
            res = self.mover.residency
            batch = [i for i in shards if i in res.resident and i in res.loaded]
            shards_moved = [i for i in shards if i not in set(batch)]
            # resident shards in one launch (in-memory mode), or spread in groups between the
            # streamed shards so that every step's kernels stay shorter than its copy
            chunks = list(np.array_split(np.asarray(batch, dtype=np.int64), len(shards_moved) + 1))
            self.ex.begin_kernels()
            self._gather_resident(chunks.pop(0), hmsg, st)
            self.ex.shard_done(None)
        else:
            shards_moved = shards
        mstats = {}
        with self.mover.streaming(shards_moved, mstats) as delivered:
            for dev in delivered:
                self._shard_kernels(dev, st, counts, front, hmsg, dense, frontier_mode)
                if chunks:
                    self._gather_resident(chunks.pop(0), hmsg, st)
        self.ex.begin_kernels()
        if dense:
            # every vertex is active: one apply over all of them; gathered edges are every edge
            # of the gather directions, known on the host
            self._launch("apply", n, np.int64(0), np.int64(n), 0, self.acc, 0, 0, 0, self.rb_dev)
            st.active_edges = sum(self.deg_stats[d][i].edges for d in self.gather_dirs for i in shards)
        # bulk-synchronous: scatter's writes land only after every shard has gathered
        if shards and spec.has_scatter:
            for p, dt in self.estate.items():
                if self.m_edges:
                    cuda.memcpy_dtod_async(self.ecur[p], self.enxt[p], self.m_edges * dt.itemsize, s)
        # bulk-synchronous: publish nxt only after every shard has gathered from cur
        if shards and self.swap:
            for f in spec.analysis.apply_writes:
                self.cur[f], self.nxt[f] = self.nxt[f], self.cur[f]
            st.bytes_h2d += self._upload_args(1)
        elif shards:
            for f in spec.analysis.apply_writes:
                nbytes = n * spec.vertex_fields[f].itemsize
                if nbytes:
                    cuda.memcpy_dtod_async(self.cur[f], self.nxt[f], nbytes, s)
        if frontier_mode:
            self.front.reverse()
            self._count_frontier()
        self._reduce_aggregates()
        self.ex.shard_done(None)
        d2h = self._readback()
        self.ex.sync()
        t_copy, t_kernel, hidden = self.ex.timeline(origin)
        self._collect_aggregates()
        if frontier_mode:
            self.all_active = False
            self.front_counts = self._shard_counts()
        else:
            self.front_counts = np.diff(self.intervals)
        st.next_active_vertices = int(self.front_counts.sum())
        st.changed_vertices = int(self.rb_host[0])
        if not dense:
            st.active_edges = int(self.rb_host[1])
        st.bytes_h2d += int(mstats.get("bytes_h2d", 0))
        st.bytes_read = int(mstats.get("bytes_read", 0))
        st.time_read = float(mstats.get("time_read", 0.0))
        st.shards_copied = int(mstats.get("copied", 0))
        st.copies = int(mstats.get("copies", 0))
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

    def edge_state(self):
        out = {}
        for p, dt in self.estate.items():
            host = np.empty(self.m_edges, dtype=dt)
            if self.m_edges:
                self.cuda.memcpy_dtoh(host, self.ecur[p])
            out[p] = host
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
                "slots": plan.num_buffers, "slot_bytes": plan.buffer_bytes, "streams": self.streams,
                "host_cached_shards": len(self.mover.host_cached) if self.mover else 0,
                "pinned_host_bytes": self.mover.host_bytes() if self.mover else 0,
                "load_balance": self.load_balance, "deterministic": self.deterministic, "gather_strategies": dict(self._strategies),
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
