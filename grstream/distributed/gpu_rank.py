"""A GPU rank: the CUDA executor running only the rank's own shards on the rank's own GPU, with
the NCCL exchange (grstream/distributed/nccl.py) on its device buffers as the last step of each
plan's ``publish``.

The GPU is chosen by the node-local rank (the ranks of one host, ``MPI.COMM_TYPE_SHARED``), its
primary context made current (grstream/backends/cuda/device.py ``use_device``). Every rank holds
the whole vertex state on its GPU; the rank's planner plans its own shards, a dense apply and a
"copy" publish cover its own vertices (``setup.span``). In ``publish``:

- a push plan's messages (the executor's per-vertex push accumulator and touched bitmap, to any
  vertex) are combined on every rank for every vertex (:meth:`NcclExchange.push_everywhere`),
  and every rank applies every receiver (push_apply over the world's touched bitmap, then cur
  takes nxt over every vertex): the same values, the world's next frontier and changed counts
  on every rank, with no exchange of the fields apply writes nor of the frontier after it (a
  level costs one count all-gather, one device sync and one NCCL group besides its read back).
  A rank pushes from its own changed vertices only (its shards hold
  their out-edges), so the changed set it keeps is its own vertices'; the read back adds the
  ranks' walked edges;
- the next frontier of a pull (built by the rank's activations) becomes the union of every
  rank's before the backend counts it per shard, so the read back's per-shard counts are the
  world's;
- the fields a pull's apply wrote are exchanged after the backend's publish, dense or sparse.
  The ids a rank applied are the set bits of the frontier it ran over within its own vertices;
  every rank knows the world's count from the last read back, so only an exchange that may go
  sparse first gathers every rank's count (one small MPI all-gather). Such a publish leaves
  ``nxt`` of other ranks' vertices behind ``cur``: the next push apply first copies ``cur``
  into ``nxt`` (apply writes ``nxt`` of the vertices it visits, publish copies every vertex);
- mutable edge state (scatter writes the out-edges of the rank's own vertices, a run of the
  global CSR order) is exchanged dense, each owner's run broadcast.

The read back adds the world's changed vertices and gathered edges (one more all-gather).
"""
from dataclasses import replace

import numpy as np

from ..errors import UsageError
from .nccl import NcclCollectives, NcclExchange, keep_range, owned_ids
from .rank_executor import RankMixin


def rank_gpu(comm):
    """Make this rank's GPU (its node-local rank's, modulo the host's GPUs) the one this process's
    executors run on; its ordinal. Collective."""
    from mpi4py import MPI

    from ..backends.cuda import device, require
    require()
    import pycuda.driver as cuda
    cuda.init()
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    here, count = local.Get_size(), cuda.Device.count()
    local_rank = local.Get_rank()
    local.Free()
    if here > count:
        raise UsageError(f"{here} GPU ranks on one host with {count} GPUs: one rank per GPU "
                         f"(start at most {count} ranks per host)")
    ordinal = local_rank % count
    device.use_device(ordinal)
    return ordinal


def cuda_rank_class(ranks, cls):
    """``cls`` (the CUDA executor) as the executor of ``ranks``' rank: chooses the rank's GPU,
    makes ``ranks.exchange`` an :class:`NcclExchange`."""
    comm = ranks.comm
    ordinal = rank_gpu(comm)
    ranks.exchange = NcclExchange(comm, ranks.bounds, lambda: NcclCollectives.shared(comm, ordinal))
    return type(f"Rank{cls.__name__}", (CudaRankExecutor, cls), {"ranks": ranks})


def device_array(xp, mem, length, dtype):
    """``length`` items of ``dtype`` at the device allocation ``mem`` (a PyCUDA allocation or an
    address) as an ``xp`` (CuPy) array over the same memory, without a copy."""
    dtype = np.dtype(dtype)
    if length == 0:
        return xp.zeros(0, dtype=dtype)
    raw = xp.cuda.UnownedMemory(int(mem), int(length) * dtype.itemsize, mem)
    return xp.ndarray((int(length),), dtype=dtype, memptr=xp.cuda.MemoryPointer(raw, 0))


class CudaRankExecutor(RankMixin):
    """Mixin placed before the CUDA executor class (:func:`cuda_rank_class`)."""

    @classmethod
    def memory_options(cls, spec, setup):
        """The backend's, and the rank's own shards: its budget goes to them alone (the ranks
        agree on whether push arrays fit before planning: engine/session.py)."""
        return dict(super().memory_options(spec, setup), owned=cls.ranks.owned)

    @classmethod
    def _buffers(cls, store, spec, dense, push=False, lanes=None):
        """The backend's buffers and the exchange's: room for every rank's frontier bitmap."""
        from ..backends.cuda.buffers import align, lane_bytes
        ks, static, scratch = super()._buffers(store, spec, dense, push, lanes)
        words = (int(store.num_vertices) + 31) // 32
        front = 4 * words if lanes is None else lane_bytes(4 * words, lanes)   # (lanes: every lane's)
        scratch = dict(scratch, **{"exchange bitmaps": align(max(front * cls.ranks.size, 1))})
        if spec.gather_from == "changed":   # the world's changed set the gathers read
            scratch["changed (world)"] = align(max(4 * words, 1))
        return ks, static, scratch

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._active = self.dev.n   # the world's frontier after the last read back
        self._own_edges = None   # the edges a push from every own vertex walks
        self._nxt_stale = False   # nxt may differ from cur (a plan published the rank's span only)
        self._pushed = False   # the last plan applied every rank's push messages on every rank

    def state_span(self):
        return self.ranks.state_span

    def load_state(self, state, edge_state):
        """The backend's (nxt takes cur on the device); where init ran over this rank's vertices
        only (``Ranks.state_span``: its span uploaded), every owner's slice of every field is
        broadcast in place after the upload, on the compute stream, and nxt takes cur again."""
        super().load_state(state, edge_state)
        self._nxt_stale = False
        dev, n = self.dev, self.dev.n
        if self.ranks.state_span is None or not n:
            return
        dev.wait_state()   # (the compute stream after the upload)
        self._bind()
        fields = self.spec.vertex_fields
        self.ranks.exchange.state({f: self._array(dev.cur[f], n, dt) for f, dt in fields.items()}, None,
                                  np.zeros(self.ranks.size, dtype=np.int64), dense=True)
        for f, dt in fields.items():
            dev.cuda.memcpy_dtod_async(dev.nxt[f], dev.cur[f], n * np.dtype(dt).itemsize, dev.ex.compute)

    def fill_state(self, initial, edge_state):
        """The backend's: a declared state, made whole on every rank's device (no exchange)."""
        super().fill_state(initial, edge_state)
        self._nxt_stale = False

    def _array(self, mem, length, dtype):
        return device_array(self.ranks.exchange.collectives().xp, mem, length, dtype)

    def _words(self, frontier=False):
        """Words of a bitmap of n bits; ``frontier``: of the frontier (lanes: every lane's)."""
        lanes = self.lane_runs
        if frontier and lanes is not None:
            return lanes.count * lanes.front_stride // 4
        return (self.dev.n + 31) // 32

    def _bitmap(self, mem, frontier=False):
        return self._array(mem, self._words(frontier), np.uint32)

    def _scratch(self, frontier=False):
        return self._array(self.dev.mem["exchange bitmaps"], self.ranks.size * self._words(frontier), np.uint32)

    def _bind(self):
        self.ranks.exchange.collectives().bind(self.dev.ex.compute.handle)

    def changed_sources(self):
        """A gather_from "changed" program's gathers read the world's changed set (its edges'
        other ends are any rank's vertices), while a push sends from the rank's own."""
        return self.dev.mem["changed (world)"]

    def _world_changed(self, unite=True, source=None):
        """The world's changed set: ``source`` (default ``chg[0]``), or'ed over every rank where
        ``unite`` (else it is the world's already: the seed, a restored set, a push's)."""
        dev = self.dev
        if not self.from_changed or not dev.n:
            return
        source = dev.chg[0] if source is None else source
        dev.cuda.memcpy_dtod_async(self.changed_sources(), source, 4 * ((dev.n + 31) // 32), dev.ex.compute)
        if unite:
            self.ranks.exchange.union_bitmap(self._bitmap(self.changed_sources()), self._scratch())

    def set_frontier(self, mask, ids=None):
        """As the backend's; a rank pushes from its own changed vertices only (its shards hold
        their out-edges), so the changed set before iteration 1 is the seed's (or every vertex)
        within its span; a gather_from "changed" program gathers from all of it."""
        super().set_frontier(mask, ids)
        self._world_changed(unite=False)
        pushes = self.pushes
        if not pushes.available or not self.dev.n:
            return
        self._bind()
        coll, (lo, hi) = self.ranks.exchange.collectives(), self.span
        with coll.using():
            keep_range(coll.xp, self._bitmap(self.dev.chg[0]), lo, hi)
        pushes.changed = self.ranks.local(pushes.changed)
        idx, degree = self.seed_idx, np.asarray(pushes._degree())
        if idx is None:   # (every own vertex: its degree sum, found once)
            if self._own_edges is None:
                self._own_edges = int(degree[lo:hi].sum())
            pushes.edges = self._own_edges
        else:
            pushes.edges = int(degree[idx[(idx >= lo) & (idx < hi)]].sum())

    def restore_run(self, saved):
        super().restore_run(saved)
        self._world_changed(unite=False)   # (the world's changed set was saved)

    def begin(self, plan):
        super().begin(plan)
        self._bind()

    def publish(self, plan):
        dev, ex, n, spec = self.dev, self.ranks.exchange, self.dev.n, self.spec
        ran = dev.front[0]   # the frontier this plan applied (publish reverses the pair)
        self._pushed = plan.direction == "push"
        if self._pushed:   # (every rank, whether its units sent or not: it receives)
            self._apply_everywhere(plan)
            super().publish(replace(plan, publish="none", publish_fields=()))
            return
        if plan.frontier and n:
            ex.union_bitmap(self._bitmap(dev.front[1], True), self._scratch(True))
        super().publish(plan)
        if plan.seed or plan.activation:
            return
        self._nxt_stale = True   # (the rank's span published; other ranks' values reach cur only)
        self._world_changed()   # (every rank, whether its units applied or not)
        # what every rank decides alike: the fields apply writes (a rank without units plans
        # none), dense after a swap (it leaves other ranks' slices of cur stale) or when every
        # vertex applied; edge state (scatter writes its own sources' out-edges), dense
        if spec.edge_state and spec.has_scatter:   # (a rank without units wrote none: still collective)
            ex.state({p: self._array(dev.ecur[p], dev.m_edges, dt) for p, dt in dev.estate.items()},
                     None, np.zeros(self.ranks.size, dtype=np.int64), bounds=self.ranks.edge_bounds, dense=True)
        written = sorted(spec.analysis.apply_writes)
        if not written:
            return
        dense = spec.activate == "all" or plan.all_active or plan.publish == "swap"
        lanes = self.lane_runs
        if lanes is not None:   # every lane's fields, dense (lane k's at its stride)
            ex.state({f"{f} {k}": self._array(int(lanes.cur[f]) + k * lanes.field_stride[f], n,
                                              spec.vertex_fields[f]) for f in written for k in range(lanes.count)},
                     None, np.zeros(self.ranks.size, dtype=np.int64), dense=True)
            return
        fields = {f: self._array(dev.cur[f], n, spec.vertex_fields[f]) for f in written}
        width = sum(np.dtype(spec.vertex_fields[f]).itemsize for f in written)
        # sparse when the world's applied vertices may be few (the last read back's frontier,
        # alike on every rank): then every rank's count (one small all-gather)
        ids, lengths = None, np.zeros(self.ranks.size, dtype=np.int64)
        if not dense and self._active * (8 + width) < n * width:
            with ex.collectives().using():
                ids = owned_ids(ex.collectives().xp, self._bitmap(ran), *self.span)
            lengths = ex.counts([len(ids)])[:, 0]
        ex.state(fields, ids, lengths, dense=ids is None)

    def _apply_everywhere(self, plan):
        """A push plan's apply on every rank over every vertex any rank sent to: every rank's
        messages combined on every rank (:meth:`NcclExchange.push_everywhere`), then the
        backend's apply over them, which writes the same values, the world's next frontier and
        changed set on every rank; the changed set keeps the rank's own vertices (a rank
        pushes from its own: its shards hold their out-edges). No exchange of the fields apply
        writes follows, nor of the frontier."""
        dev, ex, n, spec = self.dev, self.ranks.exchange, self.dev.n, self.spec
        if not n:
            return
        ex.push_everywhere(self._array(dev.pacc, n, self.ks.msg_dtype), self._bitmap(dev.touched),
                           spec.gather_reduce, self._scratch())
        fields = sorted(spec.analysis.apply_writes)
        if self._nxt_stale:   # apply writes nxt of the vertices it visits: nxt = cur first
            for f in fields:
                dev.cuda.memcpy_dtod_async(dev.nxt[f], dev.cur[f], n * spec.vertex_fields[f].itemsize, dev.ex.compute)
            self._nxt_stale = False
        self.pushes.apply(plan)
        dev.publish_interval(fields, 0, n)
        # the world's changed set, whole here, is what a gather_from "changed" program reads next
        self._world_changed(unite=False, source=dev.chg[1])
        coll = ex.collectives()
        with coll.using():
            keep_range(coll.xp, self._bitmap(dev.chg[1]), *self.span)

    def set_lanes(self, alive):
        return self.ranks.local(super().set_lanes(alive))

    def read_back(self, plan, stats):
        rb = super().read_back(plan, stats)   # (the stream has finished: the exchange too)
        ex = self.ranks.exchange
        counts = ex.counts([rb.changed_vertices, rb.active_edges, max(rb.changed_edges, 0)])
        # a push applied every receiver on every rank: its changed counts are the world's already
        # (rank 0's, which every rank takes alike)
        counts = np.concatenate([counts[0, [0]], counts[:, 1].sum(keepdims=True), counts[0, [2]]]) \
            if self._pushed else counts.sum(axis=0)
        rb.changed_vertices, rb.active_edges = int(counts[0]), int(counts[1])
        rb.total_active = self._active = int(rb.shard_active.sum())
        rb.shard_active = self.ranks.local(rb.shard_active)
        if rb.shard_changed is not None:   # (each rank's changed set is its own vertices')
            rb.shard_changed, rb.changed_edges = self.ranks.local(rb.shard_changed), int(counts[2])
        ex.settle()
        self.count_exchange(stats)
        return rb
