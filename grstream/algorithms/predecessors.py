"""Shortest-path predecessors for BFS and SSSP: one parent per vertex (a shortest-path tree, from
which :func:`path` builds a path) and all predecessors as a CSR.

The parent is deterministic, whatever the shard count or backend: for BFS the smallest-id
in-neighbour one level up (NetworkX's ``bfs_predecessors`` takes the first in traversal order
instead; both are valid BFS trees); for SSSP, among the shortest paths those with the fewest
edges, and of their last edges the one from the smallest id. The source and unreached vertices
have parent -1.
"""
import numpy as np

import grstream as gr

from ._common import execute, internal_source
from ..errors import UsageError
from .sssp import FromDistances, sssp


class BFSTree(gr.GASProgram):
    """Level-synchronous BFS that records each vertex's smallest-id in-neighbour one level up."""

    vertex = {"level": "int64", "parent": "int64"}
    gather_reduce = gr.monoid.min
    gather_dtype = "int64"
    params = {"source": 0}
    vertex_params = ("source",)   # an internal vertex id: checked against 0..n-1
    # every vertex unreached without a parent, the source at level 0 and the seed
    initial = {"level": -1, "parent": -1}
    seeds = {"source": {"level": 0}}

    def gather_map(self, src, dst, edge):
        # 2**62: "no candidate"; the frontier is the previous level, so it is all that changed
        return gr.where(src.level == self.iteration - 1, src.id, 4611686018427387904)

    def apply(self, v, acc):
        found = (v.level < 0) & (acc < 4611686018427387904)
        v.level = gr.where(found, self.iteration, v.level)
        v.parent = gr.where(found, acc, v.parent)
        return found


class ShortestPathTree(FromDistances):
    """Given final distances, a BFS over the tight edges (``dist[u] + w == dist[v]``): ``hops``
    is the fewest edges of a shortest path, ``parent`` the smallest-id tight in-neighbour one hop
    up. Zero-weight cycles cannot make a parent cycle, as they could if any tight in-neighbour
    were taken."""

    vertex = {"dist": "float64", "hops": "int64", "parent": "int64"}
    reads = {"weight"}
    gather_reduce = gr.monoid.min
    gather_dtype = "int64"
    params = {"source": 0}
    vertex_params = ("source",)   # an internal vertex id: checked against 0..n-1
    output = "parent"
    hop_field = "hops"

    def init(self, v):
        v.parent = -1
        return super().init(v)

    def gather_map(self, src, dst, edge):
        tight = (src.hops == self.iteration - 1) & (src.dist + edge.weight == dst.dist)
        return gr.where(tight, src.id, 4611686018427387904)

    def apply(self, v, acc):
        found = (v.hops < 0) & (acc < 4611686018427387904)
        v.hops = gr.where(found, self.iteration, v.hops)
        v.parent = gr.where(found, acc, v.parent)
        return found


def bfs_predecessors(store, source, **run_options):
    """BFS parents (int64, -1 for the source and unreached vertices) and the engine Result, whose
    ``values["level"]`` holds the levels (-1 unreached). ``run_options`` go to :func:`grstream.run`."""
    result = execute(BFSTree(source=internal_source(store, source)), store, run_options)
    return result.values["parent"], result


def sssp_predecessors(store, source, dist=None, **run_options):
    """SSSP parents (int64, -1 for the source and unreached vertices) and the Result of the tree
    pass, whose ``values`` also hold ``dist`` and ``hops``. ``dist``: distances from an earlier
    :func:`~grstream.algorithms.sssp.sssp` from the same source (computed when omitted)."""
    s = internal_source(store, source)
    if dist is None:
        dist, _ = sssp(store, source, **run_options)
    elif np.shape(dist) != (int(store.num_vertices),) or dist[s] != 0:
        raise UsageError(f"dist must be the distances from vertex {source} (one per vertex)")
    result = execute(ShortestPathTree(dist=np.asarray(dist, dtype=np.float64), source=s), store,
                     run_options)
    return result.values["parent"], result


def path(parent, source, target):
    """The vertices of the tree path from ``source`` to ``target`` (a list, host side), from a
    parent array of :func:`bfs_predecessors` or :func:`sssp_predecessors`; ``source``,
    ``target`` and the result are in the parent array's (internal) ids."""
    n = len(parent)
    for what, vertex in (("source", source), ("target", target)):
        if isinstance(vertex, (bool, np.bool_)) or not isinstance(vertex, (int, np.integer)) \
                or not 0 <= vertex < n:
            raise UsageError(f"{what} vertex {vertex!r} is out of range (0..{n - 1})")
    out = [int(target)]
    while out[-1] != source:
        up = int(parent[out[-1]])
        if up < 0 or len(out) > n:
            raise UsageError(f"vertex {target} is not reachable from {source}")
        out.append(up)
    return out[::-1]


def all_predecessors(store, level=None, dist=None):
    """Every shortest-path predecessor of every vertex, as CSR arrays ``(indptr, indices)``: the
    predecessors of ``v`` are ``indices[indptr[v]:indptr[v + 1]]``, increasing, each once.

    With ``level`` (BFS levels, -1 unreached): the in-neighbours one level up, as
    ``networkx.predecessor``. With ``dist`` (SSSP distances, inf unreached): the reached
    in-neighbours ``u`` with ``dist[u] + w(u, v) == dist[v]``, as the lists of
    ``networkx.dijkstra_predecessor_and_distance`` (zero-weight edges included). Host side,
    streaming one shard's in-edges at a time.
    """
    if (level is None) == (dist is None):
        raise UsageError("give exactly one of level (BFS) and dist (SSSP)")
    n = int(store.num_vertices)
    values = np.asarray(level if dist is None else dist)
    if values.shape != (n,):
        raise UsageError(f"{'level' if dist is None else 'dist'} must have one entry per vertex ({n})")
    if dist is not None and "weight" not in store.edge_props:
        raise UsageError("SSSP predecessors need edge weights: the store has none")
    counts = np.zeros(n, dtype=np.int64)
    parts = []
    for i in range(store.num_shards):
        lo = int(store.intervals[i])
        indptr = store.read(i, "in/indptr").astype(np.int64)
        src = store.read(i, "in/src").astype(np.int64)
        dst = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
        if dist is None:
            keep = (values[src] >= 0) & (values[src] == values[lo + dst] - 1)
        else:
            keep = np.isfinite(values[src]) & (values[src] + store.read(i, "in/weight")
                                                == values[lo + dst])
        src, dst = src[keep], dst[keep]
        if len(src) > 1:  # in-edges are sorted by destination then source: drop parallel copies
            first = np.concatenate([[True], (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])])
            src, dst = src[first], dst[first]
        counts[lo:lo + len(indptr) - 1] = np.bincount(dst, minlength=len(indptr) - 1)
        parts.append(src)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr, (np.concatenate(parts) if parts else np.zeros(0, np.int64))
