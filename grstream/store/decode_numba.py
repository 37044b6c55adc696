"""The compiled decode loop of compressed ids (imported only where numba is installed; see
:mod:`grstream.store.decode`). Each block's lanes are walked once: a reset lane's id is read
whole, every other lane's difference is added to the running id, from two bit cursors (the
resets' and the differences') that advance through the block's stream."""
import numba
import numpy as np


@numba.njit(cache=True, nogil=True, boundscheck=False)
def decode_into(offsets, masks, widths, words, a, out):
    """Decode ``len(out)`` ids with ``a``-bit resets into ``out``."""
    edges, nwords = len(out), len(words)
    id_mask = (np.int64(1) << a) - 1 if a < 63 else np.int64(0x7FFFFFFFFFFFFFFF)
    for b in range(len(masks)):
        mask, w = np.int64(masks[b]), np.int64(widths[b])
        left, resets = mask, 0
        while left:
            left &= left - 1
            resets += 1
        reset_bit = np.int64(offsets[b]) * 32
        field_bit = reset_bit + resets * a
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
