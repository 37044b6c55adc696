"""The PyCUDA side of data movement: copy streams, the compute stream, events, pinned memory.

All CUDA calls of the movement go through this object (tests use a synchronous stand-in with the
same methods), so :class:`~.movement.Mover` runs without a GPU.
"""
import numpy as np


class Streams:
    """The PyCUDA side of the movement engine: streams, events, pinned memory, async copies.

    Copies go round-robin over ``num_streams`` copy streams ("spray"); kernels run on
    ``self.compute``. A shard's copies start only after the previous shard's finished: copies of two
    shards in flight together share the link and finish together, so the first one's kernels (and
    the slot refill waiting on them) would start late and the copy engine would idle. Every copy and every shard's kernels are bracketed by timing events, so
    :meth:`timeline` can report copy busy time, kernel busy time and their overlap.
    """

    def __init__(self, num_streams=4):
        import pycuda.driver as cuda
        self.cuda = cuda
        self.copy_streams = [cuda.Stream() for _ in range(max(1, num_streams))]
        self.compute = cuda.Stream()
        self._rr = 0
        self._prev_copy = []          # (stream index, event) ending the previous shard's copies
        self._retired = []            # events no longer waited for, pooled at the next reset
        self._slot_free = {}          # slot -> event recorded after the kernels that read it
        self._copy_events = []        # events the compute stream waits on before the next kernels
        self._used_streams = set()
        self.copy_spans = []          # (start event, end event) per array copy
        self.kernel_spans = []        # (start event, end event) per shard's kernels
        self._pool = []
        self._kernel_start = None
        self._span_from = 0           # first copy span of the copy being enqueued
        self.ahead = None             # (ends, spans) of a copy started ahead, not joined yet

    def _event(self):
        return self._pool.pop() if self._pool else self.cuda.Event()

    # memory
    def pinned_empty(self, nbytes):
        return self.cuda.pagelocked_empty(int(nbytes), np.uint8)

    def pinned_cache(self, nbytes, mapped=False):
        """The pinned host cache: registered with the device in segments on a thread, and
        ``mapped``, read by kernels in place too (zero-copy; :mod:`.pinnedcache`)."""
        from .pinnedcache import CudaRegistrar, PinnedCache
        return PinnedCache(nbytes, CudaRegistrar(), mapped)

    def device_alloc(self, nbytes):
        return self.cuda.mem_alloc(int(nbytes))

    def device_free(self, mem):
        mem.free()

    # copies
    def begin_copy(self, slot):
        # each unit starts on stream 0: a single-range unit then follows the previous one on the
        # same stream, with no cross-stream event hop
        self._used_streams = set()
        self._slot = slot
        self._rr = 0
        self._span_from = len(self.copy_spans)

    def copy_array(self, host, dev_addr):
        s = self._rr % len(self.copy_streams)
        self._rr += 1
        stream = self.copy_streams[s]
        if s not in self._used_streams:
            self._used_streams.add(s)
            free = self._slot_free.get(self._slot)
            if free is not None:
                stream.wait_for_event(free)
            for other, e in self._prev_copy:
                if other != s:
                    stream.wait_for_event(e)
        start, end = self._event(), self._event()
        start.record(stream)
        self.cuda.memcpy_htod_async(dev_addr, host, stream)
        end.record(stream)
        self.copy_spans.append((start, end))

    def _end_events(self):
        """(copy stream index, event recorded on it) ending the copy being enqueued, which the
        next copies follow (the previous copy's go back to the pool after the plan, :meth:`reset`)."""
        self._retired.extend(e for _, e in self._prev_copy)
        self._prev_copy = []
        for s in sorted(self._used_streams):
            e = self._event()
            e.record(self.copy_streams[s])
            self._prev_copy.append((s, e))
        return list(self._prev_copy)

    def end_copy(self):
        ends = [e for _, e in self._end_events()]
        for e in ends:
            self.compute.wait_for_event(e)
        self._kernel_start = self._event()
        self._kernel_start.record(self.compute)
        return ends

    def end_ahead(self):
        """End a copy started ahead for the next plan (:meth:`Mover.copy_ahead`): like
        :meth:`end_copy`, except that the compute stream does not wait for it (its kernels come
        in the next plan: :meth:`join_ahead`), and its timing spans are kept for that plan's
        timeline (this plan's read back does not wait for them)."""
        ends = self._end_events()
        spans = self.copy_spans[self._span_from:]
        del self.copy_spans[self._span_from:]
        self.ahead = (ends, spans)

    def join_ahead(self):
        """The compute stream waits for the copy started ahead (before the kernels that read
        it); its spans join this plan's. Returns their (first, end) indices in ``copy_spans``
        (None: no copy was ahead)."""
        if self.ahead is None:
            return None
        ends, spans = self.ahead
        self.ahead = None
        for _, e in ends:
            self.compute.wait_for_event(e)
        first = len(self.copy_spans)
        self.copy_spans.extend(spans)
        return first, len(self.copy_spans)

    def done(self, token):
        return all(e.query() for e in token)

    def wait(self, token):
        for e in token:
            e.synchronize()

    def begin_kernels(self):
        if self._kernel_start is None:
            self._kernel_start = self._event()
            self._kernel_start.record(self.compute)

    def shard_done(self, slot):
        self.begin_kernels()
        end = self._event()
        end.record(self.compute)
        self.kernel_spans.append((self._kernel_start, end))
        self._kernel_start = None
        if slot is not None:
            self._slot_free[slot] = end

    def sync(self):
        self.compute.synchronize()
        for s in self.copy_streams:
            s.synchronize()

    def close(self):
        """Drop every stream and event, after the work queued on them finished: the last
        references go here, on the thread that owns the context, so PyCUDA destroys them now
        (dropped on another thread -- a worker, or the cyclic collector running there -- it
        cannot make the context current and leaves them to the process's exit). Idempotent."""
        if self.compute is None:
            return
        try:
            self.sync()
        except Exception:   # a failed launch already poisoned the context: still drop them
            pass
        self.copy_streams, self.compute, self._pool, self._kernel_start = [], None, [], None
        self._prev_copy, self._slot_free, self._copy_events, self._retired = [], {}, [], []
        self.copy_spans, self.kernel_spans, self.ahead = [], [], None

    def settle(self):
        """The end of a plan (its read back): every copy it enqueued was joined into the compute
        stream, so the compute stream alone is waited for while a copy for the next plan runs
        ahead (:meth:`end_ahead`); else everything, as :meth:`sync`."""
        if self.ahead is None:
            self.sync()
        else:
            self.compute.synchronize()

    def reset(self):
        """Forget the spans recorded so far (after a sync), e.g. those of ``start``."""
        pool = self._pool
        for spans in (self.copy_spans, self.kernel_spans):
            for pair in spans:
                pool.extend(pair)
        # (a copy ahead's end events stay its own until it is joined, also where a later copy
        # retired them and its plan ended without the join: an interrupted delivery)
        kept = () if self.ahead is None else {id(e) for _, e in self.ahead[0]}
        pool.extend(e for e in self._retired if id(e) not in kept)
        self.copy_spans, self.kernel_spans, self._retired = [], [], []
        self._slot_free = {}
        # (a copy running ahead stays the one the next copies follow; else the last copy's end
        # events are done with too)
        if self.ahead is None:
            pool.extend(e for _, e in self._prev_copy)
            self._prev_copy = []
        else:
            self._prev_copy = list(self.ahead[0])

    def span_times(self, origin):
        """(copy spans, kernel spans) recorded since the last :meth:`timeline`, as (start s,
        end s) since ``origin`` (an event recorded before any of them): each event is read once,
        for the per-mode times and the timeline of one read back. Needs every span finished."""
        def spans(pairs):
            return [(s.time_since(origin) / 1e3, e.time_since(origin) / 1e3) for s, e in pairs]
        return spans(self.copy_spans), spans(self.kernel_spans)

    def timeline(self, origin, times=None):
        """(copy busy s, kernel busy s, overlap s) of the spans since the last call; resets them.

        Needs every span finished (call :meth:`sync` first). ``origin`` is an event recorded
        before any of them; ``times``: their :meth:`span_times`, when read already.
        """
        copies, kernels = self.span_times(origin) if times is None else times
        self.reset()
        return busy_overlap(copies, kernels)


def _union(intervals):
    out = []
    end = None
    for a, b in sorted(intervals):
        if end is not None and a <= end:
            if b > end:
                out[-1][1] = end = b
        else:
            out.append([a, b])
            end = b
    return out


def busy_overlap(copies, kernels):
    """(busy time of the copies, of the kernels, time both were busy) from (start, end) spans:
    one sweep over the two unions, each a sorted list of disjoint intervals."""
    cu, ku = _union(copies), _union(kernels)
    overlap, j = 0.0, 0
    for a, b in cu:
        while j < len(ku) and ku[j][1] <= a:   # kernel intervals ending before this copy's
            j += 1
        k = j
        while k < len(ku) and ku[k][0] < b:
            lo, hi = max(a, ku[k][0]), min(b, ku[k][1])
            if hi > lo:
                overlap += hi - lo
            k += 1
    return (sum(b - a for a, b in cu), sum(b - a for a, b in ku), overlap)
