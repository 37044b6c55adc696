"""PageRank of NetworkX on the backend graph."""
import networkx as nx
import numpy as np

from .convert import run_options
from .algorithm_runs import node_dict, stored_weight


def _vector(G, values):
    """A dict keyed by node as an array in internal order (missing nodes 0, as NetworkX)."""
    return None if values is None else np.array([values.get(v, 0) for v in G.labels()], float)


def pagerank(G, alpha=0.85, personalization=None, max_iter=100, tol=1.0e-6, nstart=None,
             weight="weight", dangling=None):
    """PageRank of every node, as :func:`networkx.pagerank`: the same iteration, options and
    stopping rule (L1 change below ``len(G) * tol``).

    Raises
    ------
    networkx.PowerIterationFailedConvergence
        When ``tol`` is not met within ``max_iter`` iterations.
    ZeroDivisionError
        When ``personalization`` sums to zero (as NetworkX).
    """
    from ..algorithms.pagerank import pagerank as run_pagerank
    if not len(G):
        return {}
    p = _vector(G, personalization)
    if p is not None and p.sum() == 0:
        raise ZeroDivisionError
    rank, result = run_pagerank(G.store, damping=alpha, personalization=p, max_iter=max_iter,
                                tol=tol, nstart=_vector(G, nstart),
                                weight=stored_weight(G, weight),
                                dangling=_vector(G, dangling), stop="networkx", **run_options())
    if not result.converged:
        raise nx.PowerIterationFailedConvergence(max_iter)
    return node_dict(G, np.arange(len(G)), rank)


def hits(G, max_iter=100, tol=1.0e-8, nstart=None, normalized=True):
    """Hubs and authorities, as :func:`networkx.hits` (``can_run`` checks): NetworkX's power
    iteration (grstream/algorithms/hits.py) where the largest singular value is simple;
    ``max_iter`` counts power iterations (ARPACK, which NetworkX calls, counts restarts).

    Raises
    ------
    networkx.PowerIterationFailedConvergence
        When ``tol`` is not met within ``max_iter`` iterations.
    NotImplementedError
        When the largest singular value is not simple: NetworkX's answer is then whichever
        vector of its singular space ARPACK returns.
    """
    from ..algorithms.hits import hub_authority
    if not len(G):
        return {}, {}
    if max_iter <= 0:
        raise nx.PowerIterationFailedConvergence(max_iter)
    start = None if nstart is None else np.array([float(nstart[v]) for v in G.labels()])
    h, a, converged, unique, _ = hub_authority(
        G.store, max_iter=max_iter, tol=tol, nstart=start, normalized=normalized,
        weight=stored_weight(G, "weight"), **run_options())
    if not converged:
        raise nx.PowerIterationFailedConvergence(max_iter)
    if not unique:
        raise NotImplementedError("the largest singular value of the adjacency matrix is not "
                                  "simple: NetworkX's ARPACK returns any vector of its space")
    ids = np.arange(len(G))
    return node_dict(G, ids, h), node_dict(G, ids, a)
