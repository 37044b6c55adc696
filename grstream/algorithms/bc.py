"""Betweenness centrality (Brandes), exact or from k sampled sources; unnormalized, directed.

Per source s two GAS programs run: a forward BFS that counts shortest paths (sigma) level by
level, then a backward sweep from the deepest level that accumulates dependencies
``delta(v) = sum over successors w of sigma(v)/sigma(w) * (1 + delta(w))``. Results equal
``networkx.betweenness_centrality(G, normalized=False)`` on a DiGraph of the same edges; with
``k`` sources they are rescaled as NetworkX rescales its sampled estimate.
"""
import os
import tempfile

import numpy as np

import grstream as gr

from ._common import execute, internal_sources
from ..errors import UsageError

NAME = "bc"


class BrandesForward(gr.GASProgram):
    """Level-synchronous BFS from ``source`` counting shortest paths into ``sigma``."""

    vertex = {"level": "int64", "sigma": "float64"}
    gather_reduce = gr.monoid.sum
    gather_dtype = "float64"
    params = {"source": 0}

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

    def __init__(self, level=None, sigma=None, **params):
        super().__init__(**params)
        self._level, self._sigma = level, sigma

    def init(self, v):
        v.level = self._level
        v.sigma = self._sigma
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


def choose_sources(n, k, seed):
    if k is None or k >= n:
        return np.arange(n, dtype=np.int64), None
    if k < 1:
        raise UsageError(f"--sources must be at least 1, not {k}")
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(n, size=k, replace=False)).astype(np.int64)
    return chosen, chosen


def has_parallel_edges(store):
    """True when some (src, dst) pair is stored more than once (one pass over the CSR)."""
    if not store.build.get("options", {}).get("duplicates", True):
        return False
    for i in range(store.num_shards):
        indptr, dst = store.read(i, "out/indptr"), store.read(i, "out/dst")
        if len(dst) < 2:
            continue
        same = dst[1:] == dst[:-1]
        same[indptr[1:-1][(indptr[1:-1] > 0) & (indptr[1:-1] < len(dst))] - 1] = False
        if same.any():
            return True
    return False


def simple_graph(store, directory):
    """A copy of ``store`` with parallel edges merged (the DiGraph NetworkX would build)."""
    from ..io.base import EdgeSource
    from ..partition import build_shards
    from ..store import open as open_store

    def chunks():
        for i in range(store.num_shards):
            lo = int(store.intervals[i])
            indptr = store.read(i, "out/indptr")
            src = np.repeat(np.arange(lo, lo + len(indptr) - 1, dtype=np.int64), np.diff(indptr))
            yield src, store.read(i, "out/dst").astype(np.int64), None

    source = EdgeSource("simple graph of " + str(store.path), chunks, weighted=False,
                        num_vertices=int(store.num_vertices))
    path = build_shards(source, os.path.join(directory, "simple.h5"), duplicates=False,
                        num_shards=store.num_shards, progress=False)
    return open_store(path)


def betweenness(store, k=None, seed=0, sources=None, **run_options):
    """Unnormalized betweenness (float64 per vertex) and a list of engine Results.

    ``k`` samples that many sources (seeded) and rescales like NetworkX; ``sources`` gives them
    explicitly (no rescaling); neither: exact, every vertex a source. Parallel edges count once,
    as in a NetworkX DiGraph of the same edges: a store holding some is first copied without
    them to a temporary store.
    """
    if has_parallel_edges(store):
        here = os.path.dirname(os.path.abspath(store.path))
        with tempfile.TemporaryDirectory(prefix="grstream-bc-",
                                         dir=here if os.access(here, os.W_OK) else None) as tmp:
            with simple_graph(store, tmp) as simple:
                if sources is not None:
                    # the copy has no labels: its ids are this store's internal ids
                    sources = internal_sources(store, sources)
                return betweenness(simple, k=k, seed=seed, sources=sources, **run_options)
    n = int(store.num_vertices)
    sampled = None
    if sources is not None:
        chosen = internal_sources(store, sources)
    else:
        chosen, sampled = choose_sources(n, k, seed)
    bc = np.zeros(n, dtype=np.float64)
    results = []
    for s in chosen:
        fwd = execute(BrandesForward(source=int(s)), store, run_options)
        level, sigma = fwd.values["level"], fwd.values["sigma"]
        depth = int(level.max()) if n else 0
        results.append(fwd)
        if depth < 1:
            continue
        back = execute(BrandesBackward(level=level, sigma=sigma, depth=depth), store,
                       dict(run_options, max_iter=depth))
        results.append(back)
        delta = back.values["delta"]
        delta[s] = 0.0
        bc += delta
    if sampled is not None:
        kk = len(sampled)
        N = n - 1  # pairs counted exclude the endpoints
        if N >= 2:
            scale_source = N / (kk - 1) if kk > 1 else np.nan
            bc *= N / kk
            bc[sampled] *= (scale_source / (N / kk))
    return bc, results


def from_args(store, args, run_options):
    values, results = betweenness(store, k=args.sources, seed=args.seed, **run_options)
    return values, results
