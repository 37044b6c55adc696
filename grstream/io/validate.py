"""Turn parsed id/weight columns into checked 0-based edge chunks.

Every reader funnels its numbers through :func:`to_edges`, so all formats reject the same
things with the same words: ids that are negative, fractional, too large or beyond a declared
size, and weights that are not finite.
"""
import numpy as np

from ..errors import InputFormatError

#: float64 holds every integer below this exactly; larger ids read as floats are ambiguous
_FLOAT_EXACT = 2.0 ** 53
_INT64_LIMITS = (np.iinfo(np.int64).min, np.iinfo(np.int64).max)
#: the largest id: the vertex count, largest id + 1, must fit int64 too. Text parsing clips an
#: overflowing number to 2**63 - 1, so that value itself cannot be told from a larger one.
MAX_VERTEX_ID = _INT64_LIMITS[1] - 1
_ID_LIMIT_NOTE = (f"ids must be at most 2^63 - 2 = {MAX_VERTEX_ID}, so that the vertex count "
                  "(largest id + 1) fits int64")


def _first(mask):
    return int(np.argmax(mask))


def _check_ids(ids, fail, base, limit):
    """Check one id column and return it 0-based as a new int64 array (one pass for the
    smallest id and one for the largest; a conversion's result is not copied again)."""
    if ids.dtype.kind == "f":
        bad = ~np.isfinite(ids) | (ids != np.floor(ids))
        if bad.any():
            fail(_first(bad), f"vertex id {float(ids[_first(bad)])!r} is not an integer")
        big = np.abs(ids) >= _FLOAT_EXACT
        if big.any():
            fail(_first(big), f"vertex id {ids[_first(big)]:.0f} is too large")
        ids = ids.astype(np.int64)
        fresh = True
    elif ids.dtype.kind in "ui":
        if ids.dtype.kind == "u" and ids.size and ids.max() > MAX_VERTEX_ID:
            bad = _first(ids > MAX_VERTEX_ID)
            fail(bad, f"vertex id {int(ids[bad])} is too large: {_ID_LIMIT_NOTE}")
        fresh = ids.dtype != np.dtype(np.int64)
        ids = ids.astype(np.int64, copy=False)
    else:
        fail(0, f"vertex ids must be integers, not {ids.dtype}")
    if ids.size == 0:
        return ids.astype(np.int64)
    low, high = int(ids.min()), int(ids.max())
    if high == _INT64_LIMITS[1] or low == _INT64_LIMITS[0]:
        bad = (ids == _INT64_LIMITS[1]) | (ids == _INT64_LIMITS[0])
        fail(_first(bad), f"vertex id is too large (2^63 - 1 or more): {_ID_LIMIT_NOTE}")
    if low < base:
        bad = ids < base
        if base == 0:
            fail(_first(bad), f"negative vertex id {ids[_first(bad)]}")
        fail(_first(bad), f"vertex id {ids[_first(bad)]} is below {base} (ids are {base}-based)")
    if limit is not None and high > limit - 1 + base:
        bad = ids > limit - 1 + base
        fail(_first(bad), f"vertex id {ids[_first(bad)]} is beyond the declared size {limit}")
    if base:
        return ids - base
    return ids if fresh else ids.copy()


def to_edges(src, dst, weight, fail, *, base=0, limits=(None, None)):
    """Check and convert edge columns.

    Parameters
    ----------
    src, dst : ndarray
        Id columns as read (integer or float dtype); never modified.
    weight : ndarray or None
        Weight column, any real dtype.
    fail : callable
        ``fail(row, message)`` raises the reader's :class:`~grstream.errors.InputFormatError`
        for the *row*-th entry of these columns.
    base : int
        0 or 1: the smallest valid id as written.
    limits : (int or None, int or None)
        Declared number of rows / columns (valid ids as written are ``base .. limit-1+base``).

    Returns
    -------
    (src, dst, weight) : int64, int64, float64 or None
        New arrays, 0-based.
    """
    src = _check_ids(np.asarray(src), fail, base, limits[0])
    dst = _check_ids(np.asarray(dst), fail, base, limits[1])
    if weight is not None:
        weight = np.asarray(weight)
        if weight.dtype.kind not in "uif":
            fail(0, f"weights must be real numbers, not {weight.dtype}")
        if weight.dtype.kind == "i" and weight.size and (
                weight.max() == _INT64_LIMITS[1] or weight.min() == _INT64_LIMITS[0]):
            bad = (weight == _INT64_LIMITS[1]) | (weight == _INT64_LIMITS[0])
            fail(_first(bad), "integer weight is 2^63 - 1 or more in magnitude (beyond int64): "
                              "write it as a real number")
        weight = weight.astype(np.float64)  # always a copy: callers own the result
        finite = np.isfinite(weight)
        if not finite.all():
            fail(_first(~finite), f"weight {weight[_first(~finite)]} is not finite")
    return src, dst, weight


def refuse_empty(path, what="the file is empty or holds only comments"):
    """Refuse a graph file with no edges and no declared vertex count.

    Such a file is far more often a wrong path, a truncated download or a filter that matched
    nothing than an intended empty graph, so it is an error. A header that declares vertices
    (Matrix Market ``5 5 0``, DIMACS ``p sp 4 0``) makes a graph of isolated vertices, and an
    empty in-memory array an empty graph.
    """
    raise InputFormatError(f"no edges: {what} (a graph file needs at least one edge, or a "
                           "header declaring its vertices)", path)


def resolve_weighted(has_weights, weighted, name):
    """Apply a reader's ``weighted`` option: None follows the input, True requires weights.

    Raises
    ------
    InputFormatError
        If ``weighted`` is True and the input has no weights.
    """
    if weighted is None:
        return bool(has_weights)
    if weighted and not has_weights:
        raise InputFormatError("weights were requested but the input has none", name)
    return bool(weighted)
