"""Encoding id arrays into compressed ids for the builds: the compiled encoder where numba is
installed, else the numpy reference (:func:`grstream.store.codec.encode`); both write the same
words, so a store is byte for byte the same whichever encodes it and on how many threads.

The compiled encoder (:mod:`grstream.store.encode_numba`) releases the GIL: the builds encode a
shard's sides on the threads that cut them, beside the shard being written, and
:func:`encode_ids` given an executor spreads one large array's blocks over it. Small arrays
encode on numpy, where importing numba would cost more than it saves.
"""
import numpy as np

from ..errors import UsageError
from . import codec
from .decode import COMPILED_IDS, numba_available

#: blocks per task where one array's blocks are spread over an executor
BLOCKS_PER_TASK = 1 << 14


class EncodedIds:
    """An id array as the codec's parts (``parts``: offsets, masks, widths, words), with its
    length: what a compressing store writer takes in place of the ids."""

    __slots__ = ("parts", "num_ids")

    def __init__(self, parts, num_ids):
        self.parts = parts
        self.num_ids = int(num_ids)

    def __len__(self):
        return self.num_ids


def encode_ids(ids, num_vertices, compiled=None, executor=None):
    """:func:`grstream.store.codec.encode` of ``ids``, as an :class:`EncodedIds`.

    ``compiled`` True/False forces the numba encoder or numpy (None: numba for large arrays
    where installed); ``executor`` (a :class:`concurrent.futures.Executor` none of whose
    tasks waits on this call) encodes ranges of blocks on its threads.
    """
    ids = np.asarray(ids)
    if compiled is None:
        compiled = len(ids) >= COMPILED_IDS and numba_available()
    if not compiled or not len(ids):
        return EncodedIds(codec.encode(ids, num_vertices), len(ids))
    from .encode_numba import pack_blocks, plan_blocks
    if ids.dtype.kind not in "iu" or ids.dtype.itemsize > 8:
        raise UsageError(f"ids to encode must be integers, not {ids.dtype}")
    a = codec.id_bits(num_vertices)
    nb = codec.num_blocks(len(ids))
    masks = np.empty(nb, dtype=np.uint32)
    widths = np.empty(nb, dtype=np.uint8)
    nwords = np.empty(nb, dtype=np.int64)
    ranges = [(b, min(nb, b + BLOCKS_PER_TASK)) for b in range(0, nb, BLOCKS_PER_TASK)]
    _run(executor, ranges, lambda lo, hi: plan_blocks(ids, a, lo, hi, masks, widths, nwords))
    offsets = np.zeros(nb + 1, dtype=np.int64)
    np.cumsum(nwords, out=offsets[1:])
    del nwords
    if offsets[-1] > codec.MAX_WORDS:
        raise codec.too_many_words(len(ids), offsets[-1])
    words = np.empty(int(offsets[-1]), dtype=np.uint32)
    _run(executor, ranges,
         lambda lo, hi: pack_blocks(ids, a, lo, hi, masks, widths, offsets, words))
    parts = {"offsets": offsets.astype(np.uint32), "masks": masks, "widths": widths,
             "words": words}
    return EncodedIds(parts, len(ids))


def _run(executor, ranges, task):
    if executor is None or len(ranges) < 2:
        for lo, hi in ranges:
            task(lo, hi)
        return
    for future in [executor.submit(task, lo, hi) for lo, hi in ranges]:
        future.result()
