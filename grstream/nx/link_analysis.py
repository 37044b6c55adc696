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
