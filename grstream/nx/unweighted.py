"""Unweighted shortest-path functions of NetworkX on the backend graph: streamed BFS levels,
paths and predecessors from the BFS tree NetworkX's queue would build."""
import networkx as nx
import numpy as np

from . import trees
from .algorithm_runs import levels, node_id


def _bfs(G, source, message):
    s = node_id(G, source, nx.NodeNotFound, message)
    level = levels(G, [s])
    order, parent = trees.bfs_tree(G, level, [s])
    return s, level, order, parent


def single_source_shortest_path(G, source, cutoff=None):
    """``{node: path}`` from ``source``, as :func:`networkx.single_source_shortest_path`."""
    s, level, order, parent = _bfs(G, source, f"Source {source} not in G")
    labels, paths = G.labels(), {}
    for v in order.tolist():
        if cutoff is not None and level[v] > cutoff:
            break
        p = int(parent[v])
        paths[labels[v]] = [labels[v]] if p < 0 else paths[labels[p]] + [labels[v]]
    return paths


def path_count(G, level, t, cap=2):
    """Shortest paths from the level-0 vertices to ``t``, counted up to ``cap``."""
    u, v = trees.shortest_path_dag(G, np.where(level >= 0, level, np.inf), False)
    count = np.where(level == 0, 1, 0)
    for depth in range(1, int(level[t]) + 1):
        at = level[v] == depth
        np.add.at(count, v[at], count[u[at]])
        count[level == depth] = np.minimum(count[level == depth], cap)
    return int(count[t])


def bidirectional_shortest_path(G, source, target):
    """The shortest path (fewest edges) from ``source`` to ``target`` when it is the only one;
    several make the function refuse (NotImplementedError: NetworkX then answers), as the one
    NetworkX's bidirectional search meets first depends on both searches' orders."""
    node_id(G, source, nx.NodeNotFound, f"Source {source} is not in G")
    t = node_id(G, target, nx.NodeNotFound, f"Target {target} is not in G")
    s, level, order, parent = _bfs(G, source, "")
    if level[t] < 0:
        raise nx.NetworkXNoPath(f"No path between {source} and {target}.")
    if path_count(G, level, t) > 1:
        raise NotImplementedError("several shortest paths: which one NetworkX's bidirectional "
                                  "search returns depends on both searches' orders")
    labels, path = G.labels(), [t]
    while parent[path[-1]] >= 0:
        path.append(int(parent[path[-1]]))
    return [labels[i] for i in reversed(path)]


def hops(G, source, target):
    """Fewest edges from ``source`` to ``target`` (NetworkXNoPath when unreachable)."""
    s = node_id(G, source, nx.NodeNotFound, f"Source {source} is not in G")
    t = node_id(G, target, nx.NodeNotFound, f"Target {target} is not in G")
    level = levels(G, [s])
    if level[t] < 0:
        raise nx.NetworkXNoPath(f"No path between {source} and {target}.")
    return int(level[t])


def has_path(G, source, target):
    """Whether ``target`` is reachable from ``source``, as :func:`networkx.has_path`."""
    s = node_id(G, source, nx.NodeNotFound, f"Source {source} is not in G")
    t = node_id(G, target, nx.NodeNotFound, f"Target {target} is not in G")
    return bool(levels(G, [s])[t] >= 0)


def predecessor(G, source, target=None, cutoff=None, return_seen=None):
    """All BFS predecessors one level up, in visiting order, as :func:`networkx.predecessor`."""
    s, level, order, _ = _bfs(G, source, f"Source {source} not in G")
    if cutoff:
        order = order[level[order] <= cutoff]
    position = np.full(len(level), len(level), np.int64)
    position[order] = np.arange(len(order))
    u, v = trees.shortest_path_dag(G, np.where(level >= 0, level, np.inf), False)
    keep = position[v] < len(level)
    u, v = u[keep], v[keep]
    by_visit = np.lexsort((position[u], position[v]))
    labels = G.labels()
    pred = {labels[i]: [] for i in order.tolist()}
    for a, b in zip(u[by_visit].tolist(), v[by_visit].tolist()):
        pred[labels[b]].append(labels[a])
    seen = {labels[i]: int(level[i]) for i in order.tolist()}
    if target is not None:
        if target not in pred:
            return ([], -1) if return_seen else []
        return (pred[target], seen[target]) if return_seen else pred[target]
    return (pred, seen) if return_seen else pred
