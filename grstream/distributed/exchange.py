"""The exchange between ranks: the one interface through which a rank's executor sends and
receives what other ranks' plans read, and an implementation over MPI host buffers.

Each iteration a rank calls, in this order and the same number of times as every other rank:

- :meth:`Exchange.counts`: one small all-gather of a few integers per rank (changed vertices,
  gathered edges, vertices applied, next-frontier ids): the global decisions (convergence,
  frontier size) and the choices below come from it, identical on every rank;
- :meth:`Exchange.state`: the owned slices of the vertex fields apply wrote, either dense
  (an all-gather of every rank's owned slice) or sparse (the applied (id, value) pairs),
  whichever moves fewer bytes;
- :meth:`Exchange.union`: the next frontier, as the union of every rank's ids (sparse: an
  all-gather of the ids; dense: a bitwise-or all-reduce of a bitmap of n bits).

A GPU exchange (NCCL on device buffers) implements the same three methods. Bytes received and
seconds spent are counted in ``bytes`` and ``seconds`` (the engine reports them per rank).
"""
import time

import numpy as np


class Exchange:
    """The interface; ``bounds`` are the ranks' owned vertex ranges ([bounds[r], bounds[r+1]))."""

    def __init__(self, rank, size, bounds):
        self.rank, self.size = rank, size
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self.bytes, self.seconds = 0, 0.0

    def counts(self, values):
        """Every rank's ``values`` (a few ints): an int64 array (size, len(values))."""
        raise NotImplementedError

    def state(self, fields, applied, total_applied):
        """Make every rank's ``fields`` (name -> length-n array) equal to the owners' slices.
        ``applied``: this rank's ids whose values may have changed (sorted, owned);
        ``total_applied``: the sum of every rank's. Returns "dense" or "sparse"."""
        raise NotImplementedError

    def union(self, ids, n, total):
        """The sorted union of every rank's sorted ``ids`` (``total``: the sum of their lengths)."""
        raise NotImplementedError

    def agree(self, value):
        """``value`` from rank 0 (a picklable object), on every rank."""
        raise NotImplementedError

    def gather(self, value):
        """Every rank's picklable ``value``, as a list, on every rank."""
        raise NotImplementedError


class MpiExchange(Exchange):
    """The exchange over an mpi4py communicator, on host (numpy) buffers."""

    def __init__(self, comm, bounds):
        super().__init__(comm.Get_rank(), comm.Get_size(), bounds)
        self.comm = comm

    def _timed(self, t0, nbytes):
        self.seconds += time.perf_counter() - t0
        self.bytes += int(nbytes)

    def counts(self, values):
        t0 = time.perf_counter()
        mine = np.asarray(values, dtype=np.int64)
        out = np.zeros((self.size, len(mine)), dtype=np.int64)
        self.comm.Allgather(mine, out)
        self._timed(t0, out.nbytes)
        return out

    def state(self, fields, applied, total_applied):
        from mpi4py import MPI
        t0 = time.perf_counter()
        n = int(self.bounds[-1])
        width = sum(a.itemsize for a in fields.values())
        if total_applied * (8 + width) < n * width:   # sparse: the applied (id, value) pairs
            lengths = self._lengths(len(applied))   # the same for the ids and every field
            ids = self._allgatherv(np.ascontiguousarray(applied, dtype=np.int64), lengths)
            moved = ids.nbytes
            for a in fields.values():
                vals = self._allgatherv(np.ascontiguousarray(a[applied]), lengths)
                a[ids] = vals
                moved += vals.nbytes
            self._timed(t0, moved)
            return "sparse"
        sizes = np.diff(self.bounds)
        for a in fields.values():   # dense: every owned slice, in place
            k = a.itemsize
            buf = a.view(np.uint8)
            self.comm.Allgatherv(MPI.IN_PLACE, [buf, (sizes * k, self.bounds[:-1] * k), MPI.BYTE])
        self._timed(t0, n * width)
        return "dense"

    def _lengths(self, length):
        """Every rank's ``length``, as an int64 array."""
        lengths = np.zeros(self.size, dtype=np.int64)
        self.comm.Allgather(np.array([length], dtype=np.int64), lengths)
        return lengths

    def _allgatherv(self, mine, lengths=None):
        """Every rank's 1-d array ``mine`` (one dtype), concatenated in rank order; ``lengths``:
        every rank's ``len(mine)`` when already known (else gathered here)."""
        from mpi4py import MPI
        if lengths is None:
            lengths = self._lengths(len(mine))
        k = mine.dtype.itemsize
        out = np.empty(int(lengths.sum()), dtype=mine.dtype)
        displs = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        self.comm.Allgatherv([mine.view(np.uint8), MPI.BYTE],
                             [out.view(np.uint8), (lengths * k, displs * k), MPI.BYTE])
        return out

    def union(self, ids, n, total):
        from mpi4py import MPI
        t0 = time.perf_counter()
        if total * 8 < n // 8:   # sparse: the ids themselves
            out = np.unique(self._allgatherv(np.ascontiguousarray(ids, dtype=np.int64)))
            self._timed(t0, total * 8)
            return out
        mask = np.zeros(n, dtype=bool)   # dense: a bitmap, or-ed
        mask[ids] = True
        bits = np.packbits(mask)
        self.comm.Allreduce(MPI.IN_PLACE, [bits, MPI.BYTE], op=MPI.BOR)
        self._timed(t0, bits.nbytes)
        return np.flatnonzero(np.unpackbits(bits, count=n)).astype(np.int64)

    def agree(self, value):
        return self.comm.bcast(value, root=0)

    def gather(self, value):
        return self.comm.allgather(value)
