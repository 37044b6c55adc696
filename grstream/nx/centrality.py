"""Betweenness centrality of NetworkX on the backend graph (grstream's streamed Brandes)."""
import numpy as np

from .algorithm_runs import stored_weight
from .convert import run_options


def betweenness_centrality(G, k=None, normalized=True, weight=None, endpoints=False, seed=None):
    """Betweenness of every node, as :func:`networkx.betweenness_centrality`.

    ``k`` samples ``seed.sample(list(G), k)``, the sources NetworkX samples for the same seed
    (internal ids follow node order); ``weight`` takes shortest paths by the stored weights.
    """
    from ..algorithms.bc import betweenness
    if k is not None and not 0 < k <= len(G):
        seed.sample(G.labels(), k)  # raises NetworkX's ValueError for k > n or k < 0
        if len(G) - (0 if endpoints else 1) >= 2:
            raise ZeroDivisionError("betweenness from k=0 sources")  # NetworkX's rescaling
        return dict.fromkeys(G.labels(), 0.0)
    if not len(G):
        return {}
    # NetworkX ignores the seed of an exact run; grstream refuses a seed without a sample
    sample = {} if k is None else {"k": k, "seed": seed}
    bc, _ = betweenness(G.store, normalized=normalized, endpoints=endpoints,
                        weight=stored_weight(G, weight), **sample, **run_options())
    return dict(zip(G.labels(), np.asarray(bc, dtype=np.float64).tolist()))
