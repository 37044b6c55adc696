"""Segment operations on CSR/CSC offsets, the numpy kernels of the CPU backend."""
import numpy as np


def reduce_segments(values, indptr, monoid, dtype):
    """Reduce ``values`` over the segments ``indptr`` delimits; empty segments get the identity.

    ``ufunc.reduceat`` misreads empty segments (it returns the element at the start), so it is
    applied to the starts of non-empty segments only: consecutive non-empty starts still delimit
    exactly the right elements because empty segments hold none.
    """
    nseg = len(indptr) - 1
    out = np.full(nseg, monoid.identity(dtype), dtype=dtype)
    if nseg == 0 or values.size == 0:
        return out
    starts = indptr[:-1]
    nonempty = indptr[1:] > starts
    if values.dtype != dtype:
        values = values.astype(dtype)
    if nonempty.all():
        out[:] = monoid.ufunc.reduceat(values, starts)
    else:
        out[nonempty] = monoid.ufunc.reduceat(values, starts[nonempty])
    return out


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
