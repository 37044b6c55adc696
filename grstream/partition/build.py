"""``build_shards``: an edge source in, a load-balanced shard store out."""
from typing import TYPE_CHECKING, Any, Optional, Union

if TYPE_CHECKING:  # names for the annotations only
    from .shard_output import Result as ShardOutputResult

import datetime
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np

from ..errors import UsageError, plain
from ..io.atomic import check_output
from ..io.pipes import input_name, is_stream
from ..store import format as fmt
from ..units import byte_size, format_bytes
from .edge_chunks import EdgeOptions
from .external_keys import WideIds, build_keyed, sorting_chunks
from .external_records import build_records
from .in_memory import build_in_memory
from .vertex_budget import IN_MEMORY_VERTEX_BYTES, VertexBudget
from . import renumber as renumbering
from . import reorder as reordering
from .build_plan import VERTEX_BYTES, Plan, set_renumbering
from .writer import StoreWriter

log = logging.getLogger("grstream.partition")

#: working bytes per input edge while a chunk is read, prepared and bucketed: the reader's
#: buffer and arrays of this chunk and of the one read ahead, the sort keys or gathered
#: records (upper bounds of what RMAT scale 20 measured: 93 B plain, 190 B undirected)
CHUNK_BYTES_PER_EDGE = 128
#: extra per input edge when every edge is stored both ways (doubled arrays and keys)
UNDIRECTED_CHUNK_BYTES = 192
#: extra per input edge for renumbering or dropping self-loops (new id arrays, a mask)
FILTER_CHUNK_BYTES = 32
MAX_CHUNK_EDGES = 1 << 22
MIN_CHUNK_EDGES = 1 << 12
MAX_HEAVY_RECORDED = 1000
#: chunks read at once by an external build: one per this many threads, at least
#: MIN_LIMITED_READERS (their buffers share its chunk memory)
THREADS_PER_LIMITED_READER = 4
MIN_LIMITED_READERS = 2
#: memory of one process parsing a text input (its interpreter with numpy, about 30 MB, and
#: the blocks in flight: their text and parsed edges; :mod:`grstream.io.parallel_text`)
TEXT_WORKER_BYTES = 64 << 20


def build_shards(source: Any, path: Union[str, "os.PathLike[str]"], *,
                 num_shards: Optional[int] = None, shard_size: Optional[int] = None,
                 memory_limit: Optional[int] = None, undirected: bool = False,
                 weighted: Optional[bool] = None, self_loops: bool = True,
                 duplicates: bool = True, renumber: Optional[bool] = None,
                 weight_dtype: str = "float64", format: Optional[str] = None,
                 progress: bool = False, overwrite: bool = True,
                 tmp_dir: Optional[str] = None, edge_ids: bool = False,
                 threads: Optional[int] = None,
                 reorder: Optional[str] = None, comm: Any = None,
                 compress: bool = False) -> "ShardOutputResult":
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
    shard_size : int or str, optional
        Target bytes of a shard's datasets instead of ``num_shards`` (sizes here and in
        ``memory_limit``: an int, or as the command line writes them, ``"64M"``). Default without
        either: 64 MiB shards, at least one.
    memory_limit : int or str, optional
        Bytes of working memory. When given, the build never holds the edge list: edges
        without edge ids take one pass over the input that writes sorted runs of packed keys
        (and their weights) to temporary files and counts degrees, then gather each shard's
        keys from the runs; otherwise a degree pass and a bucketing pass into per-shard
        files. Shards are made small enough that one shard sorts within the limit. Vertex arrays
        (``VERTEX_BYTES`` per vertex) count against it.
    undirected : bool
        Store every edge in both directions (a self-loop once); the store is undirected
        (``directed`` false). A symmetric input (Matrix Market ``symmetric``, KONECT ``sym``,
        an undirected networkx graph, an undirected store) already lists both directions of
        each edge: it is stored as read, and makes an undirected store with or without this
        option (karate's 78 edges are 156 stored edges either way).
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
        Floating dtype of the stored weights. A weight it cannot hold (one that would become
        inf, or a nonzero one that would become 0) raises :class:`InputFormatError`.
    format : str, optional
        Input format name for ``open_source`` (default: from the file name).
    progress : bool
        tqdm bars and a one-line summary on stderr (the CLI's default). The summary always goes
        to the ``grstream.partition`` logger at INFO level.
    overwrite : bool
        Replace an existing store at ``path``; False raises
        :class:`~grstream.errors.OutputExistsError` (a :class:`UsageError`) instead, also when
        another writer creates ``path`` during the build (the finished store takes the name
        only while it is free). A ``path`` that is the input file (also through a symlink or
        hard link), that holds something other than a regular file (a device, FIFO, folder),
        or whose folder does not exist is refused before anything is read.
    tmp_dir : str or Path, optional
        Where bucket files go during an external build (default: the target's directory).
    edge_ids : bool
        Also store per shard ``in/eid``: for each in-edge, the global CSR position of the same
        edge (shard 0's out-edges first, then shard 1's, ...), so edge state written in
        scatter order can be read over in-edges. The same in both build modes.
    threads : int, optional
        Threads that read, sort and write, and the threads (Arrow installed) or worker
        processes that parse a text input (:mod:`grstream.io.parallel_text`; within a memory
        limit as many as fit an eighth of it at ``TEXT_WORKER_BYTES`` each). Default: the cores this process may run on
        (``os.sched_getaffinity``). The store is byte for byte the same for every count.
    reorder : str, optional
        ``"degree"`` or ``"rcm"``: give the vertices internal ids in that order, so a
        row's neighbour ids lie closer together (smaller deltas for a compressed layout);
        ``"auto"``: the degree order when the input's ids show no locality (most edges join
        ids more than about n / 16 apart), else the input's; None or ``"none"`` (default)
        keeps the input's order. Results are still keyed by the input's
        ids (the store keeps them as labels); :mod:`grstream.partition.reorder`.
    comm : mpi4py communicator, optional
        Build as one rank of ``comm`` (``grstream shard`` under ``mpiexec``): each rank reads its
        share of the input and builds the shards of its own run of intervals (within
        ``memory_limit`` each: grstream/distributed/rank_external.py), rank 0 writes the store,
        the same store one process writes with the same options
        (grstream/distributed/rank_build.py; no input with vertex names, no pipe). A ``path``
        holding ``{rank}`` makes each rank write its own part file instead (the file
        ``grstream split`` writes for that rank; the path of this rank's is returned).
    compress : bool
        Store the id datasets (``in/src``, ``out/dst``) compressed in blocks of 32 edges
        (format version 3, docs/FORMAT.md "Compressed ids": about 2.5 bytes an id on a
        random-labelled R-MAT graph instead of 4, less with ``reorder``); reading them through
        the store decodes them (the GPU kernels decode the blocks as they read them). Off by
        default.

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
    if isinstance(path, (str, os.PathLike)) and "{rank}" in os.fspath(path) and (
            comm is None or comm.Get_size() == 1):
        raise UsageError(f"{os.fspath(path)} names one part file per rank ({{rank}}): build it "
                         "under mpiexec with several ranks, or split a store (grstream split)")
    if comm is not None and comm.Get_size() > 1:   # ranks: each builds its own intervals
        from ..distributed.rank_build import build_ranked
        return build_ranked(comm, started, _make_plan, source, path, num_shards=num_shards,
                            shard_size=shard_size, memory_limit=memory_limit,
                            undirected=undirected, weighted=weighted, self_loops=self_loops,
                            duplicates=duplicates, renumber=renumber, weight_dtype=weight_dtype,
                            format=format, progress=progress, overwrite=overwrite,
                            tmp_dir=tmp_dir, edge_ids=edge_ids, threads=threads, reorder=reorder,
                            compress=compress)
    path, plan = _make_plan(source, path, num_shards, shard_size, memory_limit, undirected,
                            weighted, self_loops, duplicates, renumber, weight_dtype, format,
                            progress, tmp_dir, edge_ids, threads, reorder, compress)
    memory_limit = plan.memory_limit
    with StoreWriter(path, overwrite=overwrite, compress=plan.compress) as writer:
        if memory_limit is None:
            result = build_in_memory(plan, writer)
        else:
            result = _build_external(plan, writer)
        writer.commit(root_attrs(plan, result))
    return report(path, result, started, progress)


def report(path, result, started, progress):
    """The build's summary line, logged and (``progress``) printed; returns ``path``."""
    summary = _summary(path, result, time.perf_counter() - started)
    log.info("%s", summary)
    if progress:
        print(summary, file=sys.stderr)
    return path


def _make_plan(source, path, num_shards, shard_size, memory_limit, undirected, weighted,
               self_loops, duplicates, renumber, weight_dtype, format, progress, tmp_dir,
               edge_ids, threads, reorder, compress=False, order_with=None):
    """build_shards' arguments checked, its input opened: ``(path, Plan)``. ``order_with(plan,
    order)`` applies a vertex order (default :func:`.reorder.reorder_plan`; a build under ranks
    chooses it once and shares it)."""
    if not isinstance(path, (str, os.PathLike)):
        raise UsageError(f"path must be the store's file name (str or os.PathLike), not "
                         f"{type(path).__name__}")
    path = Path(path)
    # the output may not be the input file (also through a link): writing it would replace it
    inputs = [source] if isinstance(source, (str, os.PathLike)) else []
    check_output(path, inputs=inputs, what="store")
    shard_size, memory_limit = _check_options(num_shards, shard_size, memory_limit, weight_dtype)
    threads = _check_threads(threads)
    reorder = reordering.check_order(reorder)
    if inputs and (memory_limit is not None or renumber or reorder) and is_stream(source):
        rereads = ('--memory-limit (memory_limit)' if memory_limit is not None else
                   '--reorder' if reorder else '--renumber')
        raise UsageError(
            f"{input_name(source)} is a pipe, which can be read only once, and {rereads} "
            "reads the input more than once: save it to a file first, or build without it")
    # the default may renumber (renumber=None): chunks leave room for it
    # (a reordered input maps every chunk's ids as renumbering does)
    chunk_edges = _chunk_edges(memory_limit, undirected, renumber is not False or reorder,
                               self_loops,
                               _chunks_at_once(threads, memory_limit))
    edges = _open(source, format, weighted, chunk_edges, reader_threads(threads, memory_limit),
                  text_workers(threads, memory_limit))
    is_weighted = edges.weighted if weighted is None else bool(weighted)
    if is_weighted and not edges.weighted:
        raise UsageError(f"{edges.name}: weights requested but the input has none")
    options = EdgeOptions(undirected=undirected, self_loops=self_loops, weighted=is_weighted,
                          weight_dtype=np.dtype(weight_dtype), both_ways_in_input=edges.symmetric)
    plan = Plan(edges, options, num_shards, shard_size, memory_limit, not duplicates,
                 chunk_edges, progress, tmp_dir)
    plan.renumber_requested = None if renumber is None else bool(renumber)
    plan.edge_ids = bool(edge_ids)
    plan.threads = threads
    plan.vertices = VertexBudget(
        edges.name, IN_MEMORY_VERTEX_BYTES if memory_limit is None else VERTEX_BYTES,
        memory_limit, renumbered=bool(renumber))
    if not renumber:
        plan.vertices.check(edges.num_vertices or 0)
    plan.reorder_requested = reorder
    plan.compress = bool(compress)
    if reorder:
        plan.reorder = (order_with or reordering.reorder_plan)(plan, reorder)
    return path, plan


def _check_options(num_shards, shard_size, memory_limit, weight_dtype):
    if num_shards is not None and shard_size is not None:
        raise UsageError("give num_shards or shard_size, not both")
    if num_shards is not None and (not isinstance(num_shards, (int, np.integer)) or num_shards < 1):
        raise UsageError(f"num_shards must be a positive integer, got {plain(num_shards)}")
    sizes = []
    for name, value in (("shard_size", shard_size), ("memory_limit", memory_limit)):
        size = byte_size(name, value)   # an int, or a size as the command line writes it
        if size is not None and size < 1:
            raise UsageError(f"{name} must be a positive number of bytes, got {plain(value)}")
        sizes.append(size)
    try:
        kind = np.dtype(weight_dtype).kind
    except TypeError:
        kind = None
    if kind != "f":
        raise UsageError(f"weight_dtype must be a floating dtype, got {plain(weight_dtype)}")
    return sizes


def default_threads():
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _check_threads(threads):
    if threads is None:
        return default_threads()
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise UsageError(f"threads must be a positive integer, got {plain(threads)}")
    return int(threads)


def reader_threads(threads, memory_limit):
    """Chunks read at once: every thread in memory; within a memory limit one per
    ``THREADS_PER_LIMITED_READER`` threads, at least ``MIN_LIMITED_READERS`` (the chunks' reads
    and checks keep up with the threads sorting them), the chunk size divided among them
    (:func:`_chunk_edges`)."""
    if memory_limit is None:
        return threads
    return min(threads, max(MIN_LIMITED_READERS, threads // THREADS_PER_LIMITED_READER))


def text_workers(threads, memory_limit):
    """Processes that parse a text input: every thread in memory; within a memory limit as
    many as fit an eighth of it at ``TEXT_WORKER_BYTES`` each (one: parsed in this process)."""
    if memory_limit is None:
        return threads
    return max(1, min(threads, memory_limit // (8 * TEXT_WORKER_BYTES)))


def _chunks_at_once(threads, memory_limit):
    """Chunks an external build holds beyond one reader's and one sorter's: those of the
    further readers and of the chunks sorting at once (their memory divides the chunk's)."""
    if memory_limit is None:
        return 1
    return reader_threads(threads, memory_limit) + sorting_chunks(threads) - 1


def _chunk_edges(memory_limit, undirected=False, renumber=False, self_loops=True, at_once=1):
    if memory_limit is None:
        return MAX_CHUNK_EDGES
    per_edge = (CHUNK_BYTES_PER_EDGE + (UNDIRECTED_CHUNK_BYTES if undirected else 0)
                + FILTER_CHUNK_BYTES * (bool(renumber) + (not self_loops)))
    # half the limit for chunks: the pass's vertex arrays (at most VERTEX_BYTES / 2 per
    # vertex, and VERTEX_BYTES * n <= limit is checked) take the other half
    # the chunks read and sorted at once share it
    return int(min(MAX_CHUNK_EDGES,
                   max(MIN_CHUNK_EDGES, memory_limit // (2 * per_edge * at_once))))


def _open(source, format, weighted, chunk_edges, threads=1, text_threads=1):
    from ..io.base import EdgeSource
    if isinstance(source, EdgeSource):
        return source
    from ..io import open_source
    from ..io.dispatch import TEXT_FORMATS, detect_format
    # a pipe is always text (and is not opened here: open_source takes it afresh)
    if isinstance(source, (str, os.PathLike)) and (
            is_stream(source) or (format or detect_format(source)) in TEXT_FORMATS):
        threads = text_threads
    return open_source(source, format=format, weighted=weighted, chunk_edges=chunk_edges,
                       threads=threads)


def _build_external(plan, writer):
    if plan.renumber_requested and not plan.renumber:
        set_renumbering(plan)
    try:
        if not plan.edge_ids:
            try:
                return build_keyed(plan, writer)
            except WideIds:
                log.info("ids too wide for packed keys (beyond 2**32, or weighted chunks whose "
                         "ids and edge indices exceed the block sort): bucketing edge records")
        return build_records(plan, writer)
    except renumbering.SparseIds as sparse:
        # found during the first pass: build again, over renumbered ids when they are sparse
        renumbering.decide_after_pass(plan, sparse)
        return _build_external(plan, writer)


def root_attrs(plan, result):
    renumber = plan.renumber or plan.renumbered_input
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
            "memory_limit": plan.memory_limit_given, "undirected": plan.options.undirected,
            "weighted": plan.options.weighted, "self_loops": plan.options.self_loops,
            "duplicates": not plan.dedup, "renumber": renumber,
            "weight_dtype": plan.options.weight_dtype.name, "edge_ids": plan.edge_ids,
            "reorder": plan.reorder_requested, "compress": bool(plan.compress),
        },
        "num_heavy_vertices": int(len(result.heavy)),
        "heavy_vertices": [int(v) for v in result.heavy[:MAX_HEAVY_RECORDED]],
    }
    attrs = {
        "format": fmt.FORMAT_NAME,
        "format_version": np.int64(fmt.FORMAT_VERSION),
        "num_vertices": np.int64(result.num_vertices),
        "num_edges": np.int64(int(result.in_degree.sum())),
        "num_shards": np.int64(len(result.intervals) - 1),
        "id_dtype": result.id_dtype.name,
        "edge_props": props,
        # a symmetric input (already both ways) makes an undirected store without the option
        "directed": not (plan.options.undirected or plan.options.both_ways_in_input),
        "renumbered": result.labelled,
        "label_kind": result.label_kind,
        "id_base": np.int64(plan.edges.id_base),
        "edge_ids": bool(plan.edge_ids),
        "build": build,
    }
    if plan.reorder or not result.labels_increasing:
        # the label table is a permutation: readers that assume it increasing must refuse it
        attrs["format_version"] = np.int64(fmt.REORDERED_VERSION)
    if plan.reorder:
        attrs[fmt.VERTEX_ORDER] = plan.reorder
    return attrs


def _summary(path, result, seconds):
    edges = [i + o for i, o in result.shard_edges]
    mean = sum(edges) / len(edges) if edges else 0.0
    balance = (max(edges) / mean) if mean else 1.0
    num_edges = int(result.in_degree.sum())
    return (f"{path}: {result.num_vertices} vertices, {num_edges} edges, "
            f"{len(edges)} shards (max/mean edges {balance:.2f}), {format_bytes(result.nbytes)}, "
            f"{seconds:.2f} s ({_rate(num_edges, seconds)} edges/s)"
            + (", ids renumbered (the input's ids kept as labels)" if result.renumbered else ""))


def _rate(count, seconds):
    """``count / seconds`` with an SI prefix: ``12.3M``."""
    rate = count / seconds if seconds > 0 else 0.0
    for prefix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if rate >= scale:
            return f"{rate / scale:.1f}{prefix}"
    return f"{rate:.0f}"
