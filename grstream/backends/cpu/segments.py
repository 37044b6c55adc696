"""Segment operations on CSR/CSC offsets, the numpy kernels of the CPU backend."""
import numpy as np


def reduce_segments(values, indptr, monoid, dtype):
    """Reduce ``values`` over the segments ``indptr`` delimits (along the first axis); empty
    segments get the identity.

    ``ufunc.reduceat`` misreads empty segments (it returns the element at the start), so it is
    applied to the starts of non-empty segments only: consecutive non-empty starts still delimit
    exactly the right elements because empty segments hold none.
    """
    nseg = len(indptr) - 1
    if values.ndim == 2 and monoid.ufunc is np.add and np.dtype(dtype).kind == "f" and nseg:
        # lanes: reduceat walks the segments one by one; a sparse (segments x edges) product
        # adds every lane's column in scipy's C loop
        return segment_sum(values.astype(dtype, copy=False), indptr)
    out = np.full((nseg,) + values.shape[1:], monoid.identity(dtype), dtype=dtype)
    if nseg == 0 or values.shape[0] == 0:
        return out
    starts = indptr[:-1]
    nonempty = indptr[1:] > starts
    if values.dtype != dtype:
        values = values.astype(dtype)
    if nonempty.all():
        out[...] = monoid.ufunc.reduceat(values, starts, axis=0)
    else:
        out[nonempty] = monoid.ufunc.reduceat(values, starts[nonempty], axis=0)
    return out


def segment_sum(values, indptr):
    """Sums of the rows of ``values`` (edges x lanes) over the segments ``indptr`` delimits
    (``indptr[0] == 0``); empty segments give 0."""
    m = values.shape[0]
    nseg = len(indptr) - 1
    small = m < 2**31 - 1
    ind = _arange(m, np.int32 if small else np.int64)
    ptr = indptr.astype(ind.dtype, copy=False)
    import scipy.sparse as sp   # (imported where used: a run that never sums pays nothing)
    mat = sp.csr_matrix((_ones(m, values.dtype), ind, ptr), shape=(nseg, m), copy=False)
    return np.asarray(mat @ values)


def expand_ranges(indptr, rows):
    """Edge positions of the segments ``rows`` (local indices), concatenated, and the new offsets."""
    begin = indptr[rows]
    counts = indptr[rows + 1] - begin
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    if total == 0:
        return np.zeros(0, dtype=np.int64), offsets
    # position k of segment j maps to begin[j] + (k - offsets[j])
    shift = np.repeat(begin - offsets[:-1], counts)
    return shift + np.arange(total, dtype=np.int64), offsets


def segment_owner(indptr, first=0):
    """For every element, the id of the segment holding it (``first`` + local index)."""
    counts = np.diff(indptr)
    return np.repeat(np.arange(first, first + len(counts), dtype=np.int64), counts)


#: the most edges one pass over a unit's rows takes at once (a longer row alone): the CPU
#: executor's temporaries grow with this, not with a unit's edges (facts.py counts them)
CHUNK_EDGES = 1 << 18


def row_chunks(indptr, limit=CHUNK_EDGES):
    """``[(r0, r1)]``: consecutive row ranges of the CSR offsets ``indptr`` covering every row,
    each holding at most ``limit`` edges (a row of more edges alone)."""
    nrows = len(indptr) - 1
    if nrows <= 0 or int(indptr[-1]) - int(indptr[0]) <= limit:
        return [(0, max(nrows, 0))]
    out, r0 = [], 0
    while r0 < nrows:
        r1 = int(np.searchsorted(indptr, indptr[r0] + limit, side="right")) - 1
        r1 = min(max(r1, r0 + 1), nrows)
        out.append((r0, r1))
        r0 = r1
    return out


def spmv(indptr, indices, x):
    """``out[k] = sum(x[indices[indptr[k]:indptr[k+1]]])`` through scipy's CSR product, over
    row ranges of at most CHUNK_EDGES edges (scipy copies an index array that views less
    than half of its buffer, and the all-ones data array is as long as the range's edges).

    Index arrays are given one dtype so scipy does not copy them; the all-ones data array is
    cached per dtype (it is the same every call).
    """
    nrows = len(indptr) - 1
    if len(indices) == 0 or nrows == 0:
        return np.zeros(nrows, dtype=x.dtype)
    import scipy.sparse as sp
    out = np.empty(nrows, dtype=x.dtype)
    small = indices.dtype == np.int32 and len(indices) < 2**31 - 1
    for r0, r1 in row_chunks(indptr):
        e0, e1 = int(indptr[r0]), int(indptr[r1])
        ptr, ids = indptr[r0:r1 + 1] - e0, indices[e0:e1]
        if small:
            ptr = ptr.astype(np.int32)
        else:
            ids, ptr = ids.astype(np.int64, copy=False), ptr.astype(np.int64, copy=False)
        mat = sp.csr_matrix((_ones(e1 - e0, x.dtype), ids, ptr), shape=(r1 - r0, len(x)), copy=False)
        out[r0:r1] = mat @ x
    return out


_ONES = {}
_ARANGE = {}


def _arange(length, dtype):
    have = _ARANGE.get(np.dtype(dtype))
    if have is None or len(have) < length:
        have = np.arange(max(length, 1 << 16), dtype=dtype)
        _ARANGE[np.dtype(dtype)] = have
    return have[:length]


def _ones(length, dtype):
    dtype = np.dtype(dtype)
    have = _ONES.get(dtype)
    if have is None or len(have) < length:
        have = np.ones(max(length, 1 << 16), dtype=dtype)
        _ONES[dtype] = have
    return have[:length]
