"""A store past 2**31 edges that costs a few KiB: shard 0's vertex 0 gets ``extra`` self-loops in
both directions, held by datasets declared that long but never written (HDF5 allocates their file
space without filling it, so the file is sparse and the holes read as zeros -- vertex 0)."""
import h5py
import numpy as np

from grstream.store import format as fmt

from .tamper import has_index, reindex


def _replace(group, name, data, before, extra):
    """Dataset ``name`` of ``group`` again, ``extra`` elements longer: ``data[:before]``, then
    the hole, then the rest of ``data``."""
    dtype = group[name].dtype
    del group[name]
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.CONTIGUOUS)
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
    space = h5py.h5s.create_simple((len(data) + extra,))
    h5py.h5d.create(group.id, name.encode(), h5py.h5t.py_create(dtype), space, dcpl=dcpl)
    dset = group[name]
    dset[:before] = data[:before]
    dset[before + extra:] = data[before:]
    dset.attrs["crc32"] = np.int64(0)   # never read whole: no read verifies it
    return extra * dtype.itemsize


def _rewrite(obj, name, array):
    del obj[name]
    dset = obj.create_dataset(name, data=array)
    dset.attrs["crc32"] = np.int64(fmt.crc32(array))


def widen(path, extra):
    """Add ``extra`` self-loops of vertex 0 (shard 0) to the store at ``path`` (unweighted)."""
    indexed = has_index(path)
    with h5py.File(path, "r+") as f:
        group = f[fmt.shard_group(0)]
        added = 0
        for direction, ids in fmt.ID_DATASET.items():
            part = group[direction]
            indptr = part[fmt.INDPTR][...]
            added += _replace(part, ids, part[ids][...], int(indptr[1]), extra)
            indptr[1:] += extra
            _rewrite(part, fmt.INDPTR, indptr)
            group.attrs[f"num_{direction}_edges"] = np.int64(group.attrs[f"num_{direction}_edges"] + extra)
        group.attrs["nbytes"] = np.int64(group.attrs["nbytes"] + added)
        f.attrs["num_edges"] = np.int64(f.attrs["num_edges"] + extra)
        for name in (fmt.IN_DEGREE, fmt.OUT_DEGREE):
            degree = f[name][...]
            degree[0] += extra
            parent, leaf = name.rsplit("/", 1)
            _rewrite(f[parent], leaf, degree)
    if indexed:
        reindex(path)
