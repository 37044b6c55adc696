"""Edges held in numpy arrays: an ``(m, 2)`` / ``(m, 3)`` table or a ``(src, dst[, weight])`` tuple.

Arrays are checked when the source is opened and chunked by slicing; the caller's arrays are
never modified (every chunk is a new array).
"""
import numpy as np

from ..errors import InputFormatError
from .base import EdgeSource
from .chunking import check_chunk_edges
from .validate import resolve_weighted, to_edges


def columns_of_table(table, name):
    """Split an ``(m, 2)`` or ``(m, 3)`` array into its columns (views)."""
    if table.ndim != 2 or table.shape[1] not in (2, 3):
        raise InputFormatError(f"edge array must have shape (m, 2) or (m, 3), not {table.shape}",
                               name)
    if table.dtype.kind not in "uif":
        raise InputFormatError(f"edge array must be integer or real, not {table.dtype}", name)
    return table[:, 0], table[:, 1], (table[:, 2] if table.shape[1] == 3 else None)


def array_chunks(src, dst, weight, name, chunk_edges):
    """Yield checked chunks of the columns; errors name the 0-based row."""
    for start in range(0, len(src), chunk_edges):
        stop = start + chunk_edges

        def fail(row, message, start=start):
            raise InputFormatError(f"row {start + row}: {message}", name)

        yield to_edges(np.asarray(src[start:stop]), np.asarray(dst[start:stop]),
                       None if weight is None else np.asarray(weight[start:stop]), fail)


def array_source(src, dst, weight, *, name, weighted, chunk_edges, fmt, num_vertices=None,
                 check_now=True, size_bytes=None):
    """An :class:`EdgeSource` over column arrays (shared by the array and ``.npy`` readers)."""
    chunk_edges = check_chunk_edges(chunk_edges)
    use_weight = resolve_weighted(weight is not None, weighted, name)
    weight = weight if use_weight else None
    if check_now:
        for _ in array_chunks(src, dst, weight, name, chunk_edges):
            pass
    return EdgeSource(name, lambda: array_chunks(src, dst, weight, name, chunk_edges), use_weight,
                      num_vertices, size_bytes, fmt, {"edges": len(src)})


def read_arrays(edges, *, weighted=None, chunk_edges=None, name="<array>"):
    """Open in-memory edges as an :class:`EdgeSource`.

    Parameters
    ----------
    edges : ndarray or tuple
        An ``(m, 2)`` / ``(m, 3)`` array (third column = weight) or ``(src, dst[, weight])``
        of equal-length 1-D arrays. Ids are 0-based non-negative integers (integer-valued
        floats are accepted), or names: str, bytes or object columns get ids in order of first
        appearance and the source keeps the names as labels.
    weighted : bool or None
        None: use weights when given; True: require them; False: drop them.
    chunk_edges : int, optional
        Maximum edges per chunk.

    Raises
    ------
    InputFormatError
        Wrong shapes or dtypes, negative or fractional ids, non-finite weights (at open).

    Examples
    --------
    >>> import numpy as np
    >>> src = read_arrays(np.array([[0, 1], [1, 2]]))
    >>> [c[1].tolist() for c in src.chunks()]
    [[1, 2]]
    """
    if isinstance(edges, np.ndarray) and edges.dtype.kind in NAMES and edges.ndim == 2:
        src, dst = edges[:, 0], edges[:, 1]
        weight = _real(edges[:, 2], name) if edges.shape[1] == 3 else None
        if edges.shape[1] not in (2, 3):
            columns_of_table(edges, name)  # raises the shape error
    elif isinstance(edges, np.ndarray):
        src, dst, weight = columns_of_table(edges, name)
    else:
        cols = [np.asarray(c) for c in edges]
        if len(cols) not in (2, 3):
            raise InputFormatError(f"an edge tuple is (src, dst[, weight]), not {len(cols)} arrays",
                                   name)
        if any(c.ndim != 1 for c in cols) or len({len(c) for c in cols}) != 1:
            raise InputFormatError("src, dst and weight must be 1-D arrays of equal length, got "
                                   f"shapes {[c.shape for c in cols]}", name)
        src, dst = cols[:2]
        weight = cols[2] if len(cols) == 3 else None
    labels = None
    if src.dtype.kind in NAMES or dst.dtype.kind in NAMES:
        src, dst, labels = named_ids(src, dst)
    source = array_source(src, dst, weight, name=name, weighted=weighted, chunk_edges=chunk_edges,
                          fmt="numpy")
    if labels is not None:
        source.labels = lambda: labels
    return source


#: dtype kinds of vertex names: str, bytes, Python objects (any hashable)
NAMES = "USO"


def named_ids(src, dst):
    """Ids in order of first appearance (source before destination, edge by edge) for columns
    of names, and the name of every id (README "Vertex ids")."""
    index = {}
    ids = np.empty((len(src), 2), dtype=np.int64)
    for k, pair in enumerate(zip(src.tolist(), dst.tolist())):
        ids[k, 0] = index.setdefault(pair[0], len(index))
        ids[k, 1] = index.setdefault(pair[1], len(index))
    return ids[:, 0], ids[:, 1], list(index)


def _real(column, name):
    try:
        return column.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise InputFormatError(f"an edge weight is not a number ({exc})", name) from None
