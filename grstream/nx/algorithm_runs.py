"""Running grstream's programs for the NetworkX wrappers: internal ids in, arrays out."""
import numpy as np

import grstream as gr

from .convert import run_options


def node_id(G, node, exc, message):
    """Internal id of ``node``, or ``exc(message)`` when it is not a node of ``G``."""
    i = G.index_of(node)
    if i is None:
        raise exc(message)
    return i


def levels(G, sources):
    """BFS level of every vertex from the nearest of the internal ``sources`` (int64, -1 when
    unreached): one streamed BFS per source, combined by minimum."""
    from ..algorithms.bfs import BFS, UNREACHED
    best = None
    for s in dict.fromkeys(int(x) for x in sources):
        level = gr.run(BFS(source=s), G.store, **run_options()).values["level"]
        level = np.where(level < 0, UNREACHED, level)   # -1 (unreached) loses every minimum
        best = level if best is None else np.minimum(best, level)
    return np.where(best >= UNREACHED, -1, best)


def distances(G, source, weight):
    """``(dist, weighted)``: shortest distances from internal ``source`` (inf unreached) and
    whether the store's weights were used. Without weights for ``weight`` (None, or an
    attribute the store lacks: NetworkX counts such edges as 1) they are BFS levels."""
    from ..algorithms.sssp import SSSP
    if weight is None or weight != G.weight or "weight" not in G.store.edge_props:
        level = levels(G, [source]).astype(np.float64)
        level[level < 0] = np.inf
        return level, False
    return gr.run(SSSP(source=int(source)), G.store, **run_options()).values["dist"], True


def node_dict(G, ids, values):
    """``{label: value}`` for internal ``ids`` in that order, values as Python numbers."""
    labels = G.labels()
    return {labels[i]: x for i, x in zip(ids.tolist(), values.tolist())}
