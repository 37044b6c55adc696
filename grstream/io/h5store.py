"""A grstream shard store (``.h5``) as an input: re-shard it with other options.

The edges stream shard by shard from the out-edge CSR (``out/indptr``, ``out/dst``,
``out/weight``), so memory holds one shard's out-edges at a time, and every dataset read is
checksum-verified like any store read. The source declares the store's vertex count (isolated
vertices are kept) and carries its vertex labels (README "Vertex ids"): original ids or names
of a renumbered store as labels, the id base of a 1-based one, so the new store answers to the
same ids.
"""
import numpy as np

from .base import EdgeSource
from .chunking import check_chunk_edges
from .validate import resolve_weighted

#: the first bytes of every HDF5 file
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def read_store(path, *, weighted=None, chunk_edges=None):
    """Open a shard store as an :class:`EdgeSource` of its edges.

    Parameters
    ----------
    path : str or os.PathLike
        A store written by :func:`grstream.build_shards`; validated when opened.
    weighted : bool or None
        None: use edge property ``weight`` when the store has it; True: require it; False: drop it.
    chunk_edges : int, optional
        Maximum edges per chunk.

    Returns
    -------
    EdgeSource
        Edges in the store's CSR order (by source id, shard after shard).

    Raises
    ------
    ShardStoreError
        The file is not a readable shard store, or a dataset fails its checksum while streaming.
    InputFormatError
        Weights requested from a store without them.
    """
    from ..store import open as open_store
    path = str(path)
    with open_store(path) as store:
        use_weight = resolve_weighted("weight" in store.edge_props, weighted, path)
        declared = int(store.num_vertices)
        num_edges, size = int(store.num_edges), int(store.nbytes())
        labels = store.labels().tolist() if store.renumbered else None
        id_base = store.id_base
        # an undirected store holds both directions already: --undirected adds none again
        symmetric = not store.directed
    chunk_edges = check_chunk_edges(chunk_edges)

    def chunks():
        return _stream(path, use_weight, chunk_edges)

    return EdgeSource(path, chunks, use_weight, declared, size, "store", {"edges": num_edges},
                      symmetric, id_base=id_base,
                      labels=None if labels is None else (lambda: labels))


def _stream(path, use_weight, chunk_edges):
    from ..store import open as open_store
    with open_store(path) as store:
        for i in range(store.num_shards):
            info = store.shard_info(i)
            indptr = store.read(i, "out/indptr")
            local = np.repeat(np.arange(info.lo, info.hi, dtype=np.int64), np.diff(indptr))
            dst = store.read(i, "out/dst").astype(np.int64)
            weight = store.read(i, "out/weight").astype(np.float64) if use_weight else None
            for start in range(0, len(dst), chunk_edges):
                stop = start + chunk_edges
                yield (local[start:stop], dst[start:stop],
                       None if weight is None else weight[start:stop])
