"""Weighted packed keys of the external build: each chunk's run sorted with its weights, and a
shard's keys gathered from the runs turned into its layout.

Both sort keys that hold the edge's index in their low bits (equal (primary, secondary) pairs
then keep input order, and the index carries the weights along). The runs store keys as
``primary << 32 | secondary``; sorted that way, a shard's index no longer fits beside the two
32-bit halves (RMAT-20 at 512 MiB: 20 + 32 + 21 bits), which took the block sort of
:func:`.layout._sort_indexed` (a radix pass over block numbers and a gather per block, about
twice the work of one sort). Narrowing the secondary to the graph's id width before the sort
(20 bits there) leaves room for the index, so a shard sorts its keys once, like an unweighted
one. That wins only where numpy's sort is fast: numpy 2.4 on AMD Zen 4 sorts 64-bit keys with
an AVX-512 routine about 4x slower than its AVX2 one (numpy/numpy#32690), and there the blocks,
each sorted within the caches, beat one sort of the whole shard (docs/BENCHMARKS.md,
"Weighted builds"). A probe of the sort's speed, once per
process, keeps the 32-bit neighbour (the block sort, as before) on such machines.
"""
import functools
import time

import numpy as np

from ..errors import UsageError
from . import layout
from .layout import _as_u64, _bits, _block_bits, _sort_indexed, _sorted_layout

#: keys repacked per step: a scratch slice and an index ramp this long, cache sized
_STEP = 1 << 16
#: keys sorted by :func:`sort_is_fast`'s probe
_PROBE_KEYS = 1 << 15
#: most nanoseconds per key of the probe's sort for a fast sort: between the AVX2 routine's and
#: the AVX-512 one's (docs/BENCHMARKS.md, "Measured constants")
_FAST_SORT_NS = 20.0


def compress_weighted_keys(key, weight, lo, hi, id_dtype, dedup=False, num_vertices=None):
    """:func:`.layout.compress_keys` with a weight per key: ``(indptr, neighbours, weights)``.

    ``key`` (``primary << 32 | secondary``) is rebased and consumed. Equal keys keep their
    given order (the edge's index rides in the key, as in :func:`.layout.compress`), so keys
    gathered run by run from stably sorted runs come out in input order: the result equals
    ``compress(primary, secondary, weight, lo, hi, ...)``. ``num_vertices`` bounds every
    secondary (None: up to ``2**32``); narrower secondaries leave more room for the index.
    Returns None when (primary, secondary, index) is too wide for the block sort; the caller
    then uses :func:`.layout.compress`.
    """
    count = hi - lo
    if count > 1 << 32:
        raise UsageError(f"compress_weighted_keys needs intervals of at most 2**32 vertices, "
                         f"not {count}")
    if len(key) == 0:
        return (np.zeros(count + 1, dtype=np.int64), np.empty(0, dtype=id_dtype),
                np.empty(0, dtype=weight.dtype))
    pbits, ibits = _bits(count), _bits(len(key))
    sbits = 32
    if num_vertices is not None and sort_is_fast():
        sbits = min(32, _bits(num_vertices))
    # read at call time: tests narrow the key width to reach the block sort on small graphs
    inline = pbits + sbits + ibits <= layout._KEY_BITS
    if not inline and _block_bits(pbits, sbits, ibits) is None:
        return None
    _repack(key, lo, 32, sbits, ibits if inline else 0)
    return _sorted_layout(key, weight, count, pbits, sbits, ibits, inline, id_dtype, dedup,
                          None)[:3]


@functools.lru_cache(maxsize=None)
def sort_is_fast():
    """Whether ``np.sort`` of uint64 keys runs at a vectorised speed here: the best of three
    sorts of ``_PROBE_KEYS`` scrambled keys (once per process)."""
    keys = np.arange(_PROBE_KEYS, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return sort_seconds(keys) * 1e9 / _PROBE_KEYS < _FAST_SORT_NS


def sort_seconds(keys, repeats=3):
    """The best time of ``repeats`` sorts of copies of ``keys``, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        work = keys.copy()
        start = time.perf_counter()
        work.sort()
        best = min(best, time.perf_counter() - start)
    return best


def run_fits(count, top):
    """Whether :func:`sorted_run` sorts ``count`` edges of ids below ``top`` (their packed ids
    and index fit one key, or the block sort)."""
    bits, ibits = _bits(top), _bits(count)
    return 2 * bits + ibits <= layout._KEY_BITS or _block_bits(bits, bits, ibits) is not None


def sorted_run(primary, secondary, weight, top):
    """One chunk's keys ``primary << 32 | secondary`` sorted stably, with the weights in their
    order (equal keys keep input order), or None when the chunk's (primary, secondary,
    index) is too wide for the block sort. ``top``: one more than the largest id."""
    if not run_fits(len(primary), top):
        return None
    bits, ibits = _bits(top), _bits(len(primary))
    inline = 2 * bits + ibits <= layout._KEY_BITS
    # narrow keys leave the index room; widened to the runs' 32-bit halves after the sort
    if inline:
        key = _packed(primary, secondary, bits, ibits)
    else:
        key = np.left_shift(_as_u64(primary), np.uint64(bits))
        key |= _as_u64(secondary)
    key, positions = _sort_indexed(key, bits, bits, ibits, inline)
    weight = np.take(weight, positions)
    del positions
    _repack(key, 0, bits, 32, 0)
    return key, weight


def _packed(primary, secondary, sbits, ibits):
    """``(primary << sbits | secondary) << ibits | index`` in one pass over slices."""
    key = np.empty(len(primary), dtype=np.uint64)
    scratch, ramp = _buffers(len(key))
    for start in range(0, len(key), _STEP):
        piece = key[start:start + _STEP]
        tmp = scratch[:len(piece)]
        np.left_shift(_as_u64(primary[start:start + _STEP]), np.uint64(sbits + ibits), out=piece)
        np.left_shift(_as_u64(secondary[start:start + _STEP]), np.uint64(ibits), out=tmp)
        piece |= tmp
        np.add(ramp[:len(piece)], np.uint64(start), out=tmp)
        piece |= tmp
    return key


def _repack(key, lo, old_bits, sbits, ibits):
    """In place: ``primary << old_bits | secondary`` to ``((primary - lo) << sbits |
    secondary) << ibits | index`` (no index when ``ibits`` is 0), slice by slice: no
    temporary the size of ``key``."""
    if old_bits == sbits and not ibits:
        if lo:
            key -= np.uint64(lo << old_bits)
        return
    scratch, ramp = _buffers(len(key))
    low = np.uint64((1 << old_bits) - 1)
    for start in range(0, len(key), _STEP):
        piece = key[start:start + _STEP]
        high = scratch[:len(piece)]
        np.right_shift(piece, np.uint64(old_bits), out=high)
        if lo:
            high -= np.uint64(lo)
        high <<= np.uint64(sbits + ibits)
        piece &= low
        if ibits:
            piece <<= np.uint64(ibits)
            piece |= high
            np.add(ramp[:len(piece)], np.uint64(start), out=high)
        piece |= high


def _buffers(length):
    size = min(_STEP, length)
    return np.empty(size, dtype=np.uint64), np.arange(size, dtype=np.uint64)
