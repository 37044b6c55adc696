"""CSR and CSC of weighted edges by stable counting sorts instead of comparison sorts.

A weighted layout must order edges by (primary, secondary, input index) and carry each edge's
weight along. The packed-key sort of :mod:`.layout` needs the index inside the key (wider than
64 bits from RMAT scale 21 on, so sorted in blocks) and then a random gather of the weights:
about 2.5 times the work of an unweighted side. A counting sort is stable by construction, so
three of them order edges exactly like that sort (least significant field first):

    input --by dst--> X --by src--> CSR --by dst--> CSC

``X`` holds the edges grouped by destination in input order; sorting it stably by source gives
(src, dst, index) order, the CSR; sorting the CSR stably by destination gives (dst, src,
index), the CSC. The first step is scipy's C ``coo_tocsr`` (count, prefix sum, scatter,
carrying the weight, without the duplicate summing of ``tocsr()``), the other two its
``csr_tocsc`` (the same scatter, reading rows from the offsets): three scatters replace two key
sorts, two weight gathers and the index packing, and the layouts are bit for bit those of
:func:`.layout.compress` (tests/partition/test_counting.py). They run one after the other: the
scatters are bound by random writes, and two of them on two threads measured slower than three
on one whenever other processes share the cores (docs/BENCHMARKS.md).
"""
import numpy as np

try:
    from scipy.sparse._sparsetools import coo_tocsr, csr_tocsc
except ImportError:  # pragma: no cover - scipy moves its private modules rarely
    coo_tocsr = csr_tocsc = None

#: whether :func:`weighted_layouts` can run here
AVAILABLE = coo_tocsr is not None
#: weight dtypes scipy's scatters carry (its C templates have no float16)
WEIGHT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def index_dtype(num_vertices, num_edges):
    """Index dtype of the scatters: int32 when every id and edge position fits it."""
    small = num_vertices < 2 ** 31 and num_edges < 2 ** 31
    return np.dtype(np.int32) if small else np.dtype(np.int64)


def counting_sort(rows, cols, data, num_rows):
    """Stable counting sort of edges by ``rows`` (each in ``0..num_rows-1``).

    Returns ``(indptr, cols, data)`` reordered: edges grouped by row, in their given order
    within a row. ``rows`` and ``cols`` share one integer dtype, also that of ``indptr``.
    """
    m = len(rows)
    indptr = np.empty(num_rows + 1, dtype=rows.dtype)
    out_cols = np.empty(m, dtype=rows.dtype)
    out_data = np.empty(m, dtype=data.dtype)
    coo_tocsr(num_rows, 1, m, rows, cols, data, indptr, out_cols, out_data)
    return indptr, out_cols, out_data


def transpose(indptr, cols, data, num_cols, out=None):
    """The same edges grouped by column: a stable counting sort by ``cols``, rows in order.

    ``out``: the (rows, data) arrays to write, each ``len(cols)`` long and not aliasing the
    inputs; fresh ones when None.
    """
    out_ptr = np.empty(num_cols + 1, dtype=indptr.dtype)
    if out is None:
        out_rows = np.empty(len(cols), dtype=indptr.dtype)
        out_data = np.empty(len(cols), dtype=data.dtype)
    else:
        out_rows, out_data = out
    csr_tocsc(len(indptr) - 1, num_cols, indptr, cols, data, out_ptr, out_rows, out_data)
    return out_ptr, out_rows, out_data


def weighted_layouts(src, dst, weight, num_vertices, id_dtype, dedup=False):
    """CSR and CSC of weighted edges: each ``(indptr int64, neighbours id_dtype, weights)``.

    The same arrays as ``compress(src, dst, weight, 0, n, n, id_dtype, dedup)`` and
    ``compress(dst, src, ...)``. ``src`` and ``dst`` share the dtype :func:`index_dtype`;
    ``weight`` has one of ``WEIGHT_DTYPES``. ``dedup`` keeps one edge per pair with the pair's
    minimum weight; the CSC is then counted from the deduplicated CSR, which holds it already.
    ``dst`` and ``weight`` are overwritten (:func:`csr_layout`).
    """
    csr, _, spare = csr_layout(src, dst, weight, num_vertices, dedup)
    return finish(csr, id_dtype), csc_layout(csr, num_vertices, id_dtype, spare)


def csr_layout(src, dst, weight, num_vertices, dedup=False):
    """The CSR of :func:`weighted_layouts` in the index dtype (for :func:`csc_layout` and
    :func:`finish`), the in-degrees (``np.diff`` of the offsets, counted before dedup) and the
    first scatter's arrays, spent, for :func:`csc_layout` to write into.

    ``dst`` and ``weight`` are consumed: the CSR is written into them. Reusing buffers keeps
    the peak at three edge arrays' worth and spares the first touch of fresh pages, which the
    random writes of a scatter pay one fault at a time.
    """
    x_ptr, x_src, x_w = counting_sort(dst, src, weight, num_vertices)
    csr = transpose(x_ptr, x_src, x_w, num_vertices, (dst, weight))
    in_degree = np.diff(x_ptr).astype(np.int64, copy=False)
    if dedup:
        csr = _drop_repeats(*csr)
    return csr, in_degree, (x_src, x_w)


def csc_layout(csr, num_vertices, id_dtype, spare=None):
    """The CSC of a :func:`csr_layout` result, finished, written into ``spare`` when given
    (arrays at least as long as the CSR, not otherwise in use)."""
    out = None if spare is None else tuple(a[:len(csr[1])] for a in spare)
    return finish(transpose(*csr, num_vertices, out), id_dtype)


def csc_with_positions(csr, num_vertices, id_dtype):
    """The CSC of a :func:`csr_layout` result, finished, and each CSC edge's position in that
    CSR (int64): the scatter carries the position, the weights follow by one gather."""
    indptr, neighbours, weights = csr
    position = np.arange(len(neighbours), dtype=indptr.dtype)
    csc_ptr, csc_src, position = transpose(indptr, neighbours, position, num_vertices)
    csc = finish((csc_ptr, csc_src, np.take(weights, position)), id_dtype)
    return csc, position.astype(np.int64, copy=False)


def finish(layout, id_dtype):
    """A layout as the builds write it: int64 offsets, ``id_dtype`` neighbours."""
    indptr, neighbours, weights = layout
    return (indptr.astype(np.int64), neighbours.astype(id_dtype, copy=False), weights)


def _drop_repeats(indptr, neighbours, weights):
    """Keep the first edge of each repeated (row, neighbour) run, with the run's minimum weight."""
    if len(neighbours) < 2:
        return indptr, neighbours, weights
    keep = np.empty(len(neighbours), dtype=bool)
    keep[0] = True
    np.not_equal(neighbours[1:], neighbours[:-1], out=keep[1:])
    # a row's first edge is kept whatever the previous row's last neighbour
    keep[indptr[:-1][indptr[:-1] < indptr[1:]]] = True
    if keep.all():
        return indptr, neighbours, weights
    # the minimum weight of a repeated pair is the one a shortest-path search would use
    weights = np.minimum.reduceat(weights, np.flatnonzero(keep))
    kept = np.zeros(len(keep) + 1, dtype=indptr.dtype)
    np.cumsum(keep, out=kept[1:])
    return kept[indptr], neighbours[keep], weights
