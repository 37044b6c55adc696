"""Reading a store's edges back, one shard at a time, as ``(src, dst, weight)`` arrays."""
import numpy as np


def out_edges(store, weights=False):
    """Yield ``(src, dst, weight)`` per shard in the store's CSR order (internal ids, int64;
    ``weight`` is None unless ``weights`` and the store has them)."""
    if store is None:
        return
    read_weight = weights and "weight" in store.edge_props
    for i in range(store.num_shards):
        lo = int(store.intervals[i])
        indptr = store.read(i, "out/indptr")
        src = np.repeat(np.arange(lo, lo + len(indptr) - 1, dtype=np.int64), np.diff(indptr))
        dst = store.read(i, "out/dst").astype(np.int64, copy=False)
        yield src, dst, (store.read(i, "out/weight") if read_weight else None)
