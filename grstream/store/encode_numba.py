"""The compiled encoder of compressed ids (imported only where numba is installed; see
:mod:`grstream.store.encode`). It writes what :func:`grstream.store.codec.encode` writes, in
two passes over a range of blocks: :func:`plan_blocks` chooses each block's width and reset
mask and counts its words; once the offsets are known (their prefix sum), :func:`pack_blocks`
writes each block's stream through a 64-bit bit cursor (the resets' ids in lane order, then
the differences). Bit lengths come from numba's count-leading-zeros intrinsic (which numba
itself uses and tests), and the cursor steps without branches, where the data would make
branches unpredictable. Both release the GIL, so ranges of blocks and other shards encode on
threads of their own."""
import numba
import numpy as np
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros

#: a lane that must be a reset needs this many bits (more than any width)
_RESET = 32
#: words of a block's stream buffer: 32 ids of up to 63 bits, and the cursor's last store
_MAX_BLOCK_WORDS = 64


@numba.njit(cache=True, nogil=True, inline="always")
def _bit_length(x):
    """Bits of ``x``, 0 <= x < 2**63 (0 for 0): one count-leading-zeros instruction."""
    return 64 - leading_zeros(np.uint64(x))


@numba.njit(cache=True, nogil=True, inline="always")
def _load(ids, b, lanes):
    """Block ``b``'s 32 ids into ``lanes``; positions past the end repeat the last id."""
    base, n = b * 32, len(ids)
    if base + 32 <= n:
        for k in range(32):
            lanes[k] = ids[base + k]
    else:
        for k in range(32):
            lanes[k] = ids[min(base + k, n - 1)]


@numba.njit(cache=True, nogil=True, boundscheck=False)
def plan_blocks(ids, a, first, last, masks, widths, nwords):
    """Blocks ``first..last-1``: each one's reset mask, width (the fewest words, the smallest
    width on ties) and word count, into ``masks``, ``widths`` and ``nwords``."""
    lanes = np.empty(32, np.int64)
    need = np.empty(32, np.int64)
    hist = np.empty(_RESET + 1, np.int64)
    for b in range(first, last):
        _load(ids, b, lanes)
        hist[:] = 0
        need[0] = _RESET
        hist[_RESET] = 1
        for k in range(1, 32):
            delta = lanes[k] - lanes[k - 1]
            wide = np.int64(delta < 0 or delta >= 1 << 31)
            bits = wide * _RESET + (1 - wide) * _bit_length(delta & 0x7FFFFFFF)
            need[k] = bits
            hist[bits] += 1
        # resets at width w: lanes needing more than w bits (a suffix sum of the histogram)
        resets = hist[_RESET]
        best_w, best_words = 0, np.int64(1) << 62
        for w in range(_RESET - 1, -1, -1):
            words = (resets * a + (32 - resets) * w + 31) >> 5
            if words <= best_words:
                best_w, best_words = w, words
            resets += hist[w]
        mask = np.int64(0)
        for k in range(32):
            mask |= np.int64(need[k] > best_w) << k
        masks[b] = mask
        widths[b] = best_w
        nwords[b] = best_words


@numba.njit(cache=True, nogil=True, inline="always")
def _flush(block, cursor, acc, filled):
    """Store the cursor's low word at ``block[cursor]`` and step past it once it is whole:
    no branch (a partial word is stored again until it is)."""
    block[cursor] = acc & 0xFFFFFFFF
    full = filled >> 5
    return cursor + full, acc >> (full << 5), filled & 31


@numba.njit(cache=True, nogil=True, boundscheck=False)
def pack_blocks(ids, a, first, last, masks, widths, offsets, words):
    """Write the streams of blocks ``first..last-1`` (planned by :func:`plan_blocks`) into
    ``words`` from ``offsets[b]``; the padding bits of each block's last word are zero.

    A block's stream is built in a local buffer of the longest stream's words (32 resets of
    up to 63 bits), then copied: the cursor stores without branching, and never beyond the
    block. The cursor keeps fewer than 32 pending bits in ``acc`` and adds at most 32 at a
    time, so they fit a non-negative int64.
    """
    low = min(a, 32)
    low_mask = (np.int64(1) << low) - 1
    high = a - low
    high_mask = (np.int64(1) << high) - 1
    lanes = np.empty(32, np.int64)
    block = np.empty(_MAX_BLOCK_WORDS, np.uint32)
    for b in range(first, last):
        _load(ids, b, lanes)
        mask, w = np.int64(masks[b]), np.int64(widths[b])
        cursor, acc, filled = 0, np.int64(0), np.int64(0)
        left = mask
        while left:                             # the resets' ids, lowest lane first
            value = lanes[trailing_zeros(left)]
            left &= left - 1
            acc |= (value & low_mask) << filled
            cursor, acc, filled = _flush(block, cursor, acc, filled + low)
            if high:
                acc |= ((value >> 32) & high_mask) << filled
                cursor, acc, filled = _flush(block, cursor, acc, filled + high)
        if w:                                   # the other lanes' differences
            width_mask = (np.int64(1) << w) - 1
            for k in range(1, 32):
                keep = ((mask >> k) & 1) ^ 1
                acc |= ((lanes[k] - lanes[k - 1]) & width_mask & -keep) << filled
                cursor, acc, filled = _flush(block, cursor, acc, filled + w * keep)
        block[cursor] = acc & 0xFFFFFFFF
        start = np.int64(offsets[b])
        for j in range(np.int64(offsets[b + 1]) - start):
            words[start + j] = block[j]
