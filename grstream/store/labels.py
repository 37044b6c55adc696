"""Vertex labels: the ids users give and get back, mapped to a store's internal ids ``0..n-1``.

The rule (README "Vertex ids"): every id a user gives (``--source``, ``bfs(store, source)``,
``betweenness(sources=...)``) or reads as a key (``-o`` files, :meth:`LabelledStore.by_label`)
is a **label**, the vertex as the input wrote it; every per-vertex array is in **internal
order** (element ``i`` is internal vertex ``i``, whose label is ``store.labels()[i]``). GAS
programs run by :func:`grstream.run` see internal ids (``v.id``).

A vertex's label is, in this order of precedence:

* the string in ``/vertex/label_bytes`` + ``/vertex/label_offsets`` (root attr ``label_kind =
  "str"``: an edge list of names, a networkx graph with non-integer nodes);
* the integer in ``/vertex/original_id`` (renumbered stores; the id as written in the input);
* ``internal id + id_base`` (root attr ``id_base``: 1 for ``.mtx``, KONECT and DIMACS inputs,
  whose ids start at 1; 0 otherwise and for stores written before the attribute existed).

API on every open store (:class:`ShardStore` inherits :class:`LabelledStore`), which the NetworkX
backend uses to key results by the user's node labels:

``store.has_labels``
    True when some label differs from its internal id (string labels, a renumbered store, a
    1-based input). False means ``labels()`` is ``arange(n)``.
``store.label_kind``
    ``"int"`` or ``"str"``.
``store.id_base``
    0 or 1 (meaningful only without a label table).
``store.labels()``
    Read-only array of length ``n``, the label of every internal vertex: int64 for integer
    labels (``arange(n) + id_base`` without a table), an object array of ``str`` for string
    labels. Read from the file on first call, then cached.
``store.to_internal(labels)``
    Internal ids (int64 array shaped like ``labels``; a scalar gives a 0-d array) of labels.
    Integer stores accept ints and integer strings (``"3353"``); string stores compare
    ``str(label)``. Raises :class:`~grstream.errors.UsageError` naming the first unknown label.
``store.to_labels(internal)``
    Labels of internal ids (``labels()[internal]``).
``store.by_label(values)``
    ``{label: value}`` for a per-vertex array in internal order (Python scalars).
"""
import numbers
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import UsageError, plain
from .format import VERTEX_ORDER

LABEL_BYTES = "vertex/label_bytes"
LABEL_OFFSETS = "vertex/label_offsets"
ORIGINAL_ID = "vertex/original_id"
KINDS = ("int", "str")
#: gathers of at least this many labels run in pieces on threads: numpy's take releases the
#: GIL, and a random gather is bound by memory latency, which threads overlap (a run's vertex
#: ids as labels: cc's component names, every vertex's label for an output file)
PARALLEL_TAKE = 1 << 22
#: ids are sparse, and renumbered by default, when ``max id + 1 > SPARSE_FACTOR * distinct ids``
SPARSE_FACTOR = 2


def is_sparse(id_range, distinct):
    """The default rule: more than half of ``0..id_range-1`` would be vertices without an id."""
    return id_range > SPARSE_FACTOR * distinct


def encode_strings(labels):
    """UTF-8 bytes of every label packed into one uint8 array, and the ``(n + 1,)`` offsets."""
    encoded = [str(s).encode("utf-8") for s in labels]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def decode_strings(data, offsets):
    """The object array of ``str`` that :func:`encode_strings` packed."""
    raw = data.tobytes()
    out = np.empty(len(offsets) - 1, dtype=object)
    out[:] = [raw[a:b].decode("utf-8") for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
    return out


def label_table(labels):
    """``("int", int64 array)`` or ``("str", object array)`` for any sequence of labels.

    Integer labels (numpy or Python ints, not bools) stay integers; anything else is stored as
    its ``str``: the store keeps text, so a tuple label ``(1, 2)`` becomes ``"(1, 2)"``.
    """
    if isinstance(labels, np.ndarray) and labels.dtype.kind in "iu":
        return "int", labels.astype(np.int64).reshape(len(labels))
    values = list(labels)
    if all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values):
        return "int", np.asarray(values, dtype=np.int64).reshape(len(values))
    out = np.empty(len(values), dtype=object)
    out[:] = [str(v) for v in values]
    return "str", out


def write_labels(writer, kind, table):
    """Write a label table with ``writer.dataset`` (contiguous, checksummed)."""
    if kind == "str":
        data, offsets = encode_strings(table)
        writer.dataset(LABEL_OFFSETS, offsets)
        writer.dataset(LABEL_BYTES, data)
    else:
        writer.dataset(ORIGINAL_ID, np.asarray(table, dtype=np.int64))


def take(table, index):
    """``table[index]`` for an int64 ``index`` of any shape, a large one in pieces on threads."""
    flat = index.reshape(-1)
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    pieces = min(cores, flat.size // PARALLEL_TAKE)
    if pieces < 2 or table.dtype == object:     # (an object gather holds the GIL)
        return table[index]
    out = np.empty(flat.size, dtype=table.dtype)
    bounds = np.linspace(0, flat.size, pieces + 1).astype(np.int64).tolist()

    def piece(k):
        np.take(table, flat[bounds[k]:bounds[k + 1]], out=out[bounds[k]:bounds[k + 1]])

    with ThreadPoolExecutor(pieces, thread_name_prefix="grstream-labels") as pool:
        list(pool.map(piece, range(pieces)))
    return out.reshape(index.shape)


def _as_int(label):
    if isinstance(label, (bool, np.bool_)):
        raise ValueError
    if isinstance(label, numbers.Integral):
        return int(label)
    if isinstance(label, (str, bytes)):
        return int(label.strip())
    if isinstance(label, numbers.Real) and float(label).is_integer():
        return int(label)
    raise ValueError


class LabelledStore:
    """The label half of a store; see the module docstring. Subclasses call :meth:`_init_labels`."""

    def _init_labels(self, attrs):
        """Read the label attributes (``id_base``, ``label_kind``) and check them."""
        base = attrs.get("id_base", 0)
        base = base.item() if isinstance(base, np.generic) else base
        kind = attrs.get("label_kind", "int")
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if not isinstance(base, int) or base not in (0, 1):
            self._fail(f"root attribute id_base is {plain(base)}, expected 0 or 1")
        if kind not in KINDS:
            self._fail(f"root attribute label_kind is {plain(kind)}, expected 'int' or 'str'")
        if kind == "str" and not self.renumbered:
            self._fail("label_kind 'str' needs renumbered = true")
        order = attrs.get(VERTEX_ORDER)
        order = order.decode() if isinstance(order, bytes) else order
        if order is not None and (not isinstance(order, str) or not self.renumbered):
            self._fail(f"root attribute {VERTEX_ORDER} is {plain(order)}: a reordered store "
                       "has a string there and a label table (renumbered = true)")
        #: the order a build gave the vertices (``reorder``), or None: the input's order
        self.vertex_order = order
        self.id_base = int(base)
        self.label_kind = kind
        self._labels = None
        self._index = None

    @property
    def has_labels(self):
        """True when some vertex's label differs from its internal id."""
        return self.renumbered or self.id_base != 0

    def labels(self):
        """Label of every internal vertex (read-only; int64 or an object array of str)."""
        if self._labels is None:
            n = self.num_vertices
            if self.label_kind == "str":
                offsets = self._read_small(LABEL_OFFSETS, np.int64, n + 1)
                if offsets[0] != 0 or np.any(np.diff(offsets) < 0):
                    self._fail("label offsets must start at 0 and not decrease",
                               dataset=LABEL_OFFSETS)
                data = self._read_small(LABEL_BYTES, np.uint8, int(offsets[-1]))
                try:
                    labels = decode_strings(data, offsets)
                except UnicodeDecodeError as exc:
                    self._fail(f"labels are not UTF-8 ({exc.reason})", dataset=LABEL_BYTES)
            elif self.original_ids() is not None:
                labels = self.original_ids()
            else:
                labels = np.arange(self.id_base, n + self.id_base, dtype=np.int64)
            labels.flags.writeable = False
            self._labels = labels
        return self._labels

    def to_labels(self, internal):
        """Labels of internal ids (an array shaped like ``internal``)."""
        internal = np.asarray(internal, dtype=np.int64)
        if not self.has_labels and internal.size and internal.min() >= 0 \
                and internal.max() < self.num_vertices:
            return internal.copy()      # labels() is arange(n): every id is its own label
        return take(self.labels(), internal)

    def by_label(self, values):
        """``{label: value}`` of a per-vertex array in internal order."""
        values = np.asarray(values)
        if values.shape[:1] != (self.num_vertices,):
            raise UsageError(f"expected one value per vertex ({self.num_vertices}), "
                             f"got shape {values.shape}")
        return dict(zip(self.labels().tolist(), values.tolist()))

    def to_internal(self, labels):
        """Internal ids (int64, shaped like ``labels``) of vertex labels; see the module docstring."""
        given = np.asarray(labels)
        if given.dtype.kind not in "iu" or self.label_kind == "str":
            given = np.asarray(labels, dtype=object)
        flat = given.reshape(-1)
        if self.label_kind == "str":
            found = self._lookup_strings(flat)
        else:
            found = self._lookup_ints(flat)
        return found.reshape(given.shape)

    def _unknown(self, label, why="does not occur in the graph"):
        raise UsageError(f"vertex {plain(label)} {why}")

    def _lookup_strings(self, flat):
        if self._index is None:
            self._index = {s: i for i, s in enumerate(self.labels().tolist())}
        out = np.empty(len(flat), dtype=np.int64)
        for k, label in enumerate(flat):
            hit = self._index.get(str(label))
            if hit is None:
                self._unknown(str(label))
            out[k] = hit
        return out

    def _lookup_ints(self, given):
        if given.dtype.kind == "i" or (given.dtype.kind == "u" and given.size and
                                       given.max() <= np.iinfo(np.int64).max):
            ids = given.astype(np.int64)
        else:
            flat = given.astype(object)
            try:
                ids = np.array([_as_int(v) for v in flat], dtype=np.int64)
            except (TypeError, ValueError, OverflowError):
                bad = next(v for v in flat if not _is_int(v))
                raise UsageError(f"vertex id must be an integer, not {plain(bad)}") from None
        n = self.num_vertices
        table = self.original_ids()
        if table is None:
            internal = ids - self.id_base
            bad = (internal < 0) | (internal >= n)
            if bad.any():
                lo, hi = self.id_base, n - 1 + self.id_base
                span = f"{lo}..{hi}" if n else "none"
                self._unknown(int(ids[np.argmax(bad)]),
                              f"is out of range: the graph has {n} vertices (ids {span})")
            return internal
        if self._index is None:
            # renumbering writes the table sorted; any other order gets a sorting permutation
            self._index = (None if np.all(table[1:] > table[:-1])
                           else np.argsort(table, kind="stable"))
        order = self._index
        keys = table if order is None else table[order]
        pos = np.minimum(np.searchsorted(keys, ids), max(n - 1, 0))
        bad = (keys[pos] != ids) if n else np.ones(len(ids), dtype=bool)
        if bad.any():
            self._unknown(int(ids[np.argmax(bad)]))
        return pos if order is None else order[pos]


def _is_int(value):
    try:
        _as_int(value)
    except (TypeError, ValueError, OverflowError):
        return False
    return True
