"""The compiled decode loop of compressed ids (imported only where numba is installed; see
:mod:`grstream.store.decode`). Each block's lanes are walked once: a reset lane's id is read
whole, every other lane's difference is added to the running id, from two bit cursors (the
resets' and the differences') that advance through the block's stream.

Ids of at most 32 bits (every int32 store) take a branch-free loop: a lane's field lies in
the 64-bit window of the two words from its first one, and whether the lane is a reset
selects the cursor, the field's width and whether the running id restarts by masks (and a
select), so the reset pattern costs no mispredicted branches. The window's second word exists for every
block but the last (each block's stream is at least one word); the last block, and ids of
more than 32 bits, take the checked loop."""
import numba
import numpy as np


@numba.njit(cache=True, nogil=True, boundscheck=False)
def decode_into(offsets, masks, widths, words, a, out):
    """Decode ``len(out)`` ids with ``a``-bit resets into ``out``."""
    nb = len(masks)
    unchecked = nb - 1 if a <= 32 else 0
    while unchecked > 0 and np.int64(offsets[unchecked]) >= len(words):
        unchecked -= 1
    _decode_windows(offsets, masks, widths, words, a, out, unchecked)
    for b in range(unchecked, nb):
        _decode_checked(offsets, masks, widths, words, a, out, b)


@numba.njit(cache=True, nogil=True, inline="always")
def _resets(mask):
    count = 0
    while mask:
        mask &= mask - 1
        count += 1
    return count


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _decode_windows(offsets, masks, widths, words, a, out, blocks):
    """Blocks ``0..blocks-1`` (whole, each followed by another word; ``a`` <= 32)."""
    id_mask = (np.int64(1) << a) - 1
    for b in range(blocks):
        mask, w = np.int64(masks[b]), np.int64(widths[b])
        width_mask = (np.int64(1) << w) - 1
        reset_bit = np.int64(offsets[b]) * 32
        field_bit = reset_bit + _resets(mask) * a
        current = np.int64(0)
        base = b * 32
        for k in range(32):
            reset = (mask >> k) & 1
            keep = reset - 1                    # all ones for a difference, 0 for a reset
            bit = reset_bit if reset else field_bit
            index = bit >> 5
            window = np.int64(words[index]) | (np.int64(words[index + 1]) << 32)
            value = (window >> (bit & 31)) & ((width_mask & keep) | (id_mask & ~keep))
            current = (current & keep) + value
            reset_bit += a & ~keep
            field_bit += w & keep
            out[base + k] = current


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _decode_checked(offsets, masks, widths, words, a, out, b):
    """Block ``b``, its reads checked against the stream's end (any ``a``)."""
    edges, nwords = len(out), len(words)
    id_mask = (np.int64(1) << a) - 1 if a < 63 else np.int64(0x7FFFFFFFFFFFFFFF)
    mask, w = np.int64(masks[b]), np.int64(widths[b])
    reset_bit = np.int64(offsets[b]) * 32
    field_bit = reset_bit + _resets(mask) * a
    field_mask = (np.int64(1) << w) - 1
    current = np.int64(0)
    for k in range(min(32, edges - b * 32)):
        reset = (mask >> k) & 1
        if reset:
            bit, nbits, keep = reset_bit, a, id_mask
            reset_bit += a
        else:
            bit, nbits, keep = field_bit, w, field_mask
            field_bit += w
        value = np.int64(0)
        if nbits:
            index, shift = bit >> 5, bit & 31
            window = np.uint64(words[index])
            if index + 1 < nwords:
                window |= np.uint64(words[index + 1]) << np.uint64(32)
            value = np.int64(window >> np.uint64(shift))
            if nbits + shift > 64:
                value |= np.int64(np.uint64(words[index + 2]) << np.uint64(64 - shift))
            value &= keep
        current = value if reset else current + value
        out[b * 32 + k] = current
