"""The shard build under ranks within a memory limit (``mpiexec -n N grstream shard ...
--memory-limit BYTES``): each rank builds the shards of its own intervals externally, as one
process's external build does (partition/external_keys.py, external_records.py), within the
limit of each rank, and the store is the one process writes with the same limit (the limit
sizes the shards: the same limit, the same intervals).

Every rank, in this order:

1. **ids**: ``renumber=True`` maps the union of every rank's occurring input ids; the default
   rule decides from the degrees summed over the ranks, or, where the ids reach beyond what
   the limit's vertex arrays hold, from the union of every rank's prepared ids (then counting
   again over the renumbered ids, as one process builds again).
2. **degrees**: a pass over the rank's chunks (dealt as rank_build.py deals them) counts
   degrees, summed over the ranks (an all-reduce of n counts each way); the intervals and
   the build path follow as in one process: packed key runs for edges without edge ids whose
   ids and chunks fit the keys, else edge records.
3. **routing**: a second pass, in rounds of one chunk per rank (round ``r``: the input's
   chunks ``r * size ..``): each rank prepares its chunk, then each rank in turn scatters its
   edges to the ranks owning their sources' and destinations' intervals, which append them to
   files of their own: a sorted run of packed keys per round and side (key runs), or records
   per shard and side. Runs and records arrive in the input's order, as one process writes
   them, and a rank receives at most one chunk's edges (both sides) at once.
4. **layout**: each rank lays out its shards one at a time from its files, as one process
   does; with edge ids, every out-side first (each rank numbers its run of the global CSR
   order from the sum of the runs before it), then each in-shard gathers the (edge key, CSR
   position) pairs of its edges from every rank, then the in-sides.
5. **write**: rank_output.py; part files of a build that drops repeated pairs need every
   shard's stored count before any is written, so each rank then keeps its laid out shards in
   a file of its own until the counts are known.

A rank holds vertex arrays of n entries (``VERTEX_BYTES`` each, as one process), one chunk of
the input and what one round routes to it, and one shard while it is laid out: within the
limit as one process's external build is. Its files go in ``tmp_dir`` (default: the output's
folder), in a folder of the rank's own.
"""
import pickle
import shutil
from pathlib import Path

import numpy as np

from ..partition.build_plan import VERTEX_BYTES, plan_intervals, vertex_count
from ..partition.buckets import BucketFiles
from ..partition.edge_chunks import DegreeCounter
from ..partition.external_keys import KEY_ID_LIMIT, keyed_side, sorted_key_run
from ..partition.external_records import csr_positions
from ..partition.intervals import shard_of
from ..partition.key_runs import KeyRuns
from ..partition.layout import compress
from ..partition.renumber import (auto_applies, collect_ids, renumber_by_default,
                                  sparse_ids_in_degrees, use_ids)
from ..partition.run_weights import narrowest
from ..partition.shard_output import encoded_side
from ..partition.weighted_keys import run_fits
from ..store import format as fmt
from ..store.labels import is_sparse
from . import messages
from .part_files import part_path
from .rank_build import _share, _union, edge_keys
from .rank_output import RankedOutput
from .ranks import abort, collectively, cut_runs


def build_external(comm, plan, path, overwrite):
    """The ranked build of rank_build.py within ``plan.memory_limit`` per rank. Returns this
    rank's Result of the store or part it wrote (None where it wrote none)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    counted = _ids_and_degrees(comm, plan)
    in_degree, out_degree, n, wide, own_chunks = counted
    plan.keyed = not plan.edge_ids and not wide and n <= KEY_ID_LIMIT
    id_dtype = fmt.id_dtype_for(n)
    intervals, heavy = plan_intervals(plan, in_degree, out_degree, id_dtype)
    sums = {side: _interval_sums(degree, intervals)
            for side, degree in (("out", out_degree), ("in", in_degree))}
    del in_degree, out_degree
    cut = cut_runs(sums["in"] + sums["out"], size)
    owners = np.repeat(np.arange(size), np.diff(cut))
    mine = range(int(cut[rank]), int(cut[rank + 1]))
    written = Path(part_path(path, rank))   # (this rank's files: a folder of its own)
    home = Path(plan.tmp_dir if plan.tmp_dir is not None else written.parent) / \
        f"{written.name}.rank{rank}"
    files = []
    try:
        with collectively(comm):
            home.mkdir(exist_ok=True)
            files.append(_files(plan, home, len(intervals) - 1, id_dtype))
        _route(comm, plan, intervals, intervals[cut], files[0], own_chunks)
        with RankedOutput(comm, plan, path, overwrite, intervals, heavy, id_dtype,
                          owners) as output:
            output.result.mode = "external"
            spill = home if output.parts and plan.dedup else None
            sink = _Sink(output, mine, spill, sums)
            if plan.keyed:
                sink.phase(lambda i: _keyed_sides(plan, files[0], intervals, sums, n, i))
            else:
                _record_phases(comm, plan, sink, files[0], intervals, owners, n)
            sink.finish()
            return output.commit()
    finally:
        plan.keyed = False
        for made in files:
            made.cleanup()
        shutil.rmtree(home, ignore_errors=True)


def _ids_and_degrees(comm, plan):
    """Decide the renumbering (every rank alike) and count the degrees over every rank's
    prepared edges: ``(in_degree, out_degree, n, wide, chunks)``, ``wide`` where some chunk does
    not fit a key run (one process builds from edge records then), ``chunks`` this rank's."""
    rank, size = comm.Get_rank(), comm.Get_size()
    if plan.renumber_requested:   # the input's ids that occur, as one process's first pass
        with collectively(comm):
            mine = collect_ids(plan, (c[:3] for c in _share(plan, rank, size)))
        use_ids(plan, _union(comm, [mine]))
    counted = _count(comm, plan)
    if auto_applies(plan):
        if counted is None:   # ids beyond the vertex arrays' room: the ids that occur
            with collectively(comm):
                mine = collect_ids(plan, (plan.prepare(*c[:3]) for c in _share(plan, rank, size)))
            ids = _union(comm, [mine])
            top = int(ids[-1]) + 1 if len(ids) else 0
            ids = ids if is_sparse(top, len(ids)) else None
        else:
            ids, top = sparse_ids_in_degrees(counted[0], counted[1]), len(counted[0])
        if ids is None:
            plan.renumber_requested = False
        else:
            renumber_by_default(plan, ids, top)
            counted = None
        if counted is None:
            counted = _count(comm, plan)
    in_degree, out_degree, wide, own_chunks = counted
    n = vertex_count(plan, len(in_degree))
    plan.vertices.check(n)   # (the same n on every rank: each raises alike)
    grown = np.zeros((2, n), dtype=np.int64)
    grown[0, :len(in_degree)], grown[1, :len(out_degree)] = in_degree, out_degree
    return grown[0], grown[1], n, wide, own_chunks


def _count(comm, plan):
    """In- and out-degrees over every rank's prepared edges, whether a chunk is too wide for
    a key run and this rank's number of chunks; or None where the default rule must look at
    ids reaching beyond the vertex arrays' room under the limit (every rank alike)."""
    from mpi4py import MPI
    rank, size = comm.Get_rank(), comm.Get_size()
    counter, wide, beyond, chunks = DegreeCounter(), False, False, 0
    with collectively(comm):
        with plan.bar("counting") as bar:
            for src, dst, w, _ in _share(plan, rank, size):
                chunks += 1
                bar.update(len(src) * size)
                src, dst, w = plan.prepare(src, dst, w)
                if len(src):
                    top = int(max(src.max(), dst.max())) + 1
                    if auto_applies(plan) and VERTEX_BYTES * top > plan.memory_limit:
                        beyond = True
                        break
                    wide = wide or top > KEY_ID_LIMIT or (
                        plan.options.weighted and not run_fits(len(src), top))
                counter.add(src, dst)
    if comm.allreduce(beyond, op=MPI.LOR):
        return None
    top = comm.allreduce(len(counter.in_degree), op=MPI.MAX)
    counter.grow(top)
    degrees = np.stack([counter.in_degree, counter.out_degree])
    del counter
    messages.allreduce(comm, degrees, MPI.SUM)
    return degrees[0], degrees[1], comm.allreduce(wide, op=MPI.LOR), chunks


def _interval_sums(values, intervals):
    cumulative = np.concatenate(([0], np.cumsum(values, dtype=np.int64)))
    return cumulative[intervals[1:]] - cumulative[intervals[:-1]]


def _files(plan, home, num_shards, id_dtype):
    """This rank's key runs, or its edge records per shard and side."""
    weight = plan.options.weight_dtype if plan.options.weighted else None
    if plan.keyed:
        return KeyRuns(home, "runs", weight)
    return BucketFiles(home, "records", num_shards, id_dtype, weight, indexed=plan.edge_ids)


def _route(comm, plan, intervals, bounds, files, own_chunks):
    """The second pass: every edge to the ranks owning its two sides, appended to their files
    in input order (module docstring, step 3)."""
    from mpi4py import MPI
    rank, size = comm.Get_rank(), comm.Get_size()
    fields = [("p", np.int64), ("s", np.int64), ("k", np.int64), ("side", np.uint8)]
    if plan.options.weighted:
        fields.append(("w", plan.options.weight_dtype))
    record = np.dtype(fields)
    chunks = _share(plan, rank, size)
    rounds = comm.allreduce(own_chunks, op=MPI.MAX)   # (rank 0's: chunks are dealt in turn)
    try:
        with plan.bar("routing", total=rounds, unit="rounds") as bar:
            for _ in range(rounds):
                mine = _owned_records(plan, next(chunks, None), bounds, record, size)
                for sender in range(size):
                    got = _scatter(comm, mine, sender, record)
                    _append(plan, files, got, intervals)
                bar.update(1)
    except Exception as exc:   # (the other ranks wait in a scatter)
        abort(comm, exc)
        raise


def _owned_records(plan, chunk, bounds, record, size):
    """One raw chunk's prepared edges as records of both sides (``side`` 0: the out-side, its
    ``p`` the source), sorted by the rank owning each (stably: input order within each), and
    the records per rank."""
    if chunk is None:
        return np.empty(0, record), np.zeros(size, np.int64)
    src, dst, w, start = chunk
    key = edge_keys(src, dst, start, plan.options)
    src, dst, w = plan.prepare(src, dst, w)
    both = np.empty(2 * len(src), record)
    for side, (p, s) in enumerate(((src, dst), (dst, src))):
        part = both[side * len(src):(side + 1) * len(src)]
        part["p"], part["s"], part["k"], part["side"] = p, s, key, side
        if w is not None:
            part["w"] = w
    owner = np.searchsorted(bounds, both["p"], side="right") - 1
    order = np.argsort(owner, kind="stable")
    return both[order], np.bincount(owner, minlength=size).astype(np.int64)


def _scatter(comm, mine, sender, record):
    """``sender``'s records, each rank's its own (collective)."""
    records, counts = mine
    counts = comm.bcast(counts if comm.Get_rank() == sender else None, root=sender)
    got = np.empty(int(counts[comm.Get_rank()]), record)
    messages.scatterv(comm, records.view(np.uint8) if comm.Get_rank() == sender else None,
                      counts * record.itemsize, got.view(np.uint8), sender)
    return got


def _append(plan, files, got, intervals):
    """Received records (one sender's, in input order) into this rank's files."""
    for side, direction in enumerate(("out", "in")):
        part = got[got["side"] == side]
        if not len(part):
            continue
        w = part["w"] if plan.options.weighted else None
        if plan.keyed:
            top = int(max(part["p"].max(), part["s"].max())) + 1
            key, weight = sorted_key_run(np.ascontiguousarray(part["p"]),
                                         np.ascontiguousarray(part["s"]),
                                         None if w is None else narrowest(w), top)
            files.append(direction, key, weight)
        else:
            files.append(direction, shard_of(part["p"], intervals), part["p"], part["s"], w,
                         part["k"] if plan.edge_ids else None)


def _keyed_sides(plan, runs, intervals, sums, n, i):
    """Both sides of shard ``i`` from this rank's key runs (its shards in order)."""
    lo, hi = int(intervals[i]), int(intervals[i + 1])
    weighted = runs.weight_dtype is not None
    return {direction: encoded_side(plan, n, keyed_side(
        plan, runs.load(direction, hi << 32, int(sums[direction][i])), weighted, lo, hi,
        fmt.id_dtype_for(n), n)) for direction in ("out", "in")}


def _record_phases(comm, plan, sink, buckets, intervals, owners, n):
    """Every out-side of this rank's shards, then (with edge ids) each in-shard's (key, CSR
    position) pairs from every rank, then the in-sides (module docstring, step 4)."""
    id_dtype = fmt.id_dtype_for(n)
    run = [0]
    pairs = BucketFiles(buckets.directory, "eid", len(intervals) - 1, np.int64) \
        if plan.edge_ids else None

    def side(direction, i):
        lo, hi = int(intervals[i]), int(intervals[i + 1])
        rec = buckets.load(direction, i)
        weight = rec["w"] if plan.options.weighted else None
        parts = compress(rec["p"], rec["s"], weight, lo, hi, n, id_dtype, plan.dedup,
                         plan.edge_ids)
        keys = rec["i"][parts[3]] if plan.edge_ids else None
        return parts[:3], keys

    def out_side(i):
        parts, keys = side("out", i)
        if plan.edge_ids:   # (key, position in this rank's run) by the target's shard
            pairs.append("eid", shard_of(parts[1], intervals), keys,
                         np.arange(run[0], run[0] + len(keys), dtype=np.int64), None)
            run[0] += len(keys)
        return {"out": encoded_side(plan, n, parts)}

    sink.phase(out_side)
    if plan.edge_ids:
        base = sum(comm.allgather(run[0])[:comm.Get_rank()])
        got = _gather_pairs(comm, pairs, owners, base)
        pairs.cleanup()

    def in_side(i):
        parts, keys = side("in", i)
        eid = None
        if plan.edge_ids:
            eid = csr_positions(got.load("eid", i), keys)
        return {"in": encoded_side(plan, n, parts), "eid": eid}

    try:
        sink.phase(in_side)
    finally:
        if plan.edge_ids:
            got.cleanup()


def _gather_pairs(comm, pairs, owners, base):
    """Each shard's (edge key, CSR position) pairs from every rank (its positions in its own run
    plus ``base``, the runs before it), on the rank that lays out the shard's in-side, appended
    to its files (collective, one shard at a time)."""
    got = BucketFiles(pairs.directory.parent, "eid-in", len(owners), np.int64)
    for i, owner in enumerate(owners.tolist()):
        mine = pairs.load("eid", i)
        mine["s"] += base
        every = messages.gather(comm, mine, owner, tag=i)
        if every is not None:
            joined = np.concatenate(every)
            got.append("eid", np.full(len(joined), i), joined["p"], joined["s"], None)
    return got


class _Sink:
    """Where a rank's laid out shards go: straight to the output, or (``spill``, a folder: part
    files of a build dropping repeated pairs) into files until every shard's stored count is
    known."""

    def __init__(self, output, mine, spill, sums):
        self.output, self.mine, self.spill = output, mine, spill
        if spill is None:   # the stored counts: the degrees' (no pair is dropped)
            output.stored({i: int(sums["in"][i] + sums["out"][i]) for i in mine})

    def phase(self, make):
        """``make(i)`` of each of this rank's shards (sides of it) to the output (collective)."""
        if self.spill is None:
            self.output.deliver(make)
            return
        for i in self.mine:
            with open(self._file(i), "ab") as handle:
                pickle.dump(make(i), handle, protocol=pickle.HIGHEST_PROTOCOL)

    def finish(self):
        """Deliver the spilled shards once every shard's stored count is known."""
        if self.spill is None:
            return
        counts = {i: sum(int(s[d][0][-1]) for s in self._load(i) for d in ("out", "in") if d in s)
                  for i in self.mine}
        self.output.stored(counts)
        self.output.deliver(lambda i: {k: v for s in self._load(i) for k, v in s.items()})

    def _file(self, i):
        return self.spill / f"shard-{i}.pickle"

    def _load(self, i):
        loaded = []
        with open(self._file(i), "rb") as handle:
            while True:
                try:
                    loaded.append(pickle.load(handle))
                except EOFError:
                    return loaded
