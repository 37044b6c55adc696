"""Data movement of the GPU executor: each unit of the engine's plan delivered on the device.

The plan says what moves (grstream/engine/plan.py): a "resident" unit is already on the device, a
"load" unit is read from the store once into its resident place, a "copy" unit is copied into
streaming slot ``unit.slot`` from the pinned host cache (``source == "pinned"``; filled from the
store the first time) or from the store through a pinned staging buffer. Store reads run on the
engine's one read-ahead loop (grstream/readahead.py) into pinned memory, ``read_threads`` units'
reads in flight at once (each array one large sequential read at its file offset); a staging buffer
returns to its pool once the copy out of it has finished on the GPU. A unit's arrays are sprayed
over the copy streams and joined by events before its kernels; a slot is refilled only after the
kernels of the unit that held it finished (the copy streams wait on that event on the GPU, never
the host). Views and device addresses of the pinned buffers' shards are made once.

All CUDA calls go through ``streams`` (:class:`.streams.Streams`; tests use a synchronous stand-in
with the same methods), so this module runs without a GPU. Every allocation is taken from the
executor's :class:`~grstream.engine.memory.Ledger` under the memory model's names.
"""
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...engine.contract import ID_NAMES, dataset_dtype, id_parts, residency_key
from ...errors import DeviceError, InternalError
from ...readahead import BufferPool, PoolClosed, map_ahead, read_ahead
from .compact import packed_edges

#: key prefix of the resident allocations a session's CUDA executors share (``shared`` dict)
SHARED = "cuda-resident"
#: transfers of streamed shards (grstream/engine/plan.py): read from the pinned cache or the store
STREAMED = ("copy", "compact", "zerocopy")
#: units whose store reads run at once (threads): a store or page cache serves several large
#: reads faster than one, and the copies of earlier units run meanwhile
READ_THREADS = 4


class DeviceArrays(dict):
    """name -> device address of one shard's arrays, plus their lengths (elements) and its edge
    counts per direction (``edges``: "in", "out")."""

    def __init__(self, shard, addresses, lengths, edges=None):
        super().__init__(addresses)
        self.shard = shard
        self.lengths = lengths
        self.edges = edges if edges is not None else {d: lengths[n] for d, n in ID_NAMES.items() if n in lengths}

    def ids(self, name):
        """The kernel argument of id dataset ``name`` ("in/src", "out/dst"): its address, or a
        compressed store's four part addresses (blockids.IdsArg)."""
        if name in self:
            return self[name]
        return tuple(self[p] for p in id_parts(name))


class Mover:
    """Delivers the units of a plan on the device (see the module docstring).

    Parameters
    ----------
    store : ShardStore
    memory : MemoryModel
        Names, regions and their layout, resident shards, slots, pinned cache and staging.
    streams : Streams or a stand-in with the same methods
    ledger : Ledger
        Takes every device and pinned allocation.
    shared : dict
        The session's shared dict: resident shard data, keyed by
        :func:`~grstream.engine.memory.residency_key`, usable by every executor of the session.
    push_names : list of str
        The datasets a push unit reads (:func:`grstream.engine.schedule.push_arrays`): a streamed
        push unit copies only these into its slot (a push of a BFS moves the out-edges' CSR, not
        the in-edges' CSC); the slot keeps the region's layout, so the budget is the same.
    mapped : bool
        Register the pinned cache mapped, so that "zerocopy" units can be read in place
        (:mod:`.zerocopy`); the streams' ``pinned_cache(nbytes, mapped)`` makes the cache
        (:class:`.pinnedcache.PinnedCache`).
    packer : :class:`.compact.Packer` or None
        Packs "compact" units into staging buffers (None: the mover takes no compact unit).
    read_threads : int
        Units whose store reads run at once (:func:`grstream.readahead.map_ahead`).
    """

    def __init__(self, store, memory, streams, ledger, shared, push_names=(), mapped=False, packer=None,
                 read_threads=READ_THREADS):
        self.store, self.memory, self.ex, self.ledger, self.shared = store, memory, streams, ledger, shared
        self.names = list(memory.names)
        push = [n for n in push_names if n in self.names]
        # pushes that read every array (CC walks both directions) copy like pulls (one range)
        self.push_names = push if push and set(push) != set(self.names) else self.names
        self.dtypes = {n: dataset_dtype(store, n) for n in self.names}
        self._owned = []            # (kind, name, nbytes, allocation) this mover took
        self.slots = [self._take("device", f"slot {k}", memory.slot_bytes, streams.device_alloc)
                      for k in range(memory.slots)]
        self.slot_layout = {}   # slot -> {shard: its offset in the slot} of the last copy into it
        self.packer = packer
        self.read_threads = max(int(read_threads), 1)
        self._workers = None   # the store reads' thread pool, set up once (the first plan that reads)
        self._reading = None   # the buffer pool of the last plan delivered (closed: its reads stop)
        self.staging = [self._take("pinned", f"staging {k}", memory.staging_bytes, streams.pinned_empty)
                        for k in range(memory.staging)]
        cache = int(memory.pinned_cache_bytes)
        # registered with the device on a thread (.pinnedcache; made last, so that nothing after
        # it fails and leaves it registering): a range is made ready before the device reads it;
        # mapped, its device address is where zero-copy units read it in place
        self.pinned = None
        if cache:
            self.ledger.take("pinned", "pinned cache", cache)
            self.pinned = streams.pinned_cache(cache, mapped)
        self.cache = self.pinned.array if cache else None
        self.cache_dev = self.pinned.device_address if mapped and cache else None
        self.cache_filled = set()
        self.bytes_read = 0
        self._key_cache, self._made = {}, {}   # (_views, mapped_arrays: made once)
        self._resident, self._ahead = {}, None   # resident_arrays; (shards, slot, data, bytes) ahead

    def _take(self, kind, name, nbytes, alloc):
        self.ledger.take(kind, name, int(nbytes))
        mem = alloc(max(int(nbytes), 1))
        self._owned.append((kind, name, int(nbytes), mem))
        return mem

    # ------------------------------------------------------------------ where shards live
    def _keys(self, i):
        keys = self._key_cache.get(i)
        if keys is None:
            keys = self._key_cache[i] = [residency_key(self.memory, i, n) for n in self.names]
        return keys

    def resident_arrays(self, i):
        """``DeviceArrays`` of resident shard ``i`` (valid once loaded, by any executor of the
        session); made once: a resident shard stays where it is until the session's executors
        close (movement.release_shared), so every plan reuses them (host time per iteration)."""
        arrays = self._resident.get(i)
        if arrays is None:
            addrs = {n: self.shared[(SHARED, k)] for n, k in zip(self.names, self._keys(i))}
            arrays = self._resident[i] = DeviceArrays(i, addrs, self.memory.lengths[i], self._edges(i))
        return arrays

    def _region_for_load(self, i):
        """Allocate shard ``i``'s resident region and publish its arrays' addresses to the session."""
        nbytes = self.memory.regions[i]
        self.ledger.take("device", f"resident {i}", nbytes)
        mem = self.ex.device_alloc(max(nbytes, 1))
        self.shared[(SHARED, "alloc", self._keys(i)[0])] = mem
        base = int(mem)
        for n, k in zip(self.names, self._keys(i)):
            self.shared[(SHARED, k)] = base + self.memory.offsets[i][n]
        return base

    def _views(self, i, block, base):
        """Shard ``i``'s arrays in ``block`` (the pinned cache, a staging buffer) from ``base``:
        made once per place (those buffers stay until :meth:`close`; host time per unit)."""
        hit = self._made.get((i, base, id(block)))
        if hit is None or hit[0] is not block:
            hit = self._made[i, base, id(block)] = (block, {})
            for n in self.names:
                off, dt = base + self.memory.offsets[i][n], self.dtypes[n]
                hit[1][n] = block[off:off + self.memory.lengths[i][n] * dt.itemsize].view(dt)
        return hit[1]

    def _read(self, i, views, pool=None):
        """Read shard ``i``'s datasets into ``views``; once ``pool`` is closed (the consumer
        stopped) the next dataset is not read: :class:`PoolClosed`."""
        nbytes = 0
        for n, arr in views.items():
            if pool is not None and pool.closed:
                raise PoolClosed()
            self.store.read(i, n, out=arr)
            nbytes += arr.nbytes
        return nbytes

    def host_bytes(self):
        """Pinned host bytes held (cache + staging)."""
        return (0 if self.cache is None else self.cache.nbytes) + sum(b.nbytes for b in self.staging)

    # ------------------------------------------------------------------ the read-ahead side
    def _needs_store(self, u):
        if u.transfer == "load":
            return True
        return u.transfer in STREAMED and any(i not in self.memory.pinned_offsets or i not in self.cache_filled
                                            for i in u.shards)

    def _produce(self, units, pool):
        """Runs on the read-ahead thread: the host side of each unit, in plan order. The reads of
        up to ``read_threads`` units run at once (:meth:`_reads`); packing follows in order. A
        plan that reads nothing from the store (resident, held, cached units) starts no thread:
        its units are handed over on the caller's thread. The reads' thread pool is the mover's,
        set up by the first plan that reads and shut down by :meth:`close` (none per plan)."""
        threads = self.read_threads if any(self._needs_store(u) for u in units) else 1
        if threads > 1 and self._workers is None:
            self._workers = ThreadPoolExecutor(threads, thread_name_prefix="grstream-read")
        fill = (lambda job: self._fill(job, pool))
        for u, reads in map_ahead(fill, self._reads(units, pool), threads, pool, self._workers):
            if u.transfer == "compact":   # a cached shard is packed into a staging buffer
                for k, (i, views, nbytes, b) in enumerate(reads):
                    if b is None:
                        b = pool.acquire()
                        reads[k] = (i, self.packer.pack(i, views, self.staging[b]), nbytes, b)
            yield u, reads

    def _reads(self, units, pool):
        """Each unit with its reads to make: (shard, views, read from the store?, staging buffer)
        -- buffers taken in plan order; a cached shard is filled by the first unit of the plan
        that reads it and marked filled once that read finished (:meth:`_fill`: a read cancelled
        or stopped by an early close leaves it to be read again)."""
        offs = self.memory.pinned_offsets
        issued = set()
        for u in units:
            reads = []
            if u.transfer not in ("resident", "held"):
                for i in u.shards:
                    if u.transfer in STREAMED and i in offs:
                        fill = i not in self.cache_filled and i not in issued
                        issued.add(i)
                        reads.append((i, self._views(i, self.cache, offs[i]), fill, None))
                    else:
                        b = pool.acquire()
                        views = self._views(i, self.staging[b], 0)
                        if u.direction == "push" and u.transfer == "copy":   # read what moves
                            views = {n: views[n] for n in self.push_names}
                        reads.append((i, views, True, b))
            yield u, reads

    def _fill(self, job, pool=None):
        """Run one unit's store reads (a read-ahead thread): (unit, [(shard, views, bytes read,
        staging buffer)]); a cached shard is marked filled once read whole."""
        u, reads = job
        out = []
        for i, views, fill, b in reads:
            nbytes = self._read(i, views, pool) if fill else 0
            if fill and b is None:
                self.cache_filled.add(i)
            out.append((i, views, nbytes, b))
        return u, out

    # ------------------------------------------------------------------ the device side
    def deliver(self, plan, stats):
        """Yield ``(unit, [DeviceArrays per shard])`` for ``plan.units`` in order, each unit's copy
        enqueued before it is yielded. ``stats`` (dict) accumulates ``bytes_h2d``, ``bytes_read``,
        ``time_read`` (seconds waited for the store), ``copied`` (shards) and ``copies`` (units).

        Closing the generator early (a failed launch) stops the read-ahead thread and waits for
        every copy out of a staging buffer before returning.
        """
        for k in ("bytes_h2d", "bytes_read", "time_read", "copied", "copies"):
            stats.setdefault(k, 0)
        modes = stats.setdefault("modes", {})      # transfer -> bytes over the link
        spans = stats.setdefault("copy_spans", [])  # (transfer, first, end) copy spans of each unit
        units = list(plan.units)
        pool = self._reading = BufferPool(len(self.staging))
        produced = self._produce(units, pool)
        # store reads and packing run on the read-ahead thread, overlapped with the copies
        items = read_ahead(produced, depth=max(len(self.staging), 2), pool=pool) \
            if any(self._needs_store(u) or u.transfer == "compact" for u in units) else produced
        pending = deque()   # (staging buffer, token of the copy out of it)
        try:
            for k, u in enumerate(units):
                staged = self._needs_store(u) or u.transfer == "compact"
                self._reclaim(pending, pool, starved=staged and pool.free == 0)
                t0 = time.perf_counter()
                unit, reads = next(items)
                stats["time_read"] += time.perf_counter() - t0
                assert unit == u, (unit, u)
                for _, _, nbytes, _ in reads:
                    stats["bytes_read"] += nbytes
                    self.bytes_read += nbytes
                if self._ahead is not None and u.slot == self._ahead[1] and not u.early:
                    self._join_ahead(stats, used=False)   # (a "held" unit reads what it copied)
                if u.transfer == "resident":
                    data = [self.resident_arrays(i) for i in u.shards]
                elif u.transfer == "held":
                    data = [self.slot_arrays(i, u.slot) for i in u.shards]
                elif u.transfer == "zerocopy":
                    for i in u.shards:   # its kernels read the cache in place: registered first
                        self._cache_ready(i)
                    data = [self.mapped_arrays(i) for i in u.shards]
                    modes["zerocopy"] = modes.get("zerocopy", 0) + u.nbytes   # the plan's estimate
                elif u.early and self._ahead is not None and u.slot == self._ahead[1] and \
                        u.shards == self._ahead[0]:
                    data = self._join_ahead(stats)   # its copy ran ahead, after the last plan's units
                else:
                    first = len(getattr(self.ex, "copy_spans", ()))
                    h2d = stats["bytes_h2d"]
                    data = self._copy(u, reads, stats, pending)
                    if u.transfer != "load":
                        modes[u.transfer] = modes.get(u.transfer, 0) + stats["bytes_h2d"] - h2d
                        spans.append((u.transfer, first, len(getattr(self.ex, "copy_spans", ()))))
                self.ex.begin_kernels()
                yield u, data
            if self._ahead is not None:   # a copy ahead no unit found: its bytes crossed the link
                self._join_ahead(stats, used=False)
            if plan.ahead is not None:
                self.copy_ahead(plan.ahead)
        finally:
            if items is not produced:
                items.close()
            while pending:
                self.ex.wait(pending.popleft()[1])

    def copy_ahead(self, u):
        """Start the next plan's copy ``u`` now (``IterationPlan.ahead``) from the pinned cache, once
        the slot's last kernels finished; the compute stream waits for it in the next plan."""
        offs = self.memory.pinned_offsets
        if any(i not in offs or i not in self.cache_filled for i in u.shards):
            raise InternalError(f"plan error: the copy ahead of shards {u.shards} needs them in the "
                                f"pinned cache")
        reads = [(i, self._views(i, self.cache, offs[i]), 0, None) for i in u.shards]
        stats = {"bytes_h2d": 0, "copied": 0, "copies": 0}
        data = self._copy(u, reads, stats, deque(), ahead=True)
        self._ahead = (u.shards, u.slot, data, stats["bytes_h2d"])

    def _join_ahead(self, stats, used=True):
        """The compute stream waits for the copy started ahead; its bytes count in this plan,
        its shards and time too where its "early" unit ``used`` it. Returns its DeviceArrays."""
        shards, _, data, nbytes = self._ahead
        self._ahead = None
        at = self.ex.join_ahead()
        stats["bytes_h2d"] += nbytes
        if not used:
            return data
        modes = stats.setdefault("modes", {})
        modes["copy"] = modes.get("copy", 0) + nbytes
        stats["copied"] += len(shards)
        stats["copies"] += 1
        if at is not None:
            stats.setdefault("copy_spans", []).append(("copy", at[0], at[1]))
        return data

    def _reclaim(self, pending, pool, starved):
        """Staging buffers whose copy finished go back to the pool; when the producer may be
        waiting for one (none free), wait for the oldest copy."""
        while pending and (self.ex.done(pending[0][1]) or starved):
            b, token = pending.popleft()
            self.ex.wait(token)
            pool.release(b)
            starved = False

    def _copy(self, u, reads, stats, pending, ahead=False):
        mem = self.memory
        if u.transfer == "load":
            (i, views, _, b), = reads
            bases = {i: self._region_for_load(i)}
            slot = None
        else:
            slot = u.slot
            base = int(self.slots[slot])
            first = u.shards[0]
            offs = mem.pinned_offsets
            # a multi-shard unit is one range of the pinned cache: shards keep its spacing
            bases = {i: base + (offs[i] - offs[first] if len(u.shards) > 1 else 0) for i in u.shards}
            # what the slot holds now, for "held" units of later plans (a packed shard: nothing)
            self.slot_layout[slot] = {i: b - base for i, b in bases.items()} if u.transfer == "copy" else {}
        self.ex.begin_copy(slot)
        names = self.push_names if (u.direction == "push" and u.transfer == "copy") else self.names
        if len(u.shards) > 1 and names is self.names:
            offs = mem.pinned_offsets
            lo = offs[u.shards[0]]
            last = u.shards[-1]
            hi = offs[last] + mem.regions[last]
            self._put(self.cache[lo:hi], bases[u.shards[0]])
            stats["bytes_h2d"] += hi - lo
        else:
            for i, views, _, _ in reads:
                for n in names:
                    if views[n].nbytes:
                        self._put(views[n], bases[i] + mem.offsets[i][n])
                        stats["bytes_h2d"] += views[n].nbytes
        token = self.ex.end_ahead() if ahead else self.ex.end_copy()
        stats["copied"] += len(u.shards)
        stats["copies"] += 1
        pending.extend((b, token) for _, _, _, b in reads if b is not None)
        # a compacted shard's edge arrays are shorter: its lengths (and edges) are those of what was packed
        if u.transfer == "compact":
            packed = {i: views for i, views, _, _ in reads}
            return [DeviceArrays(i, {n: bases[i] + mem.offsets[i][n] for n in self.names},
                                 {n: packed[i][n].size for n in self.names}, packed_edges(packed[i]))
                    for i in u.shards]
        return [DeviceArrays(i, {n: bases[i] + mem.offsets[i][n] for n in self.names}, mem.lengths[i],
                             self._edges(i)) for i in u.shards]

    def _put(self, host, dev_addr):
        """Copy ``host`` (staging or pinned cache bytes) to ``dev_addr``: a range of the cache is
        registered first and copied one registered segment at a time."""
        at = None if self.pinned is None else self.pinned.offset(host)
        if at is None:
            self.ex.copy_array(host, dev_addr)
            return
        raw = host.view(np.uint8)
        self.pinned.ready(at, at + raw.nbytes)
        for lo, hi in self.pinned.pieces(at, at + raw.nbytes):
            self.ex.copy_array(raw[lo - at:hi - at], dev_addr + lo - at)

    def _cache_ready(self, i):
        lo = self.memory.pinned_offsets[i]
        self.pinned.ready(lo, lo + self.memory.regions[i])

    def slot_arrays(self, i, slot):
        """``DeviceArrays`` of shard ``i`` where a copy of an earlier plan left it in ``slot``
        (``slot_layout``: each copied shard's offset in its slot)."""
        at = self.slot_layout.get(slot, {}).get(i)
        if at is None:
            raise InternalError(f"plan error: shard {i} is not in streaming slot {slot} (a \"held\" "
                                f"unit needs the copy that put it there)")
        base = int(self.slots[slot]) + at
        return DeviceArrays(i, {n: base + self.memory.offsets[i][n] for n in self.names}, self.memory.lengths[i],
                            self._edges(i))

    def mapped_arrays(self, i):
        """``DeviceArrays`` of cached shard ``i`` read in place through the mapped cache (made once)."""
        if ("mapped", i) not in self._made:
            base = self.cache_dev + self.memory.pinned_offsets[i]
            self._made["mapped", i] = DeviceArrays(i, {n: base + self.memory.offsets[i][n] for n in self.names},
                                                   self.memory.lengths[i], self._edges(i))
        return self._made["mapped", i]

    def _edges(self, i):
        """Shard ``i``'s edges per direction (a compressed store's id arrays are not edge long)."""
        return {d: self.memory.edge_count(i, d) for d in ID_NAMES}

    def close(self):
        """Free what this mover took (resident data stays in the session's ``shared``).

        Reads of a plan still delivering are discarded: those not started are cancelled, running
        ones stop at their next dataset (the plan's buffer pool is closed), and the pinned memory
        is given back only after they stopped."""
        if self._reading is not None:
            self._reading.close()
            self._reading = None
        if self._workers is not None:
            self._workers.shutdown(wait=True, cancel_futures=True)
            self._workers = None
        for kind, name, nbytes, mem in self._owned:
            if kind == "device":
                self.ex.device_free(mem)
            self.ledger.give(kind, name, nbytes)
        if self.pinned is not None:   # unregistered and unmapped on a thread (.pinnedcache)
            self.pinned.close()
            self.ledger.give("pinned", "pinned cache", self.pinned.nbytes)
            self.pinned = None
        self._owned, self.slots, self.staging, self.cache, self._made = [], [], [], None, {}


def release_shared(shared, free):
    """Free the resident allocations CUDA executors put in a session's ``shared`` dict."""
    for key in [k for k in shared if isinstance(k, tuple) and k and k[0] == SHARED]:
        value = shared.pop(key)
        if key[1] == "alloc":
            free(value)
