"""Dijkstra and A* functions of NetworkX on the backend graph: distances streamed by grstream's
SSSP (one run from all the sources), paths and predecessors rebuilt from the tight
edges (``dist[u] + w(u, v) == dist[v]``)."""
import networkx as nx
import numpy as np

from .algorithm_runs import distances, node_dict, node_id
from .heap_order import discovery, settle
from .trees import shortest_path_dag, shortest_path_parents


class _Search:
    """Distances from internal ``sources`` and, on demand, NetworkX's settling order and
    shortest-path tree (:mod:`~grstream.nx.heap_order`)."""

    def __init__(self, G, sources, weight):
        self.G, self.sources = G, list(dict.fromkeys(sources))
        self.dist, self.weighted = distances(G, sources, weight)
        self._settled, self._parent, self._tied = False, None, None

    @staticmethod
    def within(d, cutoff):
        """Reached (finite) and no farther than ``cutoff``."""
        return np.isfinite(d) & (d <= (np.inf if cutoff is None else cutoff))

    def reached(self, cutoff):
        """Reached internal ids within ``cutoff`` in the order NetworkX settles them (nearest
        first; equal distances in its heap's order)."""
        ids = np.flatnonzero(self.within(self.dist, cutoff))
        if self.settled() is not None:
            return ids[np.argsort(self._settled.rank[ids])]
        return ids[np.argsort(self.dist[ids], kind="stable")]   # equal distances: node order

    def values(self, ids):
        # BFS levels are hop counts: give ints, as NetworkX does when every edge weighs 1
        d = self.dist[ids]
        return (d if self.weighted else d.astype(np.int64)).tolist()

    def dag(self):
        return shortest_path_dag(self.G, self.dist, self.weighted)

    def settled(self):
        """:class:`~grstream.nx.heap_order.Settled`, or None with zero-weight tight edges (then
        parents are the tied predecessor nearest the source, fewest hops, smallest id, and a
        path through a vertex with two equally near tight predecessors is refused)."""
        if self._settled is False:
            u, v = self.dag()
            self._settled = settle(self.G, self.dist, u, v, self.sources,
                                   np.isfinite(self.dist))
            if self._settled is not None:
                self._parent = self._settled.parent
            else:
                self._parent = shortest_path_parents(self.dist, u, v, self.sources)
                self._tied = np.zeros(len(self.dist), bool)
                # dag() sorts by v, then dist[u]: a tie is a second entry as near as the first
                same = (v[1:] == v[:-1]) & (self.dist[u[1:]] == self.dist[u[:-1]])
                self._tied[v[1:][same]] = True
        return self._settled

    def path(self, t):
        self.settled()
        labels, path = self.G.labels(), [t]
        while self._parent[path[-1]] >= 0:
            path.append(int(self._parent[path[-1]]))
        if self._tied is not None and self._tied[path].any():
            raise NotImplementedError(
                "equally short paths through zero-weight edges: grstream does not reproduce "
                "which one NetworkX's Dijkstra returns")
        return [labels[i] for i in reversed(path)]

    def discovered(self, cutoff):
        """Reached ids within ``cutoff`` in the order NetworkX first pushes them (its
        ``pred`` dict)."""
        if self.settled() is None:
            return self.reached(cutoff)
        ids = discovery(self.G, self._settled, self.sources, self.dist, self.weighted, cutoff)
        return ids[self.within(self.dist[ids], cutoff)]

    def paths(self, ids):
        """``{node: path}`` for internal ``ids``, each path extending its parent's."""
        self.path(self.sources[0])
        if self._tied is not None and self._tied[ids].any():
            self.path(int(ids[self._tied[ids]][0]))  # refused
        labels, parent, out = self.G.labels(), self._parent, {}
        for i in ids.tolist():
            chain = [i]
            while labels[chain[-1]] not in out and parent[chain[-1]] >= 0:
                chain.append(int(parent[chain[-1]]))
            if labels[chain[-1]] not in out:
                out[labels[chain[-1]]] = [labels[chain[-1]]]
            for j in reversed(chain[:-1]):
                out[labels[j]] = out[labels[int(parent[j])]] + [labels[j]]
        return {labels[i]: out[labels[i]] for i in ids.tolist()}


def _sources(G, sources):
    if not sources:
        raise ValueError("sources must not be empty")
    return [node_id(G, s, nx.NodeNotFound, f"Node {s} not found in graph") for s in sources]


def multi_source_dijkstra(G, sources, target=None, cutoff=None, weight="weight"):
    """``(distances, paths)`` from the nearest of ``sources`` (or ``(distance, path)`` to
    ``target``), as :func:`networkx.multi_source_dijkstra`, its dicts in NetworkX's order and
    among equally short paths the one NetworkX's heap finds first."""
    ids = _sources(G, sources)
    if target in sources:
        return 0, [target]
    search = _Search(G, ids, weight)
    if target is not None:
        t = G.index_of(target)
        if t is None or not search.within(search.dist[t], cutoff):
            raise nx.NetworkXNoPath(f"No path to {target}.")
        return search.values([t])[0], search.path(t)
    reached = search.reached(cutoff)
    return node_dict(G, reached, np.array(search.values(reached))), search.paths(reached)


def multi_source_dijkstra_path_length(G, sources, cutoff=None, weight="weight"):
    """``{node: distance}`` from the nearest of ``sources``."""
    search = _Search(G, _sources(G, sources), weight)
    reached = search.reached(cutoff)
    return node_dict(G, reached, np.array(search.values(reached)))


def multi_source_dijkstra_path(G, sources, cutoff=None, weight="weight"):
    """``{node: path}`` from the nearest of ``sources``."""
    return multi_source_dijkstra(G, sources, cutoff=cutoff, weight=weight)[1]


def single_source_dijkstra(G, source, target=None, cutoff=None, weight="weight"):
    """As :func:`networkx.single_source_dijkstra`."""
    return multi_source_dijkstra(G, {source}, target=target, cutoff=cutoff, weight=weight)


def single_source_dijkstra_path_length(G, source, cutoff=None, weight="weight"):
    """As :func:`networkx.single_source_dijkstra_path_length`."""
    return multi_source_dijkstra_path_length(G, {source}, cutoff=cutoff, weight=weight)


def single_source_dijkstra_path(G, source, cutoff=None, weight="weight"):
    """As :func:`networkx.single_source_dijkstra_path`."""
    return multi_source_dijkstra_path(G, {source}, cutoff=cutoff, weight=weight)


def dijkstra_path(G, source, target, weight="weight"):
    """As :func:`networkx.dijkstra_path`."""
    return single_source_dijkstra(G, source, target=target, weight=weight)[1]


def dijkstra_path_length(G, source, target, weight="weight"):
    """As :func:`networkx.dijkstra_path_length`."""
    s = node_id(G, source, nx.NodeNotFound, f"Node {source} not found in graph")
    if source == target:
        return 0
    search = _Search(G, [s], weight)
    t = G.index_of(target)
    if t is None or not np.isfinite(search.dist[t]):
        raise nx.NetworkXNoPath(f"Node {target} not reachable from {source}")
    return search.values([t])[0]


def dijkstra_predecessor_and_distance(G, source, cutoff=None, weight="weight"):
    """``(pred, dist)``: every predecessor on a shortest path and the distance of each reached
    node, as :func:`networkx.dijkstra_predecessor_and_distance`."""
    s = node_id(G, source, nx.NodeNotFound, f"Node {source} is not found in the graph")
    search = _Search(G, [s], weight)
    reached = search.reached(cutoff)
    u, v = search.dag()
    within = search.within(search.dist[v], cutoff)
    u, v = u[within], v[within]
    if search.settled() is not None:   # each list in settling order, as NetworkX appends
        by = np.lexsort((search._settled.rank[u], v))
        u, v = u[by], v[by]
    labels = G.labels()
    pred = {labels[i]: [] for i in search.discovered(cutoff).tolist()}
    for a, b in zip(u.tolist(), v.tolist()):
        pred[labels[b]].append(labels[a])
    return pred, node_dict(G, reached, np.array(search.values(reached)))


def astar_path(G, source, target, heuristic=None, weight="weight", *, cutoff=None):
    """As :func:`networkx.astar_path` without a heuristic (``can_run`` checks): a shortest
    path, which A* with a zero heuristic returns."""
    s = node_id(G, source, nx.NodeNotFound, f"Source {source} is not in G")
    t = node_id(G, target, nx.NodeNotFound, f"Target {target} is not in G")
    search = _Search(G, [s], weight)
    if not np.isfinite(search.dist[t]) or (cutoff and search.dist[t] > cutoff):
        raise nx.NetworkXNoPath(f"Node {target} not reachable from {source}")
    return search.path(t)


def astar_path_length(G, source, target, heuristic=None, weight="weight", *, cutoff=None):
    """As :func:`networkx.astar_path_length` without a heuristic."""
    if source not in G or target not in G:
        raise nx.NodeNotFound(f"Either source {source} or target {target} is not in G")
    s, t = G.index_of(source), G.index_of(target)
    search = _Search(G, [s], weight)
    if not np.isfinite(search.dist[t]) or (cutoff and search.dist[t] > cutoff):
        raise nx.NetworkXNoPath(f"Node {target} not reachable from {source}")
    return search.values([t])[0]
