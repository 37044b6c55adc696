"""``build_shards``: an edge source in, a load-balanced shard store out."""
import datetime
import logging
import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ..errors import MemoryBudgetError, UsageError
from ..store import format as fmt
from ..store.labels import write_labels
from ..units import format_bytes
from .buckets import BucketFiles
from .edges import (DegreeCounter, EdgeOptions, check_chunk, occurring_ids, prepare_chunk,
                    split_chunks)
from .intervals import choose_intervals, shard_of
from .layout import compress, compress_keys, compress_pieces, count_into, pack_keys
from .memory import IN_MEMORY_VERTEX_BYTES, VertexBudget
from . import renumber as renumbering
from ..readahead import read_ahead
from .runs import KeyRuns
from .writer import StoreWriter

log = logging.getLogger("grstream.partition")

#: default shard size when neither num_shards nor shard_size is given
DEFAULT_SHARD_BYTES = 64 * 2 ** 20
#: working bytes per edge while one bucket is sorted (records, packed key, order, outputs),
#: an upper bound measured by tests/partition/test_memory.py
SORT_BYTES_PER_EDGE = 72
#: the same for unweighted edges without edge ids, gathered as packed uint64 keys: the key
#: sorted in place, the neighbour ids cut from it (and a dedup mask and copy), and the
#: previous shard's ids waiting to be written
KEY_SORT_BYTES_PER_EDGE = 32
#: extra working bytes per edge with edge ids (input index in the records, the (index, CSR
#: position) records routed to the in-edge's shard, their sort order and the ids written)
EDGE_ID_BYTES_PER_EDGE = 56
#: working bytes per input edge while a chunk is read, prepared and bucketed: the reader's
#: buffer and arrays of this chunk and of the one read ahead, the sort keys or gathered
#: records (upper bounds of what RMAT scale 20 measured: 93 B plain, 190 B undirected)
CHUNK_BYTES_PER_EDGE = 128
#: extra per input edge when every edge is stored both ways (doubled arrays and keys)
UNDIRECTED_CHUNK_BYTES = 192
#: extra per input edge for renumbering or dropping self-loops (new id arrays, a mask)
FILTER_CHUNK_BYTES = 32
#: bytes per vertex held during an external build (degrees, cumulative counts, renumber map)
VERTEX_BYTES = 48
#: bytes per vertex held while shards are sorted and written (the store's degree arrays and
#: the renumbering map; the degree counter is gone by then)
SORT_VERTEX_BYTES = 24
#: most vertices for packed keys: ids and ``hi << 32`` bounds below 2**64
KEY_ID_LIMIT = (1 << 32) - 1
MAX_CHUNK_EDGES = 1 << 22
MIN_CHUNK_EDGES = 1 << 12
MAX_HEAVY_RECORDED = 1000
#: fewest edges (in + out) a shard's target may hold once the count exceeds UNCAPPED_SHARDS:
#: below it the per-shard costs (HDF5 objects to create and validate, about a millisecond a
#: shard, and a transfer and launches per shard per iteration) outweigh the shard's work
MIN_SHARD_EDGES = 1 << 14
#: shard counts up to this are never capped, so small graphs can still be cut finely
UNCAPPED_SHARDS = 64


def build_shards(source, path, *, num_shards=None, shard_size=None, memory_limit=None,
                 undirected=False, weighted=None, self_loops=True, duplicates=True,
                 renumber=None, weight_dtype="float64", format=None, progress=False,
                 overwrite=True, tmp_dir=None, edge_ids=False):
    """Partition a graph into a shard store (docs/FORMAT.md).

    Parameters
    ----------
    source : path, array, scipy.sparse matrix, networkx graph or :class:`grstream.io.base.EdgeSource`
        The input; anything but an EdgeSource goes through ``grstream.io.open_source``.
    path : str or Path
        Target store file (``shards/NAME.h5``). Written atomically.
    num_shards : int, optional
        Requested shard count: each shard's target is ``(in + out edges) / num_shards``.
        A vertex whose edges exceed the target gets a shard of its own, so the count can differ.
    shard_size : int, optional
        Target bytes of a shard's datasets instead of ``num_shards``. Default without
        either: 64 MiB shards, at least one.
    memory_limit : int, optional
        Bytes of working memory. When given, the build never holds the edge list: unweighted
        edges without edge ids take one pass over the input that writes sorted runs of packed
        keys to temporary files and counts degrees, then gather each shard's keys from the
        runs; otherwise a degree pass and a bucketing pass into per-shard files. Shards are
        made small enough that one shard sorts within the limit. Vertex arrays
        (``VERTEX_BYTES`` per vertex) count against it.
    undirected : bool
        Store every edge in both directions (a self-loop once). A symmetric input (Matrix
        Market ``symmetric``, KONECT ``sym``, an undirected networkx graph) already lists both
        directions of each edge and is stored as read: karate's 78 edges are 156 stored edges.
    weighted : bool, optional
        Keep the input's weights as edge property ``weight``; default: when the input has them.
    self_loops : bool
        False drops edges ``(v, v)``.
    duplicates : bool
        False keeps one edge per (src, dst) pair, the one with the minimum weight. Intervals are
        still balanced on the counts before dropping.
    renumber : bool or None
        True: map the ids that occur to ``0..n-1`` in increasing order and keep the input's ids
        as labels (``/vertex/original_id``). False: ``n = max(declared vertex count, largest
        id + 1)``. None (default): renumber when the input declares no vertex count and its
        ids are sparse (``largest id + 1 > 2 * distinct ids``; :mod:`grstream.partition.renumber`).
        Sources with labels of their own (names) always keep them (README "Vertex ids").
    weight_dtype : str or numpy dtype
        Floating dtype of the stored weights.
    format : str, optional
        Input format name for ``open_source`` (default: from the file name).
    progress : bool
        tqdm bars and a one-line summary on stderr (the CLI's default). The summary always goes
        to the ``grstream.partition`` logger at INFO level.
    overwrite : bool
        Replace an existing store at ``path``; False raises :class:`UsageError` instead.
    tmp_dir : str or Path, optional
        Where bucket files go during an external build (default: the target's directory).
    edge_ids : bool
        Also store per shard ``in/eid``: for each in-edge, the global CSR position of the same
        edge (shard 0's out-edges first, then shard 1's, ...), so edge state written in
        scatter order can be read over in-edges. The same in both build modes.

    Returns
    -------
    pathlib.Path
        The store's path.

    Examples
    --------
    >>> import numpy as np, grstream as gr
    >>> edges = np.array([[0, 1], [1, 2], [2, 0]])
    >>> p = gr.build_shards(edges, tmp_path / "tri.h5", num_shards=2, progress=False)
    >>> gr.open(p).num_edges
    3
    """
    started = time.perf_counter()
    path = Path(path)
    _check_options(num_shards, shard_size, memory_limit, weight_dtype)
    # the default may renumber (renumber=None): chunks leave room for it
    chunk_edges = _chunk_edges(memory_limit, undirected, renumber is not False, self_loops)
    edges = _open(source, format, weighted, chunk_edges)
    is_weighted = edges.weighted if weighted is None else bool(weighted)
    if is_weighted and not edges.weighted:
        raise UsageError(f"{edges.name}: weights requested but the input has none")
    options = EdgeOptions(undirected=undirected, self_loops=self_loops, weighted=is_weighted,
                          weight_dtype=np.dtype(weight_dtype), both_ways_in_input=edges.symmetric)
    plan = _Plan(edges, options, num_shards, shard_size, memory_limit, not duplicates,
                 chunk_edges, progress, tmp_dir)
    plan.renumber_requested = None if renumber is None else bool(renumber)
    plan.edge_ids = bool(edge_ids)
    plan.vertices = VertexBudget(
        edges.name, IN_MEMORY_VERTEX_BYTES if memory_limit is None else VERTEX_BYTES,
        memory_limit, renumbered=bool(renumber))
    if not renumber:
        plan.vertices.check(edges.num_vertices or 0)
    with StoreWriter(path, overwrite=overwrite) as writer:
        if memory_limit is None:
            result = _build_in_memory(plan, writer)
        else:
            result = _build_external(plan, writer)
        writer.commit(_root_attrs(plan, result))
    summary = _summary(path, result, time.perf_counter() - started)
    log.info("%s", summary)
    if progress:
        print(summary, file=sys.stderr)
    return path


class _Plan:
    def __init__(self, edges, options, num_shards, shard_size, memory_limit, dedup, chunk_edges,
                 progress, tmp_dir):
        self.edges = edges
        self.options = options
        self.num_shards = num_shards
        self.shard_size = shard_size
        self.memory_limit = memory_limit
        self.dedup = dedup
        self.chunk_edges = chunk_edges
        self.progress = progress
        self.tmp_dir = tmp_dir
        self.renumber = False
        self.edge_ids = False
        self.keyed = False

    @property
    def sort_bytes_per_edge(self):
        if self.keyed:
            return KEY_SORT_BYTES_PER_EDGE
        return SORT_BYTES_PER_EDGE + (EDGE_ID_BYTES_PER_EDGE if self.edge_ids else 0)

    def bar(self, desc, total=None, unit="edges"):
        return tqdm(desc=desc, total=total, unit=unit, unit_scale=True, file=sys.stderr,
                    disable=not self.progress, leave=False)

    def raw_chunks(self):
        for src, dst, w in split_chunks(self.edges.chunks(), self.chunk_edges):
            check_chunk(src, dst, w, self.edges.name, self.options.weighted)
            yield src, dst, w

    def prepared_chunks(self, bar=None):
        for src, dst, w in self.raw_chunks():
            if bar is not None:
                bar.update(len(src))
            src, dst, w = prepare_chunk(src, dst, w, self.options)
            if len(src) and not renumbering.auto_applies(self):
                # before any array of one entry per vertex grows to the largest id (the
                # default rule looks at sparse ids first: it may renumber them)
                self.vertices.check(int(max(src.max(), dst.max())) + 1)
            yield src, dst, w


def _check_options(num_shards, shard_size, memory_limit, weight_dtype):
    if num_shards is not None and shard_size is not None:
        raise UsageError("give num_shards or shard_size, not both")
    if num_shards is not None and (not isinstance(num_shards, (int, np.integer)) or num_shards < 1):
        raise UsageError(f"num_shards must be a positive integer, got {num_shards!r}")
    for name, value in (("shard_size", shard_size), ("memory_limit", memory_limit)):
        if value is not None and (not isinstance(value, (int, np.integer)) or value < 1):
            raise UsageError(f"{name} must be a positive number of bytes, got {value!r}")
    try:
        kind = np.dtype(weight_dtype).kind
    except TypeError:
        kind = None
    if kind != "f":
        raise UsageError(f"weight_dtype must be a floating dtype, got {weight_dtype!r}")


def _chunk_edges(memory_limit, undirected=False, renumber=False, self_loops=True):
    if memory_limit is None:
        return MAX_CHUNK_EDGES
    per_edge = (CHUNK_BYTES_PER_EDGE + (UNDIRECTED_CHUNK_BYTES if undirected else 0)
                + FILTER_CHUNK_BYTES * (bool(renumber) + (not self_loops)))
    # half the limit for chunks: the pass's vertex arrays (at most VERTEX_BYTES / 2 per
    # vertex, and VERTEX_BYTES * n <= limit is checked) take the other half
    return int(min(MAX_CHUNK_EDGES, max(MIN_CHUNK_EDGES, memory_limit // (2 * per_edge))))


def _open(source, format, weighted, chunk_edges):
    from ..io.base import EdgeSource
    if isinstance(source, EdgeSource):
        return source
    from ..io import open_source
    return open_source(source, format=format, weighted=weighted, chunk_edges=chunk_edges)


def _set_renumbering(plan):
    with plan.bar("renumbering") as bar:
        chunks = ((bar.update(len(s)) or s, d, w) for s, d, w in plan.raw_chunks())
        plan.options.original_ids = occurring_ids(chunks)
    plan.renumber = True


def _shard_count(plan, edges_per_vertex, id_dtype):
    total = int(edges_per_vertex.sum())
    if plan.num_shards is not None:
        count = plan.num_shards
    else:
        size = plan.shard_size or DEFAULT_SHARD_BYTES
        per_edge = id_dtype.itemsize + (plan.options.weight_dtype.itemsize if plan.options.weighted else 0)
        count = max(1, math.ceil(total * per_edge / size))
    count = _capped_shard_count(count, total)
    if plan.memory_limit is not None:
        budget = plan.memory_limit - SORT_VERTEX_BYTES * len(edges_per_vertex)
        sortable = budget // plan.sort_bytes_per_edge
        if plan.memory_limit < VERTEX_BYTES * len(edges_per_vertex) + plan.sort_bytes_per_edge:
            raise MemoryBudgetError(
                f"memory limit {plan.memory_limit} B is below the {VERTEX_BYTES} B per vertex "
                f"an external build of {len(edges_per_vertex)} vertices holds",
                minimum=VERTEX_BYTES * len(edges_per_vertex) + plan.sort_bytes_per_edge)
        # a shard holds at most twice its target (a non-heavy vertex straddles a cut)
        count = max(count, math.ceil(2 * total / sortable))
    return count


def _capped_shard_count(count, total):
    """``count``, or fewer shards when more than UNCAPPED_SHARDS would hold under
    MIN_SHARD_EDGES edges each (logged)."""
    cap = max(UNCAPPED_SHARDS, math.ceil(total / MIN_SHARD_EDGES))
    if count > cap:
        log.warning("%d shards of %d edges (in + out) hold about %d each; using %d shards instead "
                    "(at least %d edges a shard beyond %d shards)", count, total,
                    total // count, cap, MIN_SHARD_EDGES, UNCAPPED_SHARDS)
        return cap
    return count


def _intervals(plan, in_degree, out_degree, id_dtype):
    per_vertex = in_degree + out_degree
    intervals, heavy = choose_intervals(per_vertex, _shard_count(plan, per_vertex, id_dtype))
    if len(heavy):
        shown = ", ".join(str(v) for v in heavy[:10]) + (" ..." if len(heavy) > 10 else "")
        log.warning("%d vertex(es) hold more edges than a shard's target and got a shard of "
                    "their own: %s", len(heavy), shown)
    if plan.memory_limit is not None and len(heavy):
        # key runs sort a shard's two sides at once, edge records one side at a time
        side = int((in_degree[heavy] + out_degree[heavy]).max() if plan.keyed else
                   max(in_degree[heavy].max(), out_degree[heavy].max()))
        need = max(VERTEX_BYTES * len(per_vertex) + plan.sort_bytes_per_edge,
                   SORT_VERTEX_BYTES * len(per_vertex) + side * plan.sort_bytes_per_edge)
        if need > plan.memory_limit:
            raise MemoryBudgetError(
                f"vertex {int(heavy[np.argmax(np.maximum(in_degree[heavy], out_degree[heavy]))])} "
                f"has {side} edges{'' if plan.keyed else ' in one direction'}; sorting them "
                f"needs {need} B, more than the "
                f"memory limit {plan.memory_limit} B", minimum=need)
    return intervals, heavy


class _Result:
    def __init__(self, n, intervals, heavy, id_dtype):
        self.num_vertices = n
        self.intervals = intervals
        self.heavy = heavy
        self.id_dtype = id_dtype
        self.in_degree = np.zeros(n, dtype=np.int64)
        self.out_degree = np.zeros(n, dtype=np.int64)
        self.shard_edges = []
        self.nbytes = 0
        self.mode = None


def _vertex_count(plan, counted):
    if plan.renumber:
        return len(plan.options.original_ids)
    # every labelled vertex is a vertex, even one whose only edges were dropped (self-loops)
    labelled = len(plan.edges.labels()) if plan.edges.labels is not None else 0
    return max(plan.edges.num_vertices or 0, counted, labelled)


def _build_in_memory(plan, writer):
    if plan.renumber_requested:
        _set_renumbering(plan)
    with plan.bar("reading") as bar:
        parts = list(plan.prepared_chunks(bar))
    top = max((int(max(p[0].max(), p[1].max())) + 1 for p in parts if len(p[0])), default=0)
    if renumbering.auto_applies(plan):
        ids = renumbering.sparse_ids_in_parts(parts, top)
        if ids is not None:
            renumbering.renumber_by_default(plan, ids, top)
            parts, top = renumbering.renumber_parts(parts, ids), len(ids)
    n = _vertex_count(plan, top)
    plan.vertices.check(n)
    id_dtype = fmt.id_dtype_for(n)
    if plan.dedup:
        # intervals are balanced on the counts before repeated pairs are dropped
        counter = DegreeCounter(n)
        for src, dst, _ in parts:
            counter.add(src, dst)
        in_degree, out_degree = counter.in_degree, counter.out_degree
        del counter
    # numpy's sort and most array passes release the GIL: CSC on a second thread, CSR here
    with ThreadPoolExecutor(1) as pool:
        if n > 1 << 32:
            src = _concat([p[0] for p in parts], np.int64)
            dst = _concat([p[1] for p in parts], np.int64)
            weight = _concat([p[2] for p in parts], plan.options.weight_dtype) \
                if plan.options.weighted else None
            del parts
            pending = pool.submit(compress, dst, src, weight, 0, n, n, id_dtype, plan.dedup,
                                  plan.edge_ids)
            csr = compress(src, dst, weight, 0, n, n, id_dtype, plan.dedup, plan.edge_ids)
            del src, dst, weight
        else:
            # keys straight from the chunks: no concatenated id arrays at all
            srcs, dsts = [p[0] for p in parts], [p[1] for p in parts]
            weight = _concat([p[2] for p in parts], plan.options.weight_dtype) \
                if plan.options.weighted else None
            del parts
            pending = pool.submit(compress_pieces, dsts, srcs, n, id_dtype, plan.dedup, weight,
                                  plan.edge_ids)
            csr = compress_pieces(srcs, dsts, n, id_dtype, plan.dedup, weight, plan.edge_ids)
            del srcs, dsts, weight
        csc = pending.result()
    if not plan.dedup:
        in_degree, out_degree = np.diff(csc[0]), np.diff(csr[0])
    eid = _global_edge_ids(csr[3], csc[3]) if plan.edge_ids else None
    intervals, heavy = _intervals(plan, in_degree, out_degree, id_dtype)
    del in_degree, out_degree
    result = _Result(n, intervals, heavy, id_dtype)
    result.mode = "in-memory"
    with plan.bar("writing", total=len(intervals) - 1, unit="shards") as bar:
        for i in range(len(intervals) - 1):
            lo, hi = int(intervals[i]), int(intervals[i + 1])
            in_parts = _slice(csc, lo, hi)
            extra = None
            if eid is not None:
                extra = {fmt.EDGE_ID: eid[int(csc[0][lo]):int(csc[0][hi])]}
            out_nbytes = _write_part(writer, result, plan, i, lo, hi, "out", _slice(csr, lo, hi))
            in_nbytes = _write_part(writer, result, plan, i, lo, hi, "in", in_parts, extra)
            _finish_shard(writer, result, i, lo, hi, in_nbytes + out_nbytes)
            bar.update(1)
    _write_vertex_data(writer, result, plan)
    return result


def _global_edge_ids(out_positions, in_positions):
    """Global CSR position of each in-edge, from both layouts' input indices of their edges."""
    csr_position = np.empty(max(len(out_positions), int(in_positions.max(initial=-1)) + 1),
                            dtype=np.int64)
    csr_position[out_positions] = np.arange(len(out_positions), dtype=np.int64)
    return csr_position[in_positions]


def _concat(arrays, dtype):
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.empty(0, dtype=dtype)


def _slice(compressed, lo, hi):
    indptr, ids, weights = compressed[:3]
    start, stop = int(indptr[lo]), int(indptr[hi])
    local = indptr[lo:hi + 1] - start
    return local, ids[start:stop], None if weights is None else weights[start:stop]


def _build_external(plan, writer):
    if plan.renumber_requested and not plan.renumber:
        _set_renumbering(plan)
    try:
        if not plan.options.weighted and not plan.edge_ids:
            try:
                return _build_keyed(plan, writer)
            except _WideIds:
                log.info("ids beyond 2**32: bucketing edge records instead of packed keys")
        return _build_records(plan, writer)
    except renumbering.SparseIds as sparse:
        # found during the first pass: build again, over renumbered ids when they are sparse
        renumbering.decide_after_pass(plan, sparse)
        return _build_external(plan, writer)


class _WideIds(Exception):
    """An id does not fit a packed key's 32-bit half."""


def _build_keyed(plan, writer):
    """Unweighted edges without edge ids: one pass over the input writes sorted key runs and
    counts degrees; then each shard's keys are gathered from the runs, sorted and written."""
    counter = DegreeCounter()
    bucket_dir = plan.tmp_dir if plan.tmp_dir is not None else writer.path.parent
    runs = KeyRuns(bucket_dir, writer.path.name)
    try:
        with plan.bar("reading + sorting runs") as bar, ThreadPoolExecutor(1) as pool:
            for src, dst, _ in read_ahead(plan.prepared_chunks(bar)):
                if len(src) == 0:
                    continue
                top = int(max(src.max(), dst.max())) + 1
                renumbering.check_id_range(plan, VERTEX_BYTES, top)
                if top > KEY_ID_LIMIT:
                    raise _WideIds()
                counter.grow(top)
                # each direction packs, sorts, counts and writes its run on its own thread
                pending = pool.submit(_run, runs, "out", src, dst, counter.out_degree)
                _run(runs, "in", dst, src, counter.in_degree)
                pending.result()
                del src, dst, pending
        renumbering.check_sparse(plan, counter)
        n = _vertex_count(plan, len(counter.in_degree))
        if n > KEY_ID_LIMIT:
            raise _WideIds()
        counter.grow(n)
        id_dtype = fmt.id_dtype_for(n)
        plan.keyed = True
        intervals, heavy = _intervals(plan, counter.in_degree, counter.out_degree, id_dtype)
        counts = {"in": _interval_sums(counter.in_degree, intervals),
                  "out": _interval_sums(counter.out_degree, intervals)}
        del counter
        result = _Result(n, intervals, heavy, id_dtype)
        result.mode = "external"
        with plan.bar("writing", total=2 * (len(intervals) - 1), unit="shard sides") as bar:
            _write_keyed(plan, writer, result, runs, counts, bar)
    finally:
        plan.keyed = False
        runs.cleanup()
    _write_vertex_data(writer, result, plan)
    return result


def _run(runs, direction, primary, secondary, degree):
    key = pack_keys(primary, secondary)
    key.sort()
    # sorted primaries make the counting pass sequential
    count_into(degree, np.right_shift(key, np.uint64(32)).view(np.int64))
    runs.append(direction, key)


def _interval_sums(values, intervals):
    cumulative = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values, out=cumulative[1:])
    return cumulative[intervals[1:]] - cumulative[intervals[:-1]]


def _write_keyed(plan, writer, result, runs, counts, bar):
    """Shard ``i + 1``'s two sides load and sort on two threads while shard ``i`` is written.

    A side's outputs (4 B ids per edge) wait for the writer while the next shard's sides sort
    (8 B keys and 4 B ids per edge): at most ``KEY_SORT_BYTES_PER_EDGE`` per edge of one
    shard, which the shard count keeps within the limit (:func:`_shard_count`).
    """
    intervals = result.intervals
    num_shards = len(intervals) - 1

    def side(direction, i):
        lo, hi = int(intervals[i]), int(intervals[i + 1])
        keys = runs.load(direction, hi << 32, int(counts[direction][i]))
        return compress_keys(keys, lo, hi, result.id_dtype, plan.dedup) + (None,)

    def submit(i):
        # the in-side cursor and the out-side cursor are separate: one thread each
        return (pool.submit(side, "out", i), pool.submit(side, "in", i)) if i < num_shards else None

    with ThreadPoolExecutor(2) as pool:
        pending = submit(0)
        for i in range(num_shards):
            lo, hi = int(intervals[i]), int(intervals[i + 1])
            out_parts, in_parts = pending[0].result(), pending[1].result()
            pending = submit(i + 1)
            nbytes = _write_part(writer, result, plan, i, lo, hi, "out", out_parts)
            del out_parts
            bar.update(1)
            nbytes += _write_part(writer, result, plan, i, lo, hi, "in", in_parts)
            del in_parts
            _finish_shard(writer, result, i, lo, hi, nbytes)
            bar.update(1)


def _build_records(plan, writer):
    counter = DegreeCounter()
    with plan.bar("reading") as bar:
        for src, dst, _ in read_ahead(plan.prepared_chunks(bar)):
            if len(src):
                top = int(max(src.max(), dst.max())) + 1
                renumbering.check_id_range(plan, VERTEX_BYTES, top)
            counter.add(src, dst)
        num_input = bar.n
    renumbering.check_sparse(plan, counter)
    n = _vertex_count(plan, len(counter.in_degree))
    counter.grow(n)
    id_dtype = fmt.id_dtype_for(n)
    intervals, heavy = _intervals(plan, counter.in_degree, counter.out_degree, id_dtype)
    del counter
    result = _Result(n, intervals, heavy, id_dtype)
    result.mode = "external"
    num_shards = len(intervals) - 1
    bucket_dir = plan.tmp_dir if plan.tmp_dir is not None else writer.path.parent
    buckets = BucketFiles(bucket_dir, writer.path.name, num_shards, id_dtype,
                          plan.options.weight_dtype if plan.options.weighted else None,
                          indexed=plan.edge_ids)
    try:
        with plan.bar("bucketing", total=num_input) as bar:
            _bucket_records(plan, buckets, intervals, bar)
        with plan.bar("writing", total=2 * num_shards, unit="shard sides") as bar:
            _write_records(plan, writer, result, buckets, bar)
    finally:
        buckets.cleanup()
    _write_vertex_data(writer, result, plan)
    return result


def _bucket_records(plan, buckets, intervals, bar):
    first = 0
    for src, dst, w in read_ahead(plan.prepared_chunks(bar)):
        # the edge's index in the prepared sequence ties its in- and out-records together
        index = np.arange(first, first + len(src), dtype=np.int64) if plan.edge_ids else None
        first += len(src)
        buckets.append("in", shard_of(dst, intervals), dst, src, w, index)
        buckets.append("out", shard_of(src, intervals), src, dst, w, index)


def _write_records(plan, writer, result, buckets, bar):
    intervals, n, id_dtype = result.intervals, result.num_vertices, result.id_dtype
    num_shards = len(intervals) - 1
    nbytes = np.zeros(num_shards, dtype=np.int64)
    # every out-side first: an in-edge's CSR position is known once all of them are
    csr_base = 0
    for i in range(num_shards):
        lo, hi = int(intervals[i]), int(intervals[i + 1])
        parts, index = _load_compressed(buckets, plan, "out", i, lo, hi, n, id_dtype)
        if plan.edge_ids:
            positions = np.arange(csr_base, csr_base + len(index), dtype=np.int64)
            buckets.append("eid", shard_of(parts[1], intervals), index, positions, None)
            del positions
        csr_base += len(parts[1])
        nbytes[i] += _write_part(writer, result, plan, i, lo, hi, "out", parts)
        del parts, index
        bar.update(1)
    for i in range(num_shards):
        lo, hi = int(intervals[i]), int(intervals[i + 1])
        parts, index = _load_compressed(buckets, plan, "in", i, lo, hi, n, id_dtype)
        extra = None
        if plan.edge_ids:
            extra = {fmt.EDGE_ID: _match_positions(buckets.load("eid", i), index)}
        nbytes[i] += _write_part(writer, result, plan, i, lo, hi, "in", parts, extra)
        del parts, index, extra
        _finish_shard(writer, result, i, lo, hi, int(nbytes[i]))
        bar.update(1)


def _load_compressed(buckets, plan, direction, i, lo, hi, n, id_dtype):
    """One bucket in CSR/CSC layout, and the input index of each kept edge (with edge ids)."""
    rec = buckets.load(direction, i)
    weight = rec["w"] if plan.options.weighted else None
    parts = compress(rec["p"], rec["s"], weight, lo, hi, n, id_dtype, plan.dedup, plan.edge_ids)
    index = rec["i"][parts[3]] if plan.edge_ids else None
    return parts[:3], index


def _match_positions(records, index):
    """CSR position of each input index in ``index``, from (index, position) records of the same set.

    The records' ``p`` is an edge's input index and ``s`` its global CSR position.
    """
    order = np.argsort(records["p"], kind="stable")
    known = records["p"][order]
    found = np.searchsorted(known, index)
    return records["s"][order][found]


def _write_part(writer, result, plan, i, lo, hi, direction, parts, extra=None):
    edge_data = {"weight": parts[2]} if plan.options.weighted else {}
    edge_data.update(extra or {})
    nbytes = writer.shard_part(i, direction, parts[0], parts[1], edge_data)
    degree = result.in_degree if direction == "in" else result.out_degree
    degree[lo:hi] = np.diff(parts[0])
    return nbytes


def _finish_shard(writer, result, i, lo, hi, nbytes):
    num_in = int(result.in_degree[lo:hi].sum())
    num_out = int(result.out_degree[lo:hi].sum())
    writer.shard_attrs(i, lo, hi, num_in, num_out, nbytes)
    result.nbytes += nbytes
    result.shard_edges.append((num_in, num_out))


def _write_vertex_data(writer, result, plan):
    writer.dataset(fmt.INTERVALS, result.intervals)
    writer.dataset(fmt.IN_DEGREE, result.in_degree)
    writer.dataset(fmt.OUT_DEGREE, result.out_degree)
    labels = renumbering.store_labels(plan, result.num_vertices)
    result.label_kind = "int" if labels is None else labels[0]
    result.labelled = labels is not None
    result.renumbered = plan.renumber
    if labels is not None:
        write_labels(writer, *labels)


def _root_attrs(plan, result):
    renumber = plan.renumber
    props = {"weight": plan.options.weight_dtype.name} if plan.options.weighted else {}
    from .. import __version__
    build = {
        "input": plan.edges.name,
        "input_format": plan.edges.format,
        "grstream_version": __version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "mode": result.mode,
        "options": {
            "num_shards": plan.num_shards, "shard_size": plan.shard_size,
            "memory_limit": plan.memory_limit, "undirected": plan.options.undirected,
            "weighted": plan.options.weighted, "self_loops": plan.options.self_loops,
            "duplicates": not plan.dedup, "renumber": renumber,
            "weight_dtype": plan.options.weight_dtype.name, "edge_ids": plan.edge_ids,
        },
        "num_heavy_vertices": int(len(result.heavy)),
        "heavy_vertices": [int(v) for v in result.heavy[:MAX_HEAVY_RECORDED]],
    }
    return {
        "format": fmt.FORMAT_NAME,
        "format_version": np.int64(fmt.FORMAT_VERSION),
        "num_vertices": np.int64(result.num_vertices),
        "num_edges": np.int64(int(result.in_degree.sum())),
        "num_shards": np.int64(len(result.intervals) - 1),
        "id_dtype": result.id_dtype.name,
        "edge_props": props,
        "directed": not plan.options.undirected,
        "renumbered": result.labelled,
        "label_kind": result.label_kind,
        "id_base": np.int64(plan.edges.id_base),
        "edge_ids": bool(plan.edge_ids),
        "build": build,
    }


def _summary(path, result, seconds):
    edges = [i + o for i, o in result.shard_edges]
    mean = sum(edges) / len(edges) if edges else 0.0
    balance = (max(edges) / mean) if mean else 1.0
    return (f"{path}: {result.num_vertices} vertices, {int(result.in_degree.sum())} edges, "
            f"{len(edges)} shards (max/mean edges {balance:.2f}), {format_bytes(result.nbytes)}, "
            f"{seconds:.2f} s" + (", ids renumbered (the input's ids kept as labels)"
                                  if result.renumbered else ""))

