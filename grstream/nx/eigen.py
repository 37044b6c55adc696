"""Eigenvector and Katz centrality of NetworkX on the backend graph (streamed power
iterations, grstream/algorithms/eigenvector.py)."""
import networkx as nx
import numpy as np

from .algorithm_runs import node_dict, stored_weight
from .convert import run_options


def _vector(G, values):
    return np.array([float(values[v]) for v in G.labels()], dtype=np.float64)


def _no_multigraph(G):
    if G.is_multigraph():
        raise nx.NetworkXNotImplemented("not implemented for multigraph type")


def eigenvector_centrality(G, max_iter=100, tol=1.0e-6, nstart=None, weight=None):
    """Eigenvector centrality, as :func:`networkx.eigenvector_centrality` (the same iteration
    of ``A + I``, start and stopping rule).

    Raises
    ------
    networkx.NetworkXPointlessConcept
        For the null graph.
    networkx.NetworkXError
        When ``nstart`` is all zero.
    networkx.PowerIterationFailedConvergence
        When ``tol`` is not met within ``max_iter`` iterations.
    """
    from ..algorithms.eigenvector import eigenvector_centrality as run
    _no_multigraph(G)
    if not len(G):
        raise nx.NetworkXPointlessConcept("cannot compute centrality for the null graph")
    start = None
    if nstart is not None:
        start = _vector(G, nstart)
        if not start.any():
            raise nx.NetworkXError("initial vector cannot have all zero values")
    x, result = run(G.store, max_iter=max_iter, tol=tol, nstart=start,
                    weight=stored_weight(G, weight), **run_options())
    if not result.converged:
        raise nx.PowerIterationFailedConvergence(max_iter)
    return node_dict(G, np.arange(len(G)), x)


def katz_centrality(G, alpha=0.1, beta=1.0, max_iter=1000, tol=1.0e-6, nstart=None,
                    normalized=True, weight=None):
    """Katz centrality, as :func:`networkx.katz_centrality`.

    Raises
    ------
    networkx.NetworkXError
        When ``beta`` is a dict without a value for every node.
    networkx.PowerIterationFailedConvergence
        When ``tol`` is not met within ``max_iter`` iterations.
    """
    from ..algorithms.eigenvector import katz_centrality as run
    _no_multigraph(G)
    if not len(G):
        return {}
    try:
        b = float(beta)
    except (TypeError, ValueError, AttributeError):
        if set(beta) != set(G.labels()):
            raise nx.NetworkXError("beta dictionary must have a value for every node") from None
        b = _vector(G, beta)
    start = None if nstart is None else _vector(G, nstart)
    x, result = run(G.store, alpha=alpha, beta=b, max_iter=max_iter, tol=tol, nstart=start,
                    normalized=normalized, weight=stored_weight(G, weight), **run_options())
    if not result.converged:
        raise nx.PowerIterationFailedConvergence(max_iter)
    return node_dict(G, np.arange(len(G)), x)
