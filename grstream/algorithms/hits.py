"""HITS hubs and authorities by power iteration (NetworkX's ``_hits_python`` iteration):
``a = A^T h``, ``h = A a``, each scaled to maximum 1, until the L1 change of ``h`` is below
``tol``; then each scaled to sum 1 (``normalized``). Every half step is a one-iteration GAS
program, a weighted sum over in-edges (authorities) or out-edges (hubs), run in one session;
the scaling and the stopping rule are vector operations between runs.

``networkx.hits`` finds the same vectors with ARPACK (``scipy.sparse.linalg.svds``) where the
largest singular value of ``A`` is simple; where it is not, the answer is any vector of its
singular space, which :func:`hub_authority` reports by a second iteration from another start
that ends elsewhere (``unique`` False).
"""
from typing import TYPE_CHECKING, Any, Tuple

if TYPE_CHECKING:  # names for the annotations only
    from ..engine import Result
    from ..store import ShardStore

import numpy as np

import grstream as gr

from ._common import journal, open_session, run_in
from .eigenvector import NSTART, WEIGHT, _per_vertex
from .pagerank import effective_weight
from .params import Choice, Param, Positive, declare, max_iter_param

#: L1 distance between the two runs' authorities (each summing to 1) above which the largest
#: singular value is taken as not simple
SAME = 1e-6


class _HalfStep(gr.GASProgram):
    """``s = sum over the edges of t at the other end`` (one iteration)."""

    abstract = True
    vertex = {"s": "float64", "t": "float64"}
    gather_reduce = gr.monoid.sum

    def __init__(self, values=None, **params):
        super().__init__(**params)
        self._values = values

    def init(self, v):
        v.t = 0.0 if self._values is None else self._values
        v.s = 0.0
        return None

    def apply(self, v, acc):
        v.s = acc
        return False


class AuthorityStep(_HalfStep):
    """``a = A^T h``: the hub scores of the in-neighbours."""

    def gather_map(self, src, dst, edge):
        return src.t


class HubStep(_HalfStep):
    """``h = A a``: the authority scores of the out-neighbours."""

    gather_edges = "out"

    def gather_map(self, src, dst, edge):
        return dst.t


class WeightedAuthorityStep(AuthorityStep):
    reads = {"weight"}

    def gather_map(self, src, dst, edge):
        return src.t * edge.weight


class WeightedHubStep(HubStep):
    reads = {"weight"}

    def gather_map(self, src, dst, edge):
        return dst.t * edge.weight


def _iterate(session, runs, run_kwargs, steps, h, max_iter, tol):
    """``(h, a, converged, results)`` of the power iteration from hubs ``h`` (``runs``: the
    journal of its runs)."""
    results, a = [], np.zeros_like(h)
    one = dict(run_kwargs, max_iter=1)
    for _ in range(max_iter):
        last = h
        ra = run_in(session, runs, steps[0](values=h), one)
        rh = run_in(session, runs, steps[1](values=ra.values["s"]), one)
        results += [ra, rh]
        a, h = ra.values["s"], rh.values["s"]
        with np.errstate(divide="ignore", invalid="ignore"):
            h, a = h / h.max(), a / a.max()
        if np.abs(h - last).sum() < tol:
            return h, a, True, results
    return h, a, False, results


def hub_authority(store, max_iter=100, tol=1e-8, nstart=None, normalized=True, weight="weight",
                  **run_options):
    """``(hubs, authorities, converged, unique, results)`` (float64 arrays, internal order):
    the power iteration of the module docstring from ``nstart`` (scaled to sum 1; None: 1/n),
    and whether a second iteration from another start agrees (``unique``)."""
    n = int(store.num_vertices)
    weighted = effective_weight(store, weight) is not None
    steps = (WeightedAuthorityStep, WeightedHubStep) if weighted else (AuthorityStep, HubStep)
    start = (np.full(n, 1.0 / n) if nstart is None
             else _per_vertex(store, nstart, "nstart", normalise=True))
    run_options = dict(run_options)
    runs = journal(store, run_options)   # (checkpoints: grstream/engine/journal.py)
    session, run_kwargs = open_session(store, run_options)
    with session:
        h, a, converged, results = _iterate(session, runs, run_kwargs, steps, start, max_iter, tol)
        unique = True
        if converged:
            other = np.random.default_rng(0).random(n) + 0.5
            _, a2, done, more = _iterate(session, runs, run_kwargs, steps, other / other.sum(),
                                         max_iter, tol)
            results += more
            unique = done and np.abs(a / a.sum() - a2 / a2.sum()).sum() <= SAME
    if normalized:
        h, a = h / h.sum(), a / a.sum()
    return h, a, converged, unique, results


@declare("hits", Param("scores", Choice("authorities", "hubs"), "authorities",
                       "which scores to return"),
         max_iter_param(100), Param("tol", Positive(), 1e-8, "stop when the L1 change of the "
                                    "hub scores (maximum 1) is below tol, > 0"),
         NSTART, WEIGHT,
         summary=lambda store, values, results:
         f"converged={bool(len(values)) and not np.isnan(values).any()}")
def hits(store: "ShardStore", scores: Any, max_iter: Any, tol: Any, nstart: Any, weight: Any,
         **run_options: Any) -> Tuple[np.ndarray, "Result"]:
    """HITS authority (or hub) scores summing to 1 (float64) and the engine Results of the
    half steps; NaN everywhere when ``tol`` was not met within ``max_iter`` iterations."""
    h, a, converged, _, results = hub_authority(store, max_iter, tol, nstart, True, weight,
                                                **run_options)
    values = a if scores == "authorities" else h
    return (values if converged else np.full_like(values, np.nan)), results
