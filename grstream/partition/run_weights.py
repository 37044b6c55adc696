"""Weights of the external build's key runs, kept in the narrowest float that holds them exactly.

A weighted run file held each weight at the store's width (8 B of float64) beside its 8 B key,
once per direction: 32 B per edge through the page cache against 16 B unweighted, before the
store's 24 B. Common weights need far fewer bits (integers up to 2048 are exact in float16,
values produced as float32 in float32), so a chunk whose weights all survive the round trip
through a narrower float is written that narrow (RMAT's integer weights: 2 B) and widened
again when a shard is built. The round trip is exact, so the store is bit for bit the same;
weights that need the full width (random float64) keep it, after a check that stops at the
first sample that does not fit.
"""
import numpy as np

#: narrower floats tried, narrowest first
_NARROW = (np.dtype(np.float16), np.dtype(np.float32))
#: weights checked before a whole chunk is: most chunks that do not fit fail here, cheaply
_SAMPLE = 4096


def narrowest(weight):
    """``weight`` in the narrowest float of ``_NARROW`` that holds every value exactly (sign
    of zero included), or ``weight`` itself when none narrower than its own dtype does."""
    for dtype in _NARROW:
        if dtype.itemsize >= weight.dtype.itemsize:
            break
        if _exact(weight[:_SAMPLE], dtype) is not None:
            narrow = _exact(weight, dtype)
            if narrow is not None:
                return narrow
    return weight


def widest(dtypes):
    """The dtype that holds every one of ``dtypes`` exactly (they are floats)."""
    return max(dtypes, key=lambda d: d.itemsize)


def _exact(weight, dtype):
    # beyond the narrow range a value becomes inf, which then compares unequal
    with np.errstate(over="ignore"):
        narrow = weight.astype(dtype)
    # equal values convert back to the same bits: a zero's sign survives the cast both ways
    return narrow if np.array_equal(narrow, weight) else None
