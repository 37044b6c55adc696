"""Ranks: which shards each process of an MPI world owns, and what a Session does differently
when it is one of several.

1D partitioning by the store's vertex intervals: rank r owns the contiguous shards
``[shards[r], shards[r+1])`` chosen so that each run holds about 1/size of the edges (each
shard weighs its in- plus out-edges, plus one so that empty shards spread too), and so the
vertices ``[bounds[r], bounds[r+1])``. A rank reads only its own shards; every rank holds every
vertex field whole (the replicated state the exchange keeps equal after each iteration), so a
rank's memory is the vertex state of the whole graph plus its own shards' data.
"""
import array
import fcntl
import os
import stat
import sys
import termios
import time
from contextlib import contextmanager

import numpy as np

from ..errors import UsageError
from .exchange import MpiExchange

#: seconds a failing rank waits for its last words to be read from its standard error (a pipe
#: to the launcher under mpiexec) before it aborts the world
READ_WAIT_SECONDS = 5.0
#: environment variables MPI launchers set to the world size (MPICH/Hydra, Open MPI, PMIx, Slurm)
SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS")


def world_from_environment():
    """``MPI.COMM_WORLD`` when this process was started by an MPI launcher with more than one
    rank, else None (a plain run: mpi4py is not imported)."""
    sizes = [os.environ.get(v) for v in SIZE_VARIABLES]
    if not any(s is not None and s.isdigit() and int(s) > 1 for s in sizes):
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        raise UsageError("started by an MPI launcher with several ranks, but mpi4py is not "
                         "installed: pip install 'grstream[mpi]'") from None
    return MPI.COMM_WORLD


def partition(store, size):
    """Shard indices ``[0, ..., S]`` cut into ``size`` contiguous runs balanced by edges."""
    S = int(store.num_shards)
    return cut_runs([store.shard_info(i).num_in_edges + store.shard_info(i).num_out_edges
                     for i in range(S)], size)


def cut_runs(edges, size):
    """Shard indices ``[0, ..., S]`` cut into ``size`` contiguous runs balanced by the shards'
    ``edges`` (in + out; each shard weighs one more, so that empty shards spread too)."""
    w = np.asarray(edges, dtype=np.float64) + 1
    mid = np.cumsum(w) - w / 2   # each shard goes to the rank its middle falls in
    owner = np.minimum((mid * size / max(w.sum(), 1.0)).astype(np.int64), size - 1)
    return np.searchsorted(owner, np.arange(size + 1), side="left").astype(np.int64)


class Ranks:
    """This process's place in the world of ``comm`` over ``store``."""

    def __init__(self, comm, store, exchange=None):
        self.comm, self.rank, self.size = comm, comm.Get_rank(), comm.Get_size()
        intervals = np.asarray(store.intervals, dtype=np.int64)
        self.shards = partition(store, self.size)
        self.bounds = intervals[self.shards]
        self.exchange = exchange or MpiExchange(comm, self.bounds)
        facts = (int(store.num_vertices), int(store.num_edges), int(store.num_shards))
        from .part_files import check_part   # (part_files.py partitions as this module does)
        try:
            check_part(store, self.rank, self.size, self.shards[self.rank:self.rank + 2])
            problem = None
        except UsageError as e:
            problem = str(e)
        seen = self.exchange.gather((facts, problem))   # (every rank decides alike)
        if any(f != facts for f, _ in seen):
            raise UsageError(f"the ranks opened different stores (vertices, edges, shards): "
                             f"{[f for f, _ in seen]}")
        problems = [f"rank {r}: {p}" for r, (_, p) in enumerate(seen) if p]
        if problems:
            raise UsageError("; ".join(problems))
        self.state_span = None   # (the vertices whose initial state this rank's init wrote: initial_state)
        self.owned = np.zeros(len(intervals) - 1, dtype=np.int64)
        self.owned[self.shards[self.rank]:self.shards[self.rank + 1]] = 1
        self.span = (int(self.bounds[self.rank]), int(self.bounds[self.rank + 1]))
        # each rank's run of the global CSR order (its sources' out-edges): the edge state its
        # scatters write
        out = [store.shard_info(i).num_out_edges for i in range(int(store.num_shards))]
        self.edge_bounds = np.concatenate(([0], np.cumsum(out, dtype=np.int64)))[self.shards]

    @staticmethod
    def open(store, comm, opener):
        """``opener(path)`` of this rank's store on every rank of ``comm`` (a path holding
        ``{rank}`` names its part file, part_files.py). Collective: where it fails on any rank it
        raises on every rank (:func:`collectively`)."""
        opened = []
        with collectively(comm, undo=lambda: _close(opened[0])):
            opened.append(open_part(store, comm.Get_rank(), opener))
        return opened[0]

    def executor_class(self, cls):
        """``cls`` run as this rank's executor (grstream/distributed/rank_executor.py)."""
        if cls.name == "cuda":   # GPU ranks: one GPU each, the NCCL exchange
            from .gpu_rank import cuda_rank_class
            return cuda_rank_class(self, cls)
        if cls.name != "cpu":
            raise UsageError(f"ranks run on the CPU or CUDA executor, not {cls.name}")
        from .rank_executor import RankExecutor
        return type(f"Rank{cls.__name__}", (RankExecutor, cls), {"ranks": self})

    def initial_state(self, program, store, lanes=None, alloc=None, ids=None):
        """A run's initial state (engine/state.py ``initial_state``; collective). A program
        whose init is ``local_init`` runs it over this rank's vertices only: the others' entries
        come from their owners when the executor loads the state (``state_span``, a dense
        exchange), and the seed is every rank's ids gathered into one mask of n. Other programs
        (and lanes, and schedules, which the host reads whole) run init over every vertex."""
        from ..engine.state import initial_state, local_init, seed_ids
        spec = type(program).spec
        self.state_span = None
        if lanes is not None or spec.activate == "schedule" or not local_init(type(program)):
            return initial_state(program, store, lanes=lanes, alloc=alloc, ids=ids)
        lo = self.span[0]
        state, seed = initial_state(program, store, alloc=alloc, ids=ids, span=self.span)
        self.state_span = self.span
        every = self.exchange.gather(None if seed is None else seed_ids(seed) + lo)
        if all(part is None for part in every):
            return state, None
        if any(part is None for part in every):
            from ..errors import ProgramError
            raise ProgramError("init returned a seed on some ranks' vertices and None on others'", spec.name)
        mask = np.zeros(int(store.num_vertices), dtype=bool)
        mask[np.concatenate(every)] = True
        return state, mask

    def agree_push(self, pushing):
        """Whether every rank's memory model holds push's arrays (``pushing``: this rank's;
        collective): a rank planning its own shards under its own budget may have room where
        another has none, and push plans run on every rank or on none."""
        return all(self.exchange.gather(bool(pushing)))

    def local(self, counts):
        """Per-shard ``counts`` with other ranks' shards zeroed: what this rank's planner plans."""
        return np.asarray(counts) * self.owned

    def report(self, info, stats):
        """Add the world to a result's ``info``: ``ranks`` and each rank's bytes read, exchange
        bytes and seconds (collective: every rank calls it once per run)."""
        mine = {"rank": self.rank, "shards": [int(self.shards[self.rank]), int(self.shards[self.rank + 1])],
                "vertices": list(self.span),   # (its own: result.value[lo:hi])
                "bytes_read": int(sum(s.bytes_read for s in stats)),
                "exchange_bytes": int(sum(s.bytes_exchanged for s in stats)),
                "exchange_s": float(sum(s.time_exchange for s in stats))}
        info["ranks"] = self.size
        info["rank_stats"] = self.exchange.gather(mine)

    def fail(self, exc):
        """A run raised ``exc`` on this rank: with other ranks waiting in a collective, say which
        rank failed and why, and abort the whole world (every rank exits, none hangs)."""
        abort(self.comm, exc)


def abort(comm, exc):
    """This rank raised ``exc`` while the others may wait in a collective: say which rank failed
    and why, and abort the world of ``comm`` (every rank exits, none hangs; one rank: nothing)."""
    if comm.Get_size() == 1:
        return
    say_before_exit(f"grstream: rank {comm.Get_rank()} of {comm.Get_size()} failed: "
                    f"{type(exc).__name__}: {exc}\n")
    comm.Abort(1)


def say_before_exit(message, fd=2, wait=READ_WAIT_SECONDS):
    """Write ``message`` to ``fd`` (standard error) and, where that is a pipe, wait until it has
    been read (``wait`` seconds at most). Under ``mpiexec`` a rank's standard error is a pipe to
    the launcher, which forwards what it reads in order with the abort that follows; what is
    still in the pipe when the abort ends the launcher is lost, and the user would see a
    failed run that names no rank and no error."""
    try:
        sys.stderr.flush()      # what this process said before comes first
    except (OSError, ValueError):
        pass
    data = message.encode(errors="replace")
    try:
        while data:
            data = data[os.write(fd, data):]
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
        deadline = time.monotonic() + wait
        unread = array.array("i", [0])
        while time.monotonic() < deadline:
            fcntl.ioctl(fd, termios.FIONREAD, unread, True)
            if not unread[0]:
                return
            time.sleep(0.005)
    except OSError:
        return                  # nothing more can be done on the way out


@contextmanager
def collectively(comm, undo=None):
    """A block every rank of ``comm`` runs before a collective call (None: one process, the
    block as it is). Where it raises on any rank, it raises on every rank: a failed rank its own
    error, the others a UsageError naming each failed rank and its error (after ``undo()``,
    which releases what their block made); no rank goes on to wait in a collective for one that
    stopped. The block itself must make no collective call. The error is marked ``every_rank``:
    there is no rank left to abort."""
    if comm is None:
        yield
        return
    error = None
    try:
        yield
    except Exception as exc:   # (any error: a rank that stops for it must not go unseen)
        error = exc
    errors = comm.allgather(None if error is None else f"{type(error).__name__}: {error}")
    if error is None and any(errors):
        if undo is not None:
            undo()
        error = UsageError("; ".join(f"rank {r} of {len(errors)} failed: {e}"
                                     for r, e in enumerate(errors) if e))
    if error is not None:
        error.every_rank = True
        raise error


def open_part(store, rank, opener):
    """``opener(path)`` of rank ``rank``'s store (its part file where ``store`` holds
    ``{rank}``, part_files.py; a part file's reads refuse the shards of other parts)."""
    from .part_files import part_path
    return opener(part_path(store, rank))


def _close(opened):
    """Close what an opener returned: a store, or a (store, owned) pair closed where owned."""
    store, owned = opened if isinstance(opened, tuple) else (opened, True)
    if owned and store is not None:
        store.close()
