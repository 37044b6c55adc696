"""Per-shard choice of the gather's load-balance strategy, from the shard's degree statistics.

``twc``   thread/warp/block mapping by degree (Merrill et al.): cheap to launch, touches only the
          active vertices' edges; a single very large vertex keeps one block busy while the rest of
          the grid idles.
``merge`` edge-balanced split (merge-path style, Raval et al. / GSwitch STRICT): every thread gets
          the same number of edges whatever the degrees, at the price of a binary search per
          thread and atomics at range boundaries; it sweeps all of the shard's edges, so it only
          pays when most destinations are active.

TWC gives each thread block 256 consecutive rows: a block outlasts the grid when one of its rows
is a hub, and also when many large rows lie side by side, as a store built with ``reorder``
``degree`` puts them (its first shards hold a few hundred rows of the largest degrees; TWC runs
each such shard on a block or two). Both count (:func:`choose`).
"""
from dataclasses import dataclass

import numpy as np

from ...errors import UsageError
from .skeletons import BLOCK_MIN

STRATEGIES = ("auto", "twc", "merge")
#: max degree over mean degree beyond which a shard counts as skewed
SKEW_RATIO = 64.0
#: TWC gives a vertex at most one block; when one vertex holds more than 1/TAIL_SHARE of the
#: shard's edges, that block outlasts the rest of the grid (about the multiprocessor count).
TAIL_SHARE = 128
#: below this fraction of active vertices the merge split would sweep mostly idle edges
DENSE_FRACTION = 0.5
#: a block's rows are *crowded* when they hold at least this many times the largest row's edges
#: (a group of large rows, not one hub with small ones around it: the hub rule covers that)
CROWDED = 2
#: ... and at least this many edges: below it a block's walk is short whatever the launch
#: (small graphs keep TWC)
CROWDED_MIN = 1 << 16


@dataclass(frozen=True)
class DegreeStats:
    vertices: int
    edges: int
    max_degree: int
    #: the most edges of one TWC block's rows (balance.ShardFacts.group_edges; 0: unknown)
    block_edges: int = 0

    @property
    def mean(self):
        return self.edges / self.vertices if self.vertices else 0.0

    @property
    def skew(self):
        return self.max_degree / self.mean if self.mean > 0 else 0.0


def degree_stats(degrees):
    """DegreeStats of one shard interval's degree array."""
    from ...engine.contract import group_max
    d = np.asarray(degrees)
    return DegreeStats(int(d.size), int(d.sum()), int(d.max()) if d.size else 0, group_max(d))


def check_strategy(strategy, merge_ok):
    if strategy not in STRATEGIES:
        raise UsageError(f"load_balance must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    if strategy == "merge" and not merge_ok:
        raise UsageError("load_balance='merge' needs an atomic for the program's gather monoid "
                         "and message dtype; use 'twc' or 'auto'")


def choose(stats, active_fraction, strategy="auto", merge_ok=True, launch_edges=None, compressed=False):
    """``"twc"`` or ``"merge"`` for one shard's gather.

    ``launch_edges`` is the edge count of the whole launch the shard's gather is part of (the
    multi-shard launch of resident shards; default: the shard alone): a hub's block only stalls
    the grid when it holds a large share of *that* launch's edges.

    Forced strategies are returned as given. ``auto`` takes the merge split for a dense shard
    whose largest vertex would keep TWC's block busy after the rest of the grid is done (it holds
    at least a block's worth of edges, ``SKEW_RATIO`` times the mean and more than
    1/``TAIL_SHARE`` of the shard's edges), or whose heaviest block of rows is crowded (at least
    ``CROWDED`` times the largest row's edges and ``CROWDED_MIN``) and holds more than
    1/``TAIL_SHARE`` of them, and TWC otherwise: the merge split wins on shards with hub vertices
    everywhere, TWC on smaller graphs and on launches of many shards at once (docs/BENCHMARKS.md,
    "Measured constants"; the crowded rule: "GPU targets", run H).

    ``compressed``: the shard's ids are compressed blocks, which the merge split's warps decode
    a block at a time with coalesced reads (blockids.MERGE_WARP) while TWC's short rows decode
    with a cursor per thread: every dense shard takes the merge split.
    """
    if strategy != "auto":
        return strategy
    edges = stats.edges if launch_edges is None else max(int(launch_edges), stats.edges)
    if not (merge_ok and active_fraction >= DENSE_FRACTION):
        return "twc"
    if compressed and stats.edges:
        return "merge"
    hub = (stats.max_degree >= BLOCK_MIN and stats.skew >= SKEW_RATIO
           and stats.max_degree * TAIL_SHARE > edges)
    crowded = (stats.block_edges >= max(CROWDED * stats.max_degree, CROWDED_MIN)
               and stats.block_edges * TAIL_SHARE > edges)
    return "merge" if hub or crowded else "twc"


def merge_available(spec):
    """Whether the merge split can run ``spec``'s gather: its monoid has a GPU atomic for the
    message dtype (the translator's atomics prelude)."""
    from ...errors import ProgramError
    from ...program.cuda_prelude import atomic
    if spec is None or spec.gather_reduce is None:
        return spec is None
    try:
        atomic(spec.gather_reduce, spec.gather_dtype, None)
    except (ProgramError, TypeError):
        return False
    return True


_MEMO = {}


def cuda_policy(facts, actives, spec, caps, merge_ok=None, compressed=False):
    """The CUDA executor's load-balance policy (its ``Policies.balance``, which the planner
    consults): one strategy per shard of a unit, :func:`choose` per gather direction over the
    shard's degree facts (a shard takes the merge split when any direction needs it and the
    monoid has an atomic); ``caps.forced.balance`` forces one (``deterministic`` forces
    ``"twc"``). ``merge_ok``: whether the generated kernels have the merge split (None: whether
    the monoid has an atomic, :func:`merge_available`); ``compressed``: the kernels decode
    compressed ids (:func:`choose`)."""
    forced = caps.forced.balance
    if forced != "auto":
        return (forced,) * len(facts)
    if not (merge_available(spec) if merge_ok is None else merge_ok):
        return ("twc",) * len(facts)
    key = (tuple(facts), tuple(int(a) for a in actives), bool(compressed))
    if key not in _MEMO:
        if len(_MEMO) > 4096:
            _MEMO.clear()
        _MEMO[key] = _auto(facts, actives, compressed)
    return _MEMO[key]


def _auto(facts, actives, compressed=False):
    """Per shard: merge when any gather direction of it needs the merge split."""
    launch = {}
    for f in facts:
        for d, edges in f.edges:
            launch[d] = launch.get(d, 0) + int(edges)
    out = []
    for f, active in zip(facts, actives):
        frac = int(active) / f.vertices if f.vertices else 0.0
        tops, groups = dict(f.max_degree), dict(f.group_edges)
        pick = "twc"
        for d, edges in f.edges:
            stats = DegreeStats(f.vertices, int(edges), int(tops.get(d, 0)), int(groups.get(d, 0)))
            if choose(stats, frac, "auto", True, launch_edges=launch[d], compressed=compressed) == "merge":
                pick = "merge"
        out.append(pick)
    return tuple(out)


def forced_strategy(load_balance="auto", deterministic=False):
    """The strategy the executor options force on the planner (``Capabilities.forced``):
    ``deterministic`` gathers without atomics, so TWC only."""
    if deterministic:
        if load_balance == "merge":
            raise UsageError("deterministic=True gathers without atomics: load_balance must be "
                             "'twc' or 'auto', not 'merge'")
        return "twc"
    if load_balance not in STRATEGIES:
        raise UsageError(f"load_balance must be one of {', '.join(STRATEGIES)}, not {load_balance!r}")
    return load_balance

