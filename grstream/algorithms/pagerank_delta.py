"""Delta (residual) PageRank: ``pagerank(..., method="delta")``.

Every vertex holds a rank and a residual, the mass it received and has not passed on. A vertex
whose residual is large against its rank *pushes* it: the residual joins its rank and
``damping * residual`` is shared among its out-edges (their weights); the others keep
accumulating. In the engine that is a pull program with ``gather_from = "changed"``: a vertex
gathers only the shares its in-neighbours pushed in the previous iteration, and only the
out-neighbours of pushing vertices are active, so an iteration costs in proportion to the
vertices that still move.

Why the result is the power method's fixed point. Let ``P`` be the transition matrix *without*
the dangling vertices' columns (``A^T D^-1``) and ``y = (1 - d) (I - d P)^-1 t`` with ``t`` the
teleport distribution. The power method's ``x = d (P x + (s.x) t) + (1 - d) t`` (``s``: dangling
indicator; dangling mass goes where the teleport goes) is ``x = c (I - d P)^-1 t`` for a scalar c,
so ``x = y / sum(y)``: dangling mass needs no message at all, only the final normalisation.
Pushing keeps ``y = rank + (I - d P)^-1 r`` for the residual vector r (the residuals plus the
shares in flight), whichever vertices push, so ``0 <= y - rank`` and
``|y - rank|_1 <= |r|_1 / (1 - d)``; normalising, ``|x - rank/|rank||_1 <= 2 |r|_1 / ((1 - d)
|rank|_1)``. The run stops when that bound is below the tolerance (the aggregates ``total`` and
``pending`` give it every iteration), so the ranks are within L1 ``tol`` of the exact PageRank,
which the power method approaches from the other side.

Threshold: a vertex pushes when its residual exceeds ``eps`` times its rank, with ``eps`` chosen
so that an empty frontier (no vertex above it) also satisfies the bound: then every residual is
at most ``eps (rank + residual)``, so ``|r| <= eps/(1-eps) |rank|``, and ``eps = a / (1 + a)``
with ``a = tol (1 - d) / 2`` makes that ``a |rank|``. :func:`run_delta` can also run in phases
(:func:`schedule`: thresholds PHASE_FACTOR apart, each phase to an empty frontier, the last at the
final threshold); on RMAT that did not pay (docs/BENCHMARKS.md), so ``pagerank`` runs one.
"""
import numpy as np

import grstream as gr

from ..errors import UsageError
from .pagerank import DAMPING, TOL, effective_weight, inverse_out


class DeltaPageRank(gr.GASProgram):
    """Residual PageRank, uniform teleport and dangling, unweighted (24 bytes per vertex)."""

    vertex = {"rank": "float64", "resid": "float64", "sent": "float64"}
    reads = {"out_degree"}
    gather_reduce = gr.monoid.sum
    gather_from = "changed"
    params = {"damping": DAMPING.default, "tol": TOL.default, "eps": 0.0}
    aggregates = {"total": gr.monoid.sum, "pending": gr.monoid.sum, "sending": gr.monoid.sum}
    output = "rank"

    def __init__(self, start=None, **params):
        super().__init__(**params)
        self._start = start

    def init(self, v):
        # the first push happens here: every vertex above the threshold moves its residual into
        # its rank and sends it, and is the seed; the others wait
        start = getattr(self, "_start", None)
        rank, r = (0.0, self.teleport(v)) if start is None else start
        push = r > self.eps * (rank + r)
        v.rank = np.where(push, rank + r, rank)
        v.sent = np.where(push, r, 0.0)
        v.resid = np.where(push, 0.0, r)
        # rank mass of the vertices that send (non-dangling) before and after this push: its
        # growth from one iteration to the next is the mass pushed, d times it is in flight
        sends = self.sends(v)
        self._sending = {-1: float(np.sum(np.where(sends, rank, 0.0))),
                         0: float(np.sum(np.where(sends, v.rank, 0.0)))}
        return push

    def sends(self, v):
        return v.out_degree > 0

    def teleport(self, v):
        return (1.0 - self.damping) / max(self.num_vertices, 1)

    def gather_map(self, src, dst, edge):
        return src.sent / src.out_degree

    def apply(self, v, acc):
        r = v.resid + self.damping * acc
        push = r > self.eps * (v.rank + r)
        v.rank = gr.where(push, v.rank + r, v.rank)
        v.sent = gr.where(push, r, 0.0)
        v.resid = gr.where(push, 0.0, r)
        return push

    def aggregate_total(self, v):
        return v.rank

    def aggregate_pending(self, v):
        return v.resid

    def aggregate_sending(self, v):
        return gr.where(v.out_degree > 0, v.rank, 0.0)

    def bound(self):
        """The error bound after the iteration that ended: the residuals held plus the shares
        pushed in it, which the next iteration delivers (``damping`` times the growth of the
        sending vertices' rank mass; a dangling vertex's push delivers nothing, its mass is in
        its rank). apply does not read the iteration, so push plans may run the program."""
        k, sending = self.iteration, float(self.sending)
        history = self._sending
        history[k] = sending
        before = history.get(k - 1)
        flying = 0.0 if before is None else self.damping * max(sending - before, 0.0)
        return error_bound(self.pending + flying, self.total, self.damping)

    def converged(self):
        return self.bound() <= self.tol


class PersonalizedDeltaPageRank(DeltaPageRank):
    """With a teleport distribution ``tele`` (dangling mass follows it) and ``inv_out`` =
    1 / out-degree (0 for a dangling vertex)."""

    vertex = {"rank": "float64", "resid": "float64", "sent": "float64", "inv_out": "float64",
              "tele": "float64"}
    reads = ()

    def __init__(self, inv_out=None, tele=None, start=None, **params):
        super().__init__(start=start, **params)
        self._vectors = {"inv_out": inv_out, "tele": tele}

    def init(self, v):
        vectors = getattr(self, "_vectors", {})
        if vectors.get("inv_out") is None:
            raise UsageError(f"{type(self).__name__} needs inv_out (1 / out-degree per vertex)")
        v.inv_out = vectors["inv_out"]
        uniform = 1.0 / max(self.num_vertices, 1)
        v.tele = uniform if vectors.get("tele") is None else vectors["tele"]
        return super().init(v)

    def teleport(self, v):
        return (1.0 - self.damping) * v.tele

    def gather_map(self, src, dst, edge):
        return src.sent * src.inv_out

    def sends(self, v):
        return v.inv_out != 0.0

    def aggregate_sending(self, v):
        return gr.where(v.inv_out != 0.0, v.rank, 0.0)


class WeightedDeltaPageRank(PersonalizedDeltaPageRank):
    """Along weighted edges: ``inv_out`` is 1 / the sum of a vertex's out-edge weights."""

    reads = {"weight"}

    def gather_map(self, src, dst, edge):
        return src.sent * src.inv_out * edge.weight


def error_bound(pending, total, damping):
    """Upper bound of the L1 distance between the normalised ranks and the exact PageRank, given
    the residual mass ``pending`` and the rank mass ``total`` (module docstring)."""
    if pending <= 0.0:
        return 0.0
    if total <= 0.0 or damping >= 1.0:
        return float("inf")
    return 2.0 * pending / ((1.0 - damping) * total)


def final_eps(tol, damping):
    """The relative push threshold at which an empty frontier satisfies the error bound."""
    a = tol * (1.0 - damping) / 2.0
    return a / (1.0 + a)


#: thresholds of the phases before the last, as multiples of the final one (module docstring)
PHASE_FACTOR = 1e3


def schedule(tol, damping, phases):
    """The relative push thresholds of ``phases`` phases, largest first, ending at the final
    one; each is PHASE_FACTOR times the next (capped below 0.5, where a vertex with equal rank
    and residual still pushes)."""
    last = final_eps(tol, damping)
    return [min(last * PHASE_FACTOR ** k, 0.5) for k in range(phases - 1, -1, -1)]


def run_delta(program_for, store, run_options, tol, damping, phases=1):
    """Run the phases of :func:`schedule`; each phase starts from the previous one's ranks and
    residuals (nothing is in flight when a phase's frontier empties), seeded with the vertices
    above its threshold, and the run ends as soon as the error bound is met. ``program_for(eps,
    start)`` builds a phase's program. Returns (normalised ranks, the last phase's Result carrying
    every phase's iterations and statistics)."""
    from ._common import journal, open_session, run_in
    if phases < 1:
        raise UsageError(f"phases must be at least 1, not {phases}")
    run_options = dict(run_options)
    runs = journal(store, run_options)   # (checkpoints: grstream/engine/journal.py)
    session, run_kwargs = open_session(store, run_options)
    max_iter = run_kwargs.pop("max_iter", None)
    stats, start, result = [], None, None
    thresholds = schedule(tol, damping, phases)
    with session:
        for k, eps in enumerate(thresholds):
            left = None if max_iter is None else max_iter - len(stats)
            if result is not None and left <= 0:
                break
            program = program_for(eps, start)
            # (a phase runs again whole on a resume: its bound follows the program's history)
            result = run_in(session, runs, program, dict(run_kwargs, max_iter=left), whole=True,
                            note=lambda r, p=program: r.info.update(bound=p.bound()))
            stats.extend(result.stats)
            met = result.info["bound"] <= tol
            final = k == len(thresholds) - 1
            result.converged = met or (final and result.converged)
            if met:
                break
            start = (result.values["rank"], result.values["resid"])
    rank = np.array(result.values["rank"], dtype=np.float64)
    total = rank.sum()
    if total > 0:
        rank /= total
    result.values["rank"] = rank
    for i, st in enumerate(stats, 1):
        st.iteration = i
    result.stats, result.iterations = stats, len(stats)
    result.info["phases"] = thresholds
    return rank, result


#: phases of the threshold schedule pagerank(method="delta") runs by default
PHASES = 1


def delta_pagerank(store, damping, personalization, tol, nstart, weight, dangling, threshold,
                   run_options, phases=PHASES):
    """:func:`grstream.algorithms.pagerank.pagerank` with ``method="delta"`` (parameters
    checked there): (ranks, Result). ``threshold``: the L1 error bound to reach."""
    from ._common import internal_source
    from ._checks import vertex_vector
    if nstart is not None:
        raise UsageError("nstart is a starting point of the power method: method='delta' starts "
                         "from the teleport distribution and takes none")
    tele = None if personalization is None else vertex_vector(store, personalization,
                                                              "personalization", internal_source)
    if dangling is not None:
        dang = vertex_vector(store, dangling, "dangling", internal_source)
        same = np.full_like(dang, 1.0 / len(dang)) if tele is None else tele
        if not np.allclose(dang, same, rtol=0, atol=1e-15):
            raise UsageError("method='delta' sends dangling mass where the teleport goes: a "
                             "dangling distribution other than the personalization needs "
                             "method='power'")
    weight = effective_weight(store, weight)
    if weight is None and tele is None:
        def program_for(eps, start):
            return DeltaPageRank(start=start, damping=damping, tol=threshold, eps=eps)
    else:
        inv_out = inverse_out(store, weight)
        cls = PersonalizedDeltaPageRank if weight is None else WeightedDeltaPageRank

        def program_for(eps, start):
            return cls(inv_out=inv_out, tele=tele, start=start, damping=damping, tol=threshold,
                       eps=eps)
    return run_delta(program_for, store, run_options, threshold, damping, phases)
