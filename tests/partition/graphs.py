"""Edge sources built from numpy arrays and an independent reference for what a store must hold."""

import h5py
import numpy as np
import scipy.sparse as sp

from grstream.io.base import EdgeSource
from grstream.store import format as fmt

from ..conftest import DATASETS  # noqa: F401 - re-exported for the partition tests


def array_source(src, dst, weight=None, num_vertices=None, chunk=None, name="arrays"):
    """An EdgeSource over copies of the arrays, cut into chunks of ``chunk`` edges."""
    src = np.array(src, dtype=np.int64)
    dst = np.array(dst, dtype=np.int64)
    weight = None if weight is None else np.array(weight, dtype=np.float64)
    step = max(1, chunk or len(src) or 1)

    def chunks():
        for start in range(0, max(len(src), 1), step):
            stop = start + step
            yield src[start:stop], dst[start:stop], None if weight is None else weight[start:stop]

    return EdgeSource(name, chunks, weighted=weight is not None, num_vertices=num_vertices)


def expected_edges(src, dst, weight, *, num_vertices=None, undirected=False, self_loops=True,
                   duplicates=True, renumber=False):
    """The stored edge list, computed edge by edge in plain Python (the slow, obvious way)."""
    src = [int(s) for s in src]
    dst = [int(d) for d in dst]
    weight = [1.0] * len(src) if weight is None else [float(w) for w in weight]
    ids = sorted(set(src) | set(dst))
    if renumber:
        index = {v: k for k, v in enumerate(ids)}
        src = [index[s] for s in src]
        dst = [index[d] for d in dst]
        n = len(ids)
    else:
        n = max([num_vertices or 0] + [v + 1 for v in ids])
    edges = []
    for s, d, w in zip(src, dst, weight):
        if s == d and not self_loops:
            continue
        edges.append((s, d, w))
        if undirected and s != d:
            edges.append((d, s, w))
    if not duplicates:
        best = {}
        for s, d, w in edges:
            best[(s, d)] = min(w, best.get((s, d), w))
        edges = [(s, d, w) for (s, d), w in best.items()]
    return n, edges, (ids if renumber else None)


def scipy_of(n, edges, fmt="csr"):
    """scipy's own coo -> csr/csc of an edge list (duplicates summed)."""
    s = np.array([e[0] for e in edges], dtype=np.int64)
    d = np.array([e[1] for e in edges], dtype=np.int64)
    w = np.array([e[2] for e in edges], dtype=np.float64)
    return sp.coo_matrix((w, (s, d)), shape=(n, n)).asformat(fmt)


def same_matrix(a, b):
    a, b = a.tocsr(), b.tocsr()
    return a.shape == b.shape and (a != b).nnz == 0


def store_contents(path):
    """Every dataset and attribute of a store except the build record, for bit-exact comparison;
    of the shard index its lengths and CRCs (its file offsets follow the order the datasets
    were written in, which differs between the build modes)."""
    out = {}
    with h5py.File(path, "r") as f:
        for key, value in f.attrs.items():
            if key != "build":
                out[f"@{key}"] = value

        def visit(name, obj):
            if name == fmt.SHARD_INDEX:
                fields = obj[()].reshape(-1, len(fmt.INDEX_FIELDS))
                out[name] = fields[:, fmt.INDEX_FIELDS.index("length"):].tobytes()
                out[f"{name}@{fmt.INDEX_NAMES_ATTR}"] = obj.attrs[fmt.INDEX_NAMES_ATTR]
                return
            if isinstance(obj, h5py.Dataset):
                out[name] = (obj.dtype.str, obj[()].tobytes())
            for key, value in obj.attrs.items():
                out[f"{name}@{key}"] = value

        f.visititems(visit)
    return out
