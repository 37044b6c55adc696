"""A GPU rank: the CUDA executor running only the rank's own shards on the rank's own GPU, with
the NCCL exchange (grstream/distributed/nccl.py) on its device buffers as the last step of each
plan's ``publish``.

The GPU is chosen by the node-local rank (the ranks of one host, ``MPI.COMM_TYPE_SHARED``), its
primary context made current (grstream/backends/cuda/device.py ``use_device``). Every rank holds
the whole vertex state on its GPU; the rank's planner plans its own shards, a dense apply and a
"copy" publish cover its own vertices (``setup.span``). In ``publish``: the next frontier
(built by the rank's activations) becomes the union of every rank's before the backend counts it
per shard, so the read back's per-shard counts are the world's; the fields apply wrote are
exchanged after the backend's publish, dense or sparse. The ids a rank applied are the set bits of
the frontier the plan ran over within its own vertices; every rank knows the world's count of
them from the last read back, so only an exchange that may go sparse first gathers every rank's
count (one small MPI all-gather). The read back adds the world's changed vertices and gathered
edges (another).
"""
from dataclasses import replace

import numpy as np

from ..errors import UsageError
from .nccl import NcclCollectives, NcclExchange, owned_ids


def cuda_rank_class(ranks, cls):
    """``cls`` (the CUDA executor) as the executor of ``ranks``' rank: chooses the rank's GPU,
    makes ``ranks.exchange`` an :class:`NcclExchange`."""
    from mpi4py import MPI

    from ..backends.cuda import device, require
    require()
    import pycuda.driver as cuda
    cuda.init()
    local = ranks.comm.Split_type(MPI.COMM_TYPE_SHARED)
    here, count = local.Get_size(), cuda.Device.count()
    local_rank = local.Get_rank()
    local.Free()
    if here > count:
        raise UsageError(f"{here} GPU ranks on one host with {count} GPUs: one rank per GPU "
                         f"(start at most {count} ranks per host)")
    ordinal = local_rank % count
    device.use_device(ordinal)
    comm = ranks.comm
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


class CudaRankExecutor:
    """Mixin placed before the CUDA executor class (:func:`cuda_rank_class`)."""

    ranks = None   # the Ranks this class serves (set on the generated subclass)

    @classmethod
    def make_setup(cls, store=None, options=None, **facts):
        return super().make_setup(store, options, span=cls.ranks.span, **facts)

    @classmethod
    def capabilities(cls, setup):
        """The backend's, without push: GPU ranks run pull plans (a push's messages to other
        ranks' vertices are not exchanged on the device), so "auto" and "push" pull."""
        return replace(super().capabilities(setup), push=None)

    @classmethod
    def footprint(cls, spec, dense, setup):
        if spec.edge_state:
            raise UsageError(f"{spec.name} keeps mutable edge state, which GPU ranks do not exchange: "
                             f"run it on CPU ranks (device='cpu') or on one GPU")
        return super().footprint(spec, dense, setup)

    @classmethod
    def memory_options(cls, spec, setup):
        """The backend's, and the rank's own shards: its budget goes to them alone (the models of
        CPU ranks count every shard so that their push-or-pull choices agree; GPU ranks pull)."""
        return dict(super().memory_options(spec, setup), owned=cls.ranks.owned)

    @classmethod
    def _buffers(cls, store, spec, dense, push=False):
        """The backend's buffers and the exchange's: room for every rank's frontier bitmap."""
        from ..backends.cuda.buffers import align
        ks, static, scratch = super()._buffers(store, spec, dense, push)
        words = (int(store.num_vertices) + 31) // 32
        return ks, static, dict(scratch, **{"exchange bitmaps": align(max(4 * words * cls.ranks.size, 1))})

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._active = self.dev.n   # the world's frontier after the last read back

    def _array(self, mem, length, dtype):
        return device_array(self.ranks.exchange.collectives().xp, mem, length, dtype)

    def begin(self, plan):
        super().begin(plan)
        ex = self.ranks.exchange
        ex.collectives().bind(self.dev.ex.compute.handle)
        self._moved, self._exchange_s = ex.bytes, ex.seconds

    def publish(self, plan):
        dev, ex, n = self.dev, self.ranks.exchange, self.dev.n
        words = (n + 31) // 32
        ran = dev.front[0]   # the frontier this plan applied (publish reverses the pair)
        if plan.frontier and n:
            ex.union_bitmap(self._array(dev.front[1], words, np.uint32),
                            self._array(dev.mem["exchange bitmaps"], self.ranks.size * words, np.uint32))
        super().publish(plan)
        # what every rank decides alike: the fields apply writes (a rank without units plans
        # none), dense after a swap (it leaves other ranks' slices of cur stale) or when every
        # vertex applied
        written = () if plan.seed or plan.activation else sorted(self.spec.analysis.apply_writes)
        if not written:
            return
        dense = self.spec.activate == "all" or plan.all_active or plan.publish == "swap"
        fields = {f: self._array(dev.cur[f], n, self.spec.vertex_fields[f]) for f in written}
        width = sum(np.dtype(self.spec.vertex_fields[f]).itemsize for f in written)
        # sparse when the world's frontier (the last read back's, alike on every rank) is small:
        # then the ids, and every rank's count of them (one small all-gather)
        ids, lengths = None, np.zeros(self.ranks.size, dtype=np.int64)
        if not dense and self._active * (8 + width) < n * width:
            lo, hi = self.span
            ids = owned_ids(ex.collectives().xp, self._array(ran, words, np.uint32), lo, hi)
            lengths = ex.counts([len(ids)])[:, 0]
        ex.state(fields, ids, lengths, dense=ids is None)

    def read_back(self, plan, stats):
        rb = super().read_back(plan, stats)   # (the stream has finished: the exchange too)
        ex = self.ranks.exchange
        counts = ex.counts([rb.changed_vertices, rb.active_edges]).sum(axis=0)
        rb.changed_vertices, rb.active_edges = int(counts[0]), int(counts[1])
        rb.total_active = self._active = int(rb.shard_active.sum())
        rb.shard_active = self.ranks.local(rb.shard_active)
        ex.settle()
        stats.bytes_exchanged += ex.bytes - self._moved
        stats.time_exchange += ex.seconds - self._exchange_s
        return rb
