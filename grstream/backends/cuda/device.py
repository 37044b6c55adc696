"""The GPU executor's device state: context, compiled module, static buffers, readback block.

Everything here is allocated once per executor, through the executor's ledger under the names of
:func:`.buffers.static_buffers` (the memory model's ``static`` and ``scratch``); kernels are
launched through their typed argument lists (:mod:`.kernelargs`).
"""
import numpy as np

from ...errors import DeviceError, InternalError, UsageError
from .buffers import bitmap_ids, bitmap_words, push_degree_words
from .codegen import CHANGED_GLOBAL
from .compile import load_module
from .kernelargs import PreparedKernel
from .skeletons import AGG_BLOCKS, BLOCK
from .streams import Streams

#: readback words: changed vertices, gathered edges, edges a push from the changed set walks; then
#: aggregates, the active vertices per shard, the changed vertices per shard
_COUNTERS = 3
_CONTEXT = []   # [context, users] of the primary context this module pushed
_ORDINAL = [0]  # the device this process runs on (use_device)


def use_device(ordinal):
    """Run this process's executors on device ``ordinal`` (an MPI rank's GPU: its node-local
    rank); before the first :func:`ensure_context`, which then retains that device's primary
    context (the one the CUDA runtime, hence CuPy and NCCL, use on it too)."""
    if _CONTEXT and _ORDINAL[0] != int(ordinal):
        raise InternalError(f"device {_ORDINAL[0]} is already in use by this process")
    _ORDINAL[0] = int(ordinal)


def device_ordinal():
    """The device :func:`ensure_context` makes current."""
    return _ORDINAL[0]


def ensure_context():
    """Make the process's device's primary context current (once per process; device 0 unless
    :func:`use_device` chose another); returns pycuda.driver."""
    from . import require
    require()
    import pycuda.driver as cuda
    cuda.init()
    if _CONTEXT:
        _CONTEXT[1] += 1
    elif cuda.Context.get_current() is None:
        ctx = cuda.Device(_ORDINAL[0]).retain_primary_context()
        ctx.push()
        _CONTEXT[:] = [ctx, 1]
    return cuda


def release_context():
    """Undo one :func:`ensure_context`; the last user pops the context it pushed."""
    if _CONTEXT:
        _CONTEXT[1] -= 1
        if _CONTEXT[1] == 0:
            import pycuda.driver as cuda
            cuda.Context.pop()
            _CONTEXT.clear()


def resident_blocks(regs, sms, regs_per_sm=65536, threads_per_sm=2048, blocks_per_sm=32, block=BLOCK):
    """Blocks of ``block`` threads of a kernel using ``regs`` registers a thread that ``sms``
    multiprocessors hold at once (registers are given to warps in units of 256: 8 a thread)."""
    warp_regs = -(-max(int(regs), 1) // 8) * 256
    per_sm = min(int(regs_per_sm) // warp_regs // (block // 32), int(threads_per_sm) // block, blocks_per_sm)
    return max(1, per_sm) * max(1, int(sms))


#: CU_STREAM_NON_BLOCKING (cuStreamCreate's flags)
STREAM_NON_BLOCKING = 1


class DeviceState:
    """Static device state of one executor (GraphReduce Eq. 1) and the kernels that use it.

    Parameters
    ----------
    store, spec : the store and the program spec
    ks : KernelSource
    buffers : dict
        name -> bytes of every static and scratch buffer (:func:`.buffers.static_buffers`).
    scratch : set of str
        Names among ``buffers`` the ledger counts as scratch.
    ledger : Ledger
    streams : int
        Copy streams.
    """

    def __init__(self, store, spec, ks, buffers, scratch, ledger, streams):
        self.cuda = ensure_context()
        self._mem = []
        self.ledger, self.buffers = ledger, dict(buffers)
        try:
            self._setup(store, spec, ks, scratch, streams)
        except BaseException:
            self.close()
            raise

    def _setup(self, store, spec, ks, scratch, streams):
        cuda = self.cuda
        self.device = cuda.Context.get_device()
        self.spec, self.ks, self.translated = spec, ks, ks.translated
        self.store = store
        n = self.n = int(store.num_vertices)
        self.S = int(store.num_shards)
        self.intervals = np.asarray(store.intervals, dtype=np.int64)
        mod = load_module(ks, self.device)
        # each kernel prepared from, and launched through, its typed argument list
        self.fn = {phase: PreparedKernel(mod.get_function(kname), ks.args[phase])
                   for phase, kname in ks.kernels.items()}
        self.g_ptr, g_size = mod.get_global("g")
        # gather_from "changed": where the gathers find the previous iteration's changed set
        self.changed_at = mod.get_global(CHANGED_GLOBAL)[0] if spec.gather_from == "changed" else None
        if g_size != self.translated.args_dtype.itemsize:
            raise InternalError(f"GasArgs layout mismatch: device {g_size} B, host "
                                f"{self.translated.args_dtype.itemsize} B")
        self.ex = Streams(streams)
        # the initial state's upload (load_state); non-blocking: an implicit synchronisation with
        # the legacy default stream (a synchronous copy elsewhere) must not wait for it
        self.upload_stream = self.cuda.Stream(flags=STREAM_NON_BLOCKING)
        self.state_ready = None
        self.mem = {name: self._alloc(name, nbytes, "scratch" if name in scratch else "device")
                    for name, nbytes in self.buffers.items()}
        get = self.mem.get
        self.cur = {f: get(f"cur {f}") for f in spec.vertex_fields}
        self.nxt = {f: get(f"nxt {f}") for f in spec.vertex_fields}
        self.deg = {d: get(d) for d in ("in_degree", "out_degree") if d in self.mem}
        self.front = [get("frontier 0"), get("frontier 1")]
        self.acc, self.changed, self.hmsg = get("accumulator"), get("changed flags"), get("hoisted messages")
        self.estate = dict(spec.edge_state)
        self.ecur = {p: get(f"edge state {p}") for p in self.estate}
        self.enxt = {p: get(f"edge state {p} (next)") for p in self.estate}
        self.escratch = {p: self.mem[k] for p in self.estate for k in [f"edge state {p} (CSC)"] if k in self.mem}
        self.m_edges = int(store.num_edges)
        cuda.memcpy_htod(self.mem["intervals"], self.intervals)
        for d, mem in self.deg.items():
            cuda.memcpy_htod(mem, np.ascontiguousarray(getattr(store, d)(), dtype=np.int64))
        self.agg_names = list(ks.aggregates)
        self.counts_word = _COUNTERS + len(self.agg_names)
        self.rb_dev = self.mem["readback block"]
        self._rb_done = None   # the event a read back with work queued behind it waits for
        # small host buffers stay pageable: the memory model bounds pinned memory to the cache
        # and the staging buffers, and these copies are a few hundred bytes
        self.rb_host = np.zeros(self.counts_word + 2 * max(self.S, 1), np.uint64)
        # push plans: absent (None) when the kernels cannot push this program
        self.pacc, self.touched = get("push accumulator"), get("touched")
        self.chg = [get("changed 0"), get("changed 1")]
        self.pdeg, self.cq = get("push degree"), get("changed queue")
        self.cursors, self.hubs = get("push cursors"), get("hub rows")
        # edges a push walks per vertex (its walk directions' degrees), built once: uploaded for
        # the apply kernels' edge counts, kept on the host for the seed's (pushes.py)
        self.push_degree = None
        if self.pdeg is not None:
            deg = np.zeros(n, np.int64)
            for d in ks.push_dirs:
                deg += np.asarray(store.out_degree() if d == "out" else store.in_degree(), dtype=np.int64)
            self.push_degree = deg
            cuda.memcpy_htod(self.pdeg, push_degree_words(deg))
        self.agg_partials = [self.mem[f"aggregate partials {k}"] for k in range(len(self.agg_names))]
        self.aggregates = {}
        self._resident = None   # blocks of apply_agg the device holds at once (apply_aggregates)

    def _alloc(self, name, nbytes, kind):
        cuda = self.cuda
        self.ledger.take(kind, name, nbytes)
        try:
            mem = cuda.mem_alloc(max(int(nbytes), 256))
        except cuda.MemoryError:
            self.ledger.give(kind, name, nbytes)
            free, total = cuda.mem_get_info()
            raise DeviceError(f"CUDA out of memory allocating {int(nbytes):,} B for {name} "
                              f"({free:,} of {total:,} B free); lower memory_budget") from None
        self._mem.append((kind, name, int(nbytes), mem))
        return mem

    # ------------------------------------------------------------------ launches
    def launch(self, phase, count, *args):
        """One thread per item of ``count``; arguments checked against the kernel's list."""
        if count <= 0:
            return
        self.fn[phase].launch((int((count + BLOCK - 1) // BLOCK), 1), (BLOCK, 1, 1), self.ex.compute, *args)

    def upload_args(self, program):
        """The program's parameters and the current array pointers into the ``g`` constant."""
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
        buf = np.frombuffer(self.translated.pack_args(program, pointers), np.uint8).copy()
        self.cuda.memcpy_htod_async(self.g_ptr, buf, self.ex.compute)
        return buf.nbytes

    def point_changed(self, bitmap):
        """A gather_from "changed" program's gathers read ``bitmap`` (a device address of n bits)
        as the previous iteration's changed set, from the next launch on (stream order)."""
        self._changed_ptr = np.array([int(bitmap)], dtype=np.uint64)   # (kept until it is read)
        self.cuda.memcpy_htod_async(self.changed_at, self._changed_ptr, self.ex.compute)

    def publish_interval(self, fields, lo, count):
        """``cur`` takes ``nxt`` for vertices ``lo .. lo + count - 1`` of ``fields``, in stream
        order (publish "copy": every vertex; "unit": one shard's interval after its apply)."""
        for f in fields:
            size = self.spec.vertex_fields[f].itemsize
            if count * size:
                self.cuda.memcpy_dtod_async(int(self.cur[f]) + lo * size, int(self.nxt[f]) + lo * size,
                                            count * size, self.ex.compute)

    def count_frontier(self, bitmap=None, which=0):
        """Set vertices per shard of a bitmap (default: the current frontier; ``which`` 1: the
        changed counts' place) by device popcounts, into the readback block."""
        counts = self.counts_addr(which)
        self.cuda.memset_d32_async(counts, 0, 2 * max(self.S, 1), self.ex.compute)
        self.launch("count", (self.n + 31) // 32, self.front[0] if bitmap is None else bitmap, self.n,
                    self.mem["intervals"], self.S, counts)

    def counts_addr(self, which=0):
        """Device address of the per-shard counts in the readback block: 0 active, 1 changed."""
        return int(self.rb_dev) + 8 * (self.counts_word + which * max(self.S, 1))

    def reduce_aggregates(self):
        """Every aggregate over the published state (``cur``) into the readback block."""
        if not self.agg_names:
            return
        blocks = max(1, min(AGG_BLOCKS, (self.n + BLOCK - 1) // BLOCK))
        parts = [int(p) for p in self.agg_partials]
        self.fn["aggregates"].launch((blocks, 1), (BLOCK, 1, 1), self.ex.compute, self.n, *parts)
        self._agg_final(blocks, parts)

    def apply_aggregates(self, lo, count, acc):
        """A dense apply of vertices ``lo .. lo + count - 1`` (accumulator address ``acc``) that
        takes every aggregate's terms from the state it writes as it goes (``apply_agg``), then
        their final pass: the aggregates :meth:`reduce_aggregates` would take from the published
        state, without a second pass over it. Its grid is the aggregates' pass's, at most what the
        device holds at once (the fused kernel takes more registers: one wave, no tail)."""
        if self._resident is None:
            fn, attr = self.fn["apply_agg"].function, self.cuda.device_attribute
            get = self.device.get_attribute
            self._resident = resident_blocks(
                fn.get_attribute(self.cuda.function_attribute.NUM_REGS), get(attr.MULTIPROCESSOR_COUNT),
                get(attr.MAX_REGISTERS_PER_MULTIPROCESSOR), get(attr.MAX_THREADS_PER_MULTIPROCESSOR))
        blocks = max(1, min(AGG_BLOCKS, (count + BLOCK - 1) // BLOCK, self._resident))
        parts = [int(p) for p in self.agg_partials]
        self.fn["apply_agg"].launch((blocks, 1), (BLOCK, 1, 1), self.ex.compute, lo, count, acc, self.rb_dev,
                                    *parts)
        self._agg_final(blocks, parts)

    def _agg_final(self, blocks, parts):
        """The aggregates' partials of ``blocks`` blocks combined into the readback block."""
        self.fn["aggfinal"].launch((1, 1), (BLOCK, 1, 1), self.ex.compute, blocks,
                                   int(self.rb_dev) + 8 * _COUNTERS, *parts)

    def clear_counters(self, everything=False):
        words = 2 * (self.rb_host.size if everything else _COUNTERS)
        self.cuda.memset_d32_async(self.rb_dev, 0, words, self.ex.compute)

    def readback(self, then=None):
        """The iteration's one device -> host copy (counters, aggregates, shard counts); waits for
        it. ``then()`` queues work for the next plan behind it, which the wait leaves running
        (every copy of the plan was joined into the compute stream before the read back)."""
        self.cuda.memcpy_dtoh_async(self.rb_host, self.rb_dev, self.ex.compute)
        if then is None:
            self.ex.settle()   # (not a copy started ahead for the next plan)
        else:
            if self._rb_done is None:
                self._rb_done = self.cuda.Event()
            self._rb_done.record(self.ex.compute)
            then()
            self._rb_done.synchronize()
        raw = self.rb_host.view(np.uint8)
        self.aggregates = {}
        for k, a in enumerate(self.agg_names):
            dt = self.ks.aggregates[a]
            off = 8 * (_COUNTERS + k)
            self.aggregates[a] = raw[off:off + dt.itemsize].view(dt)[0].item()
        return self.rb_host.nbytes

    def shard_counts(self, which=0):
        at = self.counts_word + which * max(self.S, 1)
        return self.rb_host[at:at + self.S].astype(np.int64)

    # ------------------------------------------------------------------ state in and out
    def load_state(self, state, edge_state, staged=None, span=None):
        """Upload the initial state; arrays of ``staged`` (page-locked, owned by the executor) go
        asynchronously at link speed on a stream of their own, others synchronously from
        pageable memory. Kernels that read the state must follow :meth:`wait_state`; the host
        arrays may change again after :meth:`wait_upload`. ``span`` ``(lo, hi)``: only those
        vertices' entries are uploaded (an MPI rank's; the others come from their owners)."""
        cuda, n = self.cuda, self.n
        lo, hi = (0, n) if span is None else span
        staged = staged or {}
        self.wait_upload()
        s = self.upload_stream
        for f, dt in self.spec.vertex_fields.items():
            host = np.ascontiguousarray(state[f], dtype=dt)
            if host.shape != (n,):
                raise UsageError(f"initial state of {f!r} has shape {host.shape}, expected ({n},)")
            if hi > lo:  # one upload; nxt takes it on the device
                part, at = host[lo:hi], int(self.cur[f]) + lo * host.itemsize
                if staged.get(f) is host:
                    cuda.memcpy_htod_async(at, part, s)
                else:
                    cuda.memcpy_htod(at, part)
                cuda.memcpy_dtod_async(self.nxt[f], self.cur[f], host.nbytes, s)
        self._load_edges(edge_state)

    def _load_edges(self, edge_state):
        """Upload the initial edge state (current and next) on the upload stream, and mark the
        end of the state's upload there."""
        cuda, s = self.cuda, self.upload_stream
        for p, dt in self.estate.items():
            host = np.ascontiguousarray(edge_state[p], dtype=dt)
            if self.m_edges:
                cuda.memcpy_htod(self.ecur[p], host)
                cuda.memcpy_dtod_async(self.enxt[p], self.ecur[p], host.nbytes, s)
        # the seeding pass (which reads no state) overlaps the upload; the compute stream waits
        # for it before the first kernel that may read the state (executor.begin)
        self.state_ready = cuda.Event()
        self.state_ready.record(s)

    def fill_state(self, initial, edge_state):
        """Make a declared initial state (engine/state.py ``ConstantState``) in ``cur`` and
        ``nxt``: every entry at its field's value, then the seed's entries, by kernels on the
        compute stream (no host array, no upload; after any earlier upload); edge state as
        :meth:`load_state`'s."""
        self.wait_state()
        n, seed = self.n, initial.seed
        for f, dt in self.spec.vertex_fields.items():
            size = dt.itemsize
            kernel, bits = f"constant{size}", np.dtype(f"u{size}")
            for mem in (self.cur[f], self.nxt[f]):
                self.launch(kernel, n, mem, n, int(np.asarray(initial.values[f], dt).view(bits)))
                for i, x in zip(() if seed is None else seed, initial.seed_values.get(f, ())):
                    self.launch(kernel, 1, int(mem) + int(i) * size, 1, int(np.asarray(x, dt).view(bits)))
        self._load_edges(edge_state)

    def wait_state(self):
        """Order the compute stream after the state upload (once per upload)."""
        if self.state_ready is not None:
            self.ex.compute.wait_for_event(self.state_ready)
            self.state_ready = None

    def wait_upload(self):
        """Wait on the host until the last state upload finished reading its host arrays."""
        self.upload_stream.synchronize()

    def _download(self, arrays, dtypes, length):
        self.wait_state()
        self.ex.sync()
        out = {}
        for k, dt in dtypes.items():
            out[k] = np.empty(length, dtype=dt)
            if length:
                self.cuda.memcpy_dtoh(out[k], arrays[k])
        return out

    def state(self):
        return self._download(self.cur, self.spec.vertex_fields, self.n)

    def bitmap_ids(self, bitmap):
        """The ids set in a device bitmap of n bits (a frontier, a changed set), after the
        work queued so far: a checkpoint's download."""
        self.ex.sync()
        words = np.zeros((self.n + 31) // 32, np.uint32)
        if words.size:
            self.cuda.memcpy_dtoh(words, bitmap)
        return bitmap_ids(words, self.n)

    def set_bitmap(self, bitmap, ids):
        """Make a device bitmap of n bits hold exactly ``ids`` (a resumed run's frontier)."""
        words = bitmap_words(ids, self.n)
        if words.size:
            self.cuda.memcpy_htod(bitmap, words)

    def edge_state(self):
        return self._download(self.ecur, self.estate, self.m_edges)

    def close(self):
        """Free the device memory and drop the streams and events while the context is current,
        then release the context (the last user pops it). The streams and events go with their
        last references here, on the owning thread, and not whenever this object is collected
        (maybe on a worker thread, where PyCUDA cannot destroy them). Idempotent."""
        try:
            if getattr(self, "upload_stream", None) is not None:
                self.upload_stream.synchronize()
        except Exception:  # a failed launch already poisoned the context: still free
            pass
        if getattr(self, "ex", None) is not None:
            self.ex.close()   # (waits for its streams first)
        self.ex = self.upload_stream = self.state_ready = self._rb_done = None
        for kind, name, nbytes, mem in self._mem:
            try:
                mem.free()
            except Exception:
                pass
            self.ledger.give(kind, name, nbytes)
        self._mem = []
        if getattr(self, "cuda", None) is not None:
            self.cuda = None
            release_context()
