"""Dijkstra functions of NetworkX on the backend graph: distances streamed by grstream's SSSP,
paths and predecessors rebuilt from the tight edges (``dist[u] + w(u, v) == dist[v]``)."""
import networkx as nx
import numpy as np

from .runs import distances, node_dict, node_id
from .trees import shortest_path_dag, shortest_path_parents


def _reached(dist, cutoff):
    """Reached internal ids within ``cutoff``, nearest first (ties in node order)."""
    ids = np.flatnonzero(dist <= (np.inf if cutoff is None else cutoff))
    return ids[np.argsort(dist[ids], kind="stable")]


def _plain(dist, weighted):
    # BFS levels are hop counts: give ints, as NetworkX does when every edge weighs 1
    return dist if weighted else dist.astype(np.int64)


def single_source_dijkstra_path_length(G, source, cutoff=None, weight="weight"):
    """``{node: distance}`` from ``source``, as :func:`networkx.single_source_dijkstra_path_length`."""
    s = node_id(G, source, nx.NodeNotFound, f"Node {source} not found in graph")
    dist, weighted = distances(G, s, weight)
    ids = _reached(dist, cutoff)
    return node_dict(G, ids, _plain(dist[ids], weighted))


def single_source_dijkstra(G, source, target=None, cutoff=None, weight="weight"):
    """``(distances, paths)`` from ``source`` or, with ``target``, ``(distance, path)``, as
    :func:`networkx.single_source_dijkstra`. Among equally short paths the one whose
    predecessors are nearest the source (then first in node order) is returned."""
    s = node_id(G, source, nx.NodeNotFound, f"Node {source} not found in graph")
    if target == source:
        return 0, [target]
    dist, weighted = distances(G, s, weight)
    ids = _reached(dist, cutoff)
    u, v = shortest_path_dag(G, dist, weighted)
    parent = shortest_path_parents(dist, u, v, s)
    labels = G.labels()
    if target is not None:
        t = G.index_of(target)
        if t is None or not dist[t] <= (np.inf if cutoff is None else cutoff):
            raise nx.NetworkXNoPath(f"No path to {target}.")
        return _plain(dist[t:t + 1], weighted).tolist()[0], _path(parent, t, labels)
    paths = {labels[s]: [labels[s]]}
    for i in ids.tolist():
        if labels[i] not in paths:
            _fill(parent, i, labels, paths)
    values = _plain(dist[ids], weighted).tolist()
    return ({labels[i]: x for i, x in zip(ids.tolist(), values)},
            {labels[i]: paths[labels[i]] for i in ids.tolist()})


def _path(parent, t, labels):
    path = [t]
    while parent[path[-1]] >= 0:
        path.append(int(parent[path[-1]]))
    return [labels[i] for i in reversed(path)]


def _fill(parent, i, labels, paths):
    """Paths of ``i`` and its unknown ancestors, each extending its parent's (shared prefix)."""
    chain = [i]
    while labels[int(parent[chain[-1]])] not in paths:
        chain.append(int(parent[chain[-1]]))
    for j in reversed(chain):
        paths[labels[j]] = paths[labels[int(parent[j])]] + [labels[j]]


def dijkstra_predecessor_and_distance(G, source, cutoff=None, weight="weight"):
    """``(pred, dist)``: every predecessor on a shortest path and the distance of each reached
    node, as :func:`networkx.dijkstra_predecessor_and_distance`."""
    s = node_id(G, source, nx.NodeNotFound, f"Node {source} is not found in the graph")
    dist, weighted = distances(G, s, weight)
    ids = _reached(dist, cutoff)
    u, v = shortest_path_dag(G, dist, weighted)
    within = dist[v] <= (np.inf if cutoff is None else cutoff)
    u, v = u[within], v[within]
    labels = G.labels()
    pred = {labels[i]: [] for i in ids.tolist()}
    for a, b in zip(u.tolist(), v.tolist()):
        pred[labels[b]].append(labels[a])
    return pred, node_dict(G, ids, _plain(dist[ids], weighted))
