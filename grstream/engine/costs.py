"""The transfer cost model: how each streamed shard moves in an iteration (HyTGraph, EMOGI).

A shard the memory model streams can cross the host link in three ways (``Unit.transfer``):

``copy``
    the whole shard region: ``region`` bytes at the link's bandwidth, plus a fixed cost per copy
    (event hops, host work).
``compact``
    host threads pack the active vertices' rows into pinned staging (full ``indptr`` arrays in
    which inactive vertices' rows are empty, then only the active rows' edges), overlapped with
    the other units' copies; the same copy then moves ``indptr + active edges`` bytes. The packing
    runs at ``compact_rate`` bytes/s on the host, so a unit costs the larger of the two.
``zerocopy``
    no copy: the kernels read the mapped pinned host cache over the link. Only the active rows'
    offsets and edges cross it, but scattered reads reach a fraction of the bandwidth: the
    *zero-copy efficiency* ``eff(f)``, interpolated between ``zc_sparse`` (a single active
    vertex: short rows, one PCIe request each) and ``zc_dense`` (every vertex: warp-merged
    sequential reads, EMOGI) in the active fraction ``f``, times a learnt ``zc_scale``.

The rule (:func:`choose`): the estimated seconds of each mode the executor implements are
compared and the cheapest wins; ties go to ``copy``, then ``compact``. The estimate of a shard's
active edges is ``(1 - (1 - f) ** skew) * edges`` -- ``f * skew`` for a sparse frontier, every
edge when every vertex is active: the planner knows active vertices per shard, not their
degrees, and on power-law graphs a frontier's vertices are far from average (BFS's first
frontier, a hub's neighbours, holds hubs). ``skew`` is a frontier's gathered edges per active
vertex over the graph's mean (the planner learns it from the statistics, :mod:`.transfers`), 1
when nothing is known. Kernels
of copied and compacted shards overlap the next unit's copy, so those modes cost
``max(transfer, kernel)``; a zero-copy unit's reads are its kernel, so it costs
``max(read, kernel)`` too, with the kernel time ``f * edges / kernel_rate``.

Calibration: an executor class measures its link once per process (``calibrate`` of the CUDA
executor: one pinned copy of a few MiB, one host packing pass; a few ms) and starts from
:class:`LinkCosts`' defaults (the H100 machine's figures) for what it does not measure. After
each iteration :func:`refine` moves the figures towards the measured ones by an exponential
moving average (weight ``ALPHA``): the bandwidth from the copies' bytes and busy time, the
packing rate from the host packing time, the zero-copy scale from predicted over measured
zero-copy seconds, the kernel rate from gathered edges over kernel time.

Everything here is a pure function of plain data, so the policy is tested without a GPU.
"""
from dataclasses import dataclass, replace
from typing import Dict, Iterable, Tuple

#: modes a streamed shard can take, in the order ties are broken
MODES = ("copy", "compact", "zerocopy")
#: weight of one iteration's measurement in the moving averages
ALPHA = 0.3
#: a refined figure stays within this factor of its calibrated value (one odd iteration -- a
#: first-touch page fault, a busy host -- must not flip every later choice)
CLAMP = 8.0


@dataclass(frozen=True)
class LinkCosts:
    """Figures of one executor's link and host (defaults: the H100 machine, PCIe Gen5)."""

    bandwidth: float = 54.7e9      # bytes/s, pinned host -> device copy
    latency: float = 20e-6         # seconds of fixed cost per copied unit
    compact_rate: float = 2.0e9    # bytes/s of packed output, host threads (numpy gathers)
    zc_sparse: float = 0.15        # zero-copy efficiency with one active vertex
    zc_dense: float = 0.80         # ... with every vertex active (EMOGI: merged, aligned reads)
    zc_scale: float = 1.0          # learnt factor on the interpolated efficiency
    kernel_rate: float = 20e9      # edges/s the gather kernels process from device memory

    def zerocopy_efficiency(self, fraction: float) -> float:
        """Fraction of ``bandwidth`` zero-copy reads reach with ``fraction`` of a shard active."""
        f = min(max(float(fraction), 0.0), 1.0)
        eff = (self.zc_sparse + (self.zc_dense - self.zc_sparse) * f) * self.zc_scale
        return min(max(eff, 1e-3), 1.0)

    def to_dict(self):
        return {k: float(getattr(self, k)) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class ShardShape:
    """What a shard's data is, for the cost model: one per streamed shard."""

    vertices: int        # vertices of its interval
    region: int          # bytes of a whole copy (its region in the memory model)
    indptr_bytes: int    # bytes of its indptr arrays (every direction the program reads)
    edge_bytes: int      # bytes of its edge arrays (neighbour ids and properties)
    edges: int           # edges the kernels walk (all directions read)


def shard_shapes(memory, itemsize=None, names=None) -> Tuple[ShardShape, ...]:
    """ShardShape of every shard of a memory model (lengths per dataset name); ``names``: only
    those datasets (a push unit moves and reads the arrays of its walk directions only), each
    taking its aligned place in the region."""
    out = []
    for i, region in enumerate(memory.regions):
        lengths = memory.lengths[i]
        if names is not None:
            offs = memory.offsets[i]
            ends = sorted(offs.values()) + [region]
            size = {n: ends[ends.index(o) + 1] - o for n, o in offs.items()}
            lengths = {n: lengths[n] for n in names if n in lengths}
            region = sum(size[n] for n in lengths)
        indptr = sum(8 * n for name, n in lengths.items() if name.endswith("/indptr"))
        edges = sum(n for name, n in lengths.items() if name in ("in/src", "out/dst"))
        nv = max((n - 1 for name, n in lengths.items() if name.endswith("/indptr")), default=0)
        out.append(ShardShape(int(nv), int(region), int(indptr), int(max(region - indptr, 0)),
                              int(edges)))
    return tuple(out)


def estimate(shape: ShardShape, active: int, costs: LinkCosts, skew: float = 1.0,
             edge_fraction=None) -> Dict[str, Tuple[int, float]]:
    """``{mode: (bytes over the link, seconds)}`` of one shard with ``active`` active vertices
    whose degrees are ``skew`` times the mean; ``edge_fraction``: the fraction of the shard's
    edges they hold, when known (a push unit: the changed set's edges the executor counted)."""
    f = min(max(active / shape.vertices, 0.0), 1.0) if shape.vertices else 1.0
    if edge_fraction is None:
        fe = 1.0 - (1.0 - f) ** max(float(skew), 1e-3)     # fraction of the shard's edges they hold
    else:
        fe = min(max(float(edge_fraction), 0.0), 1.0)
    bw = costs.bandwidth
    kernel = fe * shape.edges / costs.kernel_rate
    edge_bytes = fe * shape.edge_bytes
    copy_b = shape.region
    compact_b = shape.indptr_bytes + edge_bytes
    zc_b = f * shape.indptr_bytes + edge_bytes     # only the active rows' offsets are read
    return {
        "copy": (int(copy_b), max(costs.latency + copy_b / bw, kernel)),
        "compact": (int(compact_b), max(costs.latency + max(compact_b / bw, compact_b / costs.compact_rate),
                                        kernel)),
        "zerocopy": (int(zc_b), max(zc_b / (bw * costs.zerocopy_efficiency(f)), kernel)),
    }


def choose(shape: ShardShape, active: int, costs: LinkCosts, allowed: Iterable[str],
           skew: float = 1.0, edge_fraction=None) -> str:
    """The cheapest mode among ``allowed`` (see the module docstring); ``"copy"`` if none."""
    return cheapest(estimate(shape, active, costs, skew, edge_fraction), allowed)


def cheapest(est, allowed: Iterable[str]) -> str:
    """The mode of least estimated seconds in ``est`` (:func:`estimate`) among ``allowed``
    (ties: the earlier of MODES); ``"copy"`` if none is allowed."""
    allowed = [m for m in MODES if m in set(allowed)]
    if not allowed:
        return "copy"
    return min(allowed, key=lambda m: (est[m][1], MODES.index(m)))


def _ema(old, new, alpha, base):
    value = (1 - alpha) * old + alpha * new
    return min(max(value, base / CLAMP), base * CLAMP)


def refine(costs: LinkCosts, predicted: Dict[str, Tuple[int, float]], measured: Dict[str, Tuple[int, float]],
           base: LinkCosts, pack: Tuple[int, float] = (0, 0.0), kernel: Tuple[int, float] = (0, 0.0),
           alpha: float = ALPHA) -> LinkCosts:
    """``costs`` moved towards one iteration's measurements (pure; see the module docstring).

    ``predicted`` and ``measured`` map a mode to (bytes, seconds) summed over the iteration's
    units of that mode (the planner's estimate, the executor's measurement); ``pack`` is the
    host packing's (bytes, seconds), ``kernel`` the (edges, kernel seconds) of an iteration
    without zero-copy units; ``base`` (the calibration) bounds how far figures may drift.
    Modes with no bytes or no time are left as they are.
    """
    out = {}
    b, s = measured.get("copy", (0, 0.0))
    if b > 0 and s > 0:
        out["bandwidth"] = _ema(costs.bandwidth, b / s, alpha, base.bandwidth)
    if pack[0] > 0 and pack[1] > 0:
        out["compact_rate"] = _ema(costs.compact_rate, pack[0] / pack[1], alpha, base.compact_rate)
    pb, ps = predicted.get("zerocopy", (0, 0.0))
    b, s = measured.get("zerocopy", (0, 0.0))
    if pb > 0 and ps > 0 and b > 0 and s > 0:
        # the efficiency the iteration reached over the one the model assumed (``predicted``
        # should use the iteration's measured skew, so that only the efficiency is learnt here)
        out["zc_scale"] = _ema(costs.zc_scale, costs.zc_scale * ps / s, alpha, base.zc_scale)
    if kernel[0] > 0 and kernel[1] > 0:
        out["kernel_rate"] = _ema(costs.kernel_rate, kernel[0] / kernel[1], alpha, base.kernel_rate)
    return replace(costs, **out) if out else costs
