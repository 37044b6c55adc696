"""Decoding compressed id datasets on the CPU: a numba loop where numba is installed, else the
numpy reference (:func:`grstream.store.codec.decode`); both give the same ids.

The compiled loop walks each block's lanes once, keeping the running id (a reset's id, then
each difference added), so it reads every stream word about once and writes each id once;
the numpy reference builds several per-edge temporaries. Small datasets decode on numpy, where
importing numba would cost more than it saves.
"""
import importlib.util

import numpy as np

from . import codec

#: datasets of fewer ids decode on numpy
COMPILED_IDS = 1 << 16

_kernel = None


def numba_available():
    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):
        return False


def decode_ids(parts, num_edges, num_vertices, dtype, compiled=None):
    """All ``num_edges`` ids of ``parts`` as ``dtype``; ``compiled`` True/False forces the
    numba loop or numpy (None: numba for large datasets where installed)."""
    if compiled is None:
        compiled = num_edges >= COMPILED_IDS and numba_available()
    if not compiled or num_edges == 0:
        return codec.decode(parts, num_edges, num_vertices, dtype)
    out = np.empty(num_edges, dtype=dtype)
    _compiled()(parts["offsets"], parts["masks"], parts["widths"], parts["words"],
                np.int64(codec.id_bits(num_vertices)), out)
    return out


def _compiled():
    global _kernel
    if _kernel is None:
        import numba

        @numba.njit(cache=True, nogil=True)
        def extract(words, bit, nbits):
            if nbits == 0:
                return np.int64(0)
            index, shift = bit >> 5, np.uint64(bit & 31)
            value = np.uint64(words[index])
            if index + 1 < len(words):
                value |= np.uint64(words[index + 1]) << np.uint64(32)
            value >>= shift
            if nbits + (bit & 31) > 64:
                value |= np.uint64(words[index + 2]) << (np.uint64(64) - shift)
            return np.int64(value & ((np.uint64(1) << np.uint64(nbits)) - np.uint64(1)))

        @numba.njit(cache=True, nogil=True)
        def decode(offsets, masks, widths, words, a, out):
            edges = len(out)
            for b in range(len(masks)):
                mask, w = np.int64(masks[b]), np.int64(widths[b])
                resets = 0
                for k in range(32):
                    resets += (mask >> k) & 1
                reset_bit = np.int64(offsets[b]) * 32
                field_bit = reset_bit + resets * a
                current = np.int64(0)
                for k in range(min(32, edges - b * 32)):
                    if (mask >> k) & 1:
                        current = extract(words, reset_bit, a)
                        reset_bit += a
                    else:
                        current += extract(words, field_bit, w)
                        field_bit += w
                    out[b * 32 + k] = current

        _kernel = decode
    return _kernel
