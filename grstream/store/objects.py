"""A store's shards described from their HDF5 objects: the groups, datasets and attributes.

Opening a store without a shard index (written before the index existed) reads every shard this
way; ``grstream verify`` reads them so for a store with one too, to check that both agree. These
use h5py's low-level objects: the high-level wrappers cost about 2.5x as much per dataset and
attribute, which a store of thousands of shards pays on every open.
"""
import h5py
import numpy as np

from . import format as fmt
from .codec import BLOCK, PART_DTYPES
from .parts import DatasetInfo, ShardInfo, decoded_nbytes


class ObjectLayout:
    """Mixin of :class:`~grstream.store.shard_store.ShardStore`: the HDF5-object reads."""

    def _object(self, name):
        try:
            return h5py.h5o.open(self._h5.id, name.encode())
        except KeyError:
            return None

    def h5_attr(self, name, attr):
        """Attribute ``attr`` of object ``name`` (high-level h5py), None when either is missing."""
        with self._lock:
            try:
                return self._h5[name].attrs.get(attr)
            except KeyError:
                return None

    def _scalar_attr(self, obj, name):
        """The integer attribute ``name`` of a low-level object, or None when missing or not one."""
        try:
            # one call where a test for it first and an open cost two
            attr = h5py.h5a.open(obj, name.encode())
        except KeyError:
            return None
        dtype, shape = attr.dtype, attr.shape
        if dtype.kind not in "iu" or shape not in ((), (1,)):
            return None
        value = np.empty(shape, dtype=dtype)
        attr.read(value)
        return int(value.reshape(-1)[0])

    def _describe(self, name, dtype, size, shard=None, upper=None):
        """Check one dataset's presence, dtype, shape and layout; return its read descriptor."""
        dset = self._object(name)
        if not isinstance(dset, h5py.h5d.DatasetID):
            self._fail("dataset missing", shard=shard, dataset=name)
        if dset.dtype != np.dtype(dtype):
            self._fail(f"dtype {dset.dtype}, expected {np.dtype(dtype)}", shard=shard, dataset=name)
        if size is None and len(dset.shape) == 1:      # any length: a compressed stream
            size = dset.shape[0]
        if dset.shape != (size,):
            self._fail(f"shape {dset.shape}, expected ({size},)", shard=shard, dataset=name)
        plist = dset.get_create_plist()
        if plist.get_layout() != h5py.h5d.CONTIGUOUS or plist.get_nfilters():
            self._fail("dataset must be contiguous and uncompressed", shard=shard, dataset=name)
        crc = self._scalar_attr(dset, "crc32")
        if crc is None:
            self._fail("crc32 attribute missing or not an integer", shard=shard, dataset=name)
        return DatasetInfo(name, np.dtype(dtype), size, dset.get_offset(), crc, upper)

    def describe_shard(self, i):
        """Shard ``i``'s :class:`ShardInfo` and ``{name: DatasetInfo}`` from its group, dataset
        and attribute objects, checked (offsets not read)."""
        group_name = fmt.shard_group(i)
        group = self._object(group_name)
        if not isinstance(group, h5py.h5g.GroupID):
            self._fail("shard group missing", shard=i, dataset=group_name)
        a = {k: self._scalar_attr(group, k) for k in fmt.SHARD_ATTRS}
        missing = [k for k, v in a.items() if v is None]
        if missing:
            self._fail(f"missing or non-integer shard attribute(s): {', '.join(missing)}", shard=i, dataset=group_name)
        lo, hi = int(self.intervals[i]), int(self.intervals[i + 1])
        if (a["lo"], a["hi"]) != (lo, hi):
            self._fail(f"shard bounds [{a['lo']}, {a['hi']}) differ from intervals [{lo}, {hi})",
                       shard=i, dataset=group_name)
        if self.compressed and self.shard_edges[i].tolist() != [a["num_in_edges"], a["num_out_edges"]]:
            self._fail(f"edge counts {a['num_in_edges']}, {a['num_out_edges']} differ from "
                       f"{fmt.SHARD_EDGES}'s {self.shard_edges[i].tolist()}", shard=i,
                       dataset=group_name)
        descs = {}
        for direction, ids in fmt.ID_DATASET.items():
            edges = a[f"num_{direction}_edges"]
            key = f"{direction}/{fmt.INDPTR}"
            descs[key] = self._describe(f"{group_name}/{key}", np.int64, hi - lo + 1, shard=i)
            if self.compressed:
                blocks = -(-edges // BLOCK)
                sizes = {"offsets": blocks + 1, "masks": blocks, "widths": blocks, "words": None}
                for part, name in zip(fmt.CODEC_PARTS, fmt.codec_parts(f"{direction}/{ids}")):
                    descs[name] = self._describe(f"{group_name}/{name}", PART_DTYPES[part],
                                                 sizes[part], shard=i)
            else:
                descs[f"{direction}/{ids}"] = self._describe(
                    f"{group_name}/{direction}/{ids}", self.id_dtype, edges, shard=i,
                    upper=self.num_vertices)
            for prop, dtype in self.edge_props.items():
                descs[f"{direction}/{prop}"] = self._describe(
                    f"{group_name}/{direction}/{prop}", dtype, edges, shard=i)
            if self.edge_ids and direction == "in":
                key = f"in/{fmt.EDGE_ID}"
                descs[key] = self._describe(f"{group_name}/{key}", np.int64, edges, shard=i,
                                            upper=self.num_edges)
        nbytes = sum(d.nbytes for d in descs.values())
        if nbytes != a["nbytes"]:
            self._fail(f"nbytes attribute {a['nbytes']} differs from the datasets' {nbytes} bytes",
                       shard=i, dataset=group_name)
        sizes = {k: d.nbytes for k, d in descs.items()}
        if self.compressed:
            sizes.update(decoded_nbytes(self, a["num_in_edges"], a["num_out_edges"]))
        info = ShardInfo(i, lo, hi, a["num_in_edges"], a["num_out_edges"], nbytes, sizes)
        return info, descs

    def index_mismatches(self):
        """``(shard, dataset, message)`` for every shard dataset whose index entry differs
        from its HDF5 object (none for a store without an index); a damaged object raises."""
        found = []
        for i in range(self.num_shards):
            descs = self.describe_shard(i)[1]
            for name, desc in descs.items():
                indexed = self._datasets[i][name]
                for field, attr in (("offset", "offset"), ("length", "size"), ("crc32", "crc")):
                    mine, theirs = getattr(desc, attr), getattr(indexed, attr)
                    if (desc.size or attr == "size") and mine != theirs:
                        found.append((i, desc.name, f"the index gives {field} {theirs}, the "
                                                    f"dataset has {mine}"))
        return found
