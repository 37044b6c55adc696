"""Reading a compressed store's id datasets (docs/FORMAT.md, "Compressed ids").

A compressed store (format version 3) holds each shard's ``in/src`` and ``out/dst`` as the
four parts of :mod:`grstream.store.codec`. Reading ``in/src`` through the store reads the parts
(each verified like any dataset), checks them against each other on the first verified read,
decodes them and checks the ids' range as for plain ids; the parts themselves read by name
(``"in/src.words"``) for a reader that decodes them itself (a GPU kernel).
"""
import numpy as np

from ..errors import CodecError, FormatVersionError
from . import codec, format as fmt
from .decode import decode_ids
from .parts import DatasetInfo


class CompressedIds:
    """Mixin of :class:`~grstream.store.shard_store.ShardStore`: the compressed id datasets."""

    def _init_codec(self, attrs):
        """Read the ``codec`` root attribute: ``self.compressed`` and ``self.shard_edges``
        (None, or each shard's in- and out-edge counts as an (S, 2) array)."""
        name = attrs.get(fmt.CODEC_ATTR)
        if self.format_version < fmt.COMPRESSED_VERSION:
            if name is not None:
                self._fail(f"root attribute {fmt.CODEC_ATTR} in a version-{self.format_version} store")
            self.compressed, self.shard_edges = False, None
            return
        if isinstance(name, bytes):
            name = name.decode(errors="replace")
        if name != fmt.CODEC_NAME:
            self._fail(f"id codec {name!r} is not supported (this grstream reads "
                       f"{fmt.CODEC_NAME!r})", cls=FormatVersionError)
        self.compressed = True
        counts = self._read_small(fmt.SHARD_EDGES, np.int64, 2 * self.num_shards)
        if counts.size and counts.min() < 0:
            self._fail("negative edge count", dataset=fmt.SHARD_EDGES)
        self.shard_edges = counts.reshape(self.num_shards, 2)

    def _is_compressed_ids(self, name):
        return self.compressed and name in _ID_NAMES

    def _read_ids(self, i, name, out):
        """Shard ``i``'s id dataset ``name`` decoded (into ``out`` when given)."""
        parts = {part: self.read(i, full)
                 for part, full in zip(fmt.CODEC_PARTS, fmt.codec_parts(name))}
        info = self._shards[i]
        edges = info.num_in_edges if name.startswith("in/") else info.num_out_edges
        key = (i, name)
        dataset = f"{fmt.shard_group(i)}/{name}"
        check = self.verify == "always" or (self.verify == "first" and key not in self._verified)
        if check:
            try:
                codec.check(parts, edges, self.num_vertices)
            except CodecError as exc:
                self._fail(str(exc), shard=i, dataset=dataset, cls=CodecError)
        target = None if out is None else self._destination(
            DatasetInfo(dataset, self.id_dtype, edges, None, 0), out)
        ids = decode_ids(parts, edges, self.num_vertices, self.id_dtype, out=target)
        if check:
            if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= self.num_vertices):
                bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
                self._fail(f"vertex id {bad} out of range 0..{self.num_vertices - 1}",
                           shard=i, dataset=dataset, cls=CodecError)
            with self._lock:
                self._verified.add(key)
        return ids if out is None or not isinstance(out, np.ndarray) else out


_ID_NAMES = tuple(f"{d}/{ids}" for d, ids in fmt.ID_DATASET.items())
