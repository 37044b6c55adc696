"""PageRank with NetworkX's semantics: damping, personalization, nstart, dangling and edge
weights as in ``networkx.pagerank``; parallel edges count as a MultiDiGraph counts them (their
weights add up). The default stopping rule is cuGraph's (L1 change < tol), which bounds the
error at every size; NetworkX's (L1 change < n tol) is kept as ``stop="networkx"``.
"""
from typing import TYPE_CHECKING, Any, Tuple

if TYPE_CHECKING:  # names for the annotations only
    from ..engine import Result
    from ..store import ShardStore

import numpy as np

import grstream as gr

from ._checks import vertex_vector
from ._common import execute, internal_source
from .params import Choice, Fraction, Kind, Param, Positive, declare, max_iter_param
from ..errors import UsageError, plain

#: stopping rules: name -> the threshold on the L1 change of one iteration, given tol and n
STOP_RULES = {"l1": lambda tol, n: tol, "networkx": lambda tol, n: n * tol}
#: ways to compute it: power iteration (the default) or residual pushes (pagerank_delta.py)
METHODS = ("power", "delta")
#: the declared parameters the programs also hold (their ``params`` defaults come from here)
DAMPING = Param("damping", Fraction(), 0.85, "probability of following an edge (NetworkX's "
                "alpha), in [0, 1]")
TOL = Param("tol", Positive(), 1e-6, "tolerance of the stopping rule, > 0", doc=(
    "With ``method='delta'`` the proven L1 distance to the exact ranks."))


class PageRank(gr.GASProgram):
    """Power iteration ``x' = d (A^T D^-1 x + dangling/n) + (1-d)/n`` until sum|x'-x| < tol.

    Uniform teleport and dangling distribution, unweighted: the program :func:`pagerank` runs
    when no option needs more state (16 bytes per vertex).
    """

    vertex = {"rank": "float64", "delta": "float64"}
    reads = {"out_degree"}
    gather_reduce = gr.monoid.sum
    activate = "all"
    params = {"damping": DAMPING.default, "tol": TOL.default}
    aggregates = {"dangling": gr.monoid.sum, "err": gr.monoid.sum}
    output = "rank"

    def __init__(self, nstart=None, **params):
        super().__init__(**params)
        self._nstart = nstart

    def init(self, v):
        start = getattr(self, "_nstart", None)
        v.rank = 1.0 / max(self.num_vertices, 1) if start is None else start
        v.delta = 0.0

    def gather_map(self, src, dst, edge):
        return src.rank / src.out_degree

    def apply(self, v, acc):
        n = self.num_vertices
        new = self.damping * (acc + self.dangling / n) + (1.0 - self.damping) / n
        v.delta = gr.abs(new - v.rank)
        v.rank = new
        return v.delta > 0.0

    def aggregate_dangling(self, v):
        return gr.where(v.out_degree == 0, v.rank, 0.0)

    def aggregate_err(self, v):
        return v.delta

    def converged(self):
        return self.iteration > 0 and self.err < self.tol


class PersonalizedPageRank(PageRank):
    """``x' = d (A^T (x inv_out) + dangling dang) + (1-d) tele`` with per-vertex teleport
    (``tele``) and dangling (``dang``) distributions; ``inv_out`` is 1 / out-degree, 0 for a
    dangling vertex (40 bytes per vertex)."""

    vertex = {"rank": "float64", "delta": "float64", "inv_out": "float64", "tele": "float64",
              "dang": "float64"}
    reads = ()

    def __init__(self, inv_out=None, tele=None, dang=None, nstart=None, **params):
        super().__init__(nstart=nstart, **params)
        self._vectors = {"inv_out": inv_out, "tele": tele, "dang": dang}

    def init(self, v):
        super().init(v)
        vectors = getattr(self, "_vectors", {})
        if vectors.get("inv_out") is None:
            raise UsageError(f"{type(self).__name__} needs inv_out (1 / out-degree per vertex)")
        uniform = 1.0 / max(self.num_vertices, 1)
        for field in ("inv_out", "tele", "dang"):
            given = vectors.get(field)
            setattr(v, field, uniform if given is None else given)

    def gather_map(self, src, dst, edge):
        return src.rank * src.inv_out

    def apply(self, v, acc):
        new = self.damping * (acc + self.dangling * v.dang) + (1.0 - self.damping) * v.tele
        v.delta = gr.abs(new - v.rank)
        v.rank = new
        return v.delta > 0.0

    def aggregate_dangling(self, v):
        return gr.where(v.inv_out == 0.0, v.rank, 0.0)


class WeightedPageRank(PersonalizedPageRank):
    """:class:`PersonalizedPageRank` along weighted edges: ``inv_out`` is 1 / the sum of a
    vertex's out-edge weights."""

    reads = {"weight"}

    def gather_map(self, src, dst, edge):
        return src.rank * src.inv_out * edge.weight


def out_weight_sums(store, weight):
    """Per-vertex sum of out-edge ``weight`` (float64), streaming one shard at a time; weights
    must be finite and non-negative."""
    sums = np.zeros(int(store.num_vertices), dtype=np.float64)
    for i in range(store.num_shards):
        lo = int(store.intervals[i])
        indptr = store.read(i, "out/indptr").astype(np.int64)
        w = store.read(i, f"out/{weight}").astype(np.float64)
        if w.size and not (np.all(np.isfinite(w)) and w.min() >= 0):
            raise UsageError(f"pagerank needs finite non-negative weights: shard {i} has "
                             f"{plain(w[~(np.isfinite(w) & (w >= 0))][0])}")
        rows = np.flatnonzero(np.diff(indptr))
        if rows.size:
            sums[lo + rows] = np.add.reduceat(w, indptr[rows])
    return sums


def effective_weight(store, weight):
    """The edge property PageRank uses, or None: ``"weight"`` (the default, as in NetworkX) means
    the store's weights when it has them and 1 otherwise (stores hold no other property)."""
    if weight is None:
        return None
    if weight != "weight":
        raise UsageError(f"weight must be 'weight' or None, not {weight!r}: a store's only edge "
                         f"property is 'weight' (it has: {', '.join(store.edge_props) or 'none'})")
    return weight if weight in store.edge_props else None


def inverse_out(store, weight):
    """1 / out-degree (or out-weight sum under ``weight``) per vertex, 0 for a dangling one."""
    out = store.out_degree().astype(np.float64) if weight is None else out_weight_sums(store, weight)
    return np.divide(1.0, out, out=np.zeros_like(out), where=out != 0)


def pagerank_program(store, **params):
    """The program :func:`pagerank` runs for ``params`` (any of its parameters; checked, and
    defaulted, by its declaration)."""
    values = pagerank.declaration.check(store, params)
    return _program(store, *(values[k] for k in ("damping", "personalization", "tol", "nstart",
                                                  "weight", "dangling", "stop")))


def _program(store, damping, personalization, tol, nstart, weight, dangling, stop):
    n = int(store.num_vertices)
    threshold = STOP_RULES[stop](tol, n)
    vec = {name: None if val is None else vertex_vector(store, val, name, internal_source)
           for name, val in (("personalization", personalization), ("nstart", nstart),
                             ("dangling", dangling))}
    weight = effective_weight(store, weight)
    if weight is None and personalization is None and dangling is None:
        return PageRank(nstart=vec["nstart"], damping=damping, tol=threshold)
    inv_out = inverse_out(store, weight)
    tele = vec["personalization"]
    dang = tele if dangling is None else vec["dangling"]
    cls = PersonalizedPageRank if weight is None else WeightedPageRank
    return cls(inv_out=inv_out, tele=tele, dang=dang, nstart=vec["nstart"], damping=damping,
               tol=threshold)


VECTOR = ("a dict {vertex: value} (missing vertices 0) or an array in vertex order, "
          "normalised to sum 1 as NetworkX does")


@declare(
    "pagerank",
    DAMPING,
    Param("personalization", Kind(), None, "teleport distribution", none="uniform", doc=VECTOR),
    max_iter_param(100),
    TOL,
    Param("nstart", Kind(), None, "starting ranks", none="uniform", doc=VECTOR),
    Param("weight", Kind(), "weight", "edge property used as weight: 'weight' uses the store's "
          "weights when it has them, else 1 (as NetworkX); None ignores weights"),
    Param("dangling", Kind(), None, "where a dangling vertex's rank goes",
          none="the personalization", doc=VECTOR),
    Param("stop", Choice(*STOP_RULES), "l1", "stopping rule", flag=None, doc=(
        "``'l1'``: stop when sum |x' - x| < tol, which keeps the error within about "
        "``tol * d / (1 - d)`` at any size; ``'networkx'``: sum |x' - x| < n tol, NetworkX's "
        "rule, which stops after one iteration once n > 2 / tol.")),
    Param("method", Choice(*METHODS), "power", "power iteration, or delta (residual pushes, "
          "stops within a proven L1 distance {tol} of the exact ranks)", doc=(
              "``'delta'`` (grstream/algorithms/pagerank_delta.py): only vertices whose pending "
              "mass is large against their rank push it on, so iterations cost in proportion "
              "to the vertices still moving. It takes no ``nstart``, and a ``dangling`` "
              "distribution only when it equals the personalization.")),
    summary=lambda store, values, results: f"converged={results[0].converged}")
def pagerank(store: "ShardStore", damping: Any, personalization: Any, max_iter: Any, tol: Any,
             nstart: Any, weight: Any, dangling: Any, stop: Any, method: Any,
             **run_options: Any) -> Tuple[np.ndarray, "Result"]:
    """PageRank scores (float64, summing to 1) and the engine Result."""
    run_options = dict(run_options, max_iter=max_iter)
    if method == "delta":
        from .pagerank_delta import delta_pagerank
        return delta_pagerank(store, damping, personalization, tol, nstart, weight, dangling,
                              STOP_RULES[stop](tol, int(store.num_vertices)), run_options)
    program = _program(store, damping, personalization, tol, nstart, weight, dangling, stop)
    result = execute(program, store, run_options)
    return result.values["rank"], result
