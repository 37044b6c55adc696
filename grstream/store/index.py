"""The shard index: the file offset, length and CRC32 of every shard dataset in one dataset.

The builder writes it (``/shard_index``, docs/FORMAT.md "Shard index"); opening a store with
one reads it in one verified read and checks it as arrays, in place of opening every shard
group, dataset and attribute through HDF5 (most of the time it takes to open a store of many
shards; docs/BENCHMARKS.md, "Measured constants"). A store without it (written before the index existed) opens from
the shard objects, as before. ``grstream verify`` checks that the index and the objects agree.
"""
import json
import os

import numpy as np

from . import format as fmt
from .codec import BLOCK, PART_DTYPES
from .parts import DatasetInfo, ShardInfo, decoded_nbytes

_OFFSET, _LENGTH, _CRC = range(len(fmt.INDEX_FIELDS))


def index_table(layout, num_shards, names):
    """The index of ``num_shards`` shards of datasets ``names`` written as ``layout`` (full
    name -> (file offset or None, length, crc32)): a flat int64 array, or None when a shard
    dataset is missing from ``layout``."""
    table = np.empty((num_shards, len(names), len(fmt.INDEX_FIELDS)), dtype=np.int64)
    for i in range(num_shards):
        group = fmt.shard_group(i)
        for k, name in enumerate(names):
            entry = layout.get(f"{group}/{name}")
            if entry is None:
                return None
            offset, length, crc = entry
            table[i, k] = (-1 if offset is None else offset, length, crc)
    return table.reshape(-1)


def dataset_dtypes(store, names):
    """dtype of each per-shard dataset name of ``store``."""
    out = []
    for name in names:
        leaf = name.split("/", 1)[1]
        part = leaf.rpartition(".")[2] if "." in leaf else None
        if part in fmt.CODEC_PARTS:
            out.append(PART_DTYPES[part])
        elif leaf in (fmt.INDPTR, fmt.EDGE_ID):
            out.append(np.dtype(np.int64))
        elif leaf in fmt.ID_DATASET.values():
            out.append(store.id_dtype)
        else:
            out.append(store.edge_props[leaf])
    return out


def load_index(store, names):
    """``(shard infos, per-shard {name: DatasetInfo})`` of ``store`` from its index, checked:
    lengths against the intervals and each other, offsets inside the file, CRCs 32-bit."""
    listed = store.h5_attr(fmt.SHARD_INDEX, fmt.INDEX_NAMES_ATTR)
    try:
        listed = json.loads(listed)
    except (TypeError, ValueError):
        listed = None
    if listed != names:
        store._fail(f"the index lists datasets {listed}, the root attributes give {names}",
                    dataset=fmt.SHARD_INDEX)
    s, k = store.num_shards, len(names)
    table = store._read_small(fmt.SHARD_INDEX, np.int64, s * k * len(fmt.INDEX_FIELDS))
    table = table.reshape(s, k, len(fmt.INDEX_FIELDS))
    offset, length, crc = table[..., _OFFSET], table[..., _LENGTH], table[..., _CRC]
    dtypes = dataset_dtypes(store, names)
    itemsize = np.array([d.itemsize for d in dtypes], dtype=np.int64)
    nbytes = length * itemsize
    column = {name: c for c, name in enumerate(names)}
    bad = (length < 0) | (crc < 0) | (crc > 0xFFFFFFFF)
    _first_bad(store, bad, names, "length or crc32 out of range in the index")
    _first_bad(store, (length > 0) & ((offset < 0) | (offset + nbytes > os.fstat(store._fd).st_size)),
               names, "the index places the data outside the file (truncated?)")
    counts = np.diff(store.intervals) + 1
    shard_edges = {}
    for d, (direction, ids) in enumerate(fmt.ID_DATASET.items()):
        ids = f"{direction}/{ids}"
        edges = store.shard_edges[:, d] if store.compressed else length[:, column[ids]]
        shard_edges[direction] = edges.tolist()
        blocks = -(-np.asarray(edges, dtype=np.int64) // BLOCK)
        expect = {f"{ids}.offsets": blocks + 1, f"{ids}.masks": blocks, f"{ids}.widths": blocks,
                  f"{direction}/{fmt.INDPTR}": counts}
        wrong = np.zeros((s, k), dtype=bool)
        for name in names:
            if name.startswith(direction + "/") and not name.endswith(".words"):
                wrong[:, column[name]] = length[:, column[name]] != expect.get(name, edges)
        _first_bad(store, wrong, names, "length in the index differs from the shard's interval "
                   "or edge count")
    upper = [store.num_vertices if n.split("/", 1)[1] in fmt.ID_DATASET.values()
             else store.num_edges if n.endswith(fmt.EDGE_ID) else None for n in names]
    infos, datasets = [], []
    shard_bytes = nbytes.sum(axis=1).tolist()
    for i, (lo, hi) in enumerate(zip(store.intervals[:-1].tolist(), store.intervals[1:].tolist())):
        group = fmt.shard_group(i)
        rows = table[i].tolist()
        descs = {name: DatasetInfo(f"{group}/{name}", dtypes[c], rows[c][_LENGTH],
                                   rows[c][_OFFSET] if rows[c][_LENGTH] else None,
                                   rows[c][_CRC], upper[c])
                 for c, name in enumerate(names)}
        datasets.append(descs)
        num_in, num_out = shard_edges["in"][i], shard_edges["out"][i]
        sizes = {name: d.nbytes for name, d in descs.items()}
        if store.compressed:
            sizes.update(decoded_nbytes(store, num_in, num_out))
        infos.append(ShardInfo(i, lo, hi, num_in, num_out, shard_bytes[i], sizes))
    return infos, datasets


def _first_bad(store, bad, names, message):
    if bad.any():
        i, c = (int(x) for x in np.argwhere(bad)[0])
        store._fail(message, shard=i, dataset=f"{fmt.shard_group(i)}/{names[c]}")
