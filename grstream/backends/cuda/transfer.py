"""The GPU executor's transfer modes: the ``transfer`` option, calibration and per-mode timings.

``transfer`` (executor option): ``"auto"`` (default: the planner's cost model, grstream/engine/
costs.py, chooses per streamed shard and iteration), or ``"copy"``, ``"compact"``, ``"zerocopy"``
(every streamed shard that can take the mode does; for tests and benchmarks). The modes
themselves live in :mod:`.compact` and :mod:`.zerocopy`; :class:`~.movement.Mover` delivers them.

:func:`calibrate` measures the link and the host once per process (a few ms): one pinned
host -> device copy of ``CALIBRATE_BYTES`` (after one warm-up copy) and one packing pass over a
synthetic shard with a third of its rows active, its ids compressed where the store's are (the
packer then decodes the active rows' blocks and encodes them again, many times the work per
packed byte of copying plain rows). The zero-copy efficiency and the kernel rate
start from :class:`~grstream.engine.costs.LinkCosts`' defaults and are learnt from the
iterations' timings (:meth:`grstream.engine.planner.Planner.observe`).

:class:`ModeTimes` turns the executor's timing events into ``IterationStats.transfer_seconds``:
copy-engine busy time of the "copy" and "compact" units' copies, kernel busy time of the
"zerocopy" units (their reads are their kernels).
"""
import numpy as np

from ...engine.contract import LinkCosts
from .streams import busy_overlap

TRANSFERS = ("auto", "copy", "compact", "zerocopy")
CALIBRATE_BYTES = 16 << 20
_CALIBRATION = {}   # device name -> LinkCosts (once per process)


def transfers(options):
    """The ``Unit.transfer`` values the executor offers under ``options`` (CudaOptions): every
    mode, and "held" unless ``hold_slots`` is off."""
    return frozenset({"resident", "load", "copy", "compact", "zerocopy"}
                     | ({"held"} if options.hold_slots else set()))


def calibration(options, compressed=False):
    """The executor's calibration policy: :func:`calibrate` (of the packer of compressed ids
    where ``compressed``: the store's are) when the cost model chooses the modes
    (``transfer="auto"``); a forced mode needs none (the model then only counts bytes)."""
    if options.transfer != "auto":
        return None
    return (lambda: calibrate(compressed=True)) if compressed else calibrate


def mapped(options):
    """Whether the pinned cache must be mapped (zero-copy may be chosen)."""
    return options.transfer in ("auto", "zerocopy")


def calibrate(compressed=False):
    """LinkCosts of this process's device (measured once per kind of ids; see the module
    docstring)."""
    from .device import ensure_context, release_context
    cuda = ensure_context()
    try:
        key = (cuda.Context.get_device().name(), bool(compressed))
        if key not in _CALIBRATION:
            _CALIBRATION[key] = LinkCosts(bandwidth=_bandwidth(cuda), compact_rate=_pack_rate(compressed=compressed))
        return _CALIBRATION[key]
    finally:
        release_context()


def _bandwidth(cuda):
    host = cuda.pagelocked_empty(CALIBRATE_BYTES, np.uint8)
    dev = cuda.mem_alloc(CALIBRATE_BYTES)
    try:
        start, end = cuda.Event(), cuda.Event()
        best = 0.0
        for _ in range(3):   # the first copy warms the mapping up; keep the fastest
            start.record()
            cuda.memcpy_htod_async(dev, host)
            end.record()
            end.synchronize()
            best = max(best, CALIBRATE_BYTES / max(end.time_since(start) / 1e3, 1e-9))
        return best
    finally:
        dev.free()
        host.base.free()


def _pack_rate(nv=1 << 16, degree=16, compressed=False):
    """Packed bytes per second of the host packer on a synthetic shard (a third active; its
    rows' ids sorted, as a store's, and ``compressed`` as blocks)."""
    from .compact import Packer
    rng = np.random.default_rng(0)
    indptr = np.arange(0, (nv + 1) * degree, degree, dtype=np.int64)
    ids = np.sort(rng.integers(0, nv, (nv, degree)), axis=1).reshape(-1).astype(np.int32)
    arrays = {"in/indptr": indptr, "in/src": ids}
    if compressed:
        from ...store.encode import encode_ids
        arrays = {"in/indptr": indptr,
                  **{f"in/src.{p}": v for p, v in encode_ids(ids, nv).parts.items()}}
    offsets, off = {}, 0
    for name, a in arrays.items():
        offsets[name] = off
        off += a.nbytes

    class Layout:   # what the packer reads of a memory model
        pass
    layout = Layout()
    layout.offsets = [offsets]
    packer = Packer(layout, [0, nv])
    try:
        words = np.zeros((nv + 31) // 32, np.uint32)
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")
        bits[::3] = 1
        packer.set_frontier(np.packbits(bits, bitorder="little").view(np.uint32))
        staging = np.empty(off, np.uint8)
        packer.pack(0, arrays, staging)   # warm-up: threads, page faults
        packer.take_stats()
        packer.pack(0, arrays, staging)
        nbytes, secs = packer.take_stats()
        return nbytes / max(secs, 1e-9)
    finally:
        packer.close()


class ModeTimes:
    """Per-mode bytes and seconds of one iteration, from the executor's timing events."""

    def __init__(self):
        self.kernels = []   # (transfer, index of the unit's kernel span)

    def done(self, streams, unit):
        """Before ``streams.shard_done`` of ``unit``: its kernel span is the next one."""
        if unit.transfer == "zerocopy":
            self.kernels.append((unit.transfer, len(streams.kernel_spans)))

    def report(self, times, mstats, packer, stats):
        """Fill ``stats.transfer_bytes`` / ``transfer_seconds`` / ``time_pack`` from ``times``:
        the plan's (copy spans, kernel spans), ``Streams.span_times`` (read after a sync, before
        ``Streams.timeline`` forgets them; the timeline takes the same)."""
        copies, kernels = times
        by_mode = {}
        for mode, a, b in mstats.get("copy_spans", ()):
            by_mode.setdefault(mode, []).extend(copies[a:b])
        for mode, k in self.kernels:
            if k < len(kernels):
                by_mode.setdefault(mode, []).append(kernels[k])
        self.kernels = []
        for mode, nbytes in mstats.get("modes", {}).items():
            stats.transfer_bytes[mode] = stats.transfer_bytes.get(mode, 0) + int(nbytes)
        for mode, spans in by_mode.items():
            stats.transfer_seconds[mode] = stats.transfer_seconds.get(mode, 0.0) + busy_overlap(spans, [])[0]
        if packer is not None:
            _, secs = packer.take_stats()
            stats.time_pack += secs


def frontier_words(ids, n):
    """The device frontier bitmap of sorted vertex ``ids`` (bit ``v % 32`` of word ``v // 32``,
    the layout the kernels and :func:`host_frontier` read)."""
    bits = np.zeros(((n + 31) // 32) * 32, dtype=bool)
    bits[np.asarray(ids, dtype=np.int64)] = True
    return np.packbits(bits, bitorder="little").view(np.uint32)


def host_frontier(dev, plan):
    """The current frontier bitmap on the host when ``plan`` compacts a unit (None: every
    vertex is active, or nothing is compacted): one n / 8-byte download, after the previous
    iteration's work (its read back synchronised)."""
    if plan.all_active or not any(u.transfer == "compact" for u in plan.units):
        return None
    words = np.empty((dev.n + 31) // 32, np.uint32)
    if words.size:
        dev.cuda.memcpy_dtoh(words, dev.front[0])
    return words

