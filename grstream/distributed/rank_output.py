"""Where a shard build under ranks puts its shards: one store written by rank 0, or one part
file per rank written by that rank (a path holding ``{rank}``: the files ``grstream split``
writes from the whole store, part_files.py).

Each shard is laid out by one rank, its *producer* (the rank owning its interval during the
build), and written by one, its *consumer*: rank 0 for the whole store; for part files the rank
that will read it, the partition of ranks.py over the shards' stored edges (which can differ
from the build's own cut, balanced on the edges before repeated pairs are dropped). Every rank
walks the shards in order and acts on those it produces or consumes: a shard made on one rank
and written on another is sent once, point to point, in that order (no rank waits on one that
is waiting on it: the first shard still in flight has both its ranks at it).

A part file holds its own shards' edge datasets; it declares the others' (dtype, shape,
checksum, without storage) from what their writers report once every part's own shards are
written (each rank's shard attributes, offsets and dataset shapes: one all-gather), and it has
no shard index: the file ``write_part`` of part_files.py copies from the whole store.
"""
import os
from pathlib import Path

import numpy as np

from ..store import format as fmt
from ..partition.shard_output import Result, finish_shard, write_part, write_vertex_data
from . import messages
from .part_files import RANK, part_path
from .ranks import abort, cut_runs


def is_parts(path):
    """Whether ``path`` names one part file per rank (holds ``{rank}``)."""
    return RANK in os.fspath(path)


def tidy_first(comm, paths):
    """Remove the dead writers' temporaries beside ``paths`` on every rank, then wait for every
    rank (collective): a rank then starts its own temporaries only once no rank removes any, so
    where ranks on several hosts share a folder none takes another host's live writer's for a
    dead one."""
    from ..io.atomic import remove_stale_temporaries
    for folder in {Path(p).parent for p in paths}:
        remove_stale_temporaries(folder)
    comm.Barrier()


class RankedOutput:
    """The shards of a build under ``comm``: ``producers[i]`` lays out shard ``i``; ``path``
    the store (rank 0 writes it) or the part files' path holding ``{rank}``. Used as a context
    manager around :meth:`deliver` and :meth:`commit`: an error on one rank aborts the world (the
    others may wait for its shards)."""

    def __init__(self, comm, plan, path, overwrite, intervals, heavy, id_dtype, producers):
        self.comm, self.rank, self.size = comm, comm.Get_rank(), comm.Get_size()
        self.plan, self.path, self.overwrite = plan, path, overwrite
        self.parts = is_parts(path)
        self.producers = np.asarray(producers, dtype=np.int64)
        self.consumers = None if self.parts else np.zeros_like(self.producers)
        self.result = Result(int(intervals[-1]), intervals, heavy, id_dtype)
        self.result.mode = "in-memory"
        self.writer = None
        self._nbytes, self._sides = {}, {}

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            if self.writer is not None:
                self.writer.abort()
            if issubclass(exc_type, Exception):
                abort(self.comm, exc)
        return False

    def stored(self, edges):
        """Every shard's stored edges (in + out, after repeated pairs are dropped), this rank's
        own given in ``edges`` (shard -> count; collective): the part files' consumers."""
        if not self.parts:
            return
        total = np.zeros(len(self.producers), dtype=np.int64)
        for seen in self.comm.allgather({int(i): int(c) for i, c in edges.items()}):
            for i, count in seen.items():
                total[i] = count
        cut = cut_runs(total, self.size)
        self.consumers = np.repeat(np.arange(self.size), np.diff(cut))
        self.held = (int(cut[self.rank]), int(cut[self.rank + 1]))

    def deliver(self, make):
        """``make(i)`` of each shard ``i`` this rank produces, written by its consumer: a dict of
        sides, ``"out"`` and ``"in"`` (``(indptr, ids, weights)``, the ids encoded where the store
        compresses) and ``"eid"`` (the in-side's edge ids, or None). Collective."""
        if self.writer is None and (self.parts or self.rank == 0):
            self._open()
        with self.plan.bar("writing", total=len(self.producers), unit="shards") as bar:
            for i, (producer, consumer) in enumerate(zip(self.producers.tolist(),
                                                         self.consumers.tolist())):
                if self.rank == producer == consumer:
                    self._put(i, make(i))
                elif self.rank == producer:   # (arrays as raw bytes, in pieces)
                    messages.send(self.comm, make(i), consumer, i)
                elif self.rank == consumer:
                    self._put(i, messages.recv(self.comm, producer, i))
                bar.update(1)

    def _open(self):
        from ..partition.writer import StoreWriter
        mine = part_path(self.path, self.rank)
        if self.parts:
            tidy_first(self.comm, [mine])
        self.writer = StoreWriter(mine, overwrite=self.overwrite, compress=self.plan.compress,
                                  tidy=not self.parts)

    def _put(self, i, sides):
        lo, hi = int(self.result.intervals[i]), int(self.result.intervals[i + 1])
        for direction in ("out", "in"):
            if direction in sides:
                extra = {fmt.EDGE_ID: sides["eid"]} if sides.get("eid") is not None else None
                self._nbytes[i] = self._nbytes.get(i, 0) + write_part(
                    self.writer, self.result, self.plan, i, lo, hi, direction,
                    sides[direction], extra if direction == "in" else None)
                self._sides[i] = self._sides.get(i, 0) + 1
        if self._sides[i] == 2:
            finish_shard(self.writer, self.result, i, lo, hi, self._nbytes[i])

    def commit(self):
        """Write the vertex arrays and root attributes (the build record with ``ranks``, and a
        part file's ``part``) and commit the store or this rank's part (collective for parts).
        Returns this rank's Result (None on a rank that writes nothing)."""
        from ..partition.build import root_attrs
        if self.parts:
            self._declare_others(self.comm.allgather(self._describe()))
        elif self.rank != 0:
            return None
        write_vertex_data(self.writer, self.result, self.plan)
        attrs = root_attrs(self.plan, self.result)
        attrs["build"]["ranks"] = self.size
        if self.parts:
            attrs["build"]["part"] = {"index": self.rank, "parts": self.size,
                                      "shards": list(self.held),
                                      "of": os.path.abspath(os.fspath(self.path))}
        self.writer.commit(attrs, index=not self.parts)
        self.writer = None
        return self.result

    def _describe(self):
        """This part's own shards as the other parts declare them: group attributes, offsets,
        and each edge dataset's dtype, shape and attributes."""
        described = {}
        for i in range(*self.held):
            group = self.writer.file[fmt.shard_group(i)]
            sides = {}
            for direction, sub in group.items():
                sides[direction] = {name: (dset[()] if name == fmt.INDPTR else
                                           (dset.dtype.str, dset.shape, dict(dset.attrs)))
                                    for name, dset in sub.items()}
            described[i] = (dict(group.attrs), sides)
        return described

    def _declare_others(self, every):
        """Declare the shards other parts hold (``every``: each rank's :meth:`_describe`)."""
        writer, result = self.writer, self.result
        for seen in every:
            for i, (attrs, sides) in seen.items():
                if self.held[0] <= i < self.held[1]:
                    continue
                for direction, datasets in sides.items():
                    prefix = f"{fmt.shard_group(i)}/{direction}"
                    for name, spec in datasets.items():
                        if name == fmt.INDPTR:
                            writer.dataset(f"{prefix}/{name}", spec)
                            degree = result.in_degree if direction == "in" else result.out_degree
                            degree[int(attrs["lo"]):int(attrs["hi"])] = np.diff(spec)
                            continue
                        dtype, shape, dataset_attrs = spec
                        declared = writer.file.create_dataset(f"{prefix}/{name}", shape=shape,
                                                              dtype=np.dtype(dtype))
                        for key, value in dataset_attrs.items():
                            declared.attrs[key] = value
                writer.shard_attrs(i, attrs["lo"], attrs["hi"], attrs["num_in_edges"],
                                   attrs["num_out_edges"], attrs["nbytes"])
                for key, value in attrs.items():
                    writer.file[fmt.shard_group(i)].attrs[key] = value
                result.nbytes += int(attrs["nbytes"])
                result.shard_edges.append((int(attrs["num_in_edges"]),
                                           int(attrs["num_out_edges"])))

