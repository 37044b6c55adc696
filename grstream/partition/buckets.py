"""External bucketing: edges appended to one temporary file per (direction, shard)."""
import shutil

import numpy as np

from ..io.atomic import make_bucket_dir, write_array


class BucketFiles:
    """Temporary bucket files under ``directory``; records keep the order they were appended in.

    A record is (primary, secondary[, weight]) with ids already in the store's id dtype, so a
    bucket costs ``2 * id bytes + weight bytes`` per edge on disk.
    """

    def __init__(self, directory, name, num_shards, id_dtype, weight_dtype=None, indexed=False):
        fields = [("p", id_dtype), ("s", id_dtype)]
        if weight_dtype is not None:
            fields.append(("w", weight_dtype))
        if indexed:
            fields.append(("i", np.int64))
        self.record = np.dtype(fields)
        # direction "eid": (input index, global CSR position) pairs routed to an in-edge's shard
        self.eid_record = np.dtype([("p", np.int64), ("s", np.int64)])
        self.num_shards = num_shards
        self.directory = make_bucket_dir(directory, name)

    def _file(self, direction, shard):
        return self.directory / f"{direction}-{shard}.bin"

    def _dtype(self, direction):
        return self.eid_record if direction == "eid" else self.record

    def append(self, direction, shard, primary, secondary, weight, index=None):
        """Append edges to the buckets named by ``shard`` (per edge), keeping their order."""
        if len(shard) == 0:
            return
        # small shard indices sort by radix in numpy's stable argsort
        narrow = shard.astype(np.min_scalar_type(self.num_shards))
        order = np.argsort(narrow, kind="stable")
        counts = np.bincount(narrow, minlength=self.num_shards)
        records = np.empty(len(order), dtype=self._dtype(direction))
        records["p"] = primary[order]
        records["s"] = secondary[order]
        if weight is not None:
            records["w"] = weight[order]
        if index is not None:
            records["i"] = index[order]
        del order
        start = 0
        for target in np.flatnonzero(counts):
            stop = start + int(counts[target])
            with open(self._file(direction, int(target)), "ab") as handle:
                write_array(handle, records[start:stop])
            start = stop

    def load(self, direction, shard):
        """All records of one bucket, in append order (an empty array when none were appended)."""
        path = self._file(direction, shard)
        if not path.exists():
            return np.empty(0, dtype=self._dtype(direction))
        records = np.fromfile(path, dtype=self._dtype(direction))
        path.unlink()
        return records

    def cleanup(self):
        shutil.rmtree(self.directory, ignore_errors=True)
