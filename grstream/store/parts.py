"""What a store is made of, as the reader sees it: shard descriptions, dataset descriptors,
and the whole graph reassembled from its shards."""
from dataclasses import dataclass, field

import numpy as np

from ..errors import UsageError
from . import format as fmt


@dataclass(frozen=True)
class ShardInfo:
    """What the engine needs to plan one shard: its interval, edge counts and sizes in bytes."""

    index: int
    lo: int
    hi: int
    num_in_edges: int
    num_out_edges: int
    nbytes: int          # bytes of its datasets as stored
    #: bytes of each dataset as stored, and in a compressed store of the decoded id datasets
    dataset_nbytes: dict = field(default_factory=dict)

    @property
    def num_vertices(self):
        return self.hi - self.lo


def decoded_nbytes(store, num_in_edges, num_out_edges):
    """The bytes of a compressed shard's id datasets once decoded (``"in/src"``, ``"out/dst"``):
    what a reader of the decoded ids holds."""
    item = store.id_dtype.itemsize
    return {f"in/{fmt.ID_DATASET['in']}": num_in_edges * item,
            f"out/{fmt.ID_DATASET['out']}": num_out_edges * item}


@dataclass(frozen=True)
class DatasetInfo:
    """Where one contiguous dataset lies in the file and what it must hold."""

    name: str            # full HDF5 path
    dtype: np.dtype
    size: int
    offset: object       # file offset of the contiguous data, None when it has no storage yet
    crc: int
    #: exclusive upper bound of the values (vertex ids: n, edge ids: m), checked on verified reads
    upper: object = None

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize


def assemble_scipy(store, kind="csr", weights=True):
    """``store``'s graph as an ``n x n`` scipy.sparse matrix; see :meth:`ShardStore.to_scipy`."""
    import scipy.sparse as sp
    if kind not in ("csr", "csc"):
        raise UsageError(f"kind must be 'csr' or 'csc', got {kind!r}")
    direction = "out" if kind == "csr" else "in"
    ids_name = f"{direction}/{fmt.ID_DATASET[direction]}"
    use_weights = weights and "weight" in store.edge_props
    n = store.num_vertices
    indptr = np.zeros(n + 1, dtype=np.int64)
    indices, data = [], []
    base = 0
    for i in range(store.num_shards):
        info = store.shard_info(i)
        local = store.read(i, f"{direction}/{fmt.INDPTR}")
        indptr[info.lo + 1:info.hi + 1] = local[1:] + base
        base += int(local[-1])
        indices.append(store.read(i, ids_name))
        if use_weights:
            data.append(store.read(i, f"{direction}/weight"))
    indices = np.concatenate(indices) if indices else np.empty(0, dtype=store.id_dtype)
    values = np.concatenate(data).astype(np.float64) if use_weights else np.ones(len(indices))
    cls = sp.csr_matrix if kind == "csr" else sp.csc_matrix
    matrix = cls((values, indices, indptr), shape=(n, n))
    matrix.sum_duplicates()
    return matrix
