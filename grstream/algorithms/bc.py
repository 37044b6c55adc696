"""Betweenness centrality (Brandes) with ``networkx.betweenness_centrality``'s options: exact or
from ``k`` sampled sources (NetworkX's sample and rescaling), ``normalized``, ``endpoints``,
``weight``; undirected stores scaled as NetworkX scales undirected graphs.

Per source s GAS programs run (:func:`source_dependencies`); many sources share one Session and
run as lanes of one program per pass (:func:`batch_dependencies`). Unweighted: a forward BFS counts
shortest paths (sigma) level by level. Weighted: SSSP gives distances; the tight edges
(``dist[u] + w == dist[v]``) form the shortest-path DAG, whose vertices get levels (most edges
from s on it), and sigma is summed level by level over it. Then a backward sweep from the deepest
level accumulates dependencies ``delta(v) = sum over DAG successors w of sigma(v)/sigma(w) *
(1 + delta(w))``. Parallel edges count once (the lightest when weighted), as NetworkX's
betweenness counts them on a MultiDiGraph: a store holding some is copied without them first.
"""
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

if TYPE_CHECKING:  # names for the annotations only
    from ..engine import Result
    from ..store import ShardStore
import os
import random
import tempfile
import time

import numpy as np

import grstream as gr

from ._common import internal_sources, open_session
from ._simple import has_parallel_edges, simple_graph
from .params import Count, CountOr, Flag, Kind, Param, Seed, declare
from .sssp import SSSP, FromDistances
from ..errors import MemoryBudgetError, UsageError, plain


class BrandesForward(gr.GASProgram):
    """Level-synchronous BFS from ``source`` counting shortest paths into ``sigma``."""

    vertex = {"level": "int64", "sigma": "float64"}
    gather_reduce = gr.monoid.sum
    gather_dtype = "float64"
    params = {"source": 0}
    vertex_params = ("source",)   # an internal vertex id: checked against 0..n-1

    def init(self, v):
        is_source = v.id == self.source
        v.level = np.where(is_source, 0, -1)
        v.sigma = np.where(is_source, 1.0, 0.0)
        return is_source

    def gather_map(self, src, dst, edge):
        return gr.where(src.level == self.iteration - 1, src.sigma, 0.0)

    def apply(self, v, acc):
        found = (v.level < 0) & (acc > 0.0)
        v.level = gr.where(found, self.iteration, v.level)
        v.sigma = gr.where(found, acc, v.sigma)
        return found


class BrandesBackward(gr.GASProgram):
    """Dependency accumulation, one BFS level per iteration from the deepest one up.

    Gathers over out-edges (successors). Every level must be swept even where a vertex's
    successors did not change, so it runs topology-driven.
    """

    vertex = {"level": "int64", "sigma": "float64", "delta": "float64"}
    gather_edges = "out"
    gather_reduce = gr.monoid.sum
    gather_dtype = "float64"
    activate = "all"
    params = {"depth": 0}
    output = "delta"

    def __init__(self, level=None, sigma=None, dist=None, **params):
        super().__init__(**params)
        self._given = {"level": level, "sigma": sigma, "dist": dist}

    def init(self, v):
        for field in type(self).spec.vertex_fields:
            if field != "delta":
                setattr(v, field, self._given[field])
        v.delta = 0.0

    def gather_map(self, src, dst, edge):
        on_path = dst.level == src.level + 1
        return gr.where(on_path, src.sigma / dst.sigma * (1.0 + dst.delta), 0.0)

    def apply(self, v, acc):
        mine = v.level == self.depth - self.iteration
        v.delta = gr.where(mine, acc, v.delta)
        return mine

    def converged(self):
        return self.iteration >= self.depth


class DagLevels(FromDistances):
    """Level of each vertex in the shortest-path DAG of given distances: the most tight edges
    (``dist[u] + w == dist[v]``, ``dist[u] < dist[v]``) on a path from the source; -1 unreached.
    Every DAG predecessor of a vertex has a smaller level, so sigma and delta can be swept level
    by level."""

    vertex = {"dist": "float64", "level": "int64"}
    reads = {"weight"}
    gather_reduce = gr.monoid.max
    gather_dtype = "int64"
    params = {"source": 0}
    vertex_params = ("source",)   # an internal vertex id: checked against 0..n-1
    output = "level"

    def gather_map(self, src, dst, edge):
        tight = (src.dist + edge.weight == dst.dist) & (src.dist < dst.dist)
        return gr.where(tight & (src.level >= 0), src.level + 1, -1)

    def apply(self, v, acc):
        new = gr.maximum(v.level, acc)
        changed = new > v.level
        v.level = new
        return changed


class WeightedBrandesForward(gr.GASProgram):
    """Shortest-path counts over the DAG of :class:`DagLevels`, one level per iteration."""

    vertex = {"dist": "float64", "level": "int64", "sigma": "float64"}
    reads = {"weight"}
    gather_reduce = gr.monoid.sum
    gather_dtype = "float64"
    params = {"source": 0}
    vertex_params = ("source",)   # an internal vertex id: checked against 0..n-1
    output = "sigma"

    def __init__(self, dist=None, level=None, **params):
        super().__init__(**params)
        self._given = {"dist": dist, "level": level}

    def init(self, v):
        is_source = v.id == self.source
        v.dist = self._given["dist"]
        v.level = self._given["level"]
        v.sigma = np.where(is_source, 1.0, 0.0)
        return is_source

    def gather_map(self, src, dst, edge):
        tight = (src.dist + edge.weight == dst.dist) & (src.dist < dst.dist)
        return gr.where(tight, src.sigma, 0.0)

    def apply(self, v, acc):
        mine = v.level == self.iteration
        v.sigma = gr.where(mine, acc, v.sigma)
        return mine


class WeightedBrandesBackward(BrandesBackward):
    """:class:`BrandesBackward` over the shortest-path DAG of weighted distances."""

    vertex = {"dist": "float64", "level": "int64", "sigma": "float64", "delta": "float64"}
    reads = {"weight"}

    def gather_map(self, src, dst, edge):
        tight = (src.dist + edge.weight == dst.dist) & (src.dist < dst.dist)
        return gr.where(tight, src.sigma / dst.sigma * (1.0 + dst.delta), 0.0)


def source_dependencies(store, source, weighted=False, **run_options):
    """Brandes' dependencies of every vertex on the internal vertex ``source`` (float64, 0 at
    the source), the mask of the vertices it reaches (itself included) and the engine Results."""
    session, run_kwargs = open_session(store, run_options)
    run_kwargs.pop("progress", None)
    with session:
        (delta,), (reached,), results = batch_dependencies(session, [int(source)], weighted,
                                                           run_kwargs)
    return delta, reached, results


def batch_dependencies(session, batch, weighted, run_kwargs, lanes=True):
    """:func:`source_dependencies` of every source of ``batch`` on one session: each pass runs
    for the whole batch as lanes of one program (Session.run_lanes) where the session can,
    sources of equal depth together where the pass length depends on it."""
    n = int(session.store.num_vertices)
    if weighted:
        dists = _run_all(session, [SSSP(source=s) for s in batch], run_kwargs, lanes)
        levels = _run_all(session, [DagLevels(dist=d.values["dist"], source=s)
                                    for d, s in zip(dists, batch)], run_kwargs, lanes)
        depths = [int(lv.values["level"].max()) for lv in levels]
        fwds = _by_depth(session, depths, lambda i: WeightedBrandesForward(
            dist=dists[i].values["dist"], level=levels[i].values["level"], source=batch[i]),
            run_kwargs, lanes, minimum=0)
        results = dists + levels + fwds
        back_cls = WeightedBrandesBackward
    else:
        fwds = _run_all(session, [BrandesForward(source=s) for s in batch], run_kwargs, lanes)
        depths = [int(f.values["level"].max()) for f in fwds]
        results = list(fwds)
        back_cls = BrandesBackward
    states = [f.values for f in fwds]
    backs = _by_depth(session, depths, lambda i: back_cls(
        level=states[i]["level"], sigma=states[i]["sigma"], dist=states[i].get("dist"),
        depth=depths[i]), run_kwargs, lanes, minimum=1)
    deltas = []
    for i, back in enumerate(backs):
        delta = np.zeros(n) if back is None else back.values["delta"]
        delta[batch[i]] = 0.0
        deltas.append(delta)
    return deltas, [st["level"] >= 0 for st in states], results + [b for b in backs if b is not None]


def _run_all(session, programs, run_kwargs, lanes, max_iter=None):
    """Results of ``programs`` (instances of one class): as lanes of one run where the session
    can, else one run each."""
    limit = run_kwargs.get("max_iter") if max_iter is None else max_iter
    if lanes and len(programs) > 1 and session.can_run_lanes(type(programs[0])):
        return session.run_lanes(programs, max_iter=limit)
    return [session.run(p, **dict(run_kwargs, max_iter=limit)) for p in programs]


def _by_depth(session, depths, make, run_kwargs, lanes, minimum):
    """Run ``make(i)`` for every i with depths[i] >= minimum, ``max_iter=depths[i]``, sources of
    equal depth as lanes of one run; None for the others."""
    out = [None] * len(depths)
    groups = {}
    for i, d in enumerate(depths):
        if d >= minimum:
            groups.setdefault(d, []).append(i)
    for depth, members in sorted(groups.items()):
        for i, r in zip(members, _run_all(session, [make(i) for i in members], run_kwargs, lanes,
                                          max_iter=depth)):
            out[i] = r
    return out


def check_bc_weights(store):
    """Weighted betweenness needs finite positive weights: with zero weights NetworkX's counts
    depend on its traversal order."""
    for i in range(store.num_shards):
        w = store.read(i, "in/weight")
        bad = ~(np.isfinite(w) & (w > 0))
        if bad.any():
            raise UsageError(f"weighted betweenness needs finite positive weights: shard {i} has "
                             f"weight {plain(w[bad][0])}")


def sample_sources(n, k, seed):
    """NetworkX's sample: ``random.Random(seed).sample`` of the vertices in id order."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    return np.array(rng.sample(range(n), k), dtype=np.int64)


def rescale(bc, n, *, normalized, directed, endpoints, sampled=None):
    """NetworkX 3.6's rescaling of summed dependencies (``_rescale`` in betweenness.py)."""
    k = None if sampled is None else len(sampled)
    N = n if endpoints else n - 1  # (s, t) pairs with s != t that can pass through v
    if N < 2:
        return bc
    K = N if k is None else k
    correction = 1 if directed else 2  # an undirected pair was counted in both orders
    if k is None or endpoints:
        return bc * (1 / (K * (N - 1)) if normalized else N / (K * correction))
    # sampling without endpoints: a sampled source is no inner vertex of its own paths
    if normalized:
        scale_source = 1 / ((K - 1) * (N - 1)) if K > 1 else np.nan
        scale_other = 1 / (K * (N - 1))
    else:
        scale_source = N / ((K - 1) * correction) if K > 1 else np.nan
        scale_other = N / (K * correction)
    out = bc * scale_other
    out[sampled] = bc[sampled] * scale_source
    return out


#: an exact run (``k`` None) estimated to take longer than this many seconds is refused after
#: its first batch of sources, with the k that fits; ``k="all"`` runs it anyway
EXACT_SECONDS = 600.0


def _rules(store, values, given, label):
    """Checks across bc's parameters: a seed picks a sample, explicit sources take no k, a
    sample is no larger than the graph."""
    if "seed" in given and not isinstance(values["k"], int):
        raise UsageError(f"{label['seed']} picks the sample that {label['k']} asks for; an exact "
                         f"run has no sample")
    if values["sources"] is not None and (values["k"] is not None or values["endpoints"]):
        raise UsageError(f"give {label['sources']} or {label['k']}, and no {label['endpoints']} "
                         f"with explicit sources")
    if isinstance(values["k"], int):
        Count(1, int(store.num_vertices)).check(label["k"], values["k"])


def _summary(store, values, results):
    sources = sum(r.info.get("program") in ("BrandesForward", "SSSP") for r in results)
    exact = sources == store.num_vertices
    return f"{sources:,} sources" + (" (exact: every vertex)" if exact else "")


@declare(
    "bc",
    Param("k", CountOr("all"), None, "sample this many sources as NetworkX does "
          "(random.Random({seed}).sample) and rescale as it does; 'all': every vertex, however "
          "long it takes", flag="--sources", metavar="K|all", none=(
              f"every vertex a source, refused when estimated to take more than "
              f"{EXACT_SECONDS / 60:g} minutes"), doc="``k == n`` is exact too."),
    Param("seed", Seed(), 0, "seed of the sample that {k} asks for",
          doc="None: unseeded; a random.Random: drawn from it."),
    Param("sources", Kind(), None, "explicit source vertices instead: the sum of their "
          "dependencies, scaled as networkx.betweenness_centrality_subset with every vertex a "
          "target"),
    Param("normalized", Flag(), False, "divide by the number of pairs (NetworkX's default is "
          "True; grstream's is False)"),
    Param("endpoints", Flag(), False, "count a path's endpoints as lying on it"),
    Param("weight", Kind(), None, "'weight': shortest paths by the store's weights (finite and "
          "positive); None: hops"),
    rules=_rules, summary=_summary)
def betweenness(store: "ShardStore", k: Any, seed: Any, sources: Any, normalized: Any,
                endpoints: Any, weight: Any, **run_options: Any) -> Tuple[np.ndarray, List["Result"]]:
    """Betweenness centrality (float64 per vertex) and a list of engine Results."""
    n = int(store.num_vertices)
    if weight is not None:
        if weight != "weight" or "weight" not in store.edge_props:
            raise UsageError(f"weight={weight!r}: the store's edge properties are "
                             f"{', '.join(store.edge_props) or 'none'}; use weight=None for hops")
        check_bc_weights(store)
    limit = None
    if sources is not None:
        chosen = internal_sources(store, sources)
        sampled = None
    elif k is None or k == "all" or k == n:
        chosen, sampled = np.arange(n, dtype=np.int64), None
        limit = EXACT_SECONDS if k is None else None
        if k is None and run_options.get("progress"):
            import sys
            print(f"bc: exact betweenness, every one of the {n:,} vertices a source "
                  f"(k / --sources K samples K of them)", file=sys.stderr)
    else:
        chosen = sampled = sample_sources(n, int(k), seed)
    directed = bool(store.directed)
    if has_parallel_edges(store):
        here = os.path.dirname(os.path.abspath(store.path))
        with tempfile.TemporaryDirectory(prefix="grstream-bc-",
                                         dir=here if os.access(here, os.W_OK) else None) as tmp:
            with simple_graph(store, tmp, weighted=weight is not None) as simple:
                bc, results = accumulate(simple, chosen, weight is not None, endpoints,
                                         run_options, limit)
    else:
        bc, results = accumulate(store, chosen, weight is not None, endpoints, run_options, limit)
    if sources is not None:  # betweenness_centrality_subset's scaling
        if normalized:
            return (bc / ((n - 1) * (n - 2)) if n > 2 else bc), results
        return (bc if directed else bc / 2), results
    return rescale(bc, n, normalized=normalized, directed=directed, endpoints=endpoints,
                   sampled=sampled), results


def check_estimate(seconds, done, total, limit):
    """Refuse an exact run whose first ``done`` sources took ``seconds``, when all ``total``
    would take longer than ``limit`` seconds."""
    estimate = seconds / done * total
    if estimate <= limit:
        return
    fits = max(1, int(limit * done / seconds))
    raise UsageError(
        f"exact betweenness would take about {_duration(estimate)} ({total:,} sources; the "
        f"first {done:,} took {seconds:.3g} s): sample with k=K / --sources K (about {fits:,} "
        f"sources fit in {_duration(limit)}), or give k='all' / --sources all to run every "
        f"source anyway")


def _duration(seconds):
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


#: a lane batch holds at most this many (sources x edges): the (edges, lanes) temporaries of a
#: pass stay near 8 M elements (64 MB of float64)
LANE_ELEMENTS = 1 << 23
MAX_LANES = 256


def accumulate(store, chosen, weighted, endpoints, run_options, limit=None):
    """Sum over ``chosen`` sources of their dependencies (plus endpoint counts).

    One Session serves every source; sources run in batches as lanes of one program per pass
    (a batch that does not fit the memory budget is halved, down to one run per source). With
    ``limit``, the time of the first batch estimates the whole run (:func:`check_estimate`).
    """
    bc = np.zeros(int(store.num_vertices), dtype=np.float64)
    results = []
    session, run_kwargs = open_session(store, run_options)
    show = bool(run_kwargs.pop("progress", False))
    bar = _sources_bar(len(chosen), len(chosen) == store.num_vertices) if show else None
    per = max(int(store.num_edges), int(store.num_vertices), 1)
    size = max(1, min(MAX_LANES, LANE_ELEMENTS // per))
    start = 0
    with session:
        while start < len(chosen):
            batch = [int(s) for s in chosen[start:start + size]]
            t0 = time.perf_counter()
            try:
                deltas, reached, runs = batch_dependencies(session, batch, weighted, run_kwargs,
                                                           lanes=size > 1)
            except MemoryBudgetError:
                if size == 1:
                    raise
                size //= 2   # the budget holds fewer lanes: retry the batch smaller
                continue
            if limit is not None and start == 0 and len(batch) < len(chosen):
                check_estimate(time.perf_counter() - t0, len(batch), len(chosen), limit)
            results += runs
            for s, delta, mask in zip(batch, deltas, reached):
                if endpoints:  # every reached t != s ends a path from s; s starts one to each
                    delta = delta + mask
                    delta[s] = np.count_nonzero(mask) - 1
                bc += delta
            start += len(batch)
            if bar is not None:
                bar.update(len(batch))
    if bar is not None:
        bar.close()
    return bc, results


def _sources_bar(total, exact):
    """The outer progress bar of a multi-source run: sources done, with an ETA."""
    from tqdm import tqdm
    return tqdm(total=total, desc="bc (exact: every vertex a source)" if exact else "bc",
                unit="source", leave=False)
