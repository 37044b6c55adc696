"""Editing a store's HDF5 objects in tests, keeping (or dropping) the shard index that the builder
wrote: the index records every shard dataset's offset, length and CRC32, so an edit through h5py
must write it again (``reindex``) or remove it (``drop_index``: a store as written before the
index existed)."""
import json

import h5py
import numpy as np

from grstream.store import format as fmt
from grstream.store.index import index_table


def has_index(path):
    with h5py.File(path, "r") as f:
        return fmt.SHARD_INDEX in f


def drop_index(path):
    with h5py.File(path, "r+") as f:
        if fmt.SHARD_INDEX in f:
            del f[fmt.SHARD_INDEX]


def reindex(path):
    """Write the shard index again from the store's objects."""
    drop_index(path)
    with h5py.File(path, "r+") as f:
        names = fmt.shard_dataset_names(json.loads(f.attrs["edge_props"]),
                                        bool(f.attrs.get(fmt.EDGE_ID_ATTR, False)),
                                        fmt.CODEC_ATTR in f.attrs)
        layout = {}
        for i in range(int(f.attrs["num_shards"])):
            for name in names:
                full = f"{fmt.shard_group(i)}/{name}"
                layout[full] = (f[full].id.get_offset(), f[full].shape[0], int(f[full].attrs["crc32"]))
        table = index_table(layout, int(f.attrs["num_shards"]), names)
        dset = f.create_dataset(fmt.SHARD_INDEX, data=table)
        dset.attrs["crc32"] = np.int64(fmt.crc32(table))
        dset.attrs[fmt.INDEX_NAMES_ATTR] = json.dumps(names)


def rewrite(path, dataset, values):
    """Overwrite ``dataset``'s values in place with a matching CRC32 (and index entry)."""
    indexed = has_index(path)
    with h5py.File(path, "r+") as f:
        f[dataset][...] = values
        f[dataset].attrs["crc32"] = np.int64(fmt.crc32(np.asarray(values, dtype=f[dataset].dtype)))
    if indexed:
        reindex(path)


def set_index(path, shard, column, field, value):
    """Set one field of one entry of the shard index (and the index's CRC32 to match)."""
    with h5py.File(path, "r+") as f:
        names = json.loads(f[fmt.SHARD_INDEX].attrs[fmt.INDEX_NAMES_ATTR])
        table = f[fmt.SHARD_INDEX][()].reshape(-1, len(names), len(fmt.INDEX_FIELDS))
        table[shard, names.index(column), fmt.INDEX_FIELDS.index(field)] = value
        f[fmt.SHARD_INDEX][...] = table.reshape(-1)
        f[fmt.SHARD_INDEX].attrs["crc32"] = np.int64(fmt.crc32(table))
