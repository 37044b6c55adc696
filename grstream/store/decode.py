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


def numba_available():
    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):
        return False


def decode_ids(parts, num_edges, num_vertices, dtype, compiled=None, out=None):
    """All ``num_edges`` ids of ``parts`` as ``dtype`` (into ``out``, a contiguous array of
    them, when given); ``compiled`` True/False forces the numba loop or numpy (None: numba
    for large datasets where installed)."""
    if compiled is None:
        compiled = num_edges >= COMPILED_IDS and numba_available()
    if out is None:
        out = np.empty(num_edges, dtype=dtype)
    if not compiled or num_edges == 0:
        out[...] = codec.decode(parts, num_edges, num_vertices, dtype)
        return out
    from .decode_numba import decode_into
    decode_into(parts["offsets"], parts["masks"], parts["widths"], parts["words"],
                np.int64(codec.id_bits(num_vertices)), out)
    return out
