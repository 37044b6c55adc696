"""The in-memory build: the whole edge list sorted into CSR and CSC at once, then cut into shards.

Edges without weights or edge ids take packed keys made as they are read
(:mod:`.in_memory_keys`); the others (and ids of 2**32 and beyond) the chunks themselves.

The two directions are built at once on ``plan.threads`` threads (half each: the layouts of
:mod:`.parallel_layout`), or one after the other on one thread; the layouts are the same.
"""

import numpy as np

from ..store import format as fmt
from .edge_chunks import DegreeCounter, occurring_ids
from .layout import compress
from .parallel_layout import compress_parallel, executor
from . import counting
from . import in_memory_keys as keyed
from . import renumber as renumbering
from .build_plan import plan_intervals, set_renumbering, vertex_count
from .shard_output import (Result, encoded_side, encoding_threads, finish_shard, made_ahead,
                           write_part, write_vertex_data)


def build_in_memory(plan, writer):
    # renumber=True from packed keys: the ids that occur are read off the sorted keys instead
    # of a pass of their own (the same ids unless self-loops are dropped: a vertex whose only
    # edge is a dropped self-loop still occurs in the input)
    from_keys = keyed.applies(plan) and (not plan.renumber_requested or plan.options.self_loops)
    if plan.renumber_requested and not from_keys:
        set_renumbering(plan)
    if from_keys:
        plan.renumber_from_keys = bool(plan.renumber_requested)
        try:
            return keyed.build_from_keys(plan, writer)
        except keyed.WideKeys as wide:
            parts = wide.parts
        if plan.renumber_from_keys:
            plan.renumber_from_keys = False
            ids = occurring_ids(parts)
            renumbering.use_ids(plan, ids)
            parts = renumbering.renumber_parts(parts, plan.options.id_map, plan.threads)
    else:
        with plan.bar("reading") as bar:
            parts = list(plan.prepared_chunks(bar))
    top = _largest_id(parts, plan.threads) + 1
    if renumbering.auto_applies(plan):
        ids = renumbering.sparse_ids_in_parts(parts, top)
        if ids is not None:
            renumbering.renumber_by_default(plan, ids, top)
            parts, top = renumbering.renumber_parts(parts, plan.options.id_map, plan.threads), len(ids)
    n = vertex_count(plan, top)
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
    threads = max(1, plan.threads)
    with executor(1 if threads > 1 else 0) as pool:
        if n > 1 << 32:
            src = concat_as([p[0] for p in parts], np.int64)
            dst = concat_as([p[1] for p in parts], np.int64)
            weight = concat_as([p[2] for p in parts], plan.options.weight_dtype) \
                if plan.options.weighted else None
            del parts
            pending = pool.submit(compress, dst, src, weight, 0, n, n, id_dtype, plan.dedup,
                                  plan.edge_ids)
            csr = compress(src, dst, weight, 0, n, n, id_dtype, plan.dedup, plan.edge_ids)
            del src, dst, weight
            csc = pending.result()
        elif _counting_applies(plan):
            # weighted: stable counting sorts carry the weights (grstream/partition/counting.py)
            itype = counting.index_dtype(n, sum(len(p[0]) for p in parts))
            src, dst, weight = _consume_parts(parts, itype, plan.options.weight_dtype)
            del parts
            csr, counted_in, spare = counting.csr_layout(src, dst, weight, n, plan.dedup)
            del src, dst, weight
            eid = None
            if plan.edge_ids:
                # the CSC scatter carries each edge's CSR position: that is its edge id
                del spare
                csc, eid = counting.csc_with_positions(csr, n, id_dtype)
            else:
                # the CSC scatter runs on the second thread while the out-sides are written
                csc = pool.submit(counting.csc_layout, csr, n, id_dtype, spare)
                del spare
            csr = counting.finish(csr, id_dtype)
            if not plan.dedup:
                in_degree, out_degree = counted_in, np.diff(csr[0])
            del counted_in
            layouts = [csr, csc]
            del csr, csc
            return _write_shards(plan, writer, n, id_dtype, in_degree, out_degree, layouts, eid)
        else:
            # keys straight from the chunks: no concatenated id arrays at all
            srcs, dsts = [p[0] for p in parts], [p[1] for p in parts]
            weight = concat_as([p[2] for p in parts], plan.options.weight_dtype) \
                if plan.options.weighted else None
            del parts
            pending = pool.submit(_layout, dsts, srcs, n, id_dtype, plan, weight, threads // 2)
            csr = _layout(srcs, dsts, n, id_dtype, plan, weight, threads - threads // 2)
            del srcs, dsts, weight
            csc = pending.result()
    if not plan.dedup:
        in_degree, out_degree = np.diff(csc[0]), np.diff(csr[0])
    layouts = [csr, csc]
    del csr, csc
    return _write_shards(plan, writer, n, id_dtype, in_degree, out_degree, layouts)


def _largest_id(parts, threads):
    """The largest id of the chunks (-1 without edges), the chunks spread over the threads."""
    def largest(part):
        return int(max(part[0].max(), part[1].max())) if len(part[0]) else -1

    with executor(threads if threads > 1 else 0) as pool:
        futures = [pool.submit(largest, p) for p in parts]
        return max((future.result() for future in futures), default=-1)


def _layout(primaries, secondaries, n, id_dtype, plan, weight, threads):
    if plan.edge_ids:
        from .layout import compress_pieces
        return compress_pieces(primaries, secondaries, n, id_dtype, plan.dedup, weight, True)
    return compress_parallel(primaries, secondaries, n, id_dtype, plan.dedup, weight,
                             max(1, threads))


def _write_shards(plan, writer, n, id_dtype, in_degree, out_degree, layouts, eid=None):
    """Cut both layouts, the list ``[csr, csc]`` (emptied: this call holds them alone), into
    the planned shards and write them.

    ``csc`` may be a future: every out-side is then written while it is computed (with the
    disk writeback of those bytes started before waiting for it), then every in-side, after
    the CSR is released: the in-sides' page cache then reuses its pages, which costs far less
    than pages the system has not handed out for a while.
    Edge ids: ``eid`` per CSC edge, or computed from both layouts' input positions.
    """
    csr, csc = layouts
    layouts.clear()
    if plan.edge_ids and eid is None:
        eid = _global_edge_ids(csr[3], csc[3])
    intervals, heavy = plan_intervals(plan, in_degree, out_degree, id_dtype)
    del in_degree, out_degree
    result = Result(n, intervals, heavy, id_dtype)
    result.mode = "in-memory"
    num_shards = len(intervals) - 1
    bounds = [(int(intervals[i]), int(intervals[i + 1])) for i in range(num_shards)]

    def side(layout, i, extra=None):
        lo, hi = bounds[i]
        return encoded_side(plan, n, csr_rows(layout, lo, hi), ranges), extra

    def in_side(layout, i):
        extra = None
        if eid is not None:
            extra = {fmt.EDGE_ID: eid[int(layout[0][bounds[i][0]]):int(layout[0][bounds[i][1]])]}
        return side(layout, i, extra)

    # where the ids are compressed, a thread encodes the next side while one is written
    with plan.bar("writing", total=num_shards, unit="shards") as bar, \
            executor(1 if plan.compress and plan.threads > 1 else 0) as encoder, \
            encoding_threads(plan) as ranges:
        if isinstance(csc, tuple):
            both = made_ahead(encoder, lambda i: (side(csr, i), in_side(csc, i)), num_shards)
            for i, ((out_parts, _), (in_parts, extra)) in enumerate(both):
                lo, hi = bounds[i]
                out_nbytes = write_part(writer, result, plan, i, lo, hi, "out", out_parts)
                in_nbytes = write_part(writer, result, plan, i, lo, hi, "in", in_parts, extra)
                finish_shard(writer, result, i, lo, hi, in_nbytes + out_nbytes)
                bar.update(1)
        else:
            out_sides = made_ahead(encoder, lambda i, layout=csr: side(layout, i), num_shards)
            del csr
            out_nbytes = [write_part(writer, result, plan, i, *bounds[i], "out", parts)
                          for i, (parts, _) in enumerate(out_sides)]
            del out_sides
            writer.start_writeback()
            csc = csc.result()
            sides = made_ahead(encoder, lambda i, layout=csc: side(layout, i), num_shards)
            del csc
            for i, (in_parts, _) in enumerate(sides):
                lo, hi = bounds[i]
                in_nbytes = write_part(writer, result, plan, i, lo, hi, "in", in_parts)
                finish_shard(writer, result, i, lo, hi, in_nbytes + out_nbytes[i])
                bar.update(1)
    write_vertex_data(writer, result, plan)
    return result


def _global_edge_ids(out_positions, in_positions):
    """Global CSR position of each in-edge, from both layouts' input indices of their edges."""
    csr_position = np.empty(max(len(out_positions), int(in_positions.max(initial=-1)) + 1),
                            dtype=np.int64)
    csr_position[out_positions] = np.arange(len(out_positions), dtype=np.int64)
    return csr_position[in_positions]


def _counting_applies(plan):
    """Weighted layouts by counting sorts: weights in a dtype scipy's C scatter carries (not
    float16)."""
    return (plan.options.weighted and counting.AVAILABLE
            and plan.options.weight_dtype in counting.WEIGHT_DTYPES)


def concat_as(arrays, dtype):
    """The arrays concatenated into one array of ``dtype`` (an empty one for none)."""
    if not arrays:
        return np.empty(0, dtype=dtype)
    # ids below the vertex count fit ``dtype``: the cast is exact
    return np.concatenate(arrays, dtype=dtype, casting="unsafe")


def _consume_parts(parts, id_type, weight_dtype):
    """The chunks' ids as ``id_type`` and weights, each concatenated, releasing every chunk once
    it is copied (``parts`` is emptied).

    The chunks' memory is then back with the allocator while the rest of the copies and the
    first scatter fault in their pages, instead of all of it at the peak; pages the system
    has not handed out for a while cost far more to fault in than reused ones.
    """
    total = sum(len(p[0]) for p in parts)
    out = (np.empty(total, id_type), np.empty(total, id_type), np.empty(total, weight_dtype))
    parts.reverse()
    start = 0
    while parts:
        chunk = parts.pop()
        stop = start + len(chunk[0])
        for column, target in zip(chunk, out):
            # ids below the vertex count fit ``id_type``: the cast is exact
            target[start:stop] = column
        start = stop
        del chunk
    return out


def csr_rows(compressed, lo, hi):
    """Rows ``lo`` to ``hi`` of a CSR ``(indptr, ids, weights)``, its indptr starting at 0."""
    indptr, ids, weights = compressed[:3]
    start, stop = int(indptr[lo]), int(indptr[hi])
    local = indptr[lo:hi + 1] - start
    return local, ids[start:stop], None if weights is None else weights[start:stop]
