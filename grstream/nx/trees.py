"""Trees and predecessor lists rebuilt from streamed levels or distances.

grstream's programs give every vertex its BFS level or distance; NetworkX's functions also
return the order of discovery, tree edges, paths and predecessors. Those follow from the
*tight* edges (``level[v] == level[u] + 1``, ``dist[u] + w == dist[v]``), read in one pass over
the store (:func:`grstream.algorithms.predecessors.all_predecessors`); only the tight edges
are held in memory.
"""
import numpy as np

from ..algorithms.predecessors import all_predecessors


def _tight(G, **values):
    """Tight edges ``(u, v)`` (each distinct pair once) from grstream's predecessor lists."""
    indptr, u = all_predecessors(G.store, **values)
    v = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    return u.astype(np.int64, copy=False), v


def bfs_tree(G, level, sources):
    """``(order, parent)`` of a BFS from internal ``sources`` given their ``level`` array.

    ``order`` lists reached vertices as NetworkX's queue visits them: level by level, a
    vertex's parent is the earliest-visited vertex of the previous level with an edge to it,
    and the new level is ordered by the composite key (parent's queue position, position of
    the edge in the parent's neighbours in NetworkX's order, :meth:`GrstreamGraph.positions`).
    ``parent[v]`` is -1 for sources and unreached vertices.
    """
    u, v = _tight(G, level=level)
    position = np.full(len(level), -1, np.int64)
    parent = np.full(len(level), -1, np.int64)
    order = [np.asarray(sources, np.int64)]
    position[order[0]] = np.arange(len(order[0]))
    by_level = np.argsort(level[u], kind="stable")
    u, v = u[by_level], v[by_level]
    bounds = np.searchsorted(level[u], np.arange(int(level.max(initial=0)) + 2))
    placed = len(order[0])
    for depth in range(len(bounds) - 1):
        uu, vv = u[bounds[depth]:bounds[depth + 1]], v[bounds[depth]:bounds[depth + 1]]
        if not len(uu):
            break
        # earliest-visited parent per child, then children in (parent position, id) order
        first = np.lexsort((position[uu], vv))
        uu, vv = uu[first], vv[first]
        head = np.r_[True, vv[1:] != vv[:-1]]
        uu, vv = uu[head], vv[head]
        layer = np.lexsort((G.positions(uu, vv), position[uu]))
        uu, vv = uu[layer], vv[layer]
        parent[vv] = uu
        position[vv] = placed + np.arange(len(vv))
        placed += len(vv)
        order.append(vv)
    return np.concatenate(order), parent


def shortest_path_dag(G, dist, weighted):
    """Tight edges ``(u, v)`` of a single-source distance array, one per distinct pair,
    sorted by ``v`` then by ``(dist[u], u)`` (NetworkX's order of discovery for its
    predecessor lists). ``weighted`` False: ``dist`` are hop counts, every edge weighs 1."""
    if weighted:
        u, v = _tight(G, dist=dist)
    else:
        u, v = _tight(G, level=np.where(np.isfinite(dist), dist, -1).astype(np.int64))
    order = np.lexsort((u, dist[u], v))
    return u[order], v[order]


def shortest_path_parents(dist, u, v, sources):
    """Parent of every reached vertex (-1 for the source and unreached ones) from the tight
    edges: the tied predecessor nearest the source, then fewest hops, then smallest id.
    Hops only matter with zero-weight edges: a predecessor at the same distance must be fewer
    hops from the source, which keeps parents acyclic."""
    hop = np.zeros(len(dist))
    if np.any(dist[u] == dist[v]):
        from scipy.sparse import csr_array
        from scipy.sparse.csgraph import dijkstra
        tight = csr_array((np.ones(len(u)), (u, v)), shape=(len(dist), len(dist)))
        hop = dijkstra(tight, unweighted=True, indices=sources, min_only=True)
        usable = (dist[u] < dist[v]) | (hop[u] < hop[v])
        u, v = u[usable], v[usable]
    best = np.lexsort((u, hop[u], dist[u], v))
    u, v = u[best], v[best]
    head = np.r_[True, v[1:] != v[:-1]] if len(v) else np.zeros(0, bool)
    parent = np.full(len(dist), -1, np.int64)
    parent[v[head]] = u[head]
    parent[sources] = -1
    return parent
