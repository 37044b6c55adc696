"""Vectorised stand-ins for ``src``, ``dst``, ``v`` and ``edge`` in GAS methods on the CPU.

A view maps attribute reads to numpy arrays lazily (nothing is gathered unless the method reads it)
and caches each read, so ``src.rank / src.rank`` indexes once. Writes (``v.rank = x``, apply only)
are held in the view; reads after a write see the written value, as the CUDA translation does.
"""
import numpy as np


class VertexView:
    """Vertex fields of the selected vertices. With ``lanes`` (several runs of one program at
    once) every field is an (n, lanes) array and reads give (count, lanes) arrays; ids and
    builtins read as (count, 1) columns that broadcast against them."""

    __slots__ = ("_fields", "_builtins", "_index", "_count", "_cache", "_assigned", "_writable",
                 "_lanes")

    def __init__(self, fields, builtins, index, count, writable=False, lanes=None):
        # index: a slice (contiguous interval: reads are views, no copy) or an int array of ids
        object.__setattr__(self, "_fields", fields)
        object.__setattr__(self, "_builtins", builtins)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_count", count)
        object.__setattr__(self, "_cache", {})
        object.__setattr__(self, "_assigned", {})
        object.__setattr__(self, "_writable", writable)
        object.__setattr__(self, "_lanes", lanes)

    def __getattr__(self, name):
        assigned = self._assigned
        if name in assigned:
            return assigned[name]
        cache = self._cache
        if name in cache:
            return cache[name]
        idx = self._resolve()
        if name in self._fields:
            value = self._fields[name][idx]
        else:
            if name in self._builtins:   # (the ids too where the caller keeps them: engine/state.py)
                value = self._builtins[name][idx]
            elif name == "id":
                value = (np.arange(idx.start, idx.stop, dtype=np.int64) if isinstance(idx, slice)
                         else idx.astype(np.int64, copy=False))
            else:
                raise AttributeError(f"vertex has no field or property {name!r}")
            if self._lanes is not None:
                value = value[:, None]
        cache[name] = value
        return value

    def _resolve(self):
        # an index may be given as a callable so that it is built only if a method reads it
        idx = self._index
        if callable(idx):
            idx = idx()
            object.__setattr__(self, "_index", idx)
        return idx

    def __setattr__(self, name, value):
        if not self._writable:
            raise AttributeError(f"cannot assign {name!r} here: only apply writes vertex fields")
        if name not in self._fields:
            raise AttributeError(f"{name!r} is not a vertex field")
        self._assigned[name] = value

    def entries(self, name):
        """Init: field ``name``'s own entries over the view's vertices, for the method to write
        every one of in place (``fill``, ``out=``), so that no temporary of n values is made
        for the engine to copy in; what they hold until written is undefined."""
        if not self._writable:
            raise AttributeError(f"cannot assign {name!r} here: only apply writes vertex fields")
        if name not in self._fields:
            raise AttributeError(f"{name!r} is not a vertex field")
        idx = self._resolve()
        if not isinstance(idx, slice):   # (selected vertices: a copy, not the entries)
            raise AttributeError("entries() writes a contiguous span of vertices in place (init's)")
        fields = self._fields
        arr = fields.entries(name) if hasattr(fields, "entries") else fields[name]
        out = arr[idx]
        self._assigned[name] = out
        return out

    def id_mask(self, ids):
        """``v.id == ids``: a bool mask of the view's vertices (with lanes, (count, lanes) where
        ``ids`` holds one id per lane), made without the array of ids over a span of vertices
        (one entry set in zeros, or one per lane)."""
        idx = self._resolve()
        value = np.asarray(ids)
        if not isinstance(idx, slice) or value.dtype.kind not in "iu" or value.ndim > 1 or \
                (self._lanes is None and value.ndim):
            return self.id == ids
        lo, hi = idx.start, idx.stop
        if self._lanes is None:
            mask = np.zeros(hi - lo, dtype=bool)
            if lo <= value < hi:
                mask[int(value) - lo] = True
            return mask
        mask = np.zeros((hi - lo, self._lanes), dtype=bool)
        value = np.broadcast_to(value, (self._lanes,))
        lanes = np.flatnonzero((value >= lo) & (value < hi))
        mask[value[lanes] - lo, lanes] = True
        return mask

    def assigned(self):
        """Fields written by the method, each broadcast to the view's length."""
        out = {}
        shape = (self._count,) if self._lanes is None else (self._count, self._lanes)
        for k, v in self._assigned.items():
            dtype = self._fields[k].dtype
            if not (isinstance(v, np.ndarray) and v.dtype == dtype and v.shape == shape):
                try:
                    v = np.broadcast_to(np.asarray(v, dtype=dtype), shape)
                except (ValueError, TypeError) as exc:
                    raise FieldValueError(k, v, exc) from None
            out[k] = v
        return out


class FieldValueError(ValueError):
    """A value written to vertex field ``field`` does not fit the view (shape or type)."""

    def __init__(self, field, value, cause):
        self.field, self.value = field, value
        super().__init__(f"v.{field}: {cause}")


class ExpandedView:
    """The gathering vertex seen from each of its edges: one vertex's values repeated once per
    edge (``np.repeat`` of the values, cheaper than repeating ids and then indexing)."""

    __slots__ = ("_base", "_counts", "_cache")

    def __init__(self, base, counts):
        object.__setattr__(self, "_base", base)
        object.__setattr__(self, "_counts", counts)
        object.__setattr__(self, "_cache", {})

    def __getattr__(self, name):
        cache = self._cache
        if name not in cache:
            cache[name] = np.repeat(getattr(self._base, name), self._counts, axis=0)
        return cache[name]

    def __setattr__(self, name, value):
        raise AttributeError("only apply writes vertex fields")


class EdgeView:
    """Edge properties of the selected edges. Values may be arrays or zero-argument callables
    producing them (evaluated once, on first read). Writable views (scatter) hold assignments."""

    __slots__ = ("_arrays", "_index", "_cache", "_assigned", "_writable", "_column")

    def __init__(self, arrays, index=None, writable=False, lanes=None):
        object.__setattr__(self, "_arrays", arrays)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_cache", {})
        object.__setattr__(self, "_assigned", {})
        object.__setattr__(self, "_writable", writable)
        # with lanes, properties read as (edges, 1) columns
        object.__setattr__(self, "_column", lanes is not None)

    def __getattr__(self, name):
        if name in self._assigned:
            return self._assigned[name]
        cache = self._cache
        if name not in cache:
            try:
                arr = self._arrays[name]
            except KeyError:
                raise AttributeError(f"edge has no property {name!r}") from None
            if callable(arr):
                arr = arr()
            arr = arr if self._index is None else arr[self._index]
            cache[name] = arr[:, None] if self._column else arr
        return cache[name]

    def __setattr__(self, name, value):
        if not self._writable:
            raise AttributeError("edge properties are read-only in gather_map")
        self._assigned[name] = value

    def assigned(self):
        return dict(self._assigned)


def as_length(value, count, dtype, lanes=None):
    """A method's result as an array of ``count`` elements of ``dtype`` (scalars broadcast);
    with ``lanes``, of shape (count, lanes)."""
    arr = np.asarray(value)
    if arr.dtype != dtype:
        arr = arr.astype(dtype)
    shape = (count,) if lanes is None else (count, lanes)
    if arr.shape != shape:
        arr = np.broadcast_to(arr, shape)
    return arr
