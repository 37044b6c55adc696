"""Builds each iteration's plan from the frontier, the memory model and the executor's facts.

Every scheduling decision lives here (and in :mod:`.balance` / :mod:`.memory`), so it exists once
and is tested without a GPU:

- shards with no active vertex are skipped; topology-driven programs touch every shard;
- transfer: a shard the memory model keeps resident is "load" the first time (per session) and
  "resident" after; the others are "copy" into the streaming slots in turn, from the pinned host
  cache when the model caches them there;
- grouping: consecutive streamed shards lying next to each other in the pinned cache share one
  copy while the group fits one slot; loaded resident shards form one unit per run of resident
  shards when the executor can batch them (split into ``workers`` parts of about equal edges when
  the work is large enough to share); resident and streamed units alternate, a resident one
  first, so a copy overlaps a resident unit's compute (dense GPU plans spread the batched
  resident shards between the streamed units instead);
- phase elimination, dense mode, hoisting and the publish rule follow from the program (hoisting
  also from the frontier where the executor can run without it);
- direction and frontier format per iteration (issue 8): :meth:`Planner.iteration` applies the
  rule of :mod:`.direction` to the last read back and returns a push plan, a pull plan, or, when
  a push iteration is followed by a pull one, first the activation plan that turns the changed
  set into the pull frontier.
"""
from dataclasses import replace
from typing import Callable, Optional

import numpy as np

from . import balance
from .direction import (DirectionRule, asynchronous_push, choose_direction, choose_format,
                        shard_edges, push_allowed, threshold)
from ..program.push import seed_is_silent
from .memory import MemoryModel
from .plan import IterationPlan, Unit
from .transfers import TransferPolicy

#: below this many active edges a plan runs its units in order on one thread (a pool round trip
#: costs more than the work)
PARALLEL_EDGES = 1 << 16


def is_dense(spec):
    """One message per vertex and a single apply after every unit: every vertex is active every
    iteration, gather exists and no edge state is written between a unit's gather and the next."""
    return spec.activate == "all" and spec.has_gather and not spec.edge_state


def hoistable(spec):
    """gather_map reads only ``src``: compute it once per vertex instead of once per edge."""
    uses = getattr(spec.analysis, "gather_uses", None)
    return bool(spec.has_gather and uses is not None and uses <= {"src"})


def allows_async(spec, caps, capability):
    """Asynchronous execution (IterationPlan.local_rounds / push_async, the executor's
    ``capability`` of that name) keeps the result only for programs that promise it
    (``asynchronous``) and whose state is the vertex fields alone."""
    return bool(getattr(caps, capability, False) and spec.asynchronous and spec.has_gather
                and spec.activate == "frontier" and spec.gather_from == "all"
                and not spec.has_scatter and not spec.edge_state and not spec.aggregates)


def phases_of(spec, dense):
    out = []
    if spec.has_gather:
        out.append("gather")
    if not dense:
        out.append("apply")
    if spec.activate != "all":
        out.append("activate")
    if spec.has_scatter:
        out.append("scatter")
    return tuple(out)


def gather_directions(spec):
    if not spec.has_gather:
        return ()
    return ("in", "out") if spec.gather_edges == "all" else (spec.gather_edges,)


def shard_facts(store, spec):
    """ShardFacts of every shard for the gather directions (degree maxima from the store)."""
    dirs = gather_directions(spec)
    intervals = np.asarray(store.intervals, dtype=np.int64)
    deg = {d: np.asarray(store.in_degree() if d == "in" else store.out_degree()) for d in dirs}
    out = []
    for i in range(store.num_shards):
        lo, hi = int(intervals[i]), int(intervals[i + 1])
        edges = tuple((d, int(deg[d][lo:hi].sum())) for d in dirs)
        tops = tuple((d, int(deg[d][lo:hi].max()) if hi > lo else 0) for d in dirs)
        out.append(balance.ShardFacts(i, hi - lo, edges, tops))
    return out


class Planner:
    """Plans for one program spec over one memory model.

    ``loaded(shard) -> bool`` tells whether a resident shard's data is already in the executor's
    memory (a session shares that across runs); the planner reports shards it schedules for loading
    through ``mark_loaded(shard)``.
    """

    def __init__(self, spec, store, memory: MemoryModel, caps, facts=None,
                 loaded: Optional[Callable] = None, mark_loaded: Optional[Callable] = None,
                 rule: Optional[DirectionRule] = None, lanes: bool = False, push_room=True,
                 local_rounds: int = 0, push_async: bool = True):
        self.spec, self.memory, self.caps = spec, memory, caps
        self.local_rounds = int(local_rounds) if allows_async(spec, caps, "local_rounds") else 0
        self.push_async = bool(push_async) and allows_async(spec, caps, "push_async")
        self.S = int(store.num_shards)
        self.intervals = np.asarray(store.intervals, dtype=np.int64)
        self.sizes = np.diff(self.intervals)
        self.n = int(store.num_vertices)
        self.facts = facts if facts is not None else shard_facts(store, spec)
        self.resident = frozenset(memory.resident)
        self.pinned = frozenset(memory.pinned)
        self._loaded = set()
        self._ready = set()   # resident shards known to be loaded (they stay until the session evicts)
        self.loaded = loaded or self._loaded.__contains__
        self.mark_loaded = mark_loaded or self._loaded.add
        self.cache_filled = set()
        self._slot = 0
        self.dense = is_dense(spec)
        self.hoist = hoistable(spec)
        self.phases = phases_of(spec, self.dense)
        self.dirs = gather_directions(spec)
        # edges a shard's unit works over: every direction whose arrays the program reads
        read = {n.split("/", 1)[0] for n in memory.names}
        self.unit_edges = np.array(
            [(info.num_in_edges if "in" in read else 0) + (info.num_out_edges if "out" in read else 0)
             for info in (store.shard_info(i) for i in range(self.S))], dtype=np.int64)
        self._edges = [int(e) for e in self.unit_edges]
        self.transfers = TransferPolicy(spec, memory, caps, self.facts)
        self._init_direction(store, rule, lanes, push_room)

    # ------------------------------------------------------------------ public
    def seed(self, counts, seeded=True) -> IterationPlan:
        """The start of a run: activation over the shards holding a seed vertex (``counts``:
        seed vertices per shard), then the first aggregates. Unseeded (every vertex active), it
        has no unit and only reduces the aggregates."""
        shards = [int(i) for i in np.flatnonzero(counts)] if seeded else []
        self.transfers.start()
        self.changed_sum = 0   # the run's changed sets so far (direction.asynchronous_push)
        units = self._units(shards, counts, dense=False)
        self.record, self._pull_next = "frontier", False
        plan = self._plan(0, units, shards, counts, phases=("activate",), seed=True,
                          all_active=not seeded, frontier=seeded)
        return replace(plan, activation="seed" if seeded else "")

    def plan(self, iteration, counts, all_active) -> IterationPlan:
        """The plan of ``iteration`` given active vertices per shard (``counts``)."""
        if self.spec.activate == "all":
            counts, all_active = self.sizes, True
        shards = [int(i) for i in np.flatnonzero(counts)]
        units = self._modes(iteration, self._units(shards, counts, dense=self.dense), counts)
        plan = self._plan(iteration, units, shards, counts, phases=self.phases, seed=False,
                          all_active=all_active)
        return self._with_format(plan, counts)

    # ------------------------------------------------------------------ direction (issue 8)
    def _init_direction(self, store, rule, lanes, push_room):
        """What the direction rule needs: whether push is allowed at all (``push_room``: the
        memory model holds push's arrays), and the edges a push walks per shard (the reverse of
        the gather directions) to estimate a changed set's."""
        self.rule = rule or DirectionRule()
        self.push_ok, self.push_reason = push_allowed(self.spec, self.caps, self.rule, lanes)
        self.threshold = threshold(self.rule, self.caps)
        if self.push_ok and not push_room:
            self.push_ok, self.push_reason = False, "the memory budget leaves no room for push"
        if self.spec.activate == "all" or not self.spec.has_gather:
            self.push_ok = False
        if self.push_ok and self.local_rounds:
            # local rounds re-gather a loaded unit's vertices: a pull-side schedule
            self.push_ok, self.push_reason = False, "local_rounds asked for: the run pulls"
        pushed = {"in": "out", "out": "in"}
        infos = [store.shard_info(i) for i in range(self.S)]
        self.push_edges = np.array(
            [sum(x.num_out_edges if pushed[d] == "out" else x.num_in_edges for d in self.dirs)
             for x in infos], dtype=np.int64)
        self.push_total = int(store.num_edges) * max(len(self.dirs), 1)
        self.record, self._pull_next, self.changed_sum = "frontier", False, 0
        self.run_push, self.run_reason = self.push_ok, self.push_reason

    def allow_push(self, program, state, seed):
        """Per run: push only where the vertices outside the seed send nothing that changes a
        neighbour (program/push.py ``seed_is_silent``; unknown counts as yes, as documented)."""
        self.run_push, self.run_reason = self.push_ok, self.push_reason
        if self.push_ok and seed is not None and seed_is_silent(self.spec, program, state, seed) is False:
            self.run_push = False
            self.run_reason = ("vertices outside the seed hold values their messages would "
                               "change neighbours with: this run pulls")

    def iteration(self, iteration, rb, all_active) -> IterationPlan:
        """The next plan of ``iteration`` after read back ``rb`` (of the seed plan, the previous
        iteration, or an activation plan of this one), by the rule of :mod:`.direction`.

        A push plan sends from the changed set (``rb.shard_changed``) and leaves the executor
        holding that set (its read back's ``shard_active`` counts it). When a pull follows a
        push, the pull frontier is not known yet: the plan returned is then an activation-only
        plan (``activation == "changed"``); the engine runs it and calls again with its read
        back, which gets the pull plan."""
        changed = rb.shard_changed
        if not self._pull_next:   # (else: the same changed set, after its activation plan)
            self.changed_sum += 0 if changed is None else int(np.sum(changed))
        direction = "pull"
        if self.push_ok and self.run_push and changed is not None and not self._pull_next:
            edges = rb.changed_edges if rb.changed_edges >= 0 else \
                int(self.push_shard_edges(changed).sum())
            direction = choose_direction(self.rule, True, edges, self.push_total, self.threshold)
        self._pull_next = False
        if direction == "push":
            self.record = "changed"
            return self.push(iteration, changed, rb.changed_edges)
        if self.record == "changed":
            self.record, self._pull_next = "frontier", True
            return self.activation(iteration, changed)
        return self.plan(iteration, rb.shard_active, all_active)

    def push(self, iteration, counts, edges=-1) -> IterationPlan:
        """A push plan: units over the shards holding changed vertices (``counts`` per shard)
        walk their edges from the source side; one apply over the vertices that received a
        message; the changed set is what the executor records.

        Streamed units take transfer modes like pull units (a sparse push reads only the changed
        rows of a zero-copied shard), estimated on the push edges per shard: each shard's
        changed vertices times its mean push degree, scaled to ``edges`` (the changed set's
        walked edges the executor counted; -1: unknown). Asynchronous plans (plan.py
        ``push_async``) where :func:`.direction.asynchronous_push` says so."""
        shards = [int(i) for i in np.flatnonzero(counts)]
        walk = self.push_shard_edges(counts, edges)
        asynchronous = asynchronous_push(self.push_async, self.changed_sum, self.n,
                                         float(walk.sum()), self.S)
        if asynchronous and shards:   # one unit per shard; resident ones an earlier unit
            # may change are visited too, from the first changed one on (visiting costs little)
            shards = [i for i in range(shards[0], self.S) if counts[i] or i in self.resident]
        units = [replace(u, direction="push")
                 for u in self._units(shards, counts, dense=False, single=asynchronous)]
        units = self._modes(iteration, units, counts, walk)
        plan = self._plan(iteration, units, shards, counts, phases=("gather",), seed=False,
                          all_active=False)
        plan = replace(plan, direction="push", hoist=False, dense=False,
                       workers=min(plan.workers, self.caps.push_workers or plan.workers))
        if asynchronous and units:
            plan = replace(plan, push_async=True, phases=("gather", "apply"), workers=1)
        return self._with_format(replace(plan, apply_scope="all" if units and not
                                         plan.push_async else "unit"), counts)

    def activation(self, iteration, counts) -> IterationPlan:
        """An activation-only plan over the changed set (``counts`` per shard): the pull
        frontier of the pull plan that follows a push one. No vertex field moves."""
        shards = [int(i) for i in np.flatnonzero(counts)]
        units = self._units(shards, counts, dense=False)
        plan = self._plan(iteration, units, shards, counts, phases=("activate",), seed=False,
                          all_active=False)
        plan = replace(plan, activation="changed", publish="none", publish_fields=(),
                       publish_edges=False, hoist=False, reduce=())
        return self._with_format(plan, counts)

    def _with_format(self, plan, counts):
        active = self.n if plan.all_active else int(np.sum(counts))
        fmt = choose_format(self.rule, self.caps, active, self.n)
        return plan if fmt == plan.frontier_format else replace(plan, frontier_format=fmt)

    def observe(self, plan, stats):
        """After ``plan`` ran: its measured statistics refine the transfer cost model."""
        self.transfers.observe(plan.iteration, stats, plan.direction)

    def push_shard_edges(self, counts, edges=-1):
        """Edges a push from ``counts`` changed vertices walks per shard (float64): the shard's
        mean push degree times its changed vertices, scaled to the total ``edges`` when known."""
        est = shard_edges(counts, self.push_edges, self.sizes)
        total = float(est.sum())
        if edges is not None and edges >= 0 and total > 0:
            est *= float(edges) / total
        return est

    # ------------------------------------------------------------------ pieces
    def _modes(self, iteration, units, counts, edges=None):
        """Each streamed unit's transfer: copy, compact or zerocopy (engine/transfers.py);
        ``edges``: a push plan's walked edges per shard."""
        return self.transfers.modes(iteration, units, counts, edges)

    def _plan(self, iteration, units, shards, counts, phases, seed, all_active, frontier=None):
        spec, mem = self.spec, self.memory
        touched = set(shards)
        skipped = tuple(i for i in range(self.S) if i not in touched)
        ran = bool(units)
        if seed:
            publish, fields = "none", ()
        elif not ran:
            publish, fields = "none", ()
        else:
            publish = "swap" if spec.activate == "all" else "copy"
            fields = tuple(sorted(spec.analysis.apply_writes))
        edge_work = sum(self._edges[i] for i in shards)
        workers = 1
        if not seed and self.caps.workers > 1 and len(units) > 1 and edge_work >= PARALLEL_EDGES:
            workers = min(self.caps.workers, len(units))
        copy = sum(u.nbytes for u in units)
        store = self._store_bytes
        return IterationPlan(
            iteration=iteration, units=tuple(units), skipped=skipped, phases=phases,
            apply_scope="all" if (self.dense and not seed and ran) else "unit",
            all_active=bool(all_active), dense=self.dense and not seed,
            hoist=self.hoist and ran and not seed and self._hoist_pays(shards, counts),
            frontier=(spec.activate != "all") if frontier is None else (frontier and spec.activate != "all"),
            publish=publish, publish_fields=fields,
            publish_edges=bool(spec.has_scatter and ran and not seed),
            reduce=tuple(spec.aggregates), workers=workers,
            bytes_device=mem.device_bytes, bytes_pinned=mem.pinned_bytes,
            bytes_scratch=mem.scratch_bytes, bytes_copy=int(copy), bytes_store=int(store), seed=seed,
            local_rounds=0 if seed or not ran else self.local_rounds)

    def _units(self, shards, counts, dense, single=False):
        """The units over ``shards``; ``single``: one shard each (asynchronous push plans)."""
        batch = not single and (self.caps.batch_resident == "always"
                                or (self.caps.batch_resident == "dense" and dense))
        resident_units, loads, streamed = [], [], []
        run = []
        touched = set(shards)
        ready = self._ready
        for i in shards:
            if i in ready or (i in self.resident and self.loaded(i) and not ready.add(i)):
                if batch:
                    if run and not self._same_run(run[-1], i, touched):
                        resident_units.append(run)
                        run = []
                    run.append(i)
                else:
                    resident_units.append([i])
            elif i in self.resident:
                loads.append(i)
                self.mark_loaded(i)
            elif streamed and not single and self._joins(streamed[-1], i):
                streamed[-1].append(i)
            else:
                streamed.append([i])
        if run:
            resident_units.append(run)
        resident_units = [u for r in resident_units for u in self._split(r)]
        mk = self._unit
        res = [mk(u, "resident", counts) for u in resident_units]
        loads = [mk([i], "load", counts) for i in loads]
        self._store_bytes = sum(u.nbytes for u in loads)
        moved = []
        for group in streamed:
            slot = self._slot
            self._slot = (self._slot + 1) % max(self.memory.slots, 1)
            src = "pinned" if group[0] in self.pinned else "store"
            nbytes = self._span_bytes(group)
            moved.append(mk(group, "copy", counts, slot=slot, source=src, nbytes=nbytes))
            if src == "store" or any(i not in self.cache_filled for i in group):
                self._store_bytes += sum(self.memory.regions[i] for i in group
                                         if src == "store" or i not in self.cache_filled)
            self.cache_filled.update(i for i in group if i in self.pinned)
        if self.caps.batch_resident == "dense" and dense:
            # GPU dense: the batched resident shards spread between the moved units, so that each
            # copy overlaps a resident chunk's kernels
            moved = _alternate(loads, moved)
            flat = [i for u in res for i in u.shards]
            chunks = [[int(i) for i in p] for p in np.array_split(np.asarray(flat, dtype=np.int64),
                                                                   len(moved) + 1)]
            first = [mk(chunks[0], "resident", counts)] if chunks[0] else []
            rest = [mk(c, "resident", counts) if c else None for c in chunks[1:]]
            out = list(first)
            for unit, chunk in zip(moved, rest):
                out.append(unit)
                if chunk is not None:
                    out.append(chunk)
            return out
        return _alternate(sorted(res + loads, key=lambda u: u.shards[0]), moved)

    def _hoist_pays(self, shards, counts):
        """Hoisting computes one message per vertex of the graph: an executor that may skip it
        (``caps.adaptive_hoist``) does when the frontier's edges are fewer than the vertices."""
        if not self.caps.adaptive_hoist:
            return True
        work = sum(self._edges[i] * int(counts[i]) / max(int(self.sizes[i]), 1) for i in shards)
        return work >= self.n

    def _same_run(self, a, b, touched):
        """Whether loaded resident shards a < b can share a unit: every shard between them is
        resident and skipped this iteration, so one pass over the run's data covers both and no
        other unit works on the vertices between them."""
        return all(j in self.resident and j not in touched for j in range(a + 1, b))

    def _split(self, run):
        """A run of resident shards as ``workers`` units of about equal edges when worth it, and
        in pieces of at most ``caps.unit_edges`` edges (one shard at least)."""
        limit, k = self.caps.unit_edges, self.caps.workers
        if len(run) <= 1 or (limit is None and k <= 1):
            return [run]
        total = sum(self._edges[i] for i in run)
        if limit is not None and total > limit:
            pieces, cur, size = [], [], 0
            for i in run:
                if cur and size + int(self.unit_edges[i]) > limit:
                    pieces.append(cur)
                    cur, size = [], 0
                cur.append(i)
                size += int(self.unit_edges[i])
            return pieces + [cur]
        if k <= 1 or total < PARALLEL_EDGES:
            return [run]
        cum = np.cumsum(self.unit_edges[run])
        cuts = np.searchsorted(cum, cum[-1] * np.arange(1, k) / k, side="left") + 1
        bounds = [0] + sorted(set(int(c) for c in cuts if 0 < c < len(run))) + [len(run)]
        return [run[a:b] for a, b in zip(bounds, bounds[1:])]

    def _unit(self, shards, transfer, counts, slot=None, source="", nbytes=None):
        facts = [self.facts[i] for i in shards]
        actives = [int(counts[i]) for i in shards]
        if nbytes is None:
            nbytes = self._span_bytes(shards) if transfer == "load" else 0
        return Unit(shards=tuple(int(i) for i in shards), transfer=transfer,
                    balance=balance.choose(self.caps.kind, facts, actives, self.spec, self.caps),
                    slot=slot,
                    source=source, active=int(sum(actives)), nbytes=int(nbytes))

    def _span_bytes(self, group):
        """Bytes one copy of ``group`` moves: the pinned-cache span from its first shard's start to
        its last shard's end (one range), or the sum of the regions."""
        regions = self.memory.regions
        if len(group) > 1:
            offs = self.memory.pinned_offsets
            return offs[group[-1]] + regions[group[-1]] - offs[group[0]]
        return int(regions[group[0]])

    def _joins(self, unit, j):
        """Streamed shard ``j`` can share ``unit``'s copy: both in the pinned cache, ``j`` right
        after the unit's last shard there, and the whole range fits one slot."""
        if self.caps.batch_copies is False:
            return False
        offs, regions = self.memory.pinned_offsets, self.memory.regions
        last = unit[-1]
        if j not in offs or last not in offs or offs[j] != offs[last] + regions[last]:
            return False
        return offs[j] + regions[j] - offs[unit[0]] <= self.memory.slot_bytes


def _alternate(first, second):
    """first[0], second[0], first[1], second[1], ... then the rest of the longer one."""
    out = []
    for k in range(max(len(first), len(second))):
        if k < len(first):
            out.append(first[k])
        if k < len(second):
            out.append(second[k])
    return out
