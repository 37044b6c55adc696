"""Reading and validating a shard store (docs/FORMAT.md)."""
from typing import Union

import json
import os
import threading
from pathlib import Path

import h5py
import numpy as np

from ..errors import (FormatVersionError, ShardStoreError, StoreNotFoundError,
                      UsageError, plain)
from . import format as fmt
from .index import load_index
from .compressed import CompressedIds
from .labels import LabelledStore
from .objects import ObjectLayout
from .parallel_reads import read_datasets
from .parts import DatasetInfo, ShardInfo, assemble_scipy
from .reads import DatasetReads

VERIFY_MODES = ("first", "always", "never")


class ShardStore(DatasetReads, LabelledStore, ObjectLayout, CompressedIds):
    """An open shard store; see :func:`open`; vertex labels: :mod:`grstream.store.labels`.

    Reads of shard datasets go straight into the caller's buffer with ``os.preadv`` at the
    dataset's file offset (contiguous storage), which also lets a read-ahead thread run while
    others hold the GIL. Every h5py call is made under one lock, so reads from several threads
    are safe. The file is opened once (``os.preadv`` reads a duplicate of HDF5's descriptor), so
    a store renamed onto the path while it is open is never mixed with the one opened.
    """

    def __init__(self, path, verify="first"):
        if verify not in VERIFY_MODES:
            raise UsageError(f"verify must be one of {', '.join(VERIFY_MODES)}, got {verify!r}")
        if not isinstance(path, (str, os.PathLike)):
            raise UsageError(f"a store is opened from its path (str or os.PathLike), not "
                             f"{type(path).__name__}")
        self.path = Path(path)
        self.verify = verify
        #: what the engine keeps with the open store and closes with it (``close()`` on each):
        #: grstream.run's one-shot Session (grstream/engine/runner.py)
        self.kept = {}
        self._lock = threading.RLock()
        self._verified = set()
        self._offsets_checked = set()
        self._vertex_arrays = {}
        self._fd = None
        self._h5 = None
        if not self.path.is_file():
            raise StoreNotFoundError(_not_a_file(self.path), path=self.path)
        try:
            self._h5 = h5py.File(self.path, "r")
        except OSError as exc:
            raise ShardStoreError(f"not a grstream shard store: not a readable HDF5 file "
                                  f"({_first_line(exc)})", path=self.path) from None
        try:
            # the direct reads use a duplicate of HDF5's own descriptor, never a second open by
            # path: a store replaced (renamed onto) while it is opened or read stays one file
            self._fd = os.dup(self._h5.id.get_vfd_handle())
            self._load()
        except ShardStoreError:
            self.close()
            raise
        except (OSError, KeyError, ValueError, TypeError) as exc:
            self.close()
            raise ShardStoreError(f"unreadable store metadata ({_first_line(exc)})", path=self.path) from None

    # ---- opening and validation -------------------------------------------------------------

    def _fail(self, message, shard=None, dataset=None, cls=ShardStoreError):
        raise cls(message, path=self.path, shard=shard, dataset=dataset)

    def _load(self):
        attrs = self._h5.attrs
        if attrs.get("format") != fmt.FORMAT_NAME:
            found = attrs.get("format")
            self._fail("not a grstream shard store (" + (
                "no format attribute" if found is None else f"format attribute {plain(found)}")
                + f" where a store has {fmt.FORMAT_NAME!r})")
        version = attrs.get("format_version")
        if not isinstance(version, (int, np.integer)):
            self._fail(f"format_version attribute is {plain(version)}, expected an integer")
        if int(version) not in fmt.READABLE_VERSIONS:
            readable = ", ".join(str(v) for v in fmt.READABLE_VERSIONS)
            self._fail(f"format version {int(version)} is not supported (this grstream reads "
                       f"versions {readable})", cls=FormatVersionError)
        self.format_version = int(version)
        missing = [a for a in fmt.ROOT_ATTRS if a not in attrs]
        if missing:
            self._fail(f"missing root attribute(s): {', '.join(missing)}")
        self.num_vertices = self._int_attr(attrs, "num_vertices", minimum=0)
        self.num_edges = self._int_attr(attrs, "num_edges", minimum=0)
        self.num_shards = self._int_attr(attrs, "num_shards", minimum=1)
        if attrs["id_dtype"] not in ("int32", "int64"):
            self._fail(f"id_dtype attribute is {plain(attrs['id_dtype'])}, expected 'int32' or 'int64'")
        self.id_dtype = np.dtype(attrs["id_dtype"])
        if self.id_dtype.itemsize < fmt.id_dtype_for(self.num_vertices).itemsize:
            self._fail(f"id_dtype {self.id_dtype} cannot hold {self.num_vertices} vertices")
        self.edge_props = {name: np.dtype(dt) for name, dt in self._json_attr(attrs, "edge_props").items()}
        self.directed = bool(attrs["directed"])
        self.renumbered = bool(attrs["renumbered"])
        self._init_labels(attrs)
        self.build = self._json_attr(attrs, "build")
        part = self.build.get("part")
        #: a part file's own run of shards ``(first, end)`` (docs/FORMAT.md), else None
        self.part_shards = None if part is None else (int(part["shards"][0]), int(part["shards"][1]))
        # optional (added within version 1): stores written before it have no edge ids
        self.edge_ids = bool(attrs.get(fmt.EDGE_ID_ATTR, False))
        self._init_codec(attrs)

        n, s = self.num_vertices, self.num_shards
        self.intervals = self._read_small(fmt.INTERVALS, np.int64, s + 1)
        iv = self.intervals
        if iv[0] != 0 or iv[-1] != n or np.any(np.diff(iv) < 0):
            self._fail("intervals must start at 0, end at num_vertices and not decrease",
                       dataset=fmt.INTERVALS)
        # per-vertex arrays are described now, read (and verified) on first use
        self._vertex_descs = {name: self._describe(name, np.int64, n)
                              for name in (fmt.IN_DEGREE, fmt.OUT_DEGREE)}
        if self.renumbered and self.label_kind == "int":
            self._vertex_descs[fmt.ORIGINAL_ID] = self._describe(fmt.ORIGINAL_ID, np.int64, n)
        names = fmt.shard_dataset_names(self.edge_props, self.edge_ids, self.compressed)
        #: whether the shards are described by the builder's index (else by their objects)
        self.indexed = self._object(fmt.SHARD_INDEX) is not None
        if self.indexed:
            self._shards, self._datasets = load_index(self, names)
        else:
            self._shards, self._datasets = [], []
            for i in range(s):
                info, descs = self.describe_shard(i)
                self._shards.append(info)
                self._datasets.append(descs)
                for direction in fmt.ID_DATASET:   # without an index, offsets are checked now
                    self.read(i, f"{direction}/{fmt.INDPTR}")
        total_in = sum(info.num_in_edges for info in self._shards)
        total_out = sum(info.num_out_edges for info in self._shards)
        if not total_in == total_out == self.num_edges:
            self._fail(f"shards hold {total_in} in-edges and {total_out} out-edges but "
                       f"num_edges is {self.num_edges}")

    def _int_attr(self, attrs, name, minimum):
        value = attrs[name]
        if not isinstance(value, (int, np.integer)) or int(value) < minimum:
            self._fail(f"root attribute {name} is {plain(value)}, expected an integer >= {minimum}")
        return int(value)

    def _json_attr(self, attrs, name):
        try:
            value = json.loads(attrs[name])
        except (TypeError, ValueError):
            value = None
        if not isinstance(value, dict):
            self._fail(f"root attribute {name} is not a JSON object")
        return value

    def _read_small(self, name, dtype, size, desc=None):
        """A store-wide dataset, mapped (``mapped``) or read, and (unless ``verify="never"``)
        verified, read-only."""
        desc = desc or self._describe(name, dtype, size)
        verify = self.verify != "never"
        got = self._map(desc, None, verify)
        if got is None:   # (read, its sums taken as it lands, as a mapping's are)
            array = np.empty(size, dtype=desc.dtype)
            got = array, self._read_into(desc, array, shard=None, verify=verify)
        array, sums = got
        if sums is not None:
            self._check_crc(desc, None, shard=None, actual=sums[0])
        array.flags.writeable = False
        return array

    # ---- reading ----------------------------------------------------------------------------

    def _shard_index(self, i):
        if not isinstance(i, (int, np.integer)) or not 0 <= i < self.num_shards:
            raise UsageError(f"{self.path}: shard {plain(i)} out of range 0..{self.num_shards - 1}")
        return int(i)

    def dataset_names(self, i):
        """Names of shard ``i``'s datasets (``"in/indptr"``, ``"in/src"``, ..., ``"out/weight"``)."""
        return list(self._datasets[self._shard_index(i)])

    def shard_info(self, i):
        """:class:`ShardInfo` of shard ``i``."""
        return self._shards[self._shard_index(i)]

    def read(self, i, name, out=None):
        """Read dataset ``name`` of shard ``i``.

        Parameters
        ----------
        i : int
            Shard index.
        name : str
            ``"in/indptr"``, ``"in/src"``, ``"in/<prop>"``, ``"in/eid"`` (stores built with
            edge ids), ``"out/indptr"``, ``"out/dst"``, ``"out/<prop>"``.
        out : ndarray or writable buffer, optional
            Destination of exactly the dataset's dtype and size (for instance a pinned host
            buffer); the bytes go straight into it, without an intermediate copy.

        Returns
        -------
        ndarray
            ``out`` itself when it is an ndarray, else a new array or a view of ``out``.

        Raises
        ------
        ChecksumError
            The data does not match its CRC32 (checked per the store's ``verify`` mode).
        ShardStoreError
            Vertex or edge ids out of range, or the file is truncated.
        """
        i = self._shard_index(i)
        self._held(i, name)
        desc = self._datasets[i].get(name)
        if desc is None and self._is_compressed_ids(name):
            return self._read_ids(i, name, out)
        if desc is None:
            raise UsageError(f"{self.path}: shard {i} has no dataset {name!r} "
                             f"(has {', '.join(self._datasets[i])})")
        target = self._destination(desc, out)
        verify = self._verifies(i, name)
        sums = self._read_into(desc, target, shard=i, verify=verify)
        self._checked(i, name, desc, target, sums)
        return out if isinstance(out, np.ndarray) else target

    def read_shard(self, i, names=None):
        """Dict of shard ``i``'s datasets (all of them, or those in ``names``), read at once."""
        names = self.dataset_names(i) if names is None else list(names)
        return read_datasets(self, self._shard_index(i), names)

    # ---- whole-store views ------------------------------------------------------------------

    def _vertex_array(self, name):
        """Store-wide per-vertex dataset ``name``, read and verified on first use, then kept."""
        array = self._vertex_arrays.get(name)
        if array is None:
            with self._lock:
                array = self._vertex_arrays.get(name)
                if array is None:
                    desc = self._vertex_descs[name]
                    array = self._read_small(name, desc.dtype, desc.size, desc)
                    self._vertex_arrays[name] = array
        return array

    def in_degree(self):
        """In-degree of every vertex (read-only int64 array, read on first call)."""
        return self._vertex_array(fmt.IN_DEGREE)

    def out_degree(self):
        """Out-degree of every vertex (read-only int64 array, read on first call)."""
        return self._vertex_array(fmt.OUT_DEGREE)

    def default_source(self):
        """Internal id of the vertex a traversal starts from when none is given: the first
        vertex with an out-edge, so the run reaches more than its source whenever any vertex
        can (R-MAT leaves vertex 0 isolated about a third of the time); 0 when no vertex has
        an out-edge."""
        has_edge = self.out_degree() > 0
        return int(np.argmax(has_edge)) if has_edge.any() else 0

    def original_ids(self):
        """Input id of every vertex when integer ids were renumbered, else None (see labels())."""
        return self._vertex_array(fmt.ORIGINAL_ID) if fmt.ORIGINAL_ID in self._vertex_descs else None

    def nbytes(self):
        """Total bytes of all shard datasets."""
        return sum(info.nbytes for info in self._shards)

    def max_shard_nbytes(self):
        """Bytes of the largest shard (what one device slot must hold)."""
        return max(info.nbytes for info in self._shards)

    def to_scipy(self, kind="csr", weights=True):
        """The whole graph as an ``n x n`` scipy.sparse matrix (entry ``[src, dst]``).

        Parameters
        ----------
        kind : {"csr", "csc"}
            "csr" assembles the shards' out-edges, "csc" their in-edges.
        weights : bool
            Use edge property ``weight`` as the values when the store has it; otherwise 1.0.

        Returns
        -------
        scipy.sparse.csr_matrix or csc_matrix
            In canonical form: repeated (src, dst) pairs are summed, as scipy does.
        """
        return assemble_scipy(self, kind, weights)

    # ---- lifetime ---------------------------------------------------------------------------

    def close(self):
        """Close the file (and what the engine kept with it); later reads fail."""
        kept, self.kept = self.kept, {}
        for value in kept.values():
            value.close()
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            if self._h5 is not None:
                self._h5.close()
                self._h5 = None

    @property
    def closed(self):
        """Whether :meth:`close` was called (a closed store reads nothing)."""
        return self._h5 is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return (f"<ShardStore {self.path}: {self.num_vertices} vertices, {self.num_edges} edges, "
                f"{self.num_shards} shards>")


def open(path: Union[str, "os.PathLike[str]"], verify: str = "first") -> "ShardStore":  # noqa: A001 - grstream.open mirrors the builtin on purpose
    """Open and validate a shard store.

    Parameters
    ----------
    path : str or Path
        The ``.h5`` file written by :func:`grstream.build_shards`.
    verify : {"first", "always", "never"}
        When shard datasets' CRC32 and id ranges are checked: on a dataset's first read, on
        every read, or never. The intervals and the shard index are checked on open and the
        per-vertex arrays on first use, unless "never"; offsets on open (a store without a shard
        index) or on their first read, in every mode.

    Returns
    -------
    ShardStore

    Raises
    ------
    ShardStoreError
        The file is missing, not HDF5, truncated, not a shard store or inconsistent.
    FormatVersionError
        The store's format version is not one this grstream reads.

    Examples
    --------
    >>> with gr.open("shards/g.h5") as store:
    ...     src = store.read(0, "in/src")
    """
    return ShardStore(path, verify=verify)


def _not_a_file(path):
    """Why ``path``, not a regular file, cannot be a store."""
    if path.is_dir():
        return "is a directory, not a store file (a store is one .h5 file)"
    if path.exists():
        return "is not a regular file (a store is one .h5 file)"
    return "no such store file"


def _first_line(exc):
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
