"""The external build of edge records (weights, edge ids, ids beyond 2**32): a degree pass, a
pass bucketing records into per-shard files, then each bucket sorted and written."""
import numpy as np

from ..readahead import read_ahead
from ..store import format as fmt
from .buckets import BucketFiles
from .edge_chunks import DegreeCounter
from .intervals import shard_of
from .layout import compress
from . import renumber as renumbering
from .build_plan import VERTEX_BYTES, plan_intervals, vertex_count
from .shard_output import Result, finish_shard, write_part, write_vertex_data


def build_records(plan, writer):
    counter = DegreeCounter()
    with plan.bar("reading") as bar:
        for src, dst, _ in read_ahead(plan.prepared_chunks(bar)):
            if len(src):
                top = int(max(src.max(), dst.max())) + 1
                renumbering.check_id_range(plan, VERTEX_BYTES, top)
            counter.add(src, dst)
        num_input = bar.n
    renumbering.check_sparse(plan, counter)
    n = vertex_count(plan, len(counter.in_degree))
    counter.grow(n)
    id_dtype = fmt.id_dtype_for(n)
    intervals, heavy = plan_intervals(plan, counter.in_degree, counter.out_degree, id_dtype)
    del counter
    result = Result(n, intervals, heavy, id_dtype)
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
    write_vertex_data(writer, result, plan)
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
        nbytes[i] += write_part(writer, result, plan, i, lo, hi, "out", parts)
        del parts, index
        bar.update(1)
    for i in range(num_shards):
        lo, hi = int(intervals[i]), int(intervals[i + 1])
        parts, index = _load_compressed(buckets, plan, "in", i, lo, hi, n, id_dtype)
        extra = None
        if plan.edge_ids:
            extra = {fmt.EDGE_ID: csr_positions(buckets.load("eid", i), index)}
        nbytes[i] += write_part(writer, result, plan, i, lo, hi, "in", parts, extra)
        del parts, index, extra
        finish_shard(writer, result, i, lo, hi, int(nbytes[i]))
        bar.update(1)


def _load_compressed(buckets, plan, direction, i, lo, hi, n, id_dtype):
    """One bucket in CSR/CSC layout, and the input index of each kept edge (with edge ids)."""
    rec = buckets.load(direction, i)
    weight = rec["w"] if plan.options.weighted else None
    parts = compress(rec["p"], rec["s"], weight, lo, hi, n, id_dtype, plan.dedup, plan.edge_ids)
    index = rec["i"][parts[3]] if plan.edge_ids else None
    return parts[:3], index


def csr_positions(records, index):
    """CSR position of each input index in ``index``, from (index, position) records of the same set.

    The records' ``p`` is an edge's input index and ``s`` its global CSR position.
    """
    order = np.argsort(records["p"], kind="stable")
    known = records["p"][order]
    found = np.searchsorted(known, index)
    return records["s"][order][found]
