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


def edge_arrays(store, directed, weights=False):
    """``(src, dst, weight)`` of every edge of ``store`` in one set of arrays (int64, float64;
    ``weight`` None unless ``weights`` and the store has them); an undirected store's edges
    once each (the stored direction with ``src <= dst``), as NetworkX's ``G.edges()`` counts."""
    srcs, dsts, ws = [], [], []
    for src, dst, w in out_edges(store, weights):
        keep = slice(None) if directed else src <= dst
        srcs.append(src[keep])
        dsts.append(dst[keep])
        if w is not None:
            ws.append(w[keep].astype(np.float64))
    cat = (lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.int64))
    return cat(srcs), cat(dsts), np.concatenate(ws) if ws else None
