"""Checkpoints of a run: written every so many seconds and on SIGTERM, resumed by another process.

A checkpoint holds what the run needs to go on (Pregel's light checkpoints): every vertex field,
the mutable edge state, the vertex sets (frontier, changed set: :class:`~.plan.RunState`), the
iteration, the last read back (what the next plan is built from, the aggregates the stopping
rule reads), the direction rule's state, the statistics of the iterations so far, and what
identifies the run: the store, the program class and its parameters, the iteration limit, the
device and the world size. A resume against anything else is refused
(:class:`~grstream.errors.CheckpointError`).

In a folder ``DIR`` (``grstream run ... --checkpoint DIR``)::

    DIR/state-<iteration>-rank<r>-of-<size>.npz   each rank's file: its owned slice of every
                                                  vertex field, its vertex sets and read back
    DIR/manifest.json                             written last, by rank 0, once every rank's
                                                  file is complete: identity, iteration, each
                                                  file's SHA-256, the engine's scalars

Every file is written to a temporary beside it, fsynced and renamed (grstream/io/atomic.py),
and the manifest is the commit point: a checkpoint interrupted half way leaves the previous
manifest and its files as they were (the files of older iterations go only after the new
manifest is in place), and a rank file that does not match its manifest's checksum is refused
as damaged (:class:`~grstream.errors.DamagedCheckpointError`).

Ranks agree on every decision: whether a checkpoint is due (rank 0's clock) or asked for (a
SIGTERM on any rank) is one small all-gather per iteration, made only while checkpointing; a
resume checks every rank's file before any rank goes on, and each rank reads only its own file
(the owned slices make the whole fields again by an all-gather).
"""
import hashlib
import json
import os
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from ..errors import CheckpointError, Checkpointed, DamagedCheckpointError, UsageError, plain
from . import entry
from .backend import IterationStats
from .plan import Readback, RunState
from .result import jsonable

FORMAT, VERSION = "grstream-checkpoint", 1
MANIFEST = "manifest.json"
#: seconds between checkpoints when only the folder is given
DEFAULT_EVERY = 600.0
_SETS = ("active", "changed", "sources")
#: what the engine sets on a program during a run (not the caller's)
_ENGINE_SET = ("num_vertices", "num_edges", "iteration")


@dataclass(frozen=True)
class Checkpoints:
    """A run's checkpoint options, checked: the folder written to (None: none), the seconds
    between checkpoints, and the folder resumed from (None: a fresh run)."""

    directory: Optional[Path]
    every: float
    resume: Optional[Path]

    @classmethod
    def of(cls, checkpoint=None, checkpoint_every=None, resume=None):
        """The options of ``gr.run`` / ``Session.run`` (None when there are none); UsageError
        naming the one that is wrong."""
        if checkpoint is None and resume is None:
            if checkpoint_every is not None:
                raise UsageError("checkpoint_every needs checkpoint (the folder to write to)")
            return None
        every = DEFAULT_EVERY if checkpoint_every is None else entry.seconds("checkpoint_every",
                                                                             checkpoint_every)
        return cls(_folder("checkpoint", checkpoint, create=True),
                   every, _folder("resume", resume, create=False))


def _folder(name, value, create):
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise UsageError(f"{name} must be the path of a folder, not {plain(value)}")
    path = Path(value)
    if create:
        if path.exists() and not path.is_dir():
            raise UsageError(f"{name}: {path} exists and is not a folder")
        if not path.parent.is_dir():
            raise UsageError(f"{name}: the folder {path.parent} does not exist")
    return path


def store_identity(store):
    """A digest of what identifies a store: its facts, intervals and build record (input, options,
    date), the same for every process that opens the same file."""
    h = hashlib.sha256()
    facts = [int(store.num_vertices), int(store.num_edges), int(store.num_shards),
             bool(store.directed), str(store.id_dtype),
             {k: str(v) for k, v in sorted(store.edge_props.items())}, store.build]
    h.update(json.dumps(jsonable(facts), sort_keys=True).encode())
    h.update(np.ascontiguousarray(store.intervals, dtype=np.int64).tobytes())
    return h.hexdigest()


def params_identity(program):
    """A digest of the program instance's parameters and every other attribute it holds before
    the run (e.g. PageRank's start vector): arrays by dtype, shape and bytes, plain values by
    ``repr``, other objects by their type."""
    spec = type(program).spec
    h = hashlib.sha256()
    for name, value in sorted(vars(program).items()):
        if name in _ENGINE_SET or name in spec.aggregates:
            continue
        h.update(name.encode() + b"=")
        if isinstance(value, (np.ndarray, np.generic)) and value.dtype != object:
            h.update(f"{value.dtype.str}{value.shape}".encode() + np.ascontiguousarray(value).tobytes())
        elif value is None or isinstance(value, (str, bytes, int, float, bool, tuple)):
            h.update(repr(value).encode())
        else:
            h.update(type(value).__qualname__.encode())
        h.update(b";")
    return h.hexdigest()


def identity(program, store, limit, device, size):
    """What a resume must match, by what a message names it."""
    cls = type(program)
    return {"store": store_identity(store), "program": f"{cls.__module__}.{cls.__qualname__}",
            "parameters": params_identity(program), "iteration limit": int(limit),
            "device": device, "world size": int(size)}


class Saving:
    """The checkpoints of one run of ``program`` (``opts``: :class:`Checkpoints`, None for a run
    without; ``ranks``: the session's Ranks or None): SIGTERM caught while the run goes on, the
    checkpoint written when due, a resume read. The other arguments are :func:`identity`'s."""

    def __init__(self, opts, program, store, limit, device, ranks):
        self.opts, self.ranks = opts, ranks
        self.rank, self.size = (0, 1) if ranks is None else (ranks.rank, ranks.size)
        self.ident = None if opts is None else identity(program, store, limit, device, self.size)
        self.terminated = False
        self.last = time.monotonic()

    @contextmanager
    def signals(self):
        """While the run goes on (in the main thread): SIGTERM asks for a checkpoint at the end
        of the iteration running, then the run stops with :class:`Checkpointed`."""
        if self.opts is None or self.opts.directory is None or \
                threading.current_thread() is not threading.main_thread():
            yield
            return

        def asked(signum, frame):
            self.terminated = True

        previous = signal.signal(signal.SIGTERM, asked)
        try:
            yield
        finally:
            signal.signal(signal.SIGTERM, previous)

    # ------------------------------------------------------------------ writing
    def after(self, it, ex, planner, rb, active, all_active, stats):
        """The end of iteration ``it``: write a checkpoint when one is due or SIGTERM asked for
        one (every rank alike), and stop the run in the latter case."""
        if self.opts is None or self.opts.directory is None:
            return
        due = self.rank == 0 and time.monotonic() - self.last >= self.opts.every
        flags = [(self.terminated, due)]
        if self.ranks is not None:
            flags = self.ranks.exchange.gather(flags[0])
        stop, due = any(f[0] for f in flags), any(f[1] for f in flags)
        if not (stop or due):
            return
        run = {"iteration": it, "active": int(active), "all_active": bool(all_active),
               "changed_vertices": int(rb.changed_vertices), "active_edges": int(rb.active_edges),
               "changed_edges": int(rb.changed_edges), "total_active": int(rb.total_active),
               "aggregates": dict(rb.aggregates), "planner": planner.run_state()}
        self.write(it, ex.save_run(), rb, run, stats)
        self.last = time.monotonic()
        if stop:
            raise Checkpointed(self.opts.directory, it, self.rank)

    def write(self, it, saved, rb, run, stats):
        folder = self.opts.directory
        folder.mkdir(exist_ok=True)
        lo, hi = (0, None) if self.ranks is None else self.ranks.span
        arrays = {f"field/{k}": a[lo:hi] for k, a in saved.fields.items()}
        arrays.update({f"edge/{k}": a for k, a in saved.edges.items()})
        arrays.update({k: getattr(saved, k) for k in _SETS if getattr(saved, k) is not None})
        arrays["shard_active"] = np.asarray(rb.shard_active, dtype=np.int64)
        if rb.shard_changed is not None:
            arrays["shard_changed"] = np.asarray(rb.shard_changed, dtype=np.int64)
        meta = {"rank": self.rank, "size": self.size, "span": [lo, hi], "iteration": it,
                "sets": [k for k in _SETS if getattr(saved, k) is not None]}
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        name = f"state-{it:08d}-rank{self.rank:05d}-of-{self.size:05d}.npz"
        from ..io.atomic import atomic_file
        with atomic_file(folder / name) as f:
            np.savez(f, **arrays)
        mine = (name, _digest(folder / name))
        files = [mine] if self.ranks is None else self.ranks.exchange.gather(mine)
        if self.rank == 0:   # every rank's file is complete: commit
            doc = {"format": FORMAT, "version": VERSION, "identity": self.ident, "iteration": it,
                   "files": [list(f) for f in files], "run": run,
                   "stats": [jsonable(s.to_dict()) for s in stats]}
            with atomic_file(folder / MANIFEST, text=True) as f:
                f.write(json.dumps(doc, default=_number, allow_nan=True))
        if self.ranks is not None:   # the manifest is in place before any rank drops its old file
            self.ranks.exchange.gather(None)
        # this rank's files of older checkpoints (of this run, or of the one it resumed) go
        for old in folder.glob(f"state-*-rank{self.rank:05d}-of-{self.size:05d}.npz"):
            if old.name != name:
                old.unlink(missing_ok=True)

    # ------------------------------------------------------------------ resuming
    def load(self):
        """The checkpoint of ``opts.resume`` as :class:`Resumed` (None without one), checked on
        every rank before any goes on: the same error on every rank when one finds it wrong."""
        if self.opts is None or self.opts.resume is None:
            return None
        try:
            found, problem = self._read(), None
        except CheckpointError as exc:
            found, problem = None, (type(exc).__name__, str(exc))
        if self.ranks is not None:
            problems = self.ranks.exchange.gather(problem)
            bad = [(r, p) for r, p in enumerate(problems) if p is not None]
            if bad:
                r, (kind, message) = bad[0]
                problem = (kind, message if r == self.rank else f"rank {r}: {message}")
        if problem is not None:
            kind = DamagedCheckpointError if problem[0] == "DamagedCheckpointError" else CheckpointError
            exc = kind(problem[1])
            exc.every_rank = True   # raised alike by every rank: nothing to abort
            raise exc
        if self.ranks is not None:
            found.gather_fields(self.ranks)
        return found

    def _read(self):
        folder = self.opts.resume
        path = folder / MANIFEST
        if not path.is_file():
            what = "no such folder" if not folder.is_dir() else (
                f"no {MANIFEST}: no checkpoint was completed there (one interrupted half way "
                f"leaves none)")
            raise CheckpointError(what, path=folder)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if doc.get("format") != FORMAT:
                raise ValueError(f"format {doc.get('format')!r}")
            it, files, run, ident = doc["iteration"], doc["files"], doc["run"], doc["identity"]
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
            raise DamagedCheckpointError(f"{MANIFEST} is not a grstream checkpoint manifest "
                                         f"({exc})", path=folder) from None
        if doc.get("version") != VERSION:
            raise CheckpointError(f"checkpoint format version {doc.get('version')} is not "
                                  f"{VERSION}, the one this grstream reads", path=folder)
        for key, want in self.ident.items():
            if ident.get(key) != want:
                got = ident.get(key)
                shown = "" if key in ("store", "parameters") else f": {got!r}, not {want!r}"
                raise CheckpointError(f"the checkpoint was written by a run of another {key}"
                                      f"{shown}; resume it with the {key} it was written with",
                                      path=folder)
        if len(files) != self.size:
            raise DamagedCheckpointError(f"{MANIFEST} lists {len(files)} rank files for "
                                         f"{self.size} ranks", path=folder)
        name, digest = files[self.rank]
        file = folder / name
        if not file.is_file() or _digest(file) != digest:
            raise DamagedCheckpointError(f"{name} is {'missing' if not file.is_file() else 'damaged'}"
                                         f" (its SHA-256 is not the one {MANIFEST} recorded)",
                                         path=folder)
        try:
            with np.load(file, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
            meta = json.loads(arrays.pop("meta").tobytes())
        except (ValueError, OSError, KeyError) as exc:
            raise DamagedCheckpointError(f"{name}: {exc}", path=folder) from None
        return Resumed(it, run, doc["stats"], arrays, meta)


class Resumed:
    """A checkpoint read back: :meth:`restore` puts the run where it was."""

    def __init__(self, iteration, run, stats, arrays, meta):
        self.iteration, self.run, self.stats = int(iteration), run, stats
        self.arrays, self.meta = arrays, meta
        self.fields = {k[len("field/"):]: a for k, a in arrays.items() if k.startswith("field/")}

    def gather_fields(self, ranks):
        """Ranks: every field whole from the ranks' owned slices (an all-gather of each)."""
        from mpi4py import MPI
        bounds = np.asarray(ranks.bounds, dtype=np.int64)
        sizes = np.diff(bounds)
        for k, mine in self.fields.items():
            whole = np.empty(int(bounds[-1]), dtype=mine.dtype)
            b = mine.dtype.itemsize
            ranks.comm.Allgatherv([np.ascontiguousarray(mine).view(np.uint8), MPI.BYTE],
                                  [whole.view(np.uint8), (sizes * b, bounds[:-1] * b), MPI.BYTE])
            self.fields[k] = whole

    def restore_planner(self, planner):
        """The direction rule's choice for this run, as the interrupted run made it."""
        state = self.run["planner"]
        planner.run_push, planner.run_reason = state["run_push"], state["run_reason"]

    def restore(self, ex, planner, program, execute):
        """Put the executor, the planner and the program where the checkpoint left them:
        ``(read back, active, all_active, stats, iteration, start facts)`` for the engine's
        loop. ``execute(ex, plan, stats)`` runs a plan: first the one that reads the resident
        shards into place (Planner.preload), so the next plan batches them and adds their terms
        as the interrupted run's would have."""
        execute(ex, planner.preload(), IterationStats())
        a, run = self.arrays, self.run
        sets = {k: (a[k].astype(np.int64) if k in self.meta["sets"] else None) for k in _SETS}
        edges = {k[len("edge/"):]: v for k, v in a.items() if k.startswith("edge/")}
        ex.restore_run(RunState(fields=self.fields, edges=edges, **sets))
        planner.resume(run["planner"])
        rb = Readback(shard_active=a["shard_active"], changed_vertices=run["changed_vertices"],
                      active_edges=run["active_edges"], aggregates=dict(run["aggregates"]),
                      shard_changed=a.get("shard_changed"), changed_edges=run["changed_edges"],
                      total_active=run["total_active"])
        program.iteration = self.iteration
        for k, v in rb.aggregates.items():
            setattr(program, k, v)
        stats = [IterationStats(**s) for s in self.stats]
        start = {"seed_scan_s": 0.0, "start_wall_s": 0.0, "resumed_at": self.iteration}
        return rb, run["active"], run["all_active"], stats, self.iteration, start


def _digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _number(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
