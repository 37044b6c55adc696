"""Compressed layout of one vertex interval's edges: CSR by source or CSC by destination.

Both directions are the same operation: sort edges by (primary, secondary) and count them per
primary vertex. The sort is one ``np.sort`` of a packed int64 key ``(primary - lo) << b | secondary``
(numpy's vectorised sort beats ``lexsort`` about 30x and a stable ``argsort`` about 9x here); when
weights must follow, the edge's index is packed into the low bits too, which also makes the order
of equal keys the input order (stable), so an external build and an in-memory build agree bit for
bit. Keys too wide for 64 bits with the index are sorted in blocks of their leading bits.
"""
import numpy as np

from ..errors import UsageError


def _bits(count):
    """Bits needed to hold the values ``0..count-1``."""
    return max(1, int(count - 1).bit_length()) if count > 1 else 1


def compress(primary, secondary, weight, lo, hi, num_vertices, id_dtype, dedup=False,
             order=False):
    """Sort edges with ``lo <= primary < hi`` by (primary, secondary) into offsets + neighbour ids.

    Parameters
    ----------
    primary, secondary : ndarray of int
        Edge endpoints: the vertex the rows are indexed by (destination for CSC, source for CSR)
        and the neighbour stored per edge.
    weight : ndarray or None
        Edge property travelling with each edge.
    lo, hi : int
        The interval; every ``primary`` must lie in it.
    num_vertices : int
        ``n``; every ``secondary`` lies in ``0..n-1``.
    id_dtype : numpy dtype
        dtype of the returned neighbour ids.
    dedup : bool
        Keep one edge per (primary, secondary) pair, with the minimum weight.
    order : bool
        Also return, per output edge, its index in the input arrays (for a kept repeated
        pair: the smallest index of the pair's edges).

    Returns
    -------
    indptr : ndarray of int64, shape (hi - lo + 1,)
    neighbours : ndarray of ``id_dtype``
    weights : ndarray or None
        Ordered like ``neighbours``; equal pairs keep their input order.
    positions : ndarray of int64
        Only when ``order`` is true: the input index of each output edge.
    """
    count = hi - lo
    num_edges = len(primary)
    if num_edges == 0:
        empty_w = None if weight is None else np.empty(0, dtype=weight.dtype)
        result = (np.zeros(count + 1, dtype=np.int64), np.empty(0, dtype=id_dtype), empty_w)
        return result + (np.empty(0, dtype=np.int64),) if order else result
    indexed = weight is not None or order
    sbits = _bits(num_vertices)
    pbits = _bits(count)
    ibits = _bits(num_edges) if indexed else 0
    if not indexed and pbits <= 32 and sbits <= 32:
        # the neighbour is then exactly the low 32-bit word of each key: no mask pass
        sbits = 32
    if _block_bits(pbits, sbits, ibits) is not None:
        result = _compress_packed(primary, secondary, weight, lo, count, pbits, sbits, ibits,
                                  id_dtype, dedup, order)
    else:
        result = _compress_lexsort(primary, secondary, weight, lo, count, id_dtype, dedup,
                                   order)
    return result if order else result[:3]


def _compress_packed(primary, secondary, weight, lo, count, pbits, sbits, ibits, id_dtype, dedup,
                     want_order):
    indptr = None
    if not dedup:
        # counting per primary on the unsorted input is cheaper than searching the sorted keys
        local = primary if lo == 0 else np.subtract(primary, lo)
        indptr = _offsets(np.bincount(local, minlength=count))
        del local
    if lo == 0:
        key = np.left_shift(_as_u64(primary), np.uint64(sbits))
    else:
        key = np.subtract(primary, lo, dtype=np.int64).view(np.uint64)
        key <<= np.uint64(sbits)
    key |= _as_u64(secondary)
    return _sorted_layout(key, weight, count, pbits, sbits, ibits, False, id_dtype, dedup, indptr)


def _sorted_layout(key, weight, count, pbits, sbits, ibits, inline, id_dtype, dedup, indptr):
    """Sort packed keys, permute the weights along, drop repeats and split into the layout.

    ``inline``: the keys already hold each edge's index in their low ``ibits``.
    """
    positions = None
    if ibits:
        key, positions = _sort_indexed(key, pbits, sbits, ibits, inline)
        if weight is not None:
            # take beats fancy indexing for this random gather
            weight = np.take(weight, positions)
    else:
        key.sort()
    if dedup:
        key, weight, positions = _drop_repeats(key, weight, positions)
        indptr = None
    indptr, neighbours = _split_sorted(key, count, sbits, id_dtype, indptr)
    return indptr, neighbours, weight, positions


def _offsets(counts):
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr


#: most key blocks of :func:`_sort_indexed` (block numbers sort as uint16, a radix sort)
_MAX_BLOCK_BITS = 16
#: bits of a packed key (a module constant so tests can narrow it to reach the block path)
_KEY_BITS = 64


def _block_bits(pbits, sbits, ibits):
    """Leading primary bits that split a key too wide for 64 bits into blocks, or None."""
    extra = pbits + sbits + ibits - _KEY_BITS
    if extra <= 0:
        return 0
    return extra if pbits + sbits <= _KEY_BITS and extra <= min(pbits, _MAX_BLOCK_BITS) else None


def _sort_indexed(key, pbits, sbits, ibits, inline=False):
    """Sort ``key`` (``primary << sbits | secondary``) stably; return it and each one's input index.

    The index rides in the low ``ibits`` of the key (put there by the caller when ``inline``),
    so one ``np.sort`` orders by (key, index). When the three fields exceed 64 bits, the keys
    are split into blocks by their leading primary bits (a stable radix sort of the block
    numbers keeps each block's input order) and each block sorts its keys with the index
    within the block: the same order and indices as one sort of wider keys, and as
    ``np.lexsort`` (many times slower).
    """
    xbits = _block_bits(pbits, sbits, ibits)
    mask = np.uint64((1 << ibits) - 1)
    if xbits == 0:
        if not inline:
            key <<= np.uint64(ibits)
            key |= np.arange(len(key), dtype=np.uint64)
        key.sort()
        positions = (key & mask).view(np.int64)
        key >>= np.uint64(ibits)
        return key, positions
    shift = pbits + sbits - xbits
    # one radix pass instead of two when the block numbers fit a byte
    block = _leading_bits(key, shift, np.uint8 if xbits <= 8 else np.uint16)
    members = np.argsort(block, kind="stable")
    bounds = _offsets(np.bincount(block, minlength=1 << xbits))
    del block
    positions = np.empty(len(key), dtype=np.int64)
    # one reused block buffer: fresh large temporaries cost a page fault per 4 KiB
    longest = int(np.diff(bounds).max())
    part_buffer = np.empty(longest, np.uint64)
    for b, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:])):
        if start == stop:
            continue
        index = members[start:stop]
        part = part_buffer[:stop - start]
        np.take(key, index, out=part)
        # a block's keys share their leading bits: dropping them leaves exactly ``ibits`` for
        # the edge's global index (ascending within the block: the stable radix sort), so the
        # sort yields positions directly, with no gather through a block-local index
        part &= np.uint64((1 << shift) - 1)
        part <<= np.uint64(ibits)
        part |= index.view(np.uint64)
        part.sort()
        np.bitwise_and(part, mask, out=positions[start:stop].view(np.uint64))
        part >>= np.uint64(ibits)
        part |= np.uint64(b << shift)
        members[start:stop] = part.view(np.int64)    # the block's indices are used up
    return members.view(np.uint64), positions


def _leading_bits(key, shift, dtype, step=1 << 20):
    """``key >> shift`` as ``dtype``, a slice at a time (no temporary the size of ``key``)."""
    out = np.empty(len(key), dtype=dtype)
    scratch = np.empty(min(step, len(key)), dtype=np.uint64)
    for start in range(0, len(key), step):
        piece = scratch[:len(key[start:start + step])]
        np.right_shift(key[start:start + step], np.uint64(shift), out=piece)
        out[start:start + len(piece)] = piece
    return out


def compress_pieces(primaries, secondaries, num_vertices, id_dtype, dedup=False, weight=None,
                    order=False):
    """:func:`compress` over all vertices of edges given as lists of array pieces.

    The packed keys are built piece by piece into one array (with each edge's index when
    weights or ``order`` need it), so the whole edge list never exists as two concatenated id
    arrays. Needs ``num_vertices <= 2**32``.

    Parameters
    ----------
    weight : ndarray, optional
        The edge property travelling with each edge, in the pieces' order (one array: both
        directions of a build share it).
    order : bool
        Also return each output edge's index in the concatenated input.

    Returns
    -------
    indptr : ndarray of int64, shape (num_vertices + 1,)
    neighbours : ndarray of ``id_dtype``
    weights : ndarray or None
    positions : ndarray of int64
        Only when ``order`` is true.
    """
    if num_vertices > 1 << 32:
        raise UsageError(f"compress_pieces needs at most 2**32 vertices, not {num_vertices}")
    num_edges = sum(len(p) for p in primaries)
    indexed = weight is not None or order
    pbits = _bits(num_vertices)
    # unindexed keys keep the neighbour in the low 32-bit word: no mask pass when splitting
    sbits = _bits(num_vertices) if indexed else 32
    ibits = _bits(num_edges) if indexed and num_edges else 0
    inline = ibits and pbits + sbits + ibits <= _KEY_BITS
    if ibits and not inline and _block_bits(pbits, sbits, ibits) is None:
        result = compress(np.concatenate(primaries), np.concatenate(secondaries),
                          weight, 0,
                          num_vertices, num_vertices, id_dtype, dedup, order)
        return result if order else result[:3]
    key = np.empty(num_edges, dtype=np.uint64)
    counts = None if dedup else np.zeros(num_vertices, dtype=np.int64)
    low = ibits if inline else 0
    if low:
        # one scratch piece and one index ramp, reused: fresh large temporaries cost page faults
        longest = max(len(p) for p in primaries)
        scratch, ramp = np.empty(longest, dtype=np.uint64), np.arange(longest, dtype=np.uint64)
    start = 0
    for primary, secondary in zip(primaries, secondaries):
        part = key[start:start + len(primary)]
        np.left_shift(_as_u64(primary), np.uint64(sbits + low), out=part)
        if low:
            tmp = scratch[:len(part)]
            np.left_shift(_as_u64(secondary), np.uint64(low), out=tmp)
            part |= tmp
            np.add(ramp[:len(part)], np.uint64(start), out=tmp)
            part |= tmp
        else:
            part |= _as_u64(secondary)
        if counts is not None:
            count_into(counts, primary)
        start += len(primary)
    indptr = None if counts is None else _offsets(counts)
    del counts
    result = _sorted_layout(key, weight, num_vertices, pbits, sbits, ibits, inline, id_dtype,
                            dedup, indptr)
    if order and result[3] is None:
        result = result[:3] + (np.empty(0, dtype=np.int64),)
    return result if order else result[:3]


def compress_keys(key, lo, hi, id_dtype, dedup=False):
    """:func:`compress` of unweighted edges given as packed keys ``primary << 32 | secondary``.

    ``key`` (uint64, every primary in ``lo..hi-1``, ids below ``2**32``) is sorted in place and
    rebased to ``lo``; the result equals ``compress(primary, secondary, None, lo, hi, ...)``, so
    an external build that buckets keys writes what an in-memory build writes.

    Returns
    -------
    indptr : ndarray of int64, shape (hi - lo + 1,)
    neighbours : ndarray of ``id_dtype``
    """
    count = hi - lo
    if count > 1 << 32:
        raise UsageError(f"compress_keys needs intervals of at most 2**32 vertices, not {count}")
    if lo:
        key -= np.uint64(lo << 32)
    key.sort()
    if dedup:
        key = _drop_repeats(key, None, None)[0]
    return _split_sorted(key, count, 32, id_dtype)


def pack_keys(primary, secondary):
    """``primary << 32 | secondary`` as uint64 (both non-negative and below ``2**32``)."""
    key = np.left_shift(_as_u64(primary), np.uint64(32))
    key |= _as_u64(secondary)
    return key


def count_into(counts, ids):
    """Add one to ``counts[v]`` for every ``v`` in ``ids``."""
    # bincount allocates O(n) per call; scattered increments win when the chunk is much smaller
    if len(ids) * 8 >= len(counts):
        counts += np.bincount(ids, minlength=len(counts))
    else:
        np.add.at(counts, ids, 1)


def _split_sorted(key, count, sbits, id_dtype, indptr=None):
    """Offsets (unless given) and neighbour ids of sorted ``primary << sbits | secondary`` keys
    (which it may overwrite)."""
    if indptr is None:
        bounds = np.arange(count + 1, dtype=np.uint64) << np.uint64(sbits)
        indptr = np.searchsorted(key, bounds, side="left").astype(np.int64)
    return indptr, low_ids(key, sbits, id_dtype).astype(id_dtype)


def low_ids(key, sbits, id_dtype):
    """The secondary ids of ``primary << sbits | secondary`` keys: a uint32 view of their low
    words when ``id_dtype`` is 32-bit, else the keys masked in place (they are spent)."""
    if sbits == 32 and np.dtype(id_dtype).itemsize == 4:
        return key.view(np.uint32)[_LOW_WORD::2]
    key &= np.uint64((1 << sbits) - 1)
    return key


#: index of a uint64's low 32-bit word in a uint32 view of it
_LOW_WORD = 0 if np.little_endian else 1


def _as_u64(ids):
    # ids are non-negative, so reinterpreting int64 as uint64 is exact and copies nothing
    return ids.view(np.uint64) if ids.dtype == np.int64 else ids.astype(np.uint64)


def _drop_repeats(key, weight, positions):
    if len(key) == 0:
        return key, weight, positions
    keep = np.empty(len(key), dtype=bool)
    keep[0] = True
    np.not_equal(key[1:], key[:-1], out=keep[1:])
    if keep.all():
        return key, weight, positions
    if weight is not None:
        # the minimum weight of a repeated pair is the one a shortest-path search would use
        weight = np.minimum.reduceat(weight, np.flatnonzero(keep))
    # positions ascend within a pair, so the kept one is the pair's smallest input index
    return key[keep], weight, None if positions is None else positions[keep]


def _compress_lexsort(primary, secondary, weight, lo, count, id_dtype, dedup, want_order=False):
    # Only for graphs whose packed key does not fit 64 bits (n near 2**32 and beyond).
    order = np.lexsort((secondary, primary))
    p = primary[order]
    s = secondary[order]
    w = None if weight is None else weight[order]
    if dedup and len(p) > 1:
        keep = np.ones(len(p), dtype=bool)
        keep[1:] = (p[1:] != p[:-1]) | (s[1:] != s[:-1])
        if w is not None:
            w = np.minimum.reduceat(w, np.flatnonzero(keep))
        p, s, order = p[keep], s[keep], order[keep]
    bounds = np.arange(lo, lo + count + 1, dtype=np.int64)
    indptr = np.searchsorted(p, bounds, side="left").astype(np.int64)
    return indptr, s.astype(id_dtype), w, order.astype(np.int64) if want_order else None
