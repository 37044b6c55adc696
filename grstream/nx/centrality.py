"""Betweenness centrality of NetworkX on the backend graph (grstream's streamed Brandes)."""
import math

import numpy as np

from .convert import run_options


def betweenness_centrality(G, k=None, normalized=True, weight=None, endpoints=False, seed=None):
    """Betweenness of every node, as :func:`networkx.betweenness_centrality`.

    ``k`` samples ``seed.sample(list(G), k)``, the sources NetworkX samples for the same seed;
    ``weight`` runs only where all weights are equal and positive (``can_run`` checks), where
    shortest paths are the unweighted ones.
    """
    from ..algorithms.bc import betweenness
    n = len(G)
    labels = G.labels()
    if n == 0:
        return {}
    if k == n:
        k = None
    chosen = np.arange(n) if k is None else np.array([G.index_of(v) for v in
                                                       seed.sample(labels, k)], dtype=np.int64)
    bc, results = betweenness(G.store, sources=[G.store_id(i) for i in chosen.tolist()],
                              **run_options())
    if endpoints:
        _add_endpoints(bc, results)
    _rescale(bc, n, normalized=normalized, directed=G.is_directed(), endpoints=endpoints,
             sampled=None if k is None else chosen)
    return dict(zip(labels, bc.tolist()))


def _add_endpoints(bc, results):
    """NetworkX's ``endpoints=True``: each path also counts at its two ends, i.e. a source
    gains the number of vertices it reaches and every reached vertex gains one per source."""
    for r in results:
        if r.info.get("program") != "BrandesForward":
            continue
        s = int(r.info["params"]["source"])
        reached = r.values["level"] >= 0
        bc[reached] += 1.0
        bc[s] += int(np.count_nonzero(reached)) - 2  # its own +1 above, and itself not a target


def _rescale(bc, n, *, normalized, directed, endpoints, sampled):
    """NetworkX's ``_rescale`` of ``networkx/algorithms/centrality/betweenness.py``."""
    N = n if endpoints else n - 1
    if N < 2:
        return
    K = N if sampled is None else len(sampled)
    correction = 1 if directed else 2
    if sampled is None or endpoints:
        bc *= 1 / (K * (N - 1)) if normalized else N / (K * correction)
        return
    if normalized:
        scale_source = 1 / ((K - 1) * (N - 1)) if K > 1 else math.nan
        scale_other = 1 / (K * (N - 1))
    else:
        scale_source = N / ((K - 1) * correction) if K > 1 else math.nan
        scale_other = N / (K * correction)
    is_source = np.zeros(len(bc), bool)
    is_source[sampled] = True
    bc *= np.where(is_source, scale_source, scale_other)
