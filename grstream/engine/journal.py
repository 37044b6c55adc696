"""Checkpoints of an algorithm that makes several runs (scc, betweenness, HITS, delta PageRank):
a journal of the runs it completed, and the checkpoint of the run going on.

In the folder ``DIR`` (``--checkpoint DIR``)::

    DIR/run-<k>.npz   run k's Results (their values and edge values; as JSON their iterations,
                      statistics and info) and what identifies the run, written by rank 0
                      (atomically) once it completes
    DIR/run-<k>/      the checkpoint of run k while it goes on (grstream/engine/checkpoint.py),
                      removed once run-<k>.npz is written

A resume (``--resume DIR``) makes the algorithm's runs again in order: a run whose file is there
returns its saved Results without running (after checking it is the same run: program class and
parameters, store, iteration limit, device and world size, else a CheckpointError), and sets the
program's aggregates as the run left them; the first run without one resumes from its folder's
checkpoint, or runs afresh. The algorithm's own steps between runs are pure functions of the runs'
results, so the resumed algorithm gives the uninterrupted one's answer. The algorithms run from
their entry points (``bc``, ``scc``, ...) with ``checkpoint=`` / ``resume=`` as the one-run ones.

Lanes (betweenness's batches of sources, ``Session.run_lanes``) and delta PageRank's phases (its
error bound follows a history the program keeps, not in its fields) keep no checkpoint of their
own: SIGTERM during one stops it at the end of an iteration (every rank alike) with
:class:`~grstream.errors.Checkpointed`, and the resume runs it again from its start.
Every completed run costs one file write (its values), whatever ``checkpoint_every`` says.
"""
import copy
import json
import shutil
import signal
import threading
from dataclasses import replace

import numpy as np

from ..errors import CheckpointError, Checkpointed, DamagedCheckpointError
from .backend import IterationStats
from .checkpoint import MANIFEST, Checkpoints, identity
from .entry import collectively
from .result import Result

class Journal:
    """The checkpoints of one algorithm's runs over ``store``; takes the checkpoint options out
    of ``run_options`` (the algorithm's, which its runs then take without them)."""

    def __init__(self, store, run_options):
        self.opts = Checkpoints.of(*(run_options.pop(k, None)
                                     for k in ("checkpoint", "checkpoint_every", "resume")))
        self.store, self.comm = store, run_options.get("comm")
        self.rank, self.size = (0, 1) if self.comm is None else (self.comm.Get_rank(),
                                                                 self.comm.Get_size())
        self.writes = self.rank == 0   # (rank 0 writes the files of the runs made together)
        #: the folder a resume names (a rank's own journal keeps a sub-folder of it)
        self.top = None if self.opts is None else self.opts.directory
        limit = run_options.get("max_iter")
        self.facts = (-1 if limit is None else int(limit), str(run_options.get("device", "cpu")))
        self.count = 0
        if self.opts is not None and self.opts.directory is not None:
            self.opts.directory.mkdir(exist_ok=True)

    def run(self, programs, call, whole=False, callback=None, note=None):
        """The Result (or list of Results) of ``call(options)``, which runs ``programs`` (a list
        of instances) with the run ``options`` given, or the saved one on a resume. The options:
        this run's checkpoint and resume folders; for a run that keeps no checkpoint of its own
        (``whole``: lanes, or a program whose state between iterations is more than its fields),
        the ``callback`` to pass: ``callback``, then the SIGTERM check. ``note(result)`` adds
        to a fresh result's ``info`` what the algorithm reads from its program after the run
        (saved with it)."""
        k, self.count = self.count, self.count + 1
        if self.opts is None:
            out = call({"callback": callback} if whole else {})
            if note is not None:
                note(out)
            return out
        name, ident = f"run-{k:06d}", [identity(p, self.store, *self.facts, self.size)
                                       for p in programs]
        if self.opts.resume is not None:
            with collectively(self.comm):
                saved = _load(self.opts.resume / f"{name}.npz", ident, k)
            if saved is not None:
                for program, result in zip(programs, saved if isinstance(saved, list) else [saved]):
                    for key, value in (result.stats[-1].aggregates if result.stats else {}).items():
                        setattr(program, key, value)   # (as the run left them: bound(), ...)
                return saved
        folder = None if self.opts.directory is None else self.opts.directory / name
        if whole:
            out = self._whole(call, callback)
        else:
            extra = {} if folder is None else {"checkpoint": folder,
                                               "checkpoint_every": self.opts.every}
            if self.opts.resume is not None and (self.opts.resume / name / MANIFEST).is_file():
                extra["resume"] = self.opts.resume / name
            try:
                out = call(extra)
            except Checkpointed as stop:   # the algorithm resumes from the journal's folder
                raise Checkpointed(self.top, stop.iteration, stop.rank) from None
        if note is not None:
            note(out)
        if folder is not None:
            with collectively(self.comm):
                if self.writes:
                    _save(folder.with_suffix(".npz"), out, ident)
            if self.writes:
                shutil.rmtree(folder, ignore_errors=True)
        return out

    def alone(self):
        """This rank's journal of the runs it makes alone (betweenness's sources spread over
        ranks, grstream/distributed/sources.py): the same options, in its own sub-folder
        ``rank<r>-of-<size>`` of each folder."""
        twin = copy.copy(self)
        twin.comm, twin.count, twin.writes = None, 0, True
        if self.opts is not None:
            mine = f"rank{self.rank:05d}-of-{self.size:05d}"
            twin.opts = replace(self.opts, **{k: getattr(self.opts, k) / mine for k in
                                              ("directory", "resume") if getattr(self.opts, k)})
            if twin.opts.directory is not None:
                twin.opts.directory.mkdir(exist_ok=True)
        return twin

    def _whole(self, call, callback):
        """``call`` with a callback (``callback``, then) stopping the run at the end of an
        iteration once SIGTERM came (on any rank: one small all-gather per iteration)."""
        if self.opts.directory is None or threading.current_thread() is not threading.main_thread():
            return call({"callback": callback})
        asked = []
        previous = signal.signal(signal.SIGTERM, lambda signum, frame: asked.append(signum))

        def stop(st):
            if callback is not None:
                callback(st)
            flags = [bool(asked)] if self.comm is None else self.comm.allgather(bool(asked))
            if any(flags):
                raise Checkpointed(self.top, st.iteration, self.rank)
        try:
            return call({"callback": stop})
        finally:
            signal.signal(signal.SIGTERM, previous)


def _save(path, out, ident):
    from ..io.atomic import atomic_file
    results = out if isinstance(out, list) else [out]
    arrays, meta = {}, {"identity": ident, "many": isinstance(out, list), "results": []}
    for j, r in enumerate(results):
        arrays.update({f"{j}/values/{key}": np.asarray(v) for key, v in r.values.items()})
        arrays.update({f"{j}/edges/{key}": np.asarray(v) for key, v in r.edge_values.items()})
        meta["results"].append({"output": r.output, "iterations": r.iterations,
                                "converged": r.converged, "seconds": r.seconds, "info": r.info,
                                "stats": [s.to_dict() for s in r.stats]})
    text = json.dumps(meta, default=_plain, allow_nan=True)   # (inf and nan kept as numbers)
    arrays["meta"] = np.frombuffer(text.encode(), dtype=np.uint8)
    with atomic_file(path) as f:
        np.savez(f, **arrays)


def _load(path, ident, k):
    """The Result(s) saved at ``path`` (None where there is no file), checked against ``ident``."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {key: z[key] for key in z.files}
        meta = json.loads(arrays.pop("meta").tobytes())
    except (ValueError, OSError, KeyError) as exc:
        raise DamagedCheckpointError(f"{path.name}: {exc}", path=path.parent) from None
    if meta["identity"] != ident:
        raise CheckpointError(f"run {k} of the checkpoint was made by another program, "
                              f"parameters, store, iteration limit, device or world size: resume "
                              f"with the algorithm and options it was written with",
                              path=path.parent)
    results = []
    for j, m in enumerate(meta["results"]):
        part = {kind: {key.split("/", 2)[2]: a for key, a in arrays.items()
                       if key.startswith(f"{j}/{kind}/")} for kind in ("values", "edges")}
        results.append(Result(values=part["values"], output=m["output"],
                              iterations=m["iterations"], converged=m["converged"],
                              stats=[IterationStats(**s) for s in m["stats"]], info=m["info"],
                              seconds=m["seconds"], edge_values=part["edges"]))
    return results if meta["many"] else results[0]


def _plain(value):
    """JSON for what the json module does not take: numpy arrays and scalars as numbers,
    other objects by their text."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return str(value)
