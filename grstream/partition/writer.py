"""Atomic writing of a shard store: a temporary file in the target directory, renamed when complete."""
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import h5py
import numpy as np

from ..errors import OutputExistsError, UsageError
from ..io.atomic import (check_output, commit, creation_error, no_space_error,
                         remove_stale_temporaries, temporary_path)
from ..store import format as fmt
from ..store.encode import EncodedIds, encode_ids
from ..store.index import index_table


#: arrays of at least this many bytes have their CRC32 computed beside the write
PARALLEL_CRC_BYTES = 1 << 20


class StoreWriter:
    """Writes one store to ``NAME.h5.tmp-<pid>`` and moves it onto ``NAME.h5`` in :meth:`commit`.

    Used as a context manager: leaving the block by an exception removes the temporary file,
    so a failed build never leaves anything under the target name (a SIGKILL leaves only the
    temporary, which the next build in that directory removes). A full disk raises
    :class:`~grstream.errors.OutputError` naming the target. ``tidy=False`` leaves the dead
    writers' temporaries to the caller: ranks on several hosts writing into one shared folder
    remove them before any of them starts its own (a process on one host cannot tell whether
    another host's writer is alive).
    """

    def __init__(self, path, overwrite=True, compress=False, tidy=True):
        self.path = Path(path)
        #: whether the id datasets are written compressed (docs/FORMAT.md, "Compressed ids")
        self.compress = bool(compress)
        self._edges = []       # (shard, num_in_edges, num_out_edges) of each shard written
        self.overwrite = overwrite
        if self.path.exists() and not overwrite:  # early; commit checks again, exclusively
            raise OutputExistsError(f"{self.path} exists (pass overwrite=True to replace it)",
                                    path=self.path)
        check_output(self.path, what="store")
        if tidy:
            remove_stale_temporaries(self.path.parent)
        self.tmp_path = temporary_path(self.path)
        try:
            # datasets at offsets that are multiples of ALIGNMENT: a reader maps them as
            # arrays of their items (ShardStore.mapped), which an offset off the item size
            # would not allow
            self.file = h5py.File(self.tmp_path, "w", libver=fmt.LIBVER,
                                  alignment_threshold=fmt.ALIGNMENT, alignment_interval=fmt.ALIGNMENT)
        except BaseException as exc:
            self.tmp_path.unlink(missing_ok=True)  # HDF5 may leave it created, empty
            error = creation_error(exc, self.path)
            if error is not None:
                raise error from exc
            raise
        self._writeback = None
        self._writeback_error = None
        self._checksums = None
        self._layout = {}      # dataset name -> (file offset, length, crc32): the shard index

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
            full = no_space_error(exc, self.path)
            if full is not None:
                raise full from exc
        return False

    def dataset(self, name, array):
        """Write ``array`` contiguous and uncompressed with its CRC32; return its size in bytes.

        A large array's CRC32 is computed on a second thread while HDF5 copies it into the
        file (zlib releases the GIL and h5py does not wait on it;
        docs/BENCHMARKS.md, "Measured constants").
        """
        array = np.ascontiguousarray(array)
        checksum = None
        if array.nbytes >= PARALLEL_CRC_BYTES:
            if self._checksums is None:
                self._checksums = ThreadPoolExecutor(1, thread_name_prefix="grstream-crc")
            checksum = self._checksums.submit(fmt.crc32, array)
        dset = self.file.create_dataset(name, data=array)
        crc = fmt.crc32(array) if checksum is None else checksum.result()
        dset.attrs["crc32"] = np.int64(crc)
        self._layout[name] = (dset.id.get_offset(), array.size, crc)
        return array.nbytes

    def shard_part(self, index, direction, indptr, ids, edge_data=None, num_vertices=None):
        """Write one direction of shard ``index``; return its bytes.

        ``edge_data`` maps the direction's per-edge dataset names (each edge property, and
        ``"eid"``) to their own arrays, ordered like ``ids``. A compressing writer stores
        ``ids`` as the codec's parts: ``ids`` encoded already (an
        :class:`~grstream.store.encode.EncodedIds`), or encoded here, which needs the store's
        ``num_vertices``.
        """
        prefix = f"{fmt.shard_group(index)}/{direction}"
        nbytes = self.dataset(f"{prefix}/{fmt.INDPTR}", indptr)
        name = f"{prefix}/{fmt.ID_DATASET[direction]}"
        if isinstance(ids, EncodedIds) and not self.compress:
            raise UsageError("encoded ids given to a writer of plain ids")
        if self.compress:
            if not isinstance(ids, EncodedIds):
                if num_vertices is None:
                    raise UsageError("a compressing writer needs the vertex count")
                ids = encode_ids(ids, num_vertices)
            for part, full in zip(fmt.CODEC_PARTS, fmt.codec_parts(name)):
                nbytes += self.dataset(full, ids.parts[part])
        else:
            nbytes += self.dataset(name, ids)
        for name, array in (edge_data or {}).items():
            if array is None or len(array) != len(ids):
                raise UsageError(f"shard {index} {direction}: edge dataset {name!r} needs "
                                 f"{len(ids)} values, got "
                                 f"{'none' if array is None else len(array)}")
            nbytes += self.dataset(f"{prefix}/{name}", array)
        return nbytes

    def shard_attrs(self, index, lo, hi, num_in_edges, num_out_edges, nbytes):
        """Set shard ``index``'s group attributes once both of its directions are written."""
        attrs = self.file[fmt.shard_group(index)].attrs
        attrs["lo"], attrs["hi"] = np.int64(lo), np.int64(hi)
        attrs["num_in_edges"] = np.int64(num_in_edges)
        attrs["num_out_edges"] = np.int64(num_out_edges)
        attrs["nbytes"] = np.int64(nbytes)
        self._edges.append((index, num_in_edges, num_out_edges))

    def start_writeback(self):
        """Send what is written so far to the disk on a thread, while the build goes on.

        The pages then reach the disk during the build's remaining work instead of all in the
        final fsync of :meth:`commit` (a weighted store is three times the bytes of an
        unweighted one). An error of that fsync is raised by :meth:`commit`.
        """
        self._join_writeback()
        self.file.flush()
        fd = os.open(self.tmp_path, os.O_RDONLY)

        def sync():
            try:
                os.fsync(fd)
            except OSError as exc:
                self._writeback_error = exc
            finally:
                os.close(fd)

        self._writeback = threading.Thread(target=sync, name="grstream-writeback", daemon=True)
        self._writeback.start()

    def _join_writeback(self):
        if self._writeback is not None:
            self._writeback.join()
            self._writeback = None
        if self._writeback_error is not None:
            error, self._writeback_error = self._writeback_error, None
            raise error

    def commit(self, attrs, index=True):
        """Write the shard index (``index``: a part file has none, docs/FORMAT.md), set the
        root attributes, flush, fsync and rename onto the target path."""
        self._join_writeback()
        if self.compress:
            attrs = dict(attrs, format_version=np.int64(fmt.COMPRESSED_VERSION))
            attrs[fmt.CODEC_ATTR] = fmt.CODEC_NAME
            # the index no longer holds the id datasets' lengths, which were the edge counts
            counts = [edges[1:] for edges in sorted(self._edges)]
            self.dataset(fmt.SHARD_EDGES, np.array(counts, dtype=np.int64).reshape(-1))
        compressed = attrs.get(fmt.CODEC_ATTR) is not None
        names = fmt.shard_dataset_names(attrs.get("edge_props", {}), bool(attrs.get(fmt.EDGE_ID_ATTR)),
                                        compressed)
        table = index_table(self._layout, int(attrs.get("num_shards", 0)), names)
        if index and table is not None and table.size:
            self.dataset(fmt.SHARD_INDEX, table)
            self.file[fmt.SHARD_INDEX].attrs[fmt.INDEX_NAMES_ATTR] = json.dumps(names)
        self._stop_checksums()
        root = self.file.attrs
        for key, value in attrs.items():
            root[key] = json.dumps(value) if isinstance(value, dict) else value
        self.file.flush()
        self.file.close()
        fd = os.open(self.tmp_path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        commit(self.tmp_path, self.path, self.overwrite)

    def _stop_checksums(self):
        if self._checksums is not None:
            self._checksums.shutdown()
            self._checksums = None

    def abort(self):
        self._stop_checksums()
        if self._writeback is not None:
            self._writeback.join()          # its descriptor is closed before the file goes
            self._writeback = None
        try:
            if self.file.id.valid:
                self.file.close()
        finally:
            self.tmp_path.unlink(missing_ok=True)
