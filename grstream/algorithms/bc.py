"""Betweenness centrality (Brandes) with ``networkx.betweenness_centrality``'s options: exact or
from ``k`` sampled sources (NetworkX's sample and rescaling), ``normalized``, ``endpoints``,
``weight``; undirected stores scaled as NetworkX scales undirected graphs.

Per source s GAS programs run on one Session shared by every source (:func:`source_dependencies`;
on small graphs many sources at once, as lanes of one run per pass: :func:`batch_dependencies`).
First the levels: unweighted, a BFS; weighted, SSSP's distances, whose tight edges
(``dist[u] + w == dist[v]``) form the shortest-path DAG, and the DAG levels (most tight edges from
s; :class:`DagLevels`). Then two passes whose activation is scheduled by level
(``activate = "schedule"``, docs/PROGRAMS.md): the forward pass counts shortest paths (sigma),
level 1 first, each vertex summing its predecessors' counts over its in-edges once; the
backward pass accumulates dependencies from the deepest level up, each vertex over its
out-edges once: ``delta(v) = sigma(v) * sum over successors w of ratio(w)``, ``ratio(w) = (1 +
delta(w)) / sigma(w)``. So each pass walks each edge once per source, Brandes' work bound, and
holds nothing per edge beyond one shard's gather. Parallel edges count once (the lightest when
weighted), as NetworkX's betweenness counts them on a MultiDiGraph: a store holding some is
copied without them first.
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

from ._common import internal_sources, journal, open_session, run_in
from ._simple import has_parallel_edges, simple_graph
from .bfs import BFS
from .params import Count, CountOr, Flag, Kind, Param, Seed, declare
from .sssp import SSSP, FromDistances
from ..errors import MemoryBudgetError, UsageError, plain


def _turns(level, first, out):
    """The schedule of a pass over levels 1.. (vertices of level 0 -- the source -- and the
    unreached never run): level ``l`` in iteration ``l`` from ``first`` None, else in iteration
    ``first + 1 - l`` (the deepest level ``first`` first), written into ``out`` (int32)."""
    level = np.asarray(level)
    if first is None:   # (level 0, the source, and -1, unreached: 0)
        return np.maximum(level, 0, out=out, dtype=np.int32)
    np.subtract(np.asarray(first) + 1, level, out=out, dtype=np.int32)
    np.copyto(out, 0, where=level <= 0)
    return out


class BrandesForward(gr.GASProgram):
    """Shortest-path counts from ``source`` given its BFS ``level``\\ s, one level per iteration:
    a vertex of level l sums ``sigma`` over its in-edges, where only the predecessors (level
    l - 1) count already (every other in-neighbour is of level l or more, still 0)."""

    vertex = {"sigma": "float64", "turn": "int32"}
    gather_reduce = gr.monoid.sum
    gather_dtype = "float64"
    activate = "schedule"
    schedule = "turn"
    params = {"source": 0}
    vertex_params = ("source",)   # an internal vertex id: checked against 0..n-1
    output = "sigma"

    def __init__(self, level=None, **params):
        super().__init__(**params)
        self._level = level

    def init(self, v):
        # in the state's own entries (no temporaries of n values for the engine to copy in)
        sigma = v.entries("sigma")
        sigma.fill(0.0)
        sigma[v.id_mask(self.source)] = 1.0
        _turns(self._level, None, v.entries("turn"))

    def gather_map(self, src, dst, edge):
        return src.sigma

    def apply(self, v, acc):
        v.sigma = acc
        return acc > 0.0


class BrandesBackward(gr.GASProgram):
    """Dependencies from the deepest level up, one level per iteration: a vertex sums its
    out-neighbours' ``ratio`` over its out-edges, where only its successors (one level
    deeper) have one already (every other out-neighbour is no deeper, still 0)."""

    vertex = {"sigma": "float64", "delta": "float64", "ratio": "float64", "turn": "int32"}
    gather_edges = "out"
    gather_reduce = gr.monoid.sum
    gather_dtype = "float64"
    activate = "schedule"
    schedule = "turn"
    output = "delta"

    def __init__(self, level=None, sigma=None, dist=None, **params):
        super().__init__(**params)
        self._given = {"level": level, "sigma": sigma, "dist": dist}

    def init(self, v):
        for field in type(self).spec.vertex_fields:
            if field in ("sigma", "dist"):
                setattr(v, field, self._given[field])
        level = np.asarray(self._given["level"])
        _turns(level, level.max(axis=0, initial=0), v.entries("turn"))   # (in lanes: each lane's depth)
        v.delta = 0.0
        v.ratio = 0.0

    def gather_map(self, src, dst, edge):
        return dst.ratio

    def apply(self, v, acc):
        v.delta = v.sigma * acc
        v.ratio = (1.0 + v.delta) / v.sigma
        return acc > 0.0


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


class WeightedBrandesForward(BrandesForward):
    """:class:`BrandesForward` over the shortest-path DAG of weighted distances and its levels
    (:class:`DagLevels`): only tight in-edges count."""

    vertex = {"dist": "float64", "sigma": "float64", "turn": "int32"}
    reads = {"weight"}

    def __init__(self, dist=None, level=None, **params):
        super().__init__(level=level, **params)
        self._dist = dist

    def init(self, v):
        super().init(v)
        v.dist = self._dist

    def gather_map(self, src, dst, edge):
        tight = (src.dist + edge.weight == dst.dist) & (src.dist < dst.dist)
        return gr.where(tight, src.sigma, 0.0)


class WeightedBrandesBackward(BrandesBackward):
    """:class:`BrandesBackward` over the shortest-path DAG of weighted distances: only tight
    out-edges count."""

    vertex = {"dist": "float64", "sigma": "float64", "delta": "float64", "ratio": "float64",
              "turn": "int32"}
    reads = {"weight"}

    def gather_map(self, src, dst, edge):
        tight = (src.dist + edge.weight == dst.dist) & (src.dist < dst.dist)
        return gr.where(tight, dst.ratio, 0.0)


def source_dependencies(store, source, weighted=False, **run_options):
    """Brandes' dependencies of every vertex on the internal vertex ``source`` (float64, 0 at
    the source), the mask of the vertices it reaches (itself included) and the engine Results."""
    runs = journal(store, run_options)   # (checkpoints: grstream/engine/journal.py)
    session, run_kwargs = open_session(store, run_options)
    run_kwargs.pop("progress", None)
    with session:
        (delta,), (reached,), results = batch_dependencies(session, [int(source)], weighted,
                                                           run_kwargs, runs)
    return delta, reached, results


def batch_dependencies(session, batch, weighted, run_kwargs, runs):
    """:func:`source_dependencies` of every source of ``batch`` on an open ``session``: the
    levels, then the forward and the backward pass, each pass as lanes of one run where the
    batch has several sources (Session.run_lanes), else a run; ``runs``: the algorithm's
    journal (grstream/engine/journal.py)."""
    def run(programs):
        if len(programs) > 1 and session.can_run_lanes(type(programs[0])):
            return runs.run(programs, lambda extra: session.run_lanes(
                programs, max_iter=run_kwargs.get("max_iter"), **extra), whole=True,
                callback=run_kwargs.get("callback"))
        return [run_in(session, runs, p, run_kwargs) for p in programs]
    if weighted:
        dists = run([SSSP(source=s) for s in batch])
        dist = [r.values["dist"] for r in dists]
        levels = run([DagLevels(dist=d, source=s) for d, s in zip(dist, batch)])
        level = [r.values["level"] for r in levels]
        fwds = run([WeightedBrandesForward(dist=d, level=lv, source=s)
                    for d, lv, s in zip(dist, level, batch)])
        results = dists + levels + fwds
    else:
        levels = run([BFS(source=s) for s in batch])
        level = [r.values["level"] for r in levels]
        fwds = run([BrandesForward(level=lv, source=s) for lv, s in zip(level, batch)])
        results = levels + fwds
    back = WeightedBrandesBackward if weighted else BrandesBackward
    backs = run([back(level=lv, sigma=f.values["sigma"], dist=f.values.get("dist"))
                 for lv, f in zip(level, fwds)])
    deltas = []
    for s, b in zip(batch, backs):
        delta = b.values["delta"]
        delta[s] = 0.0
        deltas.append(delta)
    return deltas, [lv >= 0 for lv in level], results + backs


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
    # checkpoints (grstream/engine/journal.py) name the store given, also where the runs go
    # over a simple graph made of it
    run_options = dict(run_options)
    runs = journal(store, run_options)
    if has_parallel_edges(store):
        here = os.path.dirname(os.path.abspath(store.path))
        with tempfile.TemporaryDirectory(prefix="grstream-bc-",
                                         dir=here if os.access(here, os.W_OK) else None) as tmp:
            with simple_graph(store, tmp, weighted=weight is not None) as simple:
                bc, results = accumulate(simple, chosen, weight is not None, endpoints,
                                         run_options, limit, runs)
    else:
        bc, results = accumulate(store, chosen, weight is not None, endpoints, run_options, limit,
                                 runs)
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


#: sources run as lanes of one run per pass while (vertices + edges) x lanes stays within this
#: many elements: on small graphs a run's set-up costs more than its edges, and lanes sweep the
#: union of the lanes' levels; beyond, one source after the other (Brandes' bound)
LANE_ELEMENTS = 1 << 20
MAX_LANES = 256


def accumulate(store, chosen, weighted, endpoints, run_options, limit=None, runs=None):
    """Sum over ``chosen`` sources of their dependencies (plus endpoint counts).

    One Session serves every source; on small graphs sources run in batches as lanes (a batch
    the memory budget does not hold runs one source after the other). With ``limit``, the
    time of the first batch (at least one second of sources or four sources) estimates the
    whole run (:func:`check_estimate`). Under ranks (``comm``) each rank runs its share of the
    sources alone over the whole store, and the sums are added (grstream/distributed/sources.py).
    ``runs``: the journal of the runs (checkpoints, grstream/engine/journal.py; default: one of
    ``run_options``; a rank running its share alone keeps its own, Journal.alone).
    """
    run_options = dict(run_options)
    if runs is None:   # (checkpoints: grstream/engine/journal.py)
        runs = journal(store, run_options)
    from ..distributed.sources import spread
    spreading = spread(run_options.get("comm"), store, chosen, run_options, lambda mine, options:
                       accumulate(store, mine, weighted, endpoints, options, limit, runs.alone()))
    if spreading is not None:
        return spreading
    bc = np.zeros(int(store.num_vertices), dtype=np.float64)
    results = []
    session, run_kwargs = open_session(store, run_options)
    show = bool(run_kwargs.pop("progress", False))
    bar = _sources_bar(len(chosen), len(chosen) == store.num_vertices) if show else None
    per = int(store.num_edges) + int(store.num_vertices)
    size = max(1, min(MAX_LANES, LANE_ELEMENTS // max(per, 1)))
    start, t0 = 0, time.perf_counter()
    with session:
        while start < len(chosen):
            batch = [int(s) for s in chosen[start:start + size]]
            try:
                deltas, reached, done = batch_dependencies(session, batch, weighted, run_kwargs,
                                                           runs)
            except MemoryBudgetError:
                if size == 1:
                    raise
                size = 1   # the budget holds no lanes: one source after the other
                continue
            results += done
            for s, delta, mask in zip(batch, deltas, reached):
                if endpoints:  # every reached t != s ends a path from s; s starts one to each
                    delta = delta + mask
                    delta[s] = np.count_nonzero(mask) - 1
                bc += delta
            start += len(batch)
            if bar is not None:
                bar.update(len(batch))
            seconds = time.perf_counter() - t0
            if limit is not None and start < len(chosen) and (
                    start >= ESTIMATE_SOURCES or seconds >= 1.0):
                check_estimate(seconds, start, len(chosen), limit)
                limit = None
    if bar is not None:
        bar.close()
    return bc, results


#: an exact run's estimate is made after this many sources (or after the first second)
ESTIMATE_SOURCES = 4


def _sources_bar(total, exact):
    """The outer progress bar of a multi-source run: sources done, with an ETA."""
    from tqdm import tqdm
    return tqdm(total=total, desc="bc (exact: every vertex a source)" if exact else "bc",
                unit="source", leave=False)
