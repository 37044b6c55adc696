"""The block codec of compressed id datasets (docs/FORMAT.md, "Compressed ids"): the numpy
reference encoder and decoder.

An id array (a shard direction's ``in/src`` or ``out/dst``) is cut into blocks of
:data:`BLOCK` consecutive edge positions (the last one padded with repeats of the last id).
In each block, lane 0, every lane whose id is below its predecessor's (a row start, mostly)
and every lane whose difference to its predecessor needs more than the block's width ``w``
bits is a *reset*: its id is stored whole, in ``A`` bits (``A`` = :func:`id_bits` of the
vertex count); every other lane stores its difference to the previous lane in ``w`` bits. A
block's bit stream holds the resets' ids in lane order, then the other lanes' differences in
lane order, and is padded to whole 32-bit words. Four arrays describe it:

``offsets`` uint32 ``(nb + 1,)``  block ``b``'s stream is ``words[offsets[b]:offsets[b + 1]]``
``masks``   uint32 ``(nb,)``      bit ``k`` set: lane ``k`` is a reset (bit 0 always)
``widths``  uint8  ``(nb,)``      ``w``, 0..31
``words``   uint32                the streams; bit ``j`` of a stream is bit ``j % 32`` of word ``j // 32``

A lane decodes from its block alone: reset lanes before it give its reset's rank
(``popcount(mask & ((1 << k) - 1))``) and so where its bits lie; its id is the id of the last
reset at or before it plus the differences after that reset up to it, a prefix sum within the
block (on a GPU one warp per block: a shuffle scan). No row bounds are needed to decode.
``w`` is chosen per block to make its stream shortest (the smallest such ``w`` on ties), so
an encoding is a function of the ids alone: stores stay byte for byte the same.
"""
import numpy as np

from ..errors import CodecError, UsageError
from .format import CODEC_PARTS as PARTS

BLOCK = 32
#: the widest difference a non-reset lane stores
MAX_WIDTH = 31
PART_DTYPES = {"offsets": np.dtype(np.uint32), "masks": np.dtype(np.uint32),
               "widths": np.dtype(np.uint8), "words": np.dtype(np.uint32)}
#: a direction whose stream exceeds this many words cannot be addressed by uint32 offsets
MAX_WORDS = 2 ** 32 - 1


def id_bits(num_vertices):
    """``A``: the bits a reset's id takes in a store of ``num_vertices`` vertices (at least 1)."""
    return max(1, int(num_vertices - 1).bit_length())


def num_blocks(num_edges):
    return -(-int(num_edges) // BLOCK)


def _bit_length(values):
    """Bits of each non-negative int64 value (0 for 0), exact below 2**53 (where float64 holds
    every integer); larger values give at least 53, beyond :data:`MAX_WIDTH` either way."""
    return np.frexp(values.astype(np.float64))[1].astype(np.int64)


def _lanes(ids):
    """The ids padded to whole blocks, as an (nb, BLOCK) int64 array."""
    nb = num_blocks(len(ids))
    lanes = np.empty(nb * BLOCK, dtype=np.int64)
    lanes[:len(ids)] = ids
    lanes[len(ids):] = ids[-1] if len(ids) else 0
    return lanes.reshape(nb, BLOCK)


def encode(ids, num_vertices):
    """Encode an id array; return ``{"offsets", "masks", "widths", "words"}`` (see above).

    Parameters
    ----------
    ids : ndarray of int32 or int64
        Vertex ids, each in ``0..num_vertices-1``.
    num_vertices : int
        The store's vertex count (fixes ``A``).

    Raises
    ------
    UsageError
        The encoded stream would exceed :data:`MAX_WORDS` words (build with more shards).
    """
    ids = np.asarray(ids)
    a = id_bits(num_vertices)
    lanes = _lanes(ids)
    nb = len(lanes)
    delta = np.diff(lanes, axis=1, prepend=0)
    need = np.where(delta < 0, MAX_WIDTH + 1, _bit_length(np.maximum(delta, 0)))
    need = np.minimum(need, MAX_WIDTH + 1)
    need[:, 0] = MAX_WIDTH + 1
    # resets[b, w]: lanes of block b needing more than w bits
    hist = np.bincount((np.arange(nb)[:, None] * (MAX_WIDTH + 2) + need).reshape(-1),
                       minlength=nb * (MAX_WIDTH + 2)).reshape(nb, MAX_WIDTH + 2)
    resets = hist[:, ::-1].cumsum(axis=1)[:, ::-1][:, 1:]          # (nb, MAX_WIDTH + 1)
    w = np.arange(MAX_WIDTH + 1)
    bits = resets * a + (BLOCK - resets) * w
    nwords = -(-bits // 32)
    width = np.argmin(nwords, axis=1)                               # first minimum: smallest w
    blocks_words = nwords[np.arange(nb), width]
    offsets = np.zeros(nb + 1, dtype=np.int64)
    np.cumsum(blocks_words, out=offsets[1:])
    if offsets[-1] > MAX_WORDS:
        raise too_many_words(len(ids), offsets[-1])
    reset = need > width[:, None]
    masks = (reset.astype(np.uint64) << np.arange(BLOCK, dtype=np.uint64)).sum(axis=1)
    rank = np.cumsum(reset, axis=1) - reset                         # resets before each lane
    nres = reset.sum(axis=1)[:, None]
    pos = np.where(reset, rank * a, nres * a + (np.arange(BLOCK) - rank) * width[:, None])
    pos = pos + offsets[:-1, None] * 32
    nbits = np.where(reset, a, width[:, None])
    value = np.where(reset, lanes, delta)
    words = _pack(pos.reshape(-1), value.reshape(-1), nbits.reshape(-1), int(offsets[-1]))
    return {"offsets": offsets.astype(np.uint32), "masks": masks.astype(np.uint32),
            "widths": width.astype(np.uint8), "words": words}


def too_many_words(num_ids, num_words):
    """The error of an id array whose stream uint32 block offsets cannot address."""
    return UsageError(f"{num_ids} ids need {num_words} words of compressed stream, more than "
                      f"uint32 block offsets address ({MAX_WORDS}): use more shards")


def _pack(pos, value, nbits, nwords):
    """Words holding each ``value``'s low ``nbits`` bits from bit ``pos`` (fields disjoint)."""
    words = np.zeros(nwords + 2, dtype=np.uint64)
    keep = nbits > 0
    pos, value, nbits = pos[keep], value[keep].astype(np.uint64), nbits[keep]
    for part in range(2):                       # ids of up to 63 bits: two 32-bit pieces
        lo = part * 32
        take = nbits > lo
        if not take.any():
            break
        p = pos[take] + lo
        piece = (value[take] >> np.uint64(lo)) & np.uint64(0xFFFFFFFF)
        width = np.minimum(nbits[take] - lo, 32).astype(np.uint64)
        piece &= (np.uint64(1) << width) - np.uint64(1)
        shifted = piece << (p & 31).astype(np.uint64)                # < 2**63
        index = p >> 5
        # disjoint fields: per word a sum is an OR; below 2**53 float64 sums are exact
        for half, target in ((shifted & np.uint64(0xFFFFFFFF), index),
                             (shifted >> np.uint64(32), index + 1)):
            words += np.bincount(target, weights=half.astype(np.float64),
                                 minlength=len(words)).astype(np.uint64)
    return words[:nwords].astype(np.uint32)


def _extract(words, pos, nbits):
    """The ``nbits`` (0..32) bits of ``words`` from bit ``pos``, as uint64."""
    index = pos >> 5
    both = words[index].astype(np.uint64) | (words[index + 1].astype(np.uint64) << np.uint64(32))
    mask = (np.uint64(1) << nbits.astype(np.uint64)) - np.uint64(1)
    return (both >> (pos & 31).astype(np.uint64)) & mask


def check(parts, num_edges, num_vertices):
    """Raise :class:`CodecError` unless ``parts`` are self-consistent for ``num_edges``
    ids (array lengths, offsets, widths, lane 0 a reset, every stream its exact length)."""
    nb = num_blocks(num_edges)
    offsets, masks, widths, words = (np.asarray(parts[p]) for p in PARTS)
    if len(offsets) != nb + 1 or len(masks) != nb or len(widths) != nb:
        raise CodecError(f"{num_edges} ids need {nb} blocks; the arrays hold "
                               f"{len(offsets) - 1}, {len(masks)} and {len(widths)}")
    if offsets[0] != 0 or offsets[-1] != len(words):
        raise CodecError(f"block offsets run from {offsets[0]} to {offsets[-1]}, the "
                               f"stream has {len(words)} words")
    if not nb:
        return
    a = id_bits(num_vertices)
    nres = np.bitwise_count(masks).astype(np.int64)
    need = -(-(nres * a + (BLOCK - nres) * widths.astype(np.int64)) // 32)
    bad = (np.diff(offsets.astype(np.int64)) != need) | (widths > MAX_WIDTH) | ((masks & 1) == 0)
    if bad.any():
        b = int(np.argmax(bad))
        raise CodecError(f"block {b}: offsets, reset mask and width disagree "
                               f"(width {int(widths[b])}, mask {int(masks[b]):#010x}, "
                               f"{int(offsets[b + 1]) - int(offsets[b])} words)")


def decode(parts, num_edges, num_vertices, dtype=np.int32, start=0, stop=None):
    """Decode ids ``start..stop-1`` (all by default) of an encoded array of ``num_edges`` ids.

    Only the blocks holding the range are read. ``parts`` must pass :func:`check`: a stream
    that does not is a :class:`CodecError`; ids out of range are the caller's to check.
    """
    stop = num_edges if stop is None else stop
    dtype = np.dtype(dtype)
    if stop <= start:
        return np.empty(0, dtype=dtype)
    first, last = start // BLOCK, (stop - 1) // BLOCK + 1
    a = id_bits(num_vertices)
    offsets = np.asarray(parts["offsets"])[first:last + 1].astype(np.int64)
    masks = np.asarray(parts["masks"])[first:last].astype(np.uint64)
    widths = np.asarray(parts["widths"])[first:last].astype(np.int64)[:, None]
    words = np.concatenate([np.asarray(parts["words"])[offsets[0]:offsets[-1]],
                            np.zeros(3, dtype=np.uint32)])
    lane = np.arange(BLOCK, dtype=np.uint64)
    reset = ((masks[:, None] >> lane) & np.uint64(1)).astype(bool)
    rank = np.cumsum(reset, axis=1) - reset
    nres = reset.sum(axis=1)[:, None]
    pos = np.where(reset, rank * a, nres * a + (lane.astype(np.int64) - rank) * widths)
    pos = (pos + (offsets[:-1, None] - offsets[0]) * 32).reshape(-1)
    reset = reset.reshape(-1)
    nbits = np.where(reset, min(a, 32), np.broadcast_to(widths, (len(widths), BLOCK)).reshape(-1))
    value = _extract(words, pos, nbits).astype(np.int64)
    if a > 32:
        high = _extract(words, pos + 32, np.where(reset, a - 32, 0)).astype(np.int64)
        value |= high << 32
    step = np.where(reset, 0, value)
    total = np.cumsum(step)
    index = np.arange(len(step))
    seg = np.maximum.accumulate(np.where(reset, index, 0))
    ids = value[seg] + total - total[seg]
    return ids[start - first * BLOCK:stop - first * BLOCK].astype(dtype)
