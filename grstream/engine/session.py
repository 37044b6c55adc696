"""Sessions: executors set up once (compiled, allocated, resident shards loaded), many runs.

``gr.Session(store, device=..., memory_budget=..., pinned_budget=...)`` keeps one executor per
program class, and the resident shard data those executors share, for as long as it is open;
``session.run(program)`` runs one program instance (any parameters) on them. ``gr.run`` is a
Session used once (kept with an open store for its next run: engine/runner.py). With a
``memory_budget`` the executors of a session fit in it together, or the older ones are closed
(and their shard data dropped) to make room for the new one.
"""
import time
from typing import TYPE_CHECKING, Any, Callable, Optional, Union
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass

import numpy as np

from ..errors import MemoryBudgetError, UsageError
from . import entry
from .backend import IterationStats, check_edge_props, count_tiers
from .direction import DirectionRule, executor_rule, memory_arrays, next_active, push_allowed, push_only
from .capabilities import Feature
from .executor import Executor, execute, in_parallel
from .memory import Ledger, plan_memory, residency_key
from .planner import Planner, gather_directions, is_dense, shard_facts
from .schedule import needed_arrays
from .checkpoint import Checkpoints, Saving
from .state import ConstantState, VertexIds, initial_edge_state, run_seed_ids, start_state
from .turns import schedule
from .stopping import check_stops, default_limit, progress_bar, warn_limit
from .result import Result

if TYPE_CHECKING:  # names for the annotations only
    import os
    from ..program import GASProgram
    from ..store import ShardStore


@dataclass
class _Prepared:
    executor: Executor
    planner: Planner
    model: object
    ledger: Ledger


class Session:
    """Run many GAS programs / sources over one store without setting up each run again.

    Parameters
    ----------
    store : ShardStore or path
    device : {"cpu", "cuda", "auto"}
    memory_budget : int or str, optional
        Executor bytes (host memory on the CPU, device memory on the GPU) for vertex state,
        scratch and shard data of every program the session holds (an int, or ``"512M"`` as on
        the command line); default: everything resident on the CPU, free device memory less
        1 GiB on the GPU.
    pinned_budget : int or str, optional
        Pinned host bytes for the GPU's staging buffers and cache of streamed shards (default:
        min(memory budget, 8 GiB); see grstream/engine/memory.py); refused on the CPU.
    progress : bool
        Default of :meth:`run`'s ``progress``.
    direction, push_threshold, queue_fraction
        "auto" | "push" | "pull", and the fractions of |E| and n of the push and queue rules
        (default: the executor's, else 1/20 and 1/64): see grstream/engine/direction.py.
    **options
        Executor options, checked by its typed ``Options`` (CPU: ``threads``; CUDA:
        ``load_balance``, ``streams``, ``slots``, ...; an unknown key is a UsageError),
        and ``local_rounds`` (int, default 0): asynchronous rounds over a loaded unit for
        programs declaring ``asynchronous = True`` (docs/PROGRAMS.md); ``push_async`` (bool,
        default True): such programs' push iterations run asynchronously where the executor
        can (IterationPlan.push_async), False keeps them synchronous.
    comm : mpi4py communicator, optional
        Run as one rank of ``comm``: every rank opens the same store, reads only its own run
        of shards and exchanges vertex state each iteration; every rank's Result holds the
        whole graph's values (docs/DISTRIBUTED.md).

    Threads may share a session: its runs (``run``, ``run_lanes``) and ``close`` take turns, so
    each result equals the same run made alone; runs in parallel need a Session per thread.

    Examples
    --------
    >>> import grstream as gr                                               # doctest: +SKIP
    >>> with gr.Session("shards/g.h5") as s:                                # doctest: +SKIP
    ...     depths = [s.run(gr.algorithms.BFS(source=v)).value for v in (0, 5, 9)]
    """

    def __init__(self, store: Union["ShardStore", str, "os.PathLike[str]"], *, device: str = "cpu",
                 memory_budget: Optional[int] = None, pinned_budget: Optional[int] = None,
                 progress: bool = False, direction: str = "auto",
                 push_threshold: Optional[float] = None, queue_fraction: Optional[float] = None,
                 comm: Any = None, **options: Any) -> None:
        from ..devices import resolve
        # an argument one rank refuses raises on every rank (ranks: no rank waits for it)
        with entry.collectively(comm, undo=lambda: self._own_store and self.store.close()):
            if comm is not None and device == "auto":   # ranks run on the CPU unless asked for "cuda"
                device = "cpu"
            self.rule = DirectionRule.of(direction, push_threshold, queue_fraction)
            self._given = (push_threshold is not None, queue_fraction is not None)
            self.cls = resolve(device)
            self.memory_budget = entry.byte_size("memory_budget", memory_budget)
            self.pinned_budget = entry.byte_size("pinned_budget", pinned_budget)
            self.progress = entry.flag("progress", progress)
            # asynchronous local rounds and push plans: the engine's options, not the executor's
            self.local_rounds = entry.count("local_rounds", options.pop("local_rounds", 0), allow_none=False)
            self.push_async = entry.flag("push_async", options.pop("push_async", True))
            if self.pinned_budget is not None and not self.cls.pinned:   # (the CPU: memory_budget)
                raise UsageError(f"pinned_budget: the {self.cls.name} executor has no pinned host memory")
            # the executor's typed options: a key it does not know is a UsageError naming it
            options = self.cls.Options.of(options)
            if comm is None:
                self.store, self._own_store = entry.open_store(store)
            else:   # a path holding {rank}: this rank's part file
                from ..distributed.ranks import open_part
                self.store, self._own_store = open_part(store, comm.Get_rank(), entry.open_store)
        self._serial, self.closed = entry.OneAtATime(), False   # runs take turns (class docstring)
        self.options = options
        self._prepared = {}
        self.shared, self.loaded = {}, set()
        self._facts, self._edge_init = {}, {}
        self._pool = None
        self.n = int(self.store.num_vertices)
        self._ids = VertexIds(self.n)   # v.id of init: made once, on the first run that reads it
        self.sizes = np.diff(np.asarray(self.store.intervals, dtype=np.int64))
        self.ranks = None
        if comm is not None:
            from ..distributed import Ranks
            self.ranks = Ranks(comm, self.store)
            self.cls = self.ranks.executor_class(self.cls)

    # ------------------------------------------------------------------ setup, once per class
    def _prepare(self, cls, lanes=None, pull=False):
        key = (cls, lanes, pull)
        prep = self._prepared.get(key)
        if prep is not None:
            return prep
        store, spec = self.store, cls.spec
        check_edge_props(store, spec)
        ex_cls = self.cls
        setup = ex_cls.make_setup(store, self.options, memory_budget=self.memory_budget,
                                  lanes=lanes or None)
        caps, policies = ex_cls.capabilities(setup), ex_cls.policies(setup)
        if spec.gather_from == "changed" and not caps.has(Feature.GATHER_CHANGED):
            raise UsageError(f"{spec.name} gathers only from changed vertices (gather_from = "
                             f"'changed'), which the {ex_cls.name} executor does not run")
        rule = executor_rule(self.rule, caps, *self._given)
        # push plans read the reverse edges' properties and need executor arrays of their own:
        # only where push may be planned and the budget has room for them (else the program
        # pulls, with the memory minimum of pull)
        pushing = push_allowed(spec, caps, rule, lanes=bool(lanes))[0]
        # push-only memory (direction.push_only) unless this model must run pull plans
        only = not pull and push_only(spec, caps, rule, lanes=bool(lanes))
        if "in/eid" in needed_arrays(spec) and store.num_shards and "in/eid" not in store.dataset_names(0):
            raise UsageError(f"{spec.name} gathers mutable edge state over in-edges, which needs "
                             f"edge ids in the store: rebuild it with --edge-ids")
        budget = self.memory_budget if self.memory_budget is not None else ex_cls.default_budget(setup)
        held = sum(p.model.device_bytes for p in self._prepared.values())
        # push-only memory, then with push, then without, then the same after closing the session's
        # other executors; under ranks, where one rank's budget holds no push arrays, all plan without
        tries = list(dict.fromkeys((push, evict) for evict in (False, True)[:1 + bool(self._prepared)]
                                   for push in ("only" if only else "push" if pushing else "",
                                                "push" if pushing else "", "")))
        for again, tries in enumerate((tries, [t for t in tries if not t[0]])):
            for k, (pushing, evict) in enumerate(tries):
                o, names = setup.with_push(bool(pushing)), memory_arrays(spec, pushing)
                try:
                    if evict:
                        self._evict()
                    left = None if budget is None else int(budget) - (0 if evict else held)
                    if left is not None and left < 0:
                        raise MemoryBudgetError("no room left", minimum=held)
                    model = plan_memory(store, names, ex_cls.footprint(spec, is_dense(spec), o), left,
                                        self.pinned_budget, pinned=ex_cls.pinned, **ex_cls.memory_options(spec, o))
                    break
                except MemoryBudgetError:
                    if k == len(tries) - 1:
                        raise
            if again or self.ranks is None or self.ranks.agree_push(pushing) or not pushing:
                break
        ledger = Ledger(model)
        executor = ex_cls(store, spec, model, ledger, self.shared, o)
        dirs = gather_directions(spec)
        if dirs not in self._facts:
            self._facts[dirs] = shard_facts(store, spec)
        keys = [[residency_key(model, i, n) for n in model.names] for i in range(store.num_shards)]
        planner = Planner(spec, store, model, caps, policies, facts=self._facts[dirs],
                          loaded=lambda i, done=self.loaded: all(k in done for k in keys[i]),   # (no cycle via self)
                          mark_loaded=lambda i, done=self.loaded: done.update(keys[i]),
                          rule=rule, lanes=bool(lanes), push_room=bool(pushing),
                          local_rounds=0 if lanes else self.local_rounds,
                          push_async=self.push_async)
        if self.ranks is not None:   # this rank plans its own shards only
            planner.sizes = self.ranks.local(planner.sizes)
        prep = self._prepared[key] = _Prepared(executor, planner, model, ledger)
        return prep

    def keep_only(self, cls):
        """Close the executors of program classes other than ``cls`` and the shard data they
        share, so that a session kept between runs (grstream.run's) holds one program's arrays;
        all of them where one is outdated (Executor.outdated)."""
        if any(key[0] is not cls or prep.executor.outdated()
               for key, prep in self._prepared.items()):
            self._evict()

    def _evict(self):
        """Close every executor and drop the shard data they share."""
        for prep in self._prepared.values():
            prep.executor.close()
        self._prepared = {}
        self.cls.release_shared(self.shared)
        self.loaded.clear()

    # ------------------------------------------------------------------ one run
    def run(self, program: "GASProgram", *, max_iter: Optional[int] = None,
            progress: Optional[bool] = None,
            callback: Optional[Callable[[IterationStats], Any]] = None,
            checkpoint: Optional[str] = None, checkpoint_every: Optional[float] = None,
            resume: Optional[str] = None) -> Result:
        """Run ``program`` (a GASProgram instance) to convergence or ``max_iter`` iterations.

        Returns a :class:`Result`; see :func:`grstream.run` for the meaning of the arguments.
        """
        with self._serial("Session.run()"):
            with self._collectively():   # (an argument one rank refuses: every rank raises)
                program, max_iter = entry.program(program), entry.count("max_iter", max_iter)
                progress = self.progress if progress is None else entry.flag("progress", progress)
                callback = entry.callback(callback)
                saved = Checkpoints.of(checkpoint, checkpoint_every, resume)
                entry.check_open(self.store, self)
                entry.vertex_params(program, self.n)
            return self._guarded([program], None, max_iter, progress, callback, saved)

    def _guarded(self, programs, lanes, max_iter, progress, callback, saved=None):
        """:meth:`_run`; where it raises, the next run starts afresh and, under ranks, a rank's
        own error aborts the world (the others wait in a collective)."""
        t_start = time.perf_counter()
        try:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                return self._run(programs, lanes, max_iter, progress, callback, t_start, saved)
        except BaseException as e:
            # an interrupted run may leave half-loaded shards: start the next one afresh
            self._evict()
            if self.ranks is not None and not getattr(e, "every_rank", False):
                self.ranks.fail(e)   # other ranks wait in a collective: abort them all
            raise

    def _collectively(self):
        return entry.collectively(None if self.ranks is None else self.ranks.comm)

    def _run(self, programs, lanes, max_iter, progress, callback, t_start, saved=None):
        """The iteration loop of :meth:`run` (``lanes`` None) and :meth:`run_lanes` (``lanes`` instances)."""
        from .lanes import Instances, lane_program, split_results
        store, n = self.store, self.n
        program = programs[0] if lanes is None else lane_program(programs)
        cls, spec = type(program), type(program).spec
        # executors hold a power-of-two number of lanes, so runs of other sizes reuse them
        width = None if lanes is None else 1 << (lanes - 1).bit_length()
        self._prepare(cls, lanes=width)   # what the store cannot run is said first
        check_stops(program, max_iter)
        program.num_vertices, program.num_edges, program.iteration = n, int(store.num_edges), 0
        limit = default_limit(n, max_iter)
        saving = Saving(saved, program, store, limit, self.cls.name, self.ranks)
        resumed = saving.load()   # (None: a fresh run)
        state = seed = None
        for pull in (False, True):
            prep = self._prepare(cls, lanes=width, pull=pull)
            ex, planner = prep.executor, prep.planner
            if resumed is not None:
                resumed.restore_planner(planner)
            else:
                state, seed = start_state(program, store, lanes=lanes, alloc=ex.host_state,
                                          ids=self._ids, ranks=self.ranks)
                planner.allow_push(program, state, seed, self.ranks)
            if planner.run_push or planner.pull_room:   # else this run pulls: pull arrays needed
                break
        ex.bind(program)
        in_rank = None if self.ranks is None else self.ranks.local
        if resumed is None:
            rb, active, all_active, start, turns = self._start(ex, planner, program, state, seed,
                                                               lanes, in_rank)
            stats, it = [], 0
        else:
            rb, active, all_active, stats, it, start = resumed.restore(ex, planner, program, self._execute)
            turns = schedule(spec, resumed.fields, store.intervals, lanes)   # (saved state)
        state = seed = None   # (a traceback kept after an error holds this frame, not them)
        runs = Instances(program, lanes)
        runs.iterations[:] = it
        bar, signals = None, ExitStack()
        if progress and (self.ranks is None or self.ranks.rank == 0):   # (ranks: one bar)
            bar = progress_bar(program, max_iter, limit)
            bar.update(it)   # (a resumed run's iterations so far)
        signals.enter_context(saving.signals())   # SIGTERM: a checkpoint, then the run stops
        try:
            while not runs.stop(it, limit, turns.left(it + 1) if turns is not None else
                                active if lanes is None else rb.lane_active):
                if lanes is not None:   # the union of the lanes still running
                    rb.shard_active = ex.set_lanes(runs.alive)
                    active = int(rb.shard_active.sum())
                it += 1
                program.iteration = it
                t0 = time.perf_counter()
                st = IterationStats(iteration=it, active_vertices=active)
                plan = planner.iteration(it, rb, all_active)
                if plan.activation:
                    # push, then pull: the pull frontier of the changed set first
                    count_tiers(st, plan)
                    rb = self._execute(ex, plan, st)
                    plan = planner.iteration(it, rb, all_active)
                count_tiers(st, plan)
                st.plan = plan.summary()
                st.shards_processed, st.shards_skipped = len(plan.shards), len(plan.skipped)
                rb = self._execute(ex, plan, st)
                all_active = spec.activate == "all"
                if turns is not None:
                    rb = turns.enter(ex, rb, it + 1, in_rank)
                active = next_active(plan, rb)
                st.changed_vertices, st.active_edges = rb.changed_vertices, rb.active_edges
                st.next_active_vertices, st.aggregates = active, rb.aggregates
                st.time_total = time.perf_counter() - t0
                planner.observe(plan, st)   # measured transfers refine the cost model
                _set_aggregates(program, rb.aggregates)
                stats.append(st)
                if callback is not None:
                    callback(st)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(active=st.active_vertices, changed=st.changed_vertices)
                saving.after(it, ex, planner, rb, active, all_active, stats)   # when due
        finally:
            signals.close()
            if bar is not None:
                bar.close()
        converged = runs.converged
        if not converged.all() and max_iter is None:
            left = [active] if lanes is None else rb.lane_active
            warn_limit(program, limit, int(np.asarray(left)[~converged].sum()))
        info = dict(ex.info())
        info.update(start)   # seed_scan_s, start_wall_s (resumed_at: the checkpoint's iteration)
        info.update({"memory": prep.model.to_dict(), "arrays": list(prep.model.names),
                     "hoisted_gather": planner.hoist, "dense": planner.dense, "max_iter": limit,
                     "direction": planner.rule.info(planner.run_push, planner.run_reason,
                                                    planner.threshold)})
        if self.ranks is not None:
            self.ranks.report(info, stats)
        seconds = time.perf_counter() - t_start
        if lanes is None:
            return Result.of(program, store, ex.state(), ex.edge_state(), stats, converged[0], info,
                             seconds)
        info["lanes"] = lanes
        return split_results(programs, store, ex.state(), stats, runs.iterations, converged, info,
                             seconds)

    def _start(self, ex, planner, program, state, seed, lanes, in_rank):
        """A run's start: the initial state loaded (a declared one made by the executor), the seed
        made the frontier (seeding plan), first aggregates: ``(rb, active, all_active, start, turns)``."""
        store, spec = self.store, type(program).spec
        edge_init = initial_edge_state(store, spec, self._edge_init)
        t_up = time.perf_counter()   # start: state upload, seed ids, seeding plan, wall clock
        (ex.fill_state if isinstance(state, ConstantState) else ex.load_state)(state, edge_init)
        seeded = seed is not None and spec.activate == "frontier"
        counts, scan_s = self.sizes, 0.0
        if seeded:
            # the seed's ids, found once (a declared start's own: no mask of n); the executor takes
            # them, and per-shard counts come from a search over them (O(seeds log S), no n pass)
            t0 = time.perf_counter()
            idx = run_seed_ids(state, seed, lanes)
            scan_s = time.perf_counter() - t0
            counts = np.diff(np.searchsorted(idx, np.asarray(store.intervals, dtype=np.int64)))
            ex.set_frontier(None if isinstance(state, ConstantState) else seed, ids=idx)
        else:
            ex.set_frontier(None)
        local = counts if self.ranks is None else self.ranks.local(counts)
        seeding = planner.seed(local, seeded)
        rb = self._execute(ex, seeding, IterationStats())
        # a scheduled program: each iteration's active vertices come from its schedule
        turns = schedule(spec, state, store.intervals, lanes)
        if turns is not None:
            rb = turns.enter(ex, rb, 1, in_rank)
        # seed_scan_s: host time of finding the seed ids (start() includes it); start_wall_s:
        # load_state to the seeding read back, everything in it
        start = {"seed_scan_s": scan_s, "start_wall_s": time.perf_counter() - t_up}
        _set_aggregates(program, rb.aggregates)
        return rb, next_active(seeding, rb), not seeded and turns is None, start, turns

    def can_run_lanes(self, cls):
        """Whether :meth:`run_lanes` can run instances of program class ``cls`` here."""
        spec = cls.spec
        return bool(self.cls.lanes and not spec.aggregates and not spec.edge_state
                    and spec.gather_from == "all")

    def run_lanes(self, programs, *, max_iter=None, callback=None):
        """Run several instances of one program class at once ("lanes"), one Result each.

        Every vertex field becomes an (n, lanes) array and each instance keeps its own frontier;
        an iteration runs the union of the lanes' active vertices and masks each lane to its own,
        so every lane's result equals its own :meth:`run`. A lane stops when its frontier is empty
        or its ``converged()`` says so (a program's ``converged`` may return one flag per lane).
        Parameters that differ between the instances reach the program's methods as (lanes,)
        arrays, per-instance arrays as (..., lanes) stacks, ids, builtins and edge properties as
        (count, 1) columns: methods written with numpy operations broadcast over them. Programs with aggregates, scatter or edge state or
        ``gather_from = "changed"``, and executors without lanes, use :meth:`run` per instance.
        """
        with self._serial("Session.run_lanes()"):
            with self._collectively():
                programs, max_iter = entry.programs(programs), entry.count("max_iter", max_iter)
                callback = entry.callback(callback)
                if programs and not self.can_run_lanes(type(programs[0])):
                    raise UsageError(f"{type(programs[0]).spec.name} cannot run in lanes on "
                                     f"{self.cls.name}: use run()")
                entry.check_open(self.store, self)
                for p in programs:
                    entry.vertex_params(p, self.n)
            if not programs:
                return []
            return self._guarded(programs, len(programs), max_iter, False, callback)

    def _execute(self, ex, plan, st):
        """Run one plan on ``ex`` (grstream/engine/executor.py ``execute``)."""
        return execute(ex, plan, st, self._parallel)

    def _parallel(self, workers, work, items):
        """Units on worker threads, at most ``workers`` at once, finished in plan order."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(workers, thread_name_prefix="grstream-unit")
        in_parallel(self._pool, workers, work, items)

    # ------------------------------------------------------------------ lifetime
    def close(self):
        """Close the executors (and the store when the session opened it), after a running run."""
        with self._serial("Session.close()"):
            self.closed = True
            self._evict()
            self._ids = VertexIds(self.n)   # (the ids dropped)
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None
            if self._own_store:
                self.store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _set_aggregates(program, aggs):
    for k, v in aggs.items():
        setattr(program, k, v)
