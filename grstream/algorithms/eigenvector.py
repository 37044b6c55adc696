"""Eigenvector and Katz centrality: power iterations with NetworkX's semantics
(``networkx.eigenvector_centrality`` / ``networkx.katz_centrality``), gathering over in-edges
(the left eigenvector, as NetworkX takes it for a directed graph).

Eigenvector centrality normalises every iterate by its Euclidean norm, a sum over all vertices
that is known only after every vertex has applied. The program keeps the iterate unnormalised
(``y``) and reduces its squared norm as an aggregate; the next iteration divides by it. The
change between normalised iterates is therefore known one iteration late: a run that stops at
engine iteration ``t`` reports iterate ``t - 1`` (kept in ``x``), NetworkX's answer when its own
iteration ``t - 1`` met the tolerance.
"""
from typing import TYPE_CHECKING, Any, Tuple

if TYPE_CHECKING:  # names for the annotations only
    from ..engine import Result
    from ..store import ShardStore

import numpy as np

import grstream as gr

from ._checks import vertex_vector
from ._common import execute, internal_source
from .params import Flag, Kind, Param, Positive, Real, declare, max_iter_param
from .pagerank import effective_weight
from ..errors import UsageError


class EigenvectorCentrality(gr.GASProgram):
    """``y' = (A^T + I) x``, ``x = y / |y|_2``, until ``sum |x_t - x_(t-1)| < n tol``."""

    vertex = {"x": "float64", "y": "float64", "d": "float64"}
    gather_reduce = gr.monoid.sum
    activate = "all"
    params = {"tol": 1e-6}
    aggregates = {"sq": gr.monoid.sum, "err": gr.monoid.sum}
    output = "x"

    def __init__(self, nstart=None, **params):
        super().__init__(**params)
        self._nstart = nstart

    def init(self, v):
        start = getattr(self, "_nstart", None)
        v.y = 1.0 / max(self.num_vertices, 1) if start is None else start
        v.x = 0.0
        v.d = 0.0

    def gather_map(self, src, dst, edge):
        return src.y

    def apply(self, v, acc):
        # iteration 1 starts from the start vector itself (NetworkX normalises it by its sum)
        s = gr.where(self.iteration == 1, 1.0, 1.0 / gr.sqrt(self.sq))
        last = v.y * s
        v.d = gr.abs(last - v.x)
        v.x = last
        v.y = last + acc * s
        return True

    def aggregate_sq(self, v):
        return v.y * v.y

    def aggregate_err(self, v):
        return v.d

    def converged(self):
        # err compares iterates t-1 and t-2: there are two from iteration 2 on
        return self.iteration >= 2 and self.err < self.num_vertices * self.tol


class WeightedEigenvectorCentrality(EigenvectorCentrality):
    """:class:`EigenvectorCentrality` with edge weights (``A`` holds the weights)."""

    reads = {"weight"}

    def gather_map(self, src, dst, edge):
        return src.y * edge.weight


class KatzCentrality(gr.GASProgram):
    """``x' = alpha A^T x + beta`` until ``sum |x' - x| < n tol``; ``beta`` per vertex."""

    vertex = {"x": "float64", "beta": "float64", "d": "float64"}
    gather_reduce = gr.monoid.sum
    activate = "all"
    params = {"alpha": 0.1, "tol": 1e-6}
    aggregates = {"err": gr.monoid.sum}
    output = "x"

    def __init__(self, beta=1.0, nstart=None, **params):
        super().__init__(**params)
        self._beta, self._nstart = beta, nstart

    def init(self, v):
        start = getattr(self, "_nstart", None)
        v.x = 0.0 if start is None else start
        v.beta = getattr(self, "_beta", 1.0)
        v.d = 0.0

    def gather_map(self, src, dst, edge):
        return src.x

    def apply(self, v, acc):
        new = self.alpha * acc + v.beta
        v.d = gr.abs(new - v.x)
        v.x = new
        return True

    def aggregate_err(self, v):
        return v.d

    def converged(self):
        return self.iteration >= 1 and self.err < self.num_vertices * self.tol


class WeightedKatzCentrality(KatzCentrality):
    """:class:`KatzCentrality` with edge weights."""

    reads = {"weight"}

    def gather_map(self, src, dst, edge):
        return src.x * edge.weight


def _per_vertex(store, values, name, normalise):
    """A float64 vector from a dict keyed by vertex labels (every vertex given) or an array."""
    n = int(store.num_vertices)
    if normalise:
        return vertex_vector(store, values, name, internal_source)
    if isinstance(values, dict):
        vec = np.full(n, np.nan)
        for key, x in values.items():
            try:
                vec[internal_source(store, key)] = Real().check(f"{name}[{key!r}]", x)
            except UsageError as exc:
                raise UsageError(f"{name}: {exc}") from None
        if np.isnan(vec).any():
            raise UsageError(f"{name} must have a value for every vertex")
        return vec
    vec = np.asarray(values, dtype=np.float64)
    if vec.shape != (n,) or not np.isfinite(vec).all():
        raise UsageError(f"{name} must have one finite number per vertex ({n})")
    return vec


WEIGHT = Param("weight", Kind(), None, "edge property used as weight: 'weight' uses the "
               "store's weights when it has them; None counts every edge as 1")
NSTART = Param("nstart", Kind(), None, "starting values: a dict {{vertex: value}} or an array "
               "in vertex order", none="NetworkX's start")


@declare("eigenvector", max_iter_param(100), Param("tol", Positive(), 1e-6, "stop when the "
         "L1 change of the normalised vector is below n tol, > 0"), NSTART, WEIGHT,
         summary=lambda store, values, results: f"converged={results[0].converged}")
def eigenvector_centrality(store: "ShardStore", max_iter: Any, tol: Any, nstart: Any,
                           weight: Any, **run_options: Any) -> Tuple[np.ndarray, "Result"]:
    """Eigenvector centrality (float64, Euclidean norm 1) and the engine Result, as NetworkX's
    power iteration computes it: ``max_iter`` counts NetworkX's iterations (the run takes one
    more, see the module docstring); ``result.converged`` is False when ``tol`` was not met."""
    start = None if nstart is None else _per_vertex(store, nstart, "nstart", normalise=True)
    cls = (EigenvectorCentrality if effective_weight(store, weight) is None
           else WeightedEigenvectorCentrality)
    result = execute(cls(nstart=start, tol=tol), store,
                     dict(run_options, max_iter=max_iter + 1))
    return result.values["x"], result


@declare("katz", Param("alpha", Real(), 0.1, "attenuation factor"),
         Param("beta", Kind(), 1.0, "weight of each vertex's immediate neighbourhood: a number, "
               "or a dict/array with a value for every vertex"),
         max_iter_param(1000), Param("tol", Positive(), 1e-6, "stop when the L1 change is "
                                     "below n tol, > 0"),
         NSTART, Param("normalized", Flag(), True, "scale the result to Euclidean norm 1"),
         WEIGHT, summary=lambda store, values, results: f"converged={results[0].converged}")
def katz_centrality(store: "ShardStore", alpha: Any, beta: Any, max_iter: Any, tol: Any,
                    nstart: Any, normalized: Any, weight: Any,
                    **run_options: Any) -> Tuple[np.ndarray, "Result"]:
    """Katz centrality (float64) and the engine Result, as :func:`networkx.katz_centrality`;
    ``result.converged`` is False when ``tol`` was not met within ``max_iter`` iterations."""
    b = (Real().check("beta", beta) if not isinstance(beta, (dict, list, tuple, np.ndarray))
         else _per_vertex(store, beta, "beta", normalise=False))
    start = None if nstart is None else _per_vertex(store, nstart, "nstart", normalise=False)
    cls = KatzCentrality if effective_weight(store, weight) is None else WeightedKatzCentrality
    result = execute(cls(beta=b, nstart=start, alpha=alpha, tol=tol), store,
                     dict(run_options, max_iter=max_iter))
    x = result.values["x"]
    if normalized and result.converged:
        norm = float(np.hypot.reduce(x)) if len(x) else 0.0
        x = x / norm if norm else x
    return x, result
