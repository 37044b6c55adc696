"""The data-movement engine: store -> pinned host memory -> device, overlapped with compute.

Host side: each streamed shard's arrays are read from the store straight into pinned (page-locked)
buffers by a read-ahead thread: into a pinned cache that keeps them for later iterations when the
host limit allows, else into a small ring of pinned staging buffers that is refilled as soon as the
copy out of a buffer has finished. Device side: resident shards have their own regions, copied once;
the others stream through ``num_slots`` slots. A shard's arrays are sprayed over the copy streams
(one array per stream in turn) and joined by events before its kernels; a slot is refilled only
after the kernels that read it finished (the copy streams wait on that event on the GPU, never the
host), so with two slots the next shard's copy overlaps the current shard's kernels.

All CUDA calls go through an *executor* (:class:`CudaExecutor` here; tests use a synchronous
stand-in), so the scheduling in :class:`Mover` runs without a GPU.
"""
import queue
import threading
import time
from collections import deque
from contextlib import contextmanager

import numpy as np

from ...engine.schedule import dataset_dtype
from .schedule import ALIGN, Residency, layout


class DeviceArrays(dict):
    """name -> device address of one shard's arrays, plus their lengths (elements)."""

    def __init__(self, shard, addresses, lengths):
        super().__init__(addresses)
        self.shard = shard
        self.lengths = lengths


class Mover:
    """Moves the shards an iteration needs and yields them, in schedule order, ready on the device.

    Parameters
    ----------
    store : ShardStore
    names : list of str
        The shard datasets the program needs (phase elimination happened before).
    plan : MemoryPlan
        From :func:`schedule.plan_device` over :func:`schedule.shard_region_bytes`.
    executor : CudaExecutor or a stand-in with the same methods
    host_cached : iterable of int
        Streamed shards to keep in pinned host memory after their first read.
    staging : int
        Pinned staging buffers for shards read every time (read-ahead depth).
    """

    def __init__(self, store, names, plan, executor, host_cached=(), staging=3):
        self.store = store
        self.names = list(names)
        self.plan = plan
        self.ex = executor
        self.dtypes = {n: dataset_dtype(store, n) for n in self.names}
        self.lengths, self.offsets, self.region = {}, {}, {}
        for i in range(store.num_shards):
            info = store.shard_info(i)
            nb = {n: info.dataset_nbytes[n] for n in self.names}
            self.lengths[i] = {n: nb[n] // self.dtypes[n].itemsize for n in self.names}
            self.offsets[i], self.region[i] = layout(nb)
        self.residency = Residency(plan.cached, plan.num_buffers)
        self.resident_mem = {}
        for i in plan.cached:
            self.resident_mem[i] = executor.device_alloc(max(self.region[i], ALIGN))
        self.slots = [executor.device_alloc(max(plan.buffer_bytes, ALIGN)) for _ in range(plan.num_buffers)]
        streamed = [i for i in range(store.num_shards) if i not in self.residency.resident]
        self.host_cached = [i for i in host_cached if i in set(streamed)]
        cache_total = sum(self.region[i] for i in self.host_cached)
        self._cache_block = executor.pinned_empty(cache_total) if cache_total else None
        self._cache_off, off = {}, 0
        for i in self.host_cached:
            self._cache_off[i] = off
            off += self.region[i]
        self._cache_filled = set()
        needs_staging = len(self.host_cached) < len(streamed) or bool(plan.cached)
        largest = max(self.region.values()) if self.region else 0
        self.staging = [executor.pinned_empty(max(largest, ALIGN)) for _ in range(staging if needs_staging else 0)]
        self.bytes_read = 0

    # ------------------------------------------------------------------ host side
    def _host_views(self, i, block, base):
        out = {}
        for n in self.names:
            dt = self.dtypes[n]
            off = base + self.offsets[i][n]
            out[n] = block[off:off + self.lengths[i][n] * dt.itemsize].view(dt)
        return out

    def _read(self, i, views):
        nbytes = 0
        for n, arr in views.items():
            self.store.read(i, n, out=arr)
            nbytes += arr.nbytes
        return nbytes

    def host_bytes(self):
        """Pinned host bytes held (cache + staging)."""
        return (0 if self._cache_block is None else self._cache_block.nbytes) + sum(b.nbytes for b in self.staging)

    def _reader(self, shards, ready, free, stop):
        try:
            for i in shards:
                if stop.is_set():
                    return
                if i in self._cache_off:
                    nbytes = 0
                    if i not in self._cache_filled:
                        nbytes = self._read(i, self._host_views(i, self._cache_block, self._cache_off[i]))
                        self._cache_filled.add(i)
                    ready.put((i, None, nbytes, None))
                    continue
                b = None
                while b is None:
                    if stop.is_set():
                        return
                    try:
                        b = free.get(timeout=0.05)
                    except queue.Empty:
                        pass
                views = self._host_views(i, self.staging[b], 0)
                ready.put((i, views, self._read(i, views), b))
        except BaseException as exc:  # the consumer re-raises it in its own thread
            ready.put(exc)

    # ------------------------------------------------------------------ the stream
    def _joins(self, unit, j):
        """Whether streamed shard ``j`` can travel in the same copy as ``unit``: it follows the
        unit's last shard in the pinned host cache and the whole range fits one slot."""
        last = unit[-1]
        if j not in self._cache_off or last not in self._cache_off:
            return False
        if self._cache_off[j] != self._cache_off[last] + self.region[last]:
            return False
        return self._cache_off[j] + self.region[j] - self._cache_off[unit[0]] <= self.plan.buffer_bytes

    def stream(self, shards, stats=None):
        """Yield ``DeviceArrays`` for each shard in schedule order, its copy enqueued before it.

        Consecutive streamed shards that lie next to each other in the pinned host cache and fit
        one slot together travel as a single copy (one range, one stream, one event pair). The
        consumer enqueues a shard's kernels before asking for the next one; after the last shard
        of a unit the slot's "free" event is recorded. ``stats`` (dict) accumulates ``bytes_h2d``,
        ``bytes_read``, ``time_read`` (seconds the host waited for the store), ``copied``
        (shards) and ``copies`` (copy units).
        """
        stats = {} if stats is None else stats
        for k in ("bytes_h2d", "bytes_read", "time_read", "copied", "copies"):
            stats.setdefault(k, 0)
        units = self.residency.units(shards, self._joins)
        to_read = [s.shard for unit in units for s in unit if s.copy]
        ready, free = queue.Queue(), queue.Queue()
        for b in range(len(self.staging)):
            free.put(b)
        stop = threading.Event()
        thread = None
        if to_read and all(i in self._cache_filled for i in to_read):
            # every shard is in the pinned host cache: hand them over without a thread hop
            for i in to_read:
                ready.put((i, None, 0, None))
        elif to_read:
            thread = threading.Thread(target=self._reader, args=(to_read, ready, free, stop),
                                      name="grstream-cuda-readahead", daemon=True)
            thread.start()
        pending = deque()  # (staging buffer, token of the copy out of it)
        try:
            for unit in units:
                first = unit[0]
                if first.resident:
                    mem, slot_key = int(self.resident_mem[first.shard]), None
                else:
                    mem, slot_key = int(self.slots[first.slot]), first.slot
                # device base of each shard: a unit's shards keep their host-cache spacing
                base = {s.shard: mem + (self._cache_off[s.shard] - self._cache_off[first.shard]
                                        if len(unit) > 1 else 0) for s in unit}
                if first.copy:
                    got = []
                    for s in unit:
                        t0 = time.perf_counter()
                        j, views, nbytes, b = self._next_ready(ready, free, pending)
                        stats["time_read"] += time.perf_counter() - t0
                        assert j == s.shard, (j, s.shard)
                        stats["bytes_read"] += nbytes
                        self.bytes_read += nbytes
                        got.append((j, views, b))
                    self.ex.begin_copy(slot_key)
                    if len(unit) > 1:
                        lo = self._cache_off[first.shard]
                        last = unit[-1].shard
                        hi = self._cache_off[last] + self.offsets[last][self.names[-1]] + \
                            self.lengths[last][self.names[-1]] * self.dtypes[self.names[-1]].itemsize
                        self.ex.copy_array(self._cache_block[lo:hi], mem)
                        stats["bytes_h2d"] += hi - lo
                    else:
                        j, views, b = got[0]
                        if views is None:
                            views = self._host_views(j, self._cache_block, self._cache_off[j])
                        for n in self.names:
                            if views[n].nbytes:
                                self.ex.copy_array(views[n], base[j] + self.offsets[j][n])
                                stats["bytes_h2d"] += views[n].nbytes
                    token = self.ex.end_copy()
                    stats["copied"] += len(unit)
                    stats["copies"] += 1
                    pending.extend((b, token) for _, _, b in got if b is not None)
                self.ex.begin_kernels()
                for s in unit:
                    i = s.shard
                    yield DeviceArrays(i, {n: base[i] + self.offsets[i][n] for n in self.names},
                                       self.lengths[i])
                self.ex.shard_done(slot_key)
        finally:
            stop.set()
            if thread is not None:
                thread.join()
            while pending:
                b, token = pending.popleft()
                self.ex.wait(token)

    @contextmanager
    def streaming(self, shards, stats=None):
        """:meth:`stream` as a context: the generator is closed when the block exits, also when a
        launch in it raised, so the read-ahead thread has ended and every copy out of a staging
        buffer has finished before the caller frees device memory (a plain ``for`` leaves the
        suspended generator to the traceback, which keeps it alive).
        """
        gen = self.stream(shards, stats)
        try:
            yield gen
        finally:
            gen.close()

    def _next_ready(self, ready, free, pending):
        while True:
            # staging buffers whose copy finished go back to the reader
            while pending and self.ex.done(pending[0][1]):
                free.put(pending.popleft()[0])
            try:
                item = ready.get(timeout=0.002 if pending else 0.5)
            except queue.Empty:
                if pending:  # the reader may be starved of buffers: wait for the oldest copy
                    b, token = pending.popleft()
                    self.ex.wait(token)
                    free.put(b)
                continue
            if isinstance(item, BaseException):
                raise item
            return item

    def resident_arrays(self, i):
        """``DeviceArrays`` of resident shard ``i`` (valid once it has been copied)."""
        mem = self.resident_mem[i]
        return DeviceArrays(i, {n: int(mem) + self.offsets[i][n] for n in self.names}, self.lengths[i])

    def close(self):
        for m in list(self.resident_mem.values()) + self.slots:
            self.ex.device_free(m)
        self.resident_mem, self.slots = {}, []


class CudaExecutor:
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
        self._slot_free = {}          # slot -> event recorded after the kernels that read it
        self._copy_events = []        # events the compute stream waits on before the next kernels
        self._used_streams = set()
        self.copy_spans = []          # (start event, end event) per array copy
        self.kernel_spans = []        # (start event, end event) per shard's kernels
        self._pool = []
        self._kernel_start = None

    def _event(self):
        return self._pool.pop() if self._pool else self.cuda.Event()

    # memory
    def pinned_empty(self, nbytes):
        return self.cuda.pagelocked_empty(int(nbytes), np.uint8)

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

    def end_copy(self):
        ends, self._prev_copy = [], []
        for s in sorted(self._used_streams):
            e = self._event()
            e.record(self.copy_streams[s])
            self.compute.wait_for_event(e)
            ends.append(e)
            self._prev_copy.append((s, e))
        self._kernel_start = self._event()
        self._kernel_start.record(self.compute)
        return ends

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

    def reset(self):
        """Forget the spans recorded so far (after a sync), e.g. those of ``start``."""
        for s, e in self.copy_spans + self.kernel_spans:
            self._pool += [s, e]
        self.copy_spans, self.kernel_spans = [], []
        self._slot_free = {}
        self._prev_copy = []

    def timeline(self, origin):
        """(copy busy s, kernel busy s, overlap s) of the spans since the last call; resets them.

        Needs every span finished (call :meth:`sync` first). ``origin`` is an event recorded
        before any of them.
        """
        def spans(pairs):
            return [(s.time_since(origin) / 1e3, e.time_since(origin) / 1e3) for s, e in pairs]
        copies, kernels = spans(self.copy_spans), spans(self.kernel_spans)
        self.reset()
        return busy_overlap(copies, kernels)


def _union(intervals):
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def busy_overlap(copies, kernels):
    """(busy time of the copies, of the kernels, time both were busy) from (start, end) spans."""
    cu, ku = _union(copies), _union(kernels)
    overlap = 0.0
    for a, b in cu:
        for c, d in ku:
            lo, hi = max(a, c), min(b, d)
            if hi > lo:
                overlap += hi - lo
    return (sum(b - a for a, b in cu), sum(b - a for a, b in ku), overlap)
