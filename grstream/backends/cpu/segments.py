"""Segment operations on CSR/CSC offsets, the numpy kernels of the CPU backend."""
import numpy as np
import scipy.sparse as sp


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


def spmv(indptr, indices, x):
    """``out[k] = sum(x[indices[indptr[k]:indptr[k+1]]])`` through scipy's CSR product.

    Index arrays are given one dtype so scipy does not copy them; the all-ones data array is
    cached per dtype and length (it is the same every call).
    """
    nrows = len(indptr) - 1
    if len(indices) == 0 or nrows == 0:
        return np.zeros(nrows, dtype=x.dtype)
    if indices.dtype == np.int32 and len(indices) < 2**31 - 1:
        indptr = indptr.astype(np.int32)
    else:
        indices = indices.astype(np.int64, copy=False)
        indptr = indptr.astype(np.int64, copy=False)
    data = _ones(len(indices), x.dtype)
    mat = sp.csr_matrix((data, indices, indptr), shape=(nrows, len(x)), copy=False)
    return mat @ x


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
