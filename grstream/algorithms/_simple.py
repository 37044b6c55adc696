"""A store's simple graph: parallel edges merged into one (the lightest when weighted), the
DiGraph NetworkX's betweenness sees. Used by algorithms that count paths, not edges."""
import os

import numpy as np


def has_parallel_edges(store):
    """True when some (src, dst) pair is stored more than once (one pass over the CSR)."""
    if not store.build.get("options", {}).get("duplicates", True):
        return False
    for i in range(store.num_shards):
        indptr, dst = store.read(i, "out/indptr"), store.read(i, "out/dst")
        if len(dst) < 2:
            continue
        same = dst[1:] == dst[:-1]
        same[indptr[1:-1][(indptr[1:-1] > 0) & (indptr[1:-1] < len(dst))] - 1] = False
        if same.any():
            return True
    return False


def simple_graph(store, directory, weighted=False):
    """A copy of ``store`` in ``directory`` with parallel edges merged; with ``weighted`` it
    keeps the smallest weight of each pair (the build's ``duplicates=False``).

    The copy keeps the store's layout: its ids compressed where the store's are, its weights in
    the store's dtype, its shards cut as the store's (the build balances the counts before
    merging). Each shard of the copy then holds a subset of the store's shard's edges in the same
    layout, and the memory minimum a program reports on the store, from which callers derive a
    budget, holds for its runs over the copy (an executor that keeps compressed ids as their
    blocks would else plan the copy's decoded ids, up to twice the bytes)."""
    from ..io.base import EdgeSource
    from ..partition import build_shards
    from ..store import open as open_store

    def chunks():
        for i in range(store.num_shards):
            lo = int(store.intervals[i])
            indptr = store.read(i, "out/indptr")
            src = np.repeat(np.arange(lo, lo + len(indptr) - 1, dtype=np.int64), np.diff(indptr))
            w = store.read(i, "out/weight").astype(np.float64) if weighted else None
            yield src, store.read(i, "out/dst").astype(np.int64), w

    source = EdgeSource("simple graph of " + str(store.path), chunks, weighted=weighted,
                        num_vertices=int(store.num_vertices))
    layout = {"weight_dtype": store.edge_props["weight"]} if weighted else {}
    path = build_shards(source, os.path.join(directory, "simple.h5"), duplicates=False,
                        num_shards=store.num_shards, progress=False,
                        compress=bool(getattr(store, "compressed", False)), **layout)
    return open_store(path)
