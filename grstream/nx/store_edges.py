"""Reading a store's edges back, one shard at a time, as ``(src, dst, weight)`` arrays."""
import numpy as np


def _edges(store, weights, side):
    if store is None:
        return
    read_weight = weights and "weight" in store.edge_props
    other = "dst" if side == "out" else "src"
    for i in range(store.num_shards):
        lo = int(store.intervals[i])
        indptr = store.read(i, f"{side}/indptr")
        own = np.repeat(np.arange(lo, lo + len(indptr) - 1, dtype=np.int64), np.diff(indptr))
        far = store.read(i, f"{side}/{other}").astype(np.int64, copy=False)
        w = store.read(i, f"{side}/weight") if read_weight else None
        yield (own, far, w) if side == "out" else (far, own, w)


def out_edges(store, weights=False):
    """Yield ``(src, dst, weight)`` per shard in the store's CSR order (internal ids, int64;
    ``weight`` is None unless ``weights`` and the store has them)."""
    yield from _edges(store, weights, "out")


def in_edges(store, weights=False):
    """Yield ``(src, dst, weight)`` per shard from the store's in-edges (CSC order)."""
    yield from _edges(store, weights, "in")
