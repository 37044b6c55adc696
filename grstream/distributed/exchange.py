"""The exchange between ranks: the one interface through which a rank's executor sends and
receives what other ranks' plans read, and an implementation over MPI host buffers.

Each iteration a rank calls, in this order and the same number of times as every other rank:

- :meth:`Exchange.counts`: one small all-gather of a few integers per rank (changed vertices,
  gathered edges, and the lengths of what follows: applied vertices, next-frontier ids, changed
  ids, edge-state writes): the global decisions (convergence, frontier size) and the choices
  below come from it, identical on every rank, and the later calls take every rank's lengths
  from it rather than gathering them again;
- :meth:`Exchange.state`: the owned slices of the vertex fields apply wrote, either dense
  (an all-gather of every rank's owned slice) or sparse (the applied (id, value) pairs, every
  field's in one message), whichever moves fewer bytes;
- :meth:`Exchange.union`: the next frontier, as the union of every rank's ids (sparse: an
  all-gather of the ids; dense: a bitwise-or all-reduce of a bitmap of n bits); programs whose
  next plan reads the changed set (push senders, ``gather_from = "changed"``) unite it too.

A push plan calls :meth:`Exchange.combine` before the rest: its messages to other ranks'
vertices go to their owners, combined with the program's monoid (dense: a reduce-scatter of n
values plus an or-reduced receiver bitmap; sparse: an all-to-all-v of the (id, value) pairs),
whichever moves fewer bytes; each owner then applies its receivers. Edge state (written by
scatter, which runs at the edge's source) is exchanged by :meth:`Exchange.state` too, with
``bounds`` the ranks' owned runs of the global CSR order (a rank's sources own a contiguous
run of it).

Every method is collective: every rank calls it with the same arguments besides its own data
(``ids``, ``values``, ``applied``). Arrays are flat numpy arrays, or (rows, lanes) arrays whose
rows are the vertices. A GPU exchange (NCCL on device buffers) implements the same methods.
Bytes received and seconds spent are counted in ``bytes`` and ``seconds`` (the engine reports
them per rank).
"""
import time

import numpy as np

from ..engine.contract import union_ids
from . import messages


class Exchange:
    """The interface; ``bounds`` are the ranks' owned vertex ranges ([bounds[r], bounds[r+1]))."""

    def __init__(self, rank, size, bounds):
        self.rank, self.size = rank, size
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self.bytes, self.seconds = 0, 0.0

    def counts(self, values):
        """Every rank's ``values`` (a few ints): an int64 array (size, len(values))."""
        raise NotImplementedError

    def state(self, fields, applied, lengths, bounds=None, dense=False):
        """Make every rank's ``fields`` (name -> array of n rows) equal to the owners' slices.
        ``applied``: this rank's ids whose values may have changed (sorted, owned);
        ``lengths``: every rank's ``len(applied)`` (from :meth:`counts`); ``bounds``: the owned
        row ranges (default the vertices', :attr:`bounds`; edge state: the owned runs of edge
        positions); ``dense``: every owned row changed (topology-driven programs). Returns
        "dense" or "sparse"."""
        raise NotImplementedError

    def combine(self, ids, values, monoid):
        """Push messages: ``ids`` (sorted, unique, any rank's vertices) with ``values`` (one row
        each, already combined on this rank). Returns this rank's owned receivers (sorted,
        unique: every id any rank sent to an owned vertex) and their values combined with
        ``monoid`` (grstream.monoid) over every rank's."""
        raise NotImplementedError

    def union(self, ids, n, lengths):
        """The sorted union of every rank's sorted ``ids`` of [0, n) (``lengths``: every rank's
        ``len(ids)``, from :meth:`counts`)."""
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

    def state(self, fields, applied, lengths, bounds=None, dense=False):
        t0 = time.perf_counter()
        bounds = self.bounds if bounds is None else np.asarray(bounds, dtype=np.int64)
        n = int(bounds[-1])
        width = sum(_row_bytes(a) for a in fields.values())
        lengths = np.asarray(lengths, dtype=np.int64)
        if not dense and int(lengths.sum()) * (8 + width) < n * width:
            # sparse: the applied (id, value) pairs, every field's in one message per rank
            applied = np.ascontiguousarray(applied, dtype=np.int64)
            parts = [applied.view(np.uint8)] + [np.ascontiguousarray(a[applied]).reshape(-1).view(np.uint8)
                                                for a in fields.values()]
            got = self.allgatherv(np.concatenate(parts), lengths * (8 + width))
            at = 0
            for length in lengths.tolist():   # each rank's ids, then each field's values
                ids = got[at:at + 8 * length].view(np.int64)
                at += 8 * length
                for a in fields.values():
                    k = _row_bytes(a) * length
                    a[ids] = got[at:at + k].view(a.dtype).reshape((length,) + a.shape[1:])
                    at += k
            self._timed(t0, got.nbytes)
            return "sparse"
        sizes = np.diff(bounds)
        for a in fields.values():   # dense: every owned slice, in place
            k = _row_bytes(a)
            messages.allgatherv(self.comm, None, a.reshape(-1).view(np.uint8), sizes * k,
                                bounds[:-1] * k)
        self._timed(t0, n * width)
        return "dense"

    def combine(self, ids, values, monoid):
        from mpi4py import MPI
        t0 = time.perf_counter()
        ids = np.asarray(ids, dtype=np.int64)
        lo, hi = int(self.bounds[self.rank]), int(self.bounds[self.rank + 1])
        n, k = int(self.bounds[-1]), _row_bytes(values)
        cut = np.searchsorted(ids, self.bounds)
        sends = np.zeros((self.size, self.size), dtype=np.int64)   # [from, to]: messages
        self.comm.Allgather(np.diff(cut), sends)
        total = int(sends.sum())
        op = _MPI_OPS.get(monoid.name)
        if op is not None and total * (8 + k) > n * k + n // 8:
            # dense: every rank's messages as n values (the identity elsewhere), reduced and
            # scattered to the owners, and who received any, as an or-reduced bitmap
            full = np.full((n,) + values.shape[1:], monoid.identity(values.dtype), dtype=values.dtype)
            full[ids] = values
            mask = np.zeros(n, dtype=bool)
            mask[ids] = True
            bits = np.packbits(mask)
            messages.allreduce(self.comm, bits, MPI.BOR, MPI.BYTE)
            got = np.flatnonzero(np.unpackbits(bits, count=n)[lo:hi]).astype(np.int64)
            wire = _wire(full)
            mine = np.empty_like(wire[lo:hi])
            counts = np.diff(self.bounds) * (wire.size // max(n, 1))
            messages.reduce_scatter(self.comm, wire.reshape(-1), counts, mine.reshape(-1),
                                    getattr(MPI, op))
            self._timed(t0, mine.nbytes + bits.nbytes)
            return got + lo, mine.view(values.dtype)[got]
        # sparse: each owner's pairs to it, then combined there in rank order
        send, recv = sends[self.rank], sends[:, self.rank]
        got = self.alltoallv(ids, send, recv, sends)
        vals = self.alltoallv(np.ascontiguousarray(values), send, recv, sends)
        out, where = np.unique(got, return_inverse=True)
        acc = np.full((len(out),) + values.shape[1:], monoid.identity(values.dtype), dtype=values.dtype)
        monoid.ufunc.at(acc, where, vals)
        self._timed(t0, got.nbytes + vals.nbytes)
        return out, acc

    def alltoallv(self, mine, send, recv, every=None):
        """Rows ``mine[cut[r]:cut[r+1]]`` to rank r (``send`` rows each); ``recv`` rows from each
        (in rounds where the bytes pass what one MPI call takes: grstream.distributed.messages).
        ``every``: every rank's ``send`` ([from, to] rows), where known (saves agreeing on the
        rounds)."""
        k = _row_bytes(mine)
        out = np.empty((int(recv.sum()),) + mine.shape[1:], dtype=mine.dtype)
        messages.alltoallv(self.comm, np.ascontiguousarray(mine).reshape(-1).view(np.uint8),
                           np.asarray(send, dtype=np.int64) * k, out.reshape(-1).view(np.uint8),
                           np.asarray(recv, dtype=np.int64) * k,
                           None if every is None else np.asarray(every, dtype=np.int64) * k)
        return out

    def allgatherv(self, mine, lengths):
        """Every rank's array ``mine`` (rows of one dtype and shape), concatenated in rank order;
        ``lengths``: every rank's ``len(mine)``."""
        k = _row_bytes(mine)
        out = np.empty((int(np.sum(lengths)),) + mine.shape[1:], dtype=mine.dtype)
        messages.allgatherv(self.comm, np.ascontiguousarray(mine).reshape(-1).view(np.uint8),
                            out.reshape(-1).view(np.uint8), np.asarray(lengths, dtype=np.int64) * k)
        return out

    def union(self, ids, n, lengths):
        from mpi4py import MPI
        t0 = time.perf_counter()
        total = int(np.sum(lengths))
        if total * 8 < n // 8:   # sparse: the ids themselves
            out = union_ids([self.allgatherv(np.ascontiguousarray(ids, dtype=np.int64), lengths)])
            self._timed(t0, total * 8)
            return out
        mask = np.zeros(n, dtype=bool)   # dense: a bitmap, or-ed
        mask[ids] = True
        bits = np.packbits(mask)
        messages.allreduce(self.comm, bits, MPI.BOR, MPI.BYTE)
        self._timed(t0, bits.nbytes)
        return np.flatnonzero(np.unpackbits(bits, count=n)).astype(np.int64)

    def agree(self, value):
        return self.comm.bcast(value, root=0)

    def gather(self, value):
        return self.comm.allgather(value)


#: the MPI reduction of each monoid (grstream.monoid), on the wire types of :func:`_wire`
_MPI_OPS = {"sum": "SUM", "prod": "PROD", "min": "MIN", "max": "MAX", "or": "MAX", "and": "MIN"}


def _wire(a):
    """``a`` as MPI reduces it: booleans as uint8 (or / and become max / min)."""
    return a.view(np.uint8) if a.dtype == np.bool_ else a


def _row_bytes(a):
    """Bytes of one row of ``a`` (a value, or a vertex's lanes)."""
    return a.itemsize * (int(np.prod(a.shape[1:])) if a.ndim > 1 else 1)
