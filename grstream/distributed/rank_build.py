"""The shard build under MPI ranks (``mpiexec -n N grstream shard ...``): each rank keeps its
share of the input, the edges go to the ranks that own their intervals, each rank lays out the
shards of its own run, and rank 0 writes the store: the store one process writes, every
dataset and attribute alike but the build record's (its date, and the ranks that built it).

Every rank, in this order (each step collective):

1. **read**: the input's chunks, cut as one process cuts them (build_plan.py ``raw_chunks``),
   are dealt round robin, chunk ``i`` to rank ``i mod size``; each edge keeps its position in
   the input, which the prepared edges (self-loops dropped, both ways of an undirected edge)
   carry on. A rank reads only its own chunks where the input reads rows at random (``.npy``);
   else every rank's reader goes through the input, and only the owner of a chunk prepares,
   keys and sends its edges.
2. **ids**: ``renumber=True`` maps the union of every rank's occurring input ids; the default
   rule (sparse ids) looks at the union of the prepared ids, as one process does.
3. **intervals**: the in- and out-degrees summed over ranks (an all-reduce of n counts each)
   give the intervals, planned on every rank alike (build_plan.py ``plan_intervals``); the
   shards are cut into ``size`` runs balanced by edges, as ranks.py cuts a store's.
4. **exchange**: each edge goes to the rank owning its source's interval (its out-side) and to
   the one owning its destination's (its in-side): an all-to-all-v of ids, weights and
   positions per side.
5. **layout**: each rank puts its edges back in input order (their positions) and lays out its
   vertex range (layout.py ``compress``: sorted by (primary, secondary), equal pairs in input
   order, repeated pairs dropped for ``duplicates=False``), the layout every build path writes.
6. **write**: rank 0 writes the shards in order, receiving each other rank's from it, then the
   vertex arrays and root attributes.

A rank holds its share of the input's edges and then its own intervals' (both sides), plus
vertex arrays of n entries (degrees, the renumbering map). The build runs in memory: a memory
limit, edge ids, a vertex reordering, an input read once (a pipe) and inputs with vertex names
of their own are for a build in one process.
"""
import numpy as np

from ..errors import OutputExistsError, UsageError
from ..io.pipes import input_name, is_stream
from ..store import format as fmt
from ..store.labels import is_sparse
from ..partition.build_plan import plan_intervals, vertex_count
from ..partition.edge_chunks import _both_ways, check_chunk, prepare_chunk
from ..partition.in_memory import _concat, _slice
from ..partition.layout import compress
from ..partition.renumber import auto_applies, renumber_by_default
from ..partition.shard_output import (Result, encoded_side, finish_shard, write_part,
                                      write_vertex_data)
from .exchange import MpiExchange
from .ranks import abort, collectively, cut_runs


def build_ranked(comm, started, make_plan, source, path, **options):
    """``build_shards(source, path, **options)`` as one rank of ``comm``; ``make_plan`` checks the
    options and opens the input (build.py). Returns the store's path on every rank."""
    from ..partition.build import report
    rank, overwrite = comm.Get_rank(), options.pop("overwrite")
    with collectively(comm):   # (an option or input one rank refuses: every rank raises)
        refused = [k for k in ("memory_limit", "edge_ids", "reorder")
                   if options[k] not in (None, False, "none")]
        if refused:
            raise UsageError(f"a build under ranks runs in memory, without {', '.join(refused)}: "
                             f"build with {'it' if len(refused) == 1 else 'them'} in one process")
        if isinstance(source, str) and is_stream(source):
            raise UsageError(f"{input_name(source)} is a pipe, which only one process can read: "
                             f"save it to a file for a build under ranks")
        options["progress"] = options["progress"] and rank == 0
        path, plan = make_plan(source, path, **options)
        if rank == 0 and not overwrite and path.exists():   # (before any rank reads: no abort)
            raise OutputExistsError(f"{path} exists (pass overwrite=True to replace it)", path=path)
        if plan.edges.labels is not None:
            raise UsageError(f"{plan.edges.name} names its vertices, which a build under ranks "
                             f"does not number: build it in one process")
    with collectively(comm):
        edges, top = _read(comm, plan)
    n = vertex_count(plan, top)
    plan.vertices.check(n)   # (the same n on every rank: each raises alike)
    id_dtype = fmt.id_dtype_for(n)
    in_degree, out_degree = _degrees(comm, edges, n)
    intervals, heavy = plan_intervals(plan, in_degree, out_degree, id_dtype)
    per_vertex = np.concatenate(([0], np.cumsum(in_degree + out_degree)))
    cut = cut_runs(np.diff(per_vertex[intervals]), comm.Get_size())
    bounds = intervals[cut]
    del in_degree, out_degree, per_vertex
    exchange = MpiExchange(comm, bounds)
    lo, hi = int(bounds[rank]), int(bounds[rank + 1])
    layouts = {}
    for side, (primary, secondary) in (("out", (0, 1)), ("in", (1, 0))):
        got = _send_to_owners(exchange, edges, primary, plan.options.weighted)
        order = np.argsort(got[3], kind="stable")   # input order
        layouts[side] = compress(got[primary][order], got[secondary][order],
                                 None if got[2] is None else got[2][order], lo, hi, n,
                                 id_dtype, plan.dedup)
        del got, order
    del edges
    try:   # (a rank that stops here leaves the others in a send or receive: abort them)
        result = _write(comm, plan, path, overwrite, intervals, heavy, id_dtype,
                        cut, layouts, lo)
    except BaseException as exc:
        abort(comm, exc)
        raise
    comm.Barrier()   # the store is complete when any rank returns
    return report(path, result, started, options["progress"]) if rank == 0 else path


def _read(comm, plan):
    """This rank's share of the prepared edges, ``[src, dst, weight or None, position]``
    (positions: the index of each edge's input edge), and the largest id + 1 of every rank's,
    after renumbering where it applies."""
    rank, size = comm.Get_rank(), comm.Get_size()
    raw = []
    with plan.bar("reading") as bar:
        for src, dst, w, start in _share(plan, rank, size):
            raw.append((src, dst, w, start))
            bar.update(len(src) * size)
    options = plan.options
    if plan.renumber_requested:   # the input's ids that occur, renumbered in increasing order
        mine = [np.unique(np.concatenate((s, d))) for s, d, _, _ in raw]
        options.original_ids, plan.renumber = _union(comm, mine), True
    parts = []
    for src, dst, w, start in raw:
        pos = np.arange(start, start + len(src), dtype=np.int64)
        if not options.self_loops:   # the positions follow prepare_chunk's edges
            keep = src != dst
            src_kept, dst_kept, pos = src[keep], dst[keep], pos[keep]
        else:
            src_kept, dst_kept = src, dst
        if options.undirected and not options.both_ways_in_input:
            pos = _both_ways(src_kept, dst_kept, pos)[2]
        s, d, weight = prepare_chunk(src, dst, w, options, plan.edges.name)
        parts.append((s, d, weight, pos))
    del raw
    edges = [None if k == 2 and not options.weighted else _concat([p[k] for p in parts], dtype)
             for k, dtype in enumerate((np.int64, np.int64, options.weight_dtype, np.int64))]
    del parts
    largest = int(max(edges[0].max(initial=-1), edges[1].max(initial=-1)))
    top = comm.allreduce(largest, op=_max()) + 1
    if auto_applies(plan) and comm.allreduce(len(edges[0])):
        ids = _union(comm, [np.unique(np.concatenate(edges[:2]))])
        if is_sparse(top, len(ids)):   # the default rule renumbers sparse ids
            renumber_by_default(plan, ids, top)
            edges[0], edges[1] = np.searchsorted(ids, edges[0]), np.searchsorted(ids, edges[1])
            top = len(ids)
    return edges, top


def _share(plan, rank, size):
    """This rank's raw chunks, chunk ``i`` of the input's where ``i mod size`` is ``rank``, each
    as ``(src, dst, weight, position of its first edge)``: read alone where the input reads
    rows at random (EdgeSource ``rows``: ``.npy``), else picked from the whole input's."""
    edges, step = plan.edges, plan.chunk_edges
    total = edges.meta.get("edges")
    if edges.rows is not None and total is not None:
        for start in range(rank * step, int(total), size * step):
            src, dst, w = edges.rows(start, min(int(total), start + step))
            check_chunk(src, dst, w, edges.name, plan.options.weighted)
            yield src, dst, w, start
        return
    start = 0
    for i, (src, dst, w) in enumerate(plan.raw_chunks()):
        if i % size == rank:
            yield src, dst, w, start
        start += len(src)


def _union(comm, arrays):
    """The sorted union of every rank's sorted unique int64 ``arrays``."""
    mine = np.unique(_concat(arrays, np.int64))
    return np.unique(_concat(comm.allgather(mine), np.int64))


def _degrees(comm, edges, n):
    """In- and out-degree of every vertex over every rank's edges (before dropping repeated
    pairs, as one process balances the intervals)."""
    from mpi4py import MPI
    degrees = np.stack([np.bincount(edges[1], minlength=n), np.bincount(edges[0], minlength=n)])
    degrees = degrees.astype(np.int64)
    comm.Allreduce(MPI.IN_PLACE, degrees, op=MPI.SUM)
    return degrees[0], degrees[1]


def _send_to_owners(exchange, edges, primary, weighted):
    """Every rank's edges whose ``primary`` end (0: source, 1: destination) lies in this rank's
    vertex range: ``[src, dst, weight or None, position]``, in rank order."""
    owner = np.searchsorted(exchange.bounds, edges[primary], side="right") - 1
    order = np.argsort(owner, kind="stable")
    send = np.bincount(owner, minlength=exchange.size).astype(np.int64)
    recv = np.asarray(exchange.comm.alltoall(send.tolist()), dtype=np.int64)
    return [None if a is None else exchange.alltoallv(np.ascontiguousarray(a[order]), send, recv)
            for a in edges]


def _write(comm, plan, path, overwrite, intervals, heavy, id_dtype, cut, layouts, lo):
    """Rank 0 writes the store, each shard from the rank that laid it out; the others send
    theirs. Returns rank 0's build Result (None elsewhere)."""
    from ..partition.build import root_attrs
    from ..partition.writer import StoreWriter
    rank, size = comm.Get_rank(), comm.Get_size()
    owners = np.repeat(np.arange(size), np.diff(cut))
    n = int(intervals[-1])

    def piece(i):   # this rank's out- and in-side of shard i (encoded where compressed)
        a, b = int(intervals[i]) - lo, int(intervals[i + 1]) - lo
        return [encoded_side(plan, n, _slice(layouts[side], a, b)) for side in ("out", "in")]
    if rank != 0:
        for i in np.flatnonzero(owners == rank):
            comm.send(piece(int(i)), dest=0, tag=int(i))
        return None
    result = Result(n, intervals, heavy, id_dtype)
    result.mode = "in-memory"
    with StoreWriter(path, overwrite=overwrite, compress=plan.compress) as writer, \
            plan.bar("writing", total=len(owners), unit="shards") as bar:
        for i, owner in enumerate(owners.tolist()):
            out, into = piece(i) if owner == 0 else comm.recv(source=owner, tag=i)
            a, b = int(intervals[i]), int(intervals[i + 1])
            nbytes = write_part(writer, result, plan, i, a, b, "out", out)
            nbytes += write_part(writer, result, plan, i, a, b, "in", into)
            finish_shard(writer, result, i, a, b, nbytes)
            bar.update(1)
        write_vertex_data(writer, result, plan)
        attrs = root_attrs(plan, result)
        attrs["build"]["ranks"] = size
        writer.commit(attrs)
    return result


def _max():
    from mpi4py import MPI
    return MPI.MAX
