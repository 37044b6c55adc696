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
    offsets and edges cross it, at a fraction ``zc_efficiency`` of the copy bandwidth (merged,
    aligned warp reads; EMOGI). Each active row first needs its offsets and then its edges, two
    dependent round trips over the link, so a frontier of many short rows is bound by the rows
    (``zc_row`` seconds per active row, the latency over the requests the GPU keeps in flight)
    rather than by the bytes; and every zero-copied shard costs ``zc_shard`` (the kernel's pass
    over the shard's vertices). A unit costs ``max(read, rows, kernel) + zc_shard``; each
    zero-copy launch adds ``zc_launch`` (launches and the first dependent round trips), which
    the choice per shard leaves out (a push plan's zero-copied shards are one launch) and
    :func:`refine` counts. The defaults of :class:`LinkCosts` are measured figures of these
    terms (docs/BENCHMARKS.md, "Measured constants").

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
:class:`LinkCosts`' defaults (figures of a PCIe Gen5 machine) for what it does not measure. After
each iteration :func:`refine` moves the figures towards the measured ones by an exponential
moving average (weight ``ALPHA``): the bandwidth from the copies' bytes and busy time, the
packing rate from the host packing time, the kernel rate from gathered edges over kernel time,
and from the measured over the predicted zero-copy seconds the one zero-copy figure whose term
bounded most of the prediction (``zc_efficiency`` for reads, ``zc_row`` for rows, ``zc_shard``
for the per-shard pass, ``zc_launch`` for the launches): a level of a few short rows must not
teach the model that heavy levels read slowly.

Everything here is a pure function of plain data, so the policy is tested without a GPU.
"""
from dataclasses import dataclass, replace
from typing import Dict, Iterable, Tuple

from .schedule import ID_NAMES, logical_name

#: modes a streamed shard can take, in the order ties are broken
MODES = ("copy", "compact", "zerocopy")
#: weight of one iteration's measurement in the moving averages
ALPHA = 0.3
#: a refined figure stays within this factor of its calibrated value (one odd iteration -- a
#: first-touch page fault, a busy host -- must not flip every later choice)
CLAMP = 8.0
#: zero-copy reads never reach more of the link than a DMA copy (EMOGI's best: about 0.9); a
#: learnt efficiency above this would make a whole shard's zero-copy "cheaper" than its copy
ZC_MAX = 0.9


@dataclass(frozen=True)
class LinkCosts:
    """Figures of one executor's link and host (defaults: a PCIe Gen5 machine's,
    docs/BENCHMARKS.md, "Measured constants")."""

    bandwidth: float = 54.7e9      # bytes/s, pinned host -> device copy
    latency: float = 20e-6         # seconds of fixed cost per copied unit
    compact_rate: float = 2.0e9    # bytes/s of packed output, host threads (numpy gathers)
    zc_efficiency: float = 0.68    # fraction of ``bandwidth`` zero-copy reads reach
    zc_row: float = 1.2e-9         # seconds per active row read in place (latency-bound rows)
    zc_shard: float = 5e-6         # seconds per zero-copied shard (the pass over its vertices)
    zc_launch: float = 80e-6       # seconds per zero-copy launch (see the module docstring)
    kernel_rate: float = 20e9      # edges/s the gather kernels process from device memory

    def zerocopy_efficiency(self) -> float:
        """Fraction of ``bandwidth`` zero-copy reads reach, within [1e-3, ZC_MAX]."""
        return min(max(float(self.zc_efficiency), 1e-3), ZC_MAX)

    def to_dict(self):
        return {k: float(getattr(self, k)) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class ShardShape:
    """What a shard's data is, for the cost model: one per streamed shard."""

    vertices: int        # vertices of its interval
    region: int          # bytes of a whole copy (its region in the memory model)
    indptr_bytes: int    # bytes of its indptr arrays (every direction the program reads)
    edge_bytes: int      # bytes of its edge arrays (neighbour ids -- compressed where the store
                         # is and the executor decodes them -- and properties)
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
        # edges of the directions whose ids it holds (plain, or a compressed store's parts)
        edges = sum(lengths[ids] if ids in lengths else memory.edge_count(i, d)
                    for d, ids in ID_NAMES.items() if any(logical_name(n) == ids for n in lengths))
        nv = max((n - 1 for name, n in lengths.items() if name.endswith("/indptr")), default=0)
        out.append(ShardShape(int(nv), int(region), int(indptr), int(max(region - indptr, 0)),
                              int(edges)))
    return tuple(out)


def estimate(shape: ShardShape, active: int, costs: LinkCosts, skew: float = 1.0,
             edge_fraction=None) -> Dict[str, Tuple[int, float]]:
    """``{mode: (bytes over the link, seconds)}`` of one shard with ``active`` active vertices
    whose degrees are ``skew`` times the mean; ``edge_fraction``: the fraction of the shard's
    edges they hold, when known (a push unit: the changed set's edges the executor counted)."""
    fe = edge_share(shape, active, skew, edge_fraction)
    bw = costs.bandwidth
    kernel = fe * shape.edges / costs.kernel_rate
    edge_bytes = fe * shape.edge_bytes
    copy_b = shape.region
    compact_b = shape.indptr_bytes + edge_bytes
    zc = zerocopy_terms(shape, active, costs, fe)
    return {
        "copy": (int(copy_b), max(costs.latency + copy_b / bw, kernel)),
        "compact": (int(compact_b), max(costs.latency + max(compact_b / bw, compact_b / costs.compact_rate),
                                        kernel)),
        "zerocopy": (int(zc["bytes"]), zerocopy_seconds(zc)),
    }


def edge_share(shape: ShardShape, active: int, skew: float = 1.0, edge_fraction=None) -> float:
    """The fraction of the shard's edges ``active`` vertices hold: ``edge_fraction`` when known,
    else ``1 - (1 - f) ** skew`` of the active fraction ``f`` (module docstring)."""
    if edge_fraction is not None:
        return min(max(float(edge_fraction), 0.0), 1.0)
    return 1.0 - (1.0 - _active_fraction(shape, active)) ** max(float(skew), 1e-3)


def _active_fraction(shape: ShardShape, active: int) -> float:
    return min(max(active / shape.vertices, 0.0), 1.0) if shape.vertices else 1.0


def zerocopy_terms(shape: ShardShape, active: int, costs: LinkCosts, fe: float) -> Dict[str, float]:
    """The terms of a zero-copied shard's estimate (module docstring): ``bytes`` read in place
    (only the active rows' offsets, the fraction ``fe`` of its edges), and the seconds of the
    ``read`` (bytes at the zero-copy efficiency), the ``rows`` (latency per active row), the
    ``kernel`` and the per-``shard`` pass."""
    f = _active_fraction(shape, active)
    rows = min(max(int(active), 0), shape.vertices) if shape.vertices else max(int(active), 0)
    nbytes = f * shape.indptr_bytes + fe * shape.edge_bytes
    return {"bytes": nbytes, "read": nbytes / (costs.bandwidth * costs.zerocopy_efficiency()),
            "rows": rows * costs.zc_row, "kernel": fe * shape.edges / costs.kernel_rate,
            "shard": costs.zc_shard}


def zerocopy_seconds(terms: Dict[str, float]) -> float:
    """A zero-copied shard's estimated seconds from its :func:`zerocopy_terms`."""
    return max(terms["read"], terms["rows"], terms["kernel"]) + terms["shard"]


#: the zero-copy terms refine can learn, and the LinkCosts field each one scales
ZC_TERMS = {"read": "zc_efficiency", "rows": "zc_row", "shard": "zc_shard", "launch": "zc_launch"}


def zerocopy_bounds(terms: Dict[str, float]) -> Dict[str, float]:
    """Seconds of one zero-copied unit's estimate by the term that bounds them: the largest of
    ``read``, ``rows`` and ``kernel``, plus ``shard`` (summed over units, what :func:`refine`
    attributes a zero-copy misprediction to)."""
    bound = max(("read", "rows", "kernel"), key=lambda k: terms[k])
    return {bound: terms[bound], "shard": terms["shard"]}


def choose(shape: ShardShape, active: int, costs: LinkCosts, allowed: Iterable[str],
           skew: float = 1.0, edge_fraction=None) -> str:
    """The cheapest mode among ``allowed`` (see the module docstring); ``"copy"`` if none."""
    return cheapest(estimate(shape, active, costs, skew, edge_fraction), allowed)


def cheapest(est, allowed: Iterable[str]) -> str:
    """The mode of least estimated seconds in ``est`` (:func:`estimate`) among ``allowed``
    (ties: the earlier of MODES); ``"copy"`` if none is allowed."""
    given = set(allowed)
    best = None
    for m in MODES:   # (in MODES' order: a tie keeps the earlier)
        if m in given and (best is None or est[m][1] < est[best][1]):
            best = m
    return "copy" if best is None else best


def _ema(old, new, alpha, base):
    value = (1 - alpha) * old + alpha * new
    return min(max(value, base / CLAMP), base * CLAMP)


def refine(costs: LinkCosts, predicted: Dict[str, Tuple[int, float]], measured: Dict[str, Tuple[int, float]],
           base: LinkCosts, pack: Tuple[int, float] = (0, 0.0), kernel: Tuple[int, float] = (0, 0.0),
           alpha: float = ALPHA, zc_bounds: Dict[str, float] = None) -> LinkCosts:
    """``costs`` moved towards one iteration's measurements (pure; see the module docstring).

    ``predicted`` and ``measured`` map a mode to (bytes, seconds) summed over the iteration's
    units of that mode (the planner's estimate, the executor's measurement); ``pack`` is the
    host packing's (bytes, seconds), ``kernel`` the (edges, kernel seconds) of an iteration
    without zero-copy units; ``zc_bounds`` the predicted zero-copy seconds by bounding term
    (:func:`zerocopy_bounds` summed over the units, and "launch": ``zc_launch`` times the
    launches; default: all of them "read"); ``base`` (the
    calibration) bounds how far figures may drift. Modes with no bytes or no time are left as
    they are.
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
        # the whole error goes to the term that bounded most of the prediction (``predicted``
        # should use the iteration's measured skew, so that the link is learnt, not the error
        # of the edge estimate)
        bounds = {k: v for k, v in (zc_bounds or {"read": ps}).items() if k in ZC_TERMS and v > 0}
        if bounds:
            term = max(bounds, key=bounds.get)
            part = bounds[term]
            ratio = max(part + (s - ps), part / CLAMP) / part   # > 1: that term is slower
            field = ZC_TERMS[term]
            now = getattr(costs, field)
            new = now / ratio if field == "zc_efficiency" else now * ratio
            out[field] = _ema(now, new, alpha, getattr(base, field))
    if kernel[0] > 0 and kernel[1] > 0:
        out["kernel_rate"] = _ema(costs.kernel_rate, kernel[0] / kernel[1], alpha, base.kernel_rate)
    return replace(costs, **out) if out else costs
