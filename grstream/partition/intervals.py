"""Vertex intervals holding about the same number of edges each (GraphReduce §4.2)."""
import numpy as np


def choose_intervals(edges_per_vertex, num_shards):
    """Cut vertices ``0..n-1`` into about ``num_shards`` intervals of about equal edge count.

    Parameters
    ----------
    edges_per_vertex : ndarray of int64, shape (n,)
        Edges each vertex brings to its shard (in-degree plus out-degree).
    num_shards : int
        Requested count (>= 1). Cuts fall at the quantiles of the cumulative edge count, so a
        graph without heavy vertices gets exactly ``min(num_shards, n)`` non-empty intervals.

    Returns
    -------
    intervals : ndarray of int64, shape (S + 1,)
        ``intervals[0] = 0``, ``intervals[-1] = n``, strictly increasing (except ``[0, 0]`` for n = 0).
    heavy : ndarray of int64
        Vertices whose edges alone exceed the per-shard target ``total / num_shards``; each got
        an interval of its own.
    """
    n = len(edges_per_vertex)
    if n == 0:
        return np.zeros(2, dtype=np.int64), np.empty(0, dtype=np.int64)
    num_shards = max(1, min(int(num_shards), n))
    cumulative = np.cumsum(edges_per_vertex, dtype=np.int64)
    total = int(cumulative[-1])
    if total == 0:
        # no edges to balance: split the vertices evenly so every shard has work for apply
        cuts = (np.arange(num_shards + 1, dtype=np.int64) * n) // num_shards
        return np.unique(cuts), np.empty(0, dtype=np.int64)
    target = total / num_shards
    quantiles = np.arange(1, num_shards, dtype=np.float64) * target
    # the vertex where the cumulative count first reaches a quantile closes that interval
    inner = np.searchsorted(cumulative, quantiles, side="left") + 1
    heavy = np.flatnonzero(edges_per_vertex > target).astype(np.int64)
    cuts = np.concatenate(([0, n], inner, heavy, heavy + 1))
    cuts = np.unique(np.clip(cuts, 0, n))
    return cuts.astype(np.int64), heavy


def shard_of(ids, intervals):
    """Index of the interval holding each id."""
    return np.searchsorted(intervals, ids, side="right") - 1
