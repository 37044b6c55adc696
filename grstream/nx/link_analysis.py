"""PageRank of NetworkX on the backend graph."""
import networkx as nx
import numpy as np

from .convert import run_options
from .runs import node_dict


def pagerank(G, alpha=0.85, personalization=None, max_iter=100, tol=1.0e-6, nstart=None,
             weight="weight", dangling=None):
    """PageRank of every node, as :func:`networkx.pagerank` (same iteration and stopping rule).

    Raises
    ------
    networkx.PowerIterationFailedConvergence
        When ``tol`` is not met within ``max_iter`` iterations.
    """
    from ..algorithms.pagerank import pagerank as run_pagerank
    if not len(G):
        return {}
    rank, result = run_pagerank(G.store, damping=alpha, tol=tol, max_iter=max_iter,
                                **run_options())
    if not result.converged:
        raise nx.PowerIterationFailedConvergence(max_iter)
    return node_dict(G, np.arange(len(G)), rank)
