"""Regroup edge pieces of any size into chunks of a fixed maximum size."""
import numpy as np

#: default edges per chunk: 4 Mi edges is 64-96 MiB of arrays, big enough to amortise per-chunk work
DEFAULT_CHUNK_EDGES = 1 << 22


def check_chunk_edges(chunk_edges):
    """Return *chunk_edges* or the default, rejecting values below 1."""
    from ..errors import UsageError
    if chunk_edges is None:
        return DEFAULT_CHUNK_EDGES
    if int(chunk_edges) < 1:
        raise UsageError(f"chunk_edges must be at least 1, not {chunk_edges}")
    return int(chunk_edges)


def rechunk(pieces, chunk_edges):
    """Yield ``(src, dst, weight)`` chunks of exactly *chunk_edges* edges (the last may be short).

    *pieces* yields ``(src, dst, weight)`` of any length; empty pieces are dropped and no chunk
    is empty.
    """
    buf = []
    held = 0
    for piece in pieces:
        n = len(piece[0])
        if n == 0:
            continue
        if not buf and n == chunk_edges:
            yield piece
            continue
        buf.append(piece)
        held += n
        while held >= chunk_edges:
            merged = _concat(buf)
            yield tuple(None if a is None else a[:chunk_edges] for a in merged)
            rest = tuple(None if a is None else a[chunk_edges:] for a in merged)
            held -= chunk_edges
            buf = [rest] if held else []
    if held:
        yield _concat(buf)


def _concat(pieces):
    if len(pieces) == 1:
        return pieces[0]
    weights = None if pieces[0][2] is None else np.concatenate([p[2] for p in pieces])
    return (np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces]), weights)
