"""Synthetic graphs: Graph500 R-MAT (Kronecker), uniform random G(n, m) and 2-D grids.

Output depends only on the parameters and the seed, never on the thread count: edges are made
in fixed chunks of :data:`GEN_CHUNK_EDGES`, chunk ``i`` drawing from its own stream
``SeedSequence(seed, spawn_key=(1, i))``, and chunks are emitted in order whatever thread made
them (numpy releases the GIL, so a thread pool runs chunks in parallel).
"""
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import UsageError

#: edges per generation chunk; fixed, because each chunk owns a random stream
GEN_CHUNK_EDGES = 1 << 20
#: Graph500 Kronecker initiator probabilities (a, b, c); d = 1 - a - b - c
GRAPH500_ABC = (0.57, 0.19, 0.19)
_WEIGHT_RANGE = (1, 256)  # uniform integers 1..255


def _rng(seed, *key):
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key)))


def _weights(rng, n):
    return rng.integers(*_WEIGHT_RANGE, size=n).astype(np.float64)


def _threads(threads):
    return threads if threads is not None else min(8, os.cpu_count() or 1)


def _in_order(make_chunk, nchunks, threads):
    """Yield ``make_chunk(i)`` for i in range(nchunks), computed by a pool, in order."""
    threads = _threads(threads)
    if threads == 1 or nchunks <= 1:
        yield from (make_chunk(i) for i in range(nchunks))
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="grstream-gen") as pool:
        pending = []
        for i in range(nchunks):
            pending.append(pool.submit(make_chunk, i))
            if len(pending) > 2 * threads:  # bound the chunks held in memory
                yield pending.pop(0).result()
        for future in pending:
            yield future.result()


def _check_seed(seed, threads=None):
    """Refuse a seed numpy's SeedSequence cannot take (seeds are integers >= 0) and a thread
    count below 1 (None: the default)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise UsageError(f"seed must be an integer >= 0, not {seed}")
    if threads is not None and (isinstance(threads, bool) or not isinstance(
            threads, (int, np.integer)) or threads < 1):
        raise UsageError(f"threads must be an integer >= 1, not {threads}")


def _check_positive(**values):
    for name, value in values.items():
        if int(value) < 1:
            raise UsageError(f"{name} must be at least 1, not {value}")


# -- R-MAT --------------------------------------------------------------------------------------
def rmat_thresholds(a, b, c):
    """Quadrant cut points on 16-bit uniforms: r < t0 -> a, < t1 -> b, < t2 -> c, else d."""
    if min(a, b, c) < 0 or a + b + c > 1:
        raise UsageError(f"R-MAT probabilities must be >= 0 with a + b + c <= 1, got {a}, {b}, {c}")
    return [np.uint32(round(p * 65536)) for p in np.cumsum([a, b, c])]


def rmat_quadrant_bits(rng, n, scale, thresholds):
    """Unpermuted R-MAT endpoints for *n* edges.

    One 16-bit uniform per edge and level picks the quadrant; the row bit is "quadrant c or d"
    and the column bit "quadrant b or d", which is the parity of the cut points passed. The
    16-bit resolution moves each probability by at most 2**-17.
    """
    t0, t1, t2 = thresholds
    words = rng.bit_generator.random_raw((n * scale + 3) // 4).view(np.uint16)
    words = words[:n * scale].reshape(scale, n)
    acc = np.uint32 if scale <= 32 else np.uint64
    src = np.zeros(n, acc)
    dst = np.zeros(n, acc)
    for level in range(scale):
        r = words[level]
        row = r >= t1
        col = (r >= t0) ^ (r >= t2) ^ row
        np.left_shift(src, 1, out=src)
        np.bitwise_or(src, row, out=src)
        np.left_shift(dst, 1, out=dst)
        np.bitwise_or(dst, col, out=dst)
    return src.astype(np.int64), dst.astype(np.int64)


def rmat_chunks(scale, edge_factor=16, seed=0, *, a=GRAPH500_ABC[0], b=GRAPH500_ABC[1],
                c=GRAPH500_ABC[2], permute=True, weights=False, threads=None):
    """Yield the edges of an R-MAT graph as ``(src, dst, weight or None)`` chunks.

    Parameters
    ----------
    scale : int
        ``2**scale`` vertices.
    edge_factor : int
        ``edge_factor * 2**scale`` edges; self-loops and duplicates are kept as drawn.
    seed : int
        Same seed, same graph (whatever ``threads``); an integer >= 0.
    a, b, c : float
        Quadrant probabilities (Graph500 defaults); ``d = 1 - a - b - c``.
    permute : bool
        Relabel vertices by a seeded random permutation (Graph500 does), hiding the
        Kronecker structure in the ids.
    weights : bool
        Add uniform random integer weights 1..255 as float64.
    threads : int, optional
        Worker threads (default: CPU count, at most 8).
    """
    _check_positive(scale=scale, edge_factor=edge_factor)
    _check_seed(seed, threads)
    if scale > 40:
        raise UsageError(f"scale {scale} is beyond what grstream can store (at most 40)")
    thresholds = rmat_thresholds(a, b, c)
    total = edge_factor << scale
    perm = None
    if permute:
        # int32 halves the table the random gathers hit (2x faster once it outgrows the caches)
        perm = _rng(seed, 0).permutation(1 << scale).astype(np.int32 if scale < 31 else np.int64)
    nchunks = -(-total // GEN_CHUNK_EDGES)

    def make(i):
        rng = _rng(seed, 1, i)
        n = min(GEN_CHUNK_EDGES, total - i * GEN_CHUNK_EDGES)
        src, dst = rmat_quadrant_bits(rng, n, scale, thresholds)
        if perm is not None:
            src, dst = perm[src].astype(np.int64), perm[dst].astype(np.int64)
        return src, dst, _weights(rng, n) if weights else None

    return _in_order(make, nchunks, threads)


def rmat(scale, edge_factor=16, seed=0, **options):
    """R-MAT edges as arrays ``(src, dst)``, or ``(src, dst, weight)`` with ``weights=True``.

    Takes the parameters of :func:`rmat_chunks`.

    Examples
    --------
    >>> src, dst = rmat(4, edge_factor=2, seed=1)
    >>> len(src), int(max(src.max(), dst.max())) < 16
    (32, True)
    """
    return _collect(rmat_chunks(scale, edge_factor, seed, **options), options.get("weights"))


# -- uniform G(n, m) ----------------------------------------------------------------------------
def uniform_chunks(num_vertices, num_edges, seed=0, *, weights=False, threads=None):
    """Yield ``num_edges`` edges with both endpoints uniform over ``num_vertices`` vertices.

    Erdős–Rényi-style G(n, m) drawn with replacement: self-loops and duplicate edges can occur
    (rarely, for sparse graphs), as in R-MAT. Same seed, same graph.
    """
    _check_positive(num_vertices=num_vertices)
    _check_seed(seed, threads)
    if num_edges < 0:
        raise UsageError(f"num_edges must be >= 0, not {num_edges}")
    nchunks = -(-num_edges // GEN_CHUNK_EDGES)

    def make(i):
        rng = _rng(seed, 1, i)
        n = min(GEN_CHUNK_EDGES, num_edges - i * GEN_CHUNK_EDGES)
        src = rng.integers(0, num_vertices, size=n, dtype=np.int64)
        dst = rng.integers(0, num_vertices, size=n, dtype=np.int64)
        return src, dst, _weights(rng, n) if weights else None

    return _in_order(make, nchunks, threads)


def uniform(num_vertices, num_edges, seed=0, **options):
    """Uniform random edges as arrays; see :func:`uniform_chunks`."""
    return _collect(uniform_chunks(num_vertices, num_edges, seed, **options),
                    options.get("weights"))


# -- 2-D grid -----------------------------------------------------------------------------------
def grid_edge_count(rows, cols):
    """Directed edges of a rows x cols 4-neighbour grid (each neighbour pair both ways)."""
    return 2 * (rows * (cols - 1) + (rows - 1) * cols)


def grid_chunks(rows, cols, *, weights=False, seed=0, threads=None):
    """Yield the edges of a ``rows x cols`` grid: vertex ``r * cols + c``, 4-neighbours, both ways.

    A high-diameter, road-like graph (diameter ``rows + cols - 2``). Weights, when asked for,
    are drawn per block of rows from ``seed``.
    """
    _check_positive(rows=rows, cols=cols)
    _check_seed(seed, threads)
    per_chunk = max(1, GEN_CHUNK_EDGES // (4 * cols))
    nchunks = -(-rows // per_chunk)

    def make(i):
        r0, r1 = i * per_chunk, min(rows, (i + 1) * per_chunk)
        ids = np.arange(r0 * cols, r1 * cols, dtype=np.int64).reshape(r1 - r0, cols)
        right = (ids[:, :-1].ravel(), ids[:, 1:].ravel())
        below_rows = ids if r1 < rows else ids[:-1]
        down = (below_rows.ravel(), below_rows.ravel() + cols)
        src = np.concatenate([right[0], right[1], down[0], down[1]])
        dst = np.concatenate([right[1], right[0], down[1], down[0]])
        return src, dst, _weights(_rng(seed, 1, i), len(src)) if weights else None

    return _in_order(make, nchunks, threads)


def grid(rows, cols, **options):
    """Grid edges as arrays; see :func:`grid_chunks`."""
    return _collect(grid_chunks(rows, cols, **options), options.get("weights"))


def _collect(chunks, weights):
    parts = list(chunks)
    src = np.concatenate([p[0] for p in parts]) if parts else np.empty(0, np.int64)
    dst = np.concatenate([p[1] for p in parts]) if parts else np.empty(0, np.int64)
    if not weights:
        return src, dst
    weight = np.concatenate([p[2] for p in parts]) if parts else np.empty(0, np.float64)
    return src, dst, weight
