"""The exchange between GPU ranks: NCCL on device buffers, the vertex state never leaving the GPU.

:class:`NcclExchange` implements the interface of grstream/distributed/exchange.py on arrays of
an array module ``xp`` (CuPy on GPU ranks, wrapping the executor's PyCUDA buffers in place)
through a collectives object; :class:`NcclCollectives` is NCCL's (``cupy.cuda.nccl``, on the
executor's compute stream, its communicator bootstrapped by broadcasting NCCL's unique id over
MPI). What stays on MPI host buffers: the small counts (:meth:`MpiExchange.counts`, which also
give a sparse exchange its lengths, and a push's message counts) and the picklable ``agree`` /
``gather``. A push plan's messages on the device go through :meth:`NcclExchange.push_everywhere`,
on the CUDA executor's accumulator and bitmap; the interface's ``combine`` of id lists goes
through :meth:`NcclExchange.push` (the owners' combination, as CPU ranks make it).

- **state**, dense: every rank's owned slice of each field, broadcast in place by its owner (one
  NCCL group of ``size`` broadcasts per field: the slices differ in length, which an all-gather
  cannot take without padding); sparse: the owners' (id, value) pairs, gathered the same way
  into one buffer and scattered into the fields on the device.
- **union_bitmap**: the next frontier as a bitmap (uint32 words, bit ``v % 32`` of word
  ``v // 32``): an all-gather of every rank's bitmap, then a bitwise or on the device (NCCL has
  no bitwise reduction).
- **union**: the interface's union of id lists, sparse (the ids gathered, then unique) or
  through a bitmap.
- **push**: a push plan's messages where the CUDA executor leaves them, a per-vertex
  accumulator and a bitmap of the vertices that received (``pacc``, ``touched``), made the
  owners' combination of every rank's, as :meth:`MpiExchange.combine` on id lists: dense (a
  reduce of each owner's slice to it with the monoid's NCCL operation, the bitmaps or-ed) or
  sparse (each owner's (id, value) pairs sent to it, grouped NCCL sends and receives, and
  combined there with the monoid, one sender's unique ids at a time), whichever moves fewer
  bytes (one MPI all-gather of the messages per owner decides). NCCL's point-to-point channels
  are connected when the collectives are made.
- **push_everywhere**: the same messages combined on every rank for every vertex, so that every
  rank applies every receiver (grstream/distributed/gpu_rank.py): dense, an all-reduce of the
  accumulators and the bitmaps or-ed; sparse, every rank's (id, value) pairs broadcast to every
  rank in one NCCL group and combined in rank order (the same order, so the same sums, on every
  rank); whichever moves fewer bytes (one MPI all-gather of every rank's message count).

Bytes are counted as they arrive; the device seconds come from events on the stream and are
added by :meth:`NcclExchange.settle` once the stream has finished (the rank's read back).
"""
import atexit
from contextlib import contextmanager

import numpy as np

from .exchange import _MPI_OPS, MpiExchange, _row_bytes, _wire



def owned_ids(xp, words, lo, hi):
    """Sorted int64 ids of the set bits of bitmap ``words`` in ``[lo, hi)``."""
    w0 = lo // 32
    bits = xp.unpackbits(words[w0:(hi + 31) // 32].view(xp.uint8), bitorder="little")
    return xp.flatnonzero(bits[lo - 32 * w0:hi - 32 * w0]).astype(xp.int64) + lo


def id_bitmap(xp, ids, words):
    """A bitmap of ``words`` uint32 words with the bits of ``ids`` set (the inverse of
    :func:`owned_ids`)."""
    mask = xp.zeros(32 * int(words), dtype=bool)
    mask[ids] = True
    return xp.packbits(mask, bitorder="little").view(xp.uint32)


def keep_range(xp, words, lo, hi):
    """Clear the bits of bitmap ``words`` (uint32) outside ``[lo, hi)``, in place."""
    a, b = lo // 32, (hi + 31) // 32
    words[:a] = 0
    words[max(a, b):] = 0
    if lo % 32 and a < len(words):
        words[a:a + 1] &= xp.uint32(~((1 << (lo % 32)) - 1) & 0xFFFFFFFF)
    if hi % 32 and hi // 32 < len(words):
        words[hi // 32:hi // 32 + 1] &= xp.uint32((1 << (hi % 32)) - 1)


class NcclExchange(MpiExchange):
    """The exchange on device arrays; ``connect()`` makes the collectives (collective: every
    rank's first device exchange does it, in the same order)."""

    def __init__(self, comm, bounds, connect):
        super().__init__(comm, bounds)
        self._connect, self.coll = connect, None

    def collectives(self):
        if self.coll is None:
            self.coll = self._connect()
        return self.coll

    def settle(self):
        """Add the device seconds of the exchanges since the last call (after a stream sync)."""
        if self.coll is not None:
            self.seconds += self.coll.elapsed()

    def _bytes(self, nbytes):
        self.bytes += int(nbytes)

    def state(self, fields, applied, lengths, bounds=None, dense=False):
        """As the interface's, on device arrays (one value a row)."""
        coll = self.collectives()
        bounds = self.bounds if bounds is None else np.asarray(bounds, dtype=np.int64)
        n = int(bounds[-1])
        width = sum(a.itemsize for a in fields.values())
        lengths = np.asarray(lengths, dtype=np.int64)
        mark = coll.start()
        with coll.using():
            if not dense and int(lengths.sum()) * (8 + width) < n * width:
                ids = coll.xp.ascontiguousarray(applied, dtype=coll.xp.int64)
                every = self._gatherv(ids, lengths)
                moved = every.nbytes
                for a in fields.values():
                    vals = self._gatherv(a[ids], lengths)
                    a[every] = vals
                    moved += vals.nbytes
                kind = "sparse"
            else:
                spans = [(r, int(a), int(b)) for r, (a, b) in enumerate(zip(bounds, bounds[1:])) if b > a]
                for a in fields.values():   # each owner's slice, in place
                    coll.broadcasts([(a[lo:hi], a[lo:hi], r) for r, lo, hi in spans])
                moved, kind = n * width, "dense"
        coll.stop(mark)
        self._bytes(moved)
        return kind

    def combine(self, ids, values, monoid):
        """As the interface's, on device arrays (one value a vertex), through :meth:`push`."""
        coll = self.collectives()
        xp, n = coll.xp, int(self.bounds[-1])
        with coll.using():
            acc = xp.full(n, monoid.identity(values.dtype), dtype=values.dtype)
            acc[ids] = values
            touched = id_bitmap(xp, ids, (n + 31) // 32)
        self.push(acc, touched, monoid, xp.empty(self.size * len(touched), dtype=xp.uint32))
        with coll.using():
            got = owned_ids(xp, touched, int(self.bounds[self.rank]), int(self.bounds[self.rank + 1]))
            return got, acc[got]

    def push(self, acc, touched, monoid, scratch):
        """A push plan's messages on the device: ``acc`` (n values of the message dtype, the
        monoid's identity where this rank sent nothing) and ``touched`` (uint32 bitmap of the
        vertices it sent to), of any rank's vertices. Afterwards, within this rank's own
        vertices, they hold every rank's messages combined with ``monoid`` and every vertex any
        rank sent to; outside them, the identity and no bit (as a push leaves them between
        iterations). ``scratch``: room for ``size * len(touched)`` words."""
        coll = self.collectives()
        xp = coll.xp
        n, lo, hi = int(self.bounds[-1]), int(self.bounds[self.rank]), int(self.bounds[self.rank + 1])
        k, op = _row_bytes(acc), _MPI_OPS.get(monoid.name)
        mark = coll.start()
        with coll.using():
            ids = owned_ids(xp, touched, 0, n)   # every receiver of this rank's messages
            cut = np.asarray(xp.searchsorted(ids, xp.asarray(self.bounds)).tolist(), dtype=np.int64)
            sends = self.counts(np.diff(cut))   # [from, to]: messages (host, MPI)
            wire = _wire(acc)
            if op is not None and int(sends.sum()) * (8 + k) > n * k + n // 8:
                # dense: each owner's slice reduced to it, the receivers' bitmaps or-ed
                coll.reduces([(wire[int(a):int(b)], r) for r, (a, b) in enumerate(zip(self.bounds, self.bounds[1:]))
                              if b > a], "NCCL_" + op)
                self._or_bitmaps(touched, scratch)
                moved = (hi - lo) * k + self.size * touched.nbytes
            else:   # sparse: each owner's (id, value) pairs to it, combined there
                cut = cut.tolist()
                vals = wire[ids]
                got = [(r, int(sends[r, self.rank])) for r in range(self.size) if r != self.rank]
                rids = xp.empty(sum(c for _, c in got), dtype=xp.int64)
                rvals = xp.empty(len(rids), dtype=wire.dtype)
                at, pairs = 0, []
                for r, c in got:
                    pairs += [(ids[cut[r]:cut[r + 1]], rids[at:at + c], r), (vals[cut[r]:cut[r + 1]], rvals[at:at + c], r)]
                    at += c
                coll.sendrecvs(pairs)
                at, combine = 0, getattr(xp, monoid.ufunc.__name__)
                for _, c in got:   # each sender's ids are unique: combined one sender at a time
                    where = rids[at:at + c]
                    wire[where] = combine(wire[where], rvals[at:at + c])
                    at += c
                touched |= id_bitmap(xp, rids, len(touched))
                moved = rids.nbytes + rvals.nbytes
            acc[:lo] = monoid.identity(acc.dtype)
            acc[hi:] = monoid.identity(acc.dtype)
            keep_range(xp, touched, lo, hi)
        coll.stop(mark)
        self._bytes(moved)

    def push_everywhere(self, acc, touched, monoid, scratch):
        """A push plan's messages as :meth:`push` takes them, combined on every rank for every
        vertex: afterwards every rank's ``acc`` holds every rank's messages combined with
        ``monoid`` (the identity where none went) and ``touched`` every vertex any rank sent to,
        so each rank applies every receiver itself (the same values on every rank: the state
        stays replicated with no exchange of what apply writes, nor of the next frontier).
        Dense: an all-reduce of the accumulators with the monoid's NCCL operation, the bitmaps
        or-ed; sparse: every rank's (id, value) pairs gathered by every rank in one NCCL group
        and combined in rank order (the same order on every rank: the same floating-point sums),
        whichever moves fewer bytes. Returns "dense" or "sparse"."""
        coll = self.collectives()
        xp, n = coll.xp, int(self.bounds[-1])
        k, op = _row_bytes(acc), _MPI_OPS.get(monoid.name)
        mark = coll.start()
        with coll.using():
            ids = owned_ids(xp, touched, 0, n)   # every receiver of this rank's messages
            lengths = self.counts([len(ids)])[:, 0]   # (host, MPI)
            total, wire = int(lengths.sum()), _wire(acc)
            if op is not None and total * (8 + k) > n * k + n // 8:
                coll.allreduce(wire, "NCCL_" + op)
                self._or_bitmaps(touched, scratch)
                moved, kind = n * k + self.size * touched.nbytes, "dense"
            else:
                every, vals = xp.empty(total, dtype=xp.int64), xp.empty(total, dtype=wire.dtype)
                at = np.concatenate([[0], np.cumsum(lengths)]).tolist()
                spans = [(r, at[r], at[r + 1]) for r in range(self.size) if at[r + 1] > at[r]]
                mine = wire[ids]
                coll.broadcasts([(ids if r == self.rank else None, every[a:b], r) for r, a, b in spans]
                                + [(mine if r == self.rank else None, vals[a:b], r) for r, a, b in spans])
                wire[ids] = monoid.identity(acc.dtype)   # (this rank's own come again, in rank order)
                combine = getattr(xp, monoid.ufunc.__name__)
                for _, a, b in spans:   # each sender's ids are unique: one sender at a time
                    where = every[a:b]
                    wire[where] = combine(wire[where], vals[a:b])
                touched[...] = id_bitmap(xp, every, len(touched))
                moved, kind = (total - len(ids)) * (8 + k), "sparse"
        coll.stop(mark)
        self._bytes(moved)
        return kind

    def _gatherv(self, mine, lengths):
        """Every rank's device array ``mine`` (one dtype; its length ``lengths[rank]``),
        concatenated in rank order, on every rank."""
        xp = self.coll.xp
        out = xp.empty(int(lengths.sum()), dtype=mine.dtype)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        coll = self.coll
        coll.broadcasts([(mine if r == self.rank else None, out[int(a):int(b)], r)
                         for r, (a, b) in enumerate(zip(offsets, offsets[1:])) if b > a])
        return out

    def union_bitmap(self, words, scratch):
        """Make the bitmap ``words`` (uint32, device) the or of every rank's, in place;
        ``scratch``: room for ``size * len(words)`` words."""
        coll = self.collectives()
        mark = coll.start()
        with coll.using():
            self._or_bitmaps(words, scratch)
        coll.stop(mark)
        self._bytes(self.size * words.nbytes)

    def _or_bitmaps(self, words, scratch):
        xp, k = self.coll.xp, len(words)
        gathered = scratch[:self.size * k]
        self.coll.allgather(words, gathered)
        for r in range(self.size):
            if r != self.rank:
                xp.bitwise_or(words, gathered[r * k:(r + 1) * k], out=words)

    def union(self, ids, n, lengths):
        """As the interface's, on device arrays."""
        coll = self.collectives()
        xp = coll.xp
        lengths = np.asarray(lengths, dtype=np.int64)
        total = int(lengths.sum())
        if total * 8 < n // 8:   # sparse: the ids themselves
            mark = coll.start()
            with coll.using():
                out = xp.unique(self._gatherv(xp.ascontiguousarray(ids, dtype=xp.int64), lengths))
            coll.stop(mark)
            self._bytes(total * 8)
            return out
        k = (n + 31) // 32
        with coll.using():
            words = id_bitmap(xp, ids, k)
            self.union_bitmap(words, xp.empty(self.size * k, dtype=xp.uint32))
            return owned_ids(xp, words, 0, n)


class NcclCollectives:
    """NCCL collectives (``cupy.cuda.nccl``) of one process's GPU, on the stream :meth:`bind`
    gives; CuPy's work for the exchange (gathers, scatters, bitwise or) runs on that stream
    from a memory pool of its own. One per MPI communicator and process (:meth:`shared`): every
    session of a rank reuses it, and it is closed at exit, before MPI finalizes."""

    _shared = {}

    @classmethod
    def shared(cls, comm, ordinal):
        """The collectives of ``comm`` on device ``ordinal`` (made once: collective)."""
        key = (comm.py2f(), int(ordinal))
        coll = cls._shared.get(key)
        if coll is None:
            coll = cls._shared[key] = cls(comm, ordinal)
            atexit.register(coll.close)
        return coll

    def __init__(self, comm, ordinal):
        import cupy
        from cupy.cuda import nccl
        self.xp, self.nccl = cupy, nccl
        cupy.cuda.Device(ordinal).use()
        uid = comm.bcast(nccl.get_unique_id() if comm.Get_rank() == 0 else None, root=0)
        self.comm = nccl.NcclCommunicator(comm.Get_size(), uid, comm.Get_rank())
        self.pool = cupy.cuda.MemoryPool()
        self.stream, self._streams, self._spans, self._done = None, {}, [], 0.0
        # NCCL connects two ranks' point-to-point channels at their first send: here, once per
        # process, rather than in the first sparse push exchange of a timed run
        size, rank = comm.Get_size(), comm.Get_rank()
        with cupy.cuda.using_allocator(self.pool.malloc):
            one = cupy.zeros(2 * size, dtype=cupy.uint8)
            self.stream = cupy.cuda.Stream.null
            self.sendrecvs([(one[2 * r:2 * r + 1], one[2 * r + 1:2 * r + 2], r) for r in range(size) if r != rank])
            self.stream.synchronize()
            del one
        self.stream = None

    def bind(self, handle):
        """Run on the CUDA stream ``handle`` (the executor's compute stream)."""
        stream = self._streams.get(int(handle))
        if stream is None:
            stream = self._streams[int(handle)] = self.xp.cuda.ExternalStream(int(handle))
        self.stream = stream

    @contextmanager
    def using(self):
        with self.stream, self.xp.cuda.using_allocator(self.pool.malloc):
            yield

    def broadcasts(self, pairs):
        """One NCCL group of broadcasts: each (send, recv, root) moves root's ``send`` into every
        rank's ``recv`` (``send`` None on the others)."""
        nccl = self.nccl
        nccl.groupStart()
        try:
            for send, recv, root in pairs:
                src = recv if send is None else send
                self.comm.broadcast(src.data.ptr, recv.data.ptr, recv.nbytes, nccl.NCCL_UINT8, root,
                                    self.stream.ptr)
        finally:
            nccl.groupEnd()

    def reduces(self, pairs, op):
        """One NCCL group of in-place reduces: each (buffer, root) combines every rank's
        ``buffer`` into root's with the NCCL operation named ``op`` (e.g. "NCCL_SUM")."""
        nccl = self.nccl
        nccl.groupStart()
        try:
            for buf, root in pairs:
                self.comm.reduce(buf.data.ptr, buf.data.ptr, buf.size, self._type(buf.dtype),
                                 getattr(nccl, op), root, self.stream.ptr)
        finally:
            nccl.groupEnd()

    def allreduce(self, buf, op):
        """Combine every rank's ``buffer`` into every rank's, in place, with the NCCL operation
        named ``op`` (the same result on every rank)."""
        self.comm.allReduce(buf.data.ptr, buf.data.ptr, buf.size, self._type(buf.dtype),
                            getattr(self.nccl, op), self.stream.ptr)

    def sendrecvs(self, pairs):
        """One NCCL group of point-to-point moves: each (send, recv, peer) sends ``send`` to
        ``peer`` and receives ``recv`` from it (either may be empty)."""
        nccl = self.nccl
        nccl.groupStart()
        try:
            for send, recv, peer in pairs:
                if send.nbytes:
                    self.comm.send(send.data.ptr, send.nbytes, nccl.NCCL_UINT8, peer, self.stream.ptr)
                if recv.nbytes:
                    self.comm.recv(recv.data.ptr, recv.nbytes, nccl.NCCL_UINT8, peer, self.stream.ptr)
        finally:
            nccl.groupEnd()

    def _type(self, dtype):
        return getattr(self.nccl, "NCCL_" + {"f": "FLOAT", "i": "INT", "u": "UINT"}[dtype.kind] + str(8 * dtype.itemsize))

    def allgather(self, send, recv):
        self.comm.allGather(send.data.ptr, recv.data.ptr, send.nbytes, self.nccl.NCCL_UINT8,
                            self.stream.ptr)

    def start(self):
        event = self.xp.cuda.Event()
        event.record(self.stream)
        return event

    def stop(self, start):
        end = self.xp.cuda.Event()
        end.record(self.stream)
        self._spans.append((start, end))

    def elapsed(self):
        """Seconds between the recorded (start, stop) events since the last call."""
        total = 0.0
        for start, end in self._spans:
            end.synchronize()
            total += self.xp.cuda.get_elapsed_time(start, end) / 1e3
        self._spans = []
        return total

    def close(self):
        if self.comm is not None:
            self.pool.free_all_blocks()
            self.comm.destroy()
            self.comm = None
