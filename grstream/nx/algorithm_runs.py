"""Running grstream's programs for the NetworkX wrappers: internal ids in, arrays out.

Several sources run as one program whose sources all start at 0 (a super-source: one
streamed run whatever their number); all sources, for averages, run in lanes of one session
(:meth:`grstream.Session.run_lanes`), many BFS or SSSP instances per pass over the store.
"""
import numpy as np

import grstream as gr

from ..algorithms.bfs import BFS, UNREACHED
from ..algorithms.sssp import SSSP
from .convert import run_options

#: sources per pass over the store when every node is a source (lanes of one session)
LANES = 64


def node_id(G, node, exc, message):
    """Internal id of ``node``, or ``exc(message)`` when it is not a node of ``G``."""
    i = G.index_of(node)
    if i is None:
        raise exc(message)
    return i


class _FromSources:
    """A super-source: every vertex of ``sources`` starts at 0 (``field``), others at
    ``far``, and the sources are the first frontier."""

    def __init__(self, sources):
        super().__init__(source=int(sources[0]))
        self._sources = np.asarray(sources, np.int64)

    def init(self, v):
        start = np.isin(v.id, self._sources)
        setattr(v, self.field, np.where(start, 0, self.far).astype(self.vertex[self.field]))
        return start


class SourcesBFS(_FromSources, BFS):
    """BFS from several sources at once: each vertex's level is its hops from the nearest."""

    field, far = "level", UNREACHED


class SourcesSSSP(_FromSources, SSSP):
    """SSSP from several sources at once: each vertex's distance from the nearest."""

    field, far = "dist", np.inf


def levels(G, sources):
    """BFS level of every vertex from the nearest of the internal ``sources`` (int64, -1 when
    unreached), in one streamed run."""
    sources = list(dict.fromkeys(int(x) for x in sources))
    return gr.run(SourcesBFS(sources), G.store, **run_options()).values["level"]


def stored_weight(G, weight):
    """The weight the programs use: the store's ("weight") when ``weight`` names them, else
    None (NetworkX then counts every edge as 1)."""
    return "weight" if (weight is not None and weight == G.weight
                        and "weight" in G.store.edge_props) else None


def _weighted(G, weight):
    return stored_weight(G, weight) is not None


def distances(G, sources, weight):
    """``(dist, weighted)``: shortest distances from the nearest of internal ``sources`` (inf
    unreached) in one streamed run, and whether the store's weights were used. Without weights
    for ``weight`` (None, or an attribute the store lacks: NetworkX counts such edges as 1)
    they are BFS levels."""
    if not _weighted(G, weight):
        level = levels(G, sources).astype(np.float64)
        level[level < 0] = np.inf
        return level, False
    sources = list(dict.fromkeys(int(x) for x in sources))
    return gr.run(SourcesSSSP(sources), G.store, **run_options()).values["dist"], True


def every_source(G, weight, sources=None):
    """``(source, dist)`` for every vertex as the source (or each internal id of ``sources``;
    dist as :func:`distances`), computed :data:`LANES` sources per pass over the store."""
    weighted = _weighted(G, weight)
    sources = range(len(G)) if sources is None else list(sources)
    with gr.Session(G.store, **run_options()) as session:
        for lo in range(0, len(sources), LANES):
            batch = sources[lo:lo + LANES]
            programs = [SSSP(source=s) if weighted else BFS(source=s) for s in batch]
            for s, result in zip(batch, session.run_lanes(programs)):
                if weighted:
                    yield s, result.values["dist"]
                else:
                    level = result.values["level"].astype(np.float64)
                    level[(level < 0) | (level >= UNREACHED)] = np.inf
                    yield s, level


def node_dict(G, ids, values):
    """``{label: value}`` for internal ``ids`` in that order, values as Python numbers."""
    labels = G.labels()
    return {labels[i]: x for i, x in zip(ids.tolist(), values.tolist())}
