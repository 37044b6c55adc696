"""The shard build under MPI ranks (``mpiexec -n N grstream shard ...``): each rank keeps its
share of the input, the edges go to the ranks that own their intervals, each rank lays out the
shards of its own run, and rank 0 writes the store (or each rank its own part file:
rank_output.py): the store one process writes with the same options, every dataset and
attribute alike but the build record's (its date, and the ranks that built it).

Every rank, in this order (each step collective):

1. **order** (``reorder``): rank 0 alone chooses the vertex order from the input (reorder.py)
   and broadcasts it (the new ids and their labels); every rank reads the input through it.
2. **read**: the input's chunks, cut as one process cuts them (build_plan.py ``raw_chunks``),
   are dealt round robin, chunk ``i`` to rank ``i mod size``; each prepared edge (self-loops
   dropped, both ways of an undirected edge) gets a key from its input edge's position
   (:func:`edge_keys`), unique and in one process's order of the prepared edges. A rank reads
   only its own chunks where the input reads rows at random (``.npy``); else every rank's
   reader goes through the input, and only the owner of a chunk prepares, keys and sends its
   edges.
3. **ids**: ``renumber=True`` maps the union of every rank's occurring input ids; the default
   rule (sparse ids) looks at the union of the prepared ids, as one process does.
4. **intervals**: the in- and out-degrees summed over ranks (an all-reduce of n counts each)
   give the intervals, planned on every rank alike (build_plan.py ``plan_intervals``); the
   shards are cut into ``size`` runs balanced by edges, as ranks.py cuts a store's.
5. **exchange**: each edge goes to the rank owning its source's interval (its out-side) and to
   the one owning its destination's (its in-side): an all-to-all-v of ids, weights and
   keys per side.
6. **layout**: each rank puts its edges back in input order (their keys) and lays out its
   vertex range (layout.py ``compress``: sorted by (primary, secondary), equal pairs in input
   order, repeated pairs dropped for ``duplicates=False``), the layout every build path writes.
   Edge ids (:func:`edge_ids`): each rank numbers its run of the global CSR order from the
   sum of the runs before it and sends each out-edge's (key, position) to the rank holding its
   in-side.
7. **write**: rank_output.py.

A rank holds its share of the input's edges and then its own intervals' (both sides), plus
vertex arrays of n entries (degrees, the renumbering map, a vertex order). An input read once
(a pipe) and inputs with vertex names of their own are for a build in one process.
"""
import numpy as np

from ..errors import OutputExistsError, UsageError
from ..io.pipes import input_name, is_stream
from ..store import format as fmt
from ..store.labels import is_sparse
from ..partition.build_plan import plan_intervals, vertex_count
from ..partition.edge_chunks import check_chunk, prepare_chunk, sorted_distinct, with_reverse_edges
from ..partition.in_memory import concat_as, csr_rows
from ..partition.layout import compress
from ..partition.renumber import auto_applies, renumber_by_default
from ..partition.shard_output import encoded_side
from . import messages
from .exchange import MpiExchange
from .part_files import part_path
from .rank_output import RankedOutput, is_parts
from .ranks import collectively, cut_runs


def build_ranked(comm, started, make_plan, source, path, **options):
    """``build_shards(source, path, **options)`` as one rank of ``comm``; ``make_plan`` checks the
    options and opens the input (build.py). Returns the store's path on every rank (a part
    file's path: this rank's part)."""
    from ..partition.build import report
    rank, overwrite = comm.Get_rank(), options.pop("overwrite")
    mine = part_path(path, rank)   # (a path holding {rank}: this rank's part file)
    with collectively(comm):   # (an option or input one rank refuses: every rank raises)
        if isinstance(source, str) and is_stream(source):
            raise UsageError(f"{input_name(source)} is a pipe, which only one process can read: "
                             f"save it to a file for a build under ranks")
        options["progress"] = options["progress"] and rank == 0
        # a vertex order is chosen once, below, and shared
        mine, plan = make_plan(source, mine, order_with=lambda plan, order: None, **options)
        if (rank == 0 or is_parts(path)) and not overwrite and mine.exists():
            # (before any rank reads: no abort)
            raise OutputExistsError(f"{mine} exists (pass overwrite=True to replace it)",
                                    path=mine)
        if plan.edges.labels is not None:
            raise UsageError(f"{plan.edges.name} names its vertices, which a build under ranks "
                             f"does not number: build it in one process")
    if plan.reorder_requested:
        plan.reorder = shared_order(comm, plan, plan.reorder_requested)
    if plan.memory_limit is not None:   # each rank's intervals built externally
        from .rank_external import build_external
        result = build_external(comm, plan, path, overwrite)
    else:
        result = _build_in_memory(comm, plan, path, overwrite)
    comm.Barrier()   # the store is complete when any rank returns
    return report(mine, result, started, options["progress"]) if rank == 0 else mine


def shared_order(comm, plan, order):
    """The vertex ``order`` of the build, chosen by rank 0 alone (reorder.py: a pass over the
    input, the adjacency for ``rcm``) and applied on every rank alike. Returns the order applied
    (None: ``auto`` kept the input's)."""
    from ..partition.reorder import Reordering, apply_order, choose_order
    chosen = None
    with collectively(comm):
        if comm.Get_rank() == 0:
            chosen = choose_order(plan, order)
    head = None if chosen is None else (chosen.order, len(chosen.new_id), chosen.ids is not None,
                                        0 if chosen.ids is None else len(chosen.ids))
    head = comm.bcast(head, root=0)
    if head is None:
        return None
    name, n, renumbered, distinct = head
    if comm.Get_rank() != 0:
        chosen = Reordering(name, np.empty(n, np.int64), np.empty(n, np.int64),
                            np.empty(distinct, np.int64) if renumbered else None)
    for array in (chosen.new_id, chosen.labels, chosen.ids):
        if array is not None:
            messages.bcast(comm, array, 0)
    return apply_order(plan, chosen)


def _build_in_memory(comm, plan, path, overwrite):
    """Every rank's share of the input in memory, its intervals laid out in memory."""
    rank = comm.Get_rank()
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
    layouts, keys = {}, {}
    for side, (primary, secondary) in (("out", (0, 1)), ("in", (1, 0))):
        got = _send_to_owners(exchange, edges, primary)
        order = np.argsort(got[3], kind="stable")   # input order
        layouts[side] = compress(got[primary][order], got[secondary][order],
                                 None if got[2] is None else got[2][order], lo, hi, n,
                                 id_dtype, plan.dedup, plan.edge_ids)
        if plan.edge_ids:   # the kept edges' keys
            keys[side] = got[3][order][layouts[side][3]]
        del got, order
    del edges
    eid = edge_ids(exchange, layouts["out"][1], keys["out"], keys["in"]) \
        if plan.edge_ids else None
    del keys
    owners = np.repeat(np.arange(comm.Get_size()), np.diff(cut))
    with RankedOutput(comm, plan, path, overwrite, intervals, heavy, id_dtype, owners) as output:
        def sides(i):   # this rank's out- and in-side of shard i (encoded where compressed)
            a, b = int(intervals[i]) - lo, int(intervals[i + 1]) - lo
            into = layouts["in"][0]
            return {"out": encoded_side(plan, n, csr_rows(layouts["out"], a, b)),
                    "in": encoded_side(plan, n, csr_rows(layouts["in"], a, b)),
                    "eid": None if eid is None else eid[int(into[a]):int(into[b])]}
        mine = range(int(cut[rank]), int(cut[rank + 1]))
        output.stored({i: sum(int(layouts[s][0][int(intervals[i + 1]) - lo]
                                  - layouts[s][0][int(intervals[i]) - lo]) for s in layouts)
                       for i in mine})
        output.deliver(sides)
        return output.commit()


def edge_ids(exchange, out_ids, out_keys, in_keys):
    """The global CSR position of each of this rank's in-edges (``in_keys``: their keys, in its
    in-layout's order), from its out-layout (``out_ids``: the targets of its run of the global
    CSR order, ``out_keys`` their keys): each rank numbers its run from the sum of the runs
    before it and sends each (key, position) to the rank owning the edge's target, which finds
    its in-edges' keys among those it received."""
    comm, rank = exchange.comm, exchange.rank
    runs = comm.allgather(len(out_ids))
    positions = np.arange(len(out_ids), dtype=np.int64) + sum(runs[:rank])
    owner = np.searchsorted(exchange.bounds, out_ids, side="right") - 1
    order = np.argsort(owner, kind="stable")
    send = np.bincount(owner, minlength=exchange.size).astype(np.int64)
    recv = np.asarray(comm.alltoall(send.tolist()), dtype=np.int64)
    got_keys = exchange.alltoallv(np.ascontiguousarray(out_keys[order]), send, recv)
    got_positions = exchange.alltoallv(positions[order], send, recv)
    del owner, order, positions
    # the keys received are those of this rank's in-edges (each edge's one kept key): matched
    # by sorting both, not by a search of each
    eid = np.empty(len(in_keys), dtype=np.int64)
    eid[np.argsort(in_keys)] = got_positions[np.argsort(got_keys)]
    return eid


def _read(comm, plan):
    """This rank's share of the prepared edges, ``[src, dst, weight or None, key]``, and the
    largest id + 1 of every rank's, after renumbering where it applies. An edge's key is
    unique and orders the prepared edges as one process prepares them (:func:`edge_keys`)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    raw = []
    with plan.bar("reading") as bar:
        for src, dst, w, start in _share(plan, rank, size):
            raw.append((src, dst, w, start))
            bar.update(len(src) * size)
    options = plan.options
    if plan.renumber_requested:   # the input's ids that occur, renumbered in increasing order
        mine = [sorted_distinct(np.concatenate((s, d)).astype(np.int64, copy=False)) for s, d, _, _ in raw]
        options.original_ids, plan.renumber = _union(comm, mine), True
    parts = []
    for src, dst, w, start in raw:
        s, d, weight = prepare_chunk(src, dst, w, options, plan.edges.name)
        parts.append((s, d, weight, edge_keys(src, dst, start, options)))
    del raw
    edges = [None if k == 2 and not options.weighted else concat_as([p[k] for p in parts], dtype)
             for k, dtype in enumerate((np.int64, np.int64, options.weight_dtype, np.int64))]
    del parts
    largest = int(max(edges[0].max(initial=-1), edges[1].max(initial=-1)))
    top = comm.allreduce(largest, op=_max()) + 1
    if auto_applies(plan) and comm.allreduce(len(edges[0])):
        ids = _union(comm, [sorted_distinct(np.concatenate(edges[:2]))])
        if is_sparse(top, len(ids)):   # the default rule renumbers sparse ids
            renumber_by_default(plan, ids, top)
            edges[0], edges[1] = np.searchsorted(ids, edges[0]), np.searchsorted(ids, edges[1])
            top = len(ids)
    return edges, top


def edge_keys(src, dst, start, options):
    """The keys of a raw chunk's prepared edges (prepare_chunk), the chunk's first edge being
    the input's ``start``-th: twice the input position of each edge's input edge, one more for
    the reverse of an undirected edge stored both ways. Unique, and in the order of one
    process's prepared edges (an edge, then its reverse)."""
    key = np.arange(2 * start, 2 * (start + len(src)), 2, dtype=np.int64)
    if not options.self_loops:   # the keys follow prepare_chunk's edges
        keep = src != dst
        src, dst, key = src[keep], dst[keep], key[keep]
    if options.undirected and not options.both_ways_in_input:
        key = with_reverse_edges(src, dst, key)[2]
        key[1:] += key[1:] == key[:-1]   # (a self-loop is stored once)
    return key


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
    mine = sorted_distinct(concat_as(arrays, np.int64))
    lengths = np.asarray(comm.allgather(len(mine)), dtype=np.int64)
    every = np.empty(int(lengths.sum()), np.int64)
    messages.allgatherv(comm, np.ascontiguousarray(mine).view(np.uint8), every.view(np.uint8), lengths * 8)
    return sorted_distinct(every)


def _degrees(comm, edges, n):
    """In- and out-degree of every vertex over every rank's edges (before dropping repeated
    pairs, as one process balances the intervals)."""
    from mpi4py import MPI
    degrees = np.stack([np.bincount(edges[1], minlength=n), np.bincount(edges[0], minlength=n)])
    degrees = degrees.astype(np.int64)
    messages.allreduce(comm, degrees, MPI.SUM)
    return degrees[0], degrees[1]


def _send_to_owners(exchange, edges, primary):
    """Every rank's edges whose ``primary`` end (0: source, 1: destination) lies in this rank's
    vertex range: ``[src, dst, weight or None, key]``, in rank order."""
    owner = np.searchsorted(exchange.bounds, edges[primary], side="right") - 1
    order = np.argsort(owner, kind="stable")
    send = np.bincount(owner, minlength=exchange.size).astype(np.int64)
    recv = np.asarray(exchange.comm.alltoall(send.tolist()), dtype=np.int64)
    return [None if a is None else exchange.alltoallv(np.ascontiguousarray(a[order]), send, recv)
            for a in edges]


def _max():
    from mpi4py import MPI
    return MPI.MAX
