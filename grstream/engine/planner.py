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
  the work is large enough to share; the GPU's "dense_push": dense plans, and push plans whose
  shards are all resident, one unit without per-unit events); resident and streamed units alternate, a resident one
  first, so a copy overlaps a resident unit's compute (dense GPU plans spread the batched
  resident shards between the streamed units instead);
- phase elimination, dense mode, hoisting and the publish rule follow from the program (hoisting
  also from the frontier where the executor can run without it);
- direction and frontier format per iteration: :meth:`Planner.iteration` applies the
  rule of :mod:`.direction` to the last read back and returns a push plan, a pull plan, or, when
  a push iteration is followed by a pull one, first the activation plan that turns the changed
  set into the pull frontier.
"""
from dataclasses import replace
from typing import Callable, Optional

import numpy as np

from . import balance
from .direction import (DirectionRule, asynchronous, asynchronous_push, choose_direction,
                        choose_format, gauss_seidel, next_queue, shard_edges, push_allowed,
                        threshold)
from .capabilities import Capabilities, Feature, Policies
from .rounds import allows_local_rounds, local_fraction
from .state import ConstantState
from ..program.push import seed_is_silent
from .grouping import PARALLEL_EDGES, UnitGrouping
from .memory import TIERS, MemoryModel
from .plan import IterationPlan, unit_tier
from .schedule import gather_directions, hoistable, is_dense, logical_name, needed_arrays  # noqa: F401  (re-exported)
from ..errors import InternalError
from .transfers import TransferPolicy


def phases_of(spec, dense):
    out = []
    if spec.has_gather:
        out.append("gather")
    if not dense:
        out.append("apply")
    if spec.activate == "frontier":   # (a schedule, not the changed set, gives the next one)
        out.append("activate")
    if spec.has_scatter:
        out.append("scatter")
    return tuple(out)


def shard_facts(store, spec):
    """ShardFacts of every shard for the gather directions (degree maxima and row-group edge
    maxima from the store's degrees)."""
    dirs = gather_directions(spec)
    intervals = np.asarray(store.intervals, dtype=np.int64)
    deg = {d: np.asarray(store.in_degree() if d == "in" else store.out_degree()) for d in dirs}
    out = []
    for i in range(store.num_shards):
        lo, hi = int(intervals[i]), int(intervals[i + 1])
        edges = tuple((d, int(deg[d][lo:hi].sum())) for d in dirs)
        tops = tuple((d, int(deg[d][lo:hi].max()) if hi > lo else 0) for d in dirs)
        groups = tuple((d, balance.group_max(deg[d][lo:hi])) for d in dirs)
        out.append(balance.ShardFacts(i, hi - lo, edges, tops, groups))
    return out


def tier_counts(units, from_store, regions):
    """((tier, shards, bytes), ...) over ``units`` in :data:`.memory.TIERS` order: shards a unit
    reads where they stay ("resident", "held") come from executor memory, the others from the
    pinned cache unless ``from_store`` (read from the file for this plan); bytes are each shard's
    region."""
    shards, nbytes = dict.fromkeys(TIERS, 0), dict.fromkeys(TIERS, 0)
    for u in units:
        for i in u.shards:
            tier = unit_tier(u, i, from_store)
            shards[tier] += 1
            nbytes[tier] += int(regions[i])
    return tuple((t, shards[t], nbytes[t]) for t in TIERS)


class Planner(UnitGrouping):
    """Plans for one program spec over one memory model, for an executor with capabilities
    ``caps`` whose class hands over ``policies`` (load balance, calibration).

    ``loaded(shard) -> bool`` tells whether a resident shard's data is already in the executor's
    memory (a session shares that across runs); the planner reports shards it schedules for loading
    through ``mark_loaded(shard)``.
    """

    def __init__(self, spec, store, memory: MemoryModel, caps: Capabilities, policies: Policies,
                 facts=None,
                 loaded: Optional[Callable] = None, mark_loaded: Optional[Callable] = None,
                 rule: Optional[DirectionRule] = None, lanes: bool = False, push_room=True,
                 local_rounds: int = 0, push_async: bool = True):
        self.spec, self.memory, self.caps, self.policies = spec, memory, caps, policies
        self.local_rounds = int(local_rounds) if allows_local_rounds(spec, caps) else 0
        self.push_async = bool(push_async and caps.push is not None and caps.push.asynchronous
                               and asynchronous(spec))
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
        self.held = {}   # streaming slot -> (shards, "push" / "all") it holds (remember_slots)
        self._promised = None   # the last plan's ahead copy (grouping._ahead)
        self.lanes = bool(lanes)
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
        self.transfers = TransferPolicy(spec, memory, caps, self.facts, policies.calibration)
        # a push-only memory model (direction.push_only) holds no pull arrays: such runs push
        self.pull_room = set(needed_arrays(spec)) <= {logical_name(n) for n in memory.names}
        # publish "unit" on pull plans (push and activation plans replace the publish rule)
        self._unit_publish = gauss_seidel(spec, caps) and not self.dense and not self.local_rounds
        self._init_direction(store, rule, lanes, push_room)

    # ------------------------------------------------------------------ public
    def seed(self, counts, seeded=True) -> IterationPlan:
        """The start of a run: activation over the shards holding a seed vertex (``counts``:
        seed vertices per shard), then the first aggregates. Unseeded (every vertex active), it
        has no unit and only reduces the aggregates."""
        shards = [int(i) for i in np.flatnonzero(counts)] if seeded else []
        self.transfers.start()
        self.changed_sum = 0   # the run's changed sets so far (direction.asynchronous_push)
        self.held = {}         # a run reuses only what its own plans left in the slots
        self._promised = None
        # the seeds' rows take a transfer mode like any pull unit's: a source's shard is read in
        # place rather than copied whole for one row (a push from it follows)
        units = self.transfers.modes(0, self._units(shards, counts, dense=False), counts, seed=True)
        self.record, self._pull_next = "frontier", False
        plan = self._plan(0, units, shards, counts, phases=("activate",), seed=True,
                          all_active=not seeded, frontier=seeded)
        return replace(plan, activation="seed" if seeded else "")

    def run_state(self):
        """What the direction rule carries from one iteration to the next (a checkpoint's)."""
        return {"record": self.record, "changed_sum": int(self.changed_sum),
                "run_push": bool(self.run_push), "run_reason": self.run_reason}

    def resume(self, state):
        """A run resumed from a checkpoint (``state``: :meth:`run_state` then): what
        :meth:`seed` resets for a new run, and the direction rule's state as it was."""
        self.transfers.start()
        self.held, self._promised = {}, None
        self.record, self._pull_next = state["record"], False
        self.changed_sum = int(state["changed_sum"])

    def preload(self) -> IterationPlan:
        """A resumed run's first plan: its resident shards (this process's) read into place and
        nothing computed, as the interrupted run's earlier iterations had left them, so that
        the next plan groups them, and adds their terms, as the uninterrupted run would."""
        counts = self.sizes
        shards = [i for i in range(self.S) if counts[i] and i in self.resident and not self._is_ready(i)]
        units = self._units(shards, counts, dense=False)   # one "load" unit each
        return self._plan(0, units, shards, counts, phases=(), seed=True, all_active=True,
                          frontier=False)

    def plan(self, iteration, counts, all_active) -> IterationPlan:
        """The plan of ``iteration`` given active vertices per shard (``counts``)."""
        if self.spec.activate == "all":
            counts, all_active = self.sizes, True
        if not self.pull_room:   # the session gives runs that pull a model with the pull arrays
            raise InternalError(f"{self.spec.name}: a pull plan on a memory model without the pull arrays")
        shards = [int(i) for i in np.flatnonzero(counts)]
        units = self._modes(iteration, self._units(shards, counts, dense=self.dense), counts)
        return self._plan(iteration, units, shards, counts, phases=self.phases, seed=False,
                          all_active=all_active, **self._format(all_active, counts))

    # ------------------------------------------------------------------ direction
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

    def allow_push(self, program, state, seed, ranks=None):
        """Per run: push only where the vertices outside the seed send nothing that changes a
        neighbour (program/push.py ``seed_is_silent``; unknown counts as yes, as documented).
        ``ranks``: each MPI rank checks its own vertices and the ranks agree (collective); a
        declared state (``ConstantState``) is checked on its distinct rows."""
        self.run_push, self.run_reason = self.push_ok, self.push_reason
        world = () if ranks is None else (ranks.span, ranks.exchange.gather)
        if isinstance(state, ConstantState) and seed is not None:   # (every rank alike, no pass of n)
            (state, seed), world = state.rows(), ()
        if self.push_ok and seed is not None and seed_is_silent(self.spec, program, state, seed, *world) is False:
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
                                         float(walk.sum()), self.S,
                                         "edge" in self.spec.analysis.gather_uses)
        if asynchronous and shards:   # one unit per shard; resident ones an earlier unit
            # may change are visited too, from the first changed one on (visiting costs little)
            shards = [i for i in range(shards[0], self.S) if counts[i] or i in self.resident]
        units = self._units(shards, counts, dense=False, push=True, single=asynchronous)
        why = balance.merge_pushes(self.caps, walk, self.push_edges, self.sizes)
        merged = {int(i): int(why[i]) for i in np.flatnonzero(why)}
        units = self._batch_zerocopy(self._modes(iteration, units, counts, walk,
                                                 hubs=balance.hub_walk(self.caps, edges, int(np.sum(counts))),
                                                 merged=merged))
        if not asynchronous:
            units = self._spread_table(units, counts)
        late = asynchronous and units   # (Gauss-Seidel: each unit applies at once, in order)
        return self._plan(iteration, units, shards, counts, phases=("gather", "apply") if late else ("gather",),
                          seed=False, all_active=False, per_unit=False,
                          workers_cap=1 if late else self.caps.push.workers or None,
                          direction="push", hoist=False, dense=False, phase_scope="unit",
                          apply_scope="unit" if late or not units else "all", push_async=bool(late),
                          **self._format(False, counts))

    def activation(self, iteration, counts) -> IterationPlan:
        """An activation-only plan over the changed set (``counts`` per shard): the pull
        frontier of the pull plan that follows a push one. No vertex field moves."""
        shards = [int(i) for i in np.flatnonzero(counts)]
        units = self._units(shards, counts, dense=False)
        return self._plan(iteration, units, shards, counts, phases=("activate",), seed=False,
                          all_active=False, activation="changed", publish="none", publish_fields=(),
                          publish_edges=False, hoist=False, reduce=(), **self._format(False, counts))

    def _format(self, all_active, counts):
        """The frontier format of a plan over ``counts`` active vertices per shard (every vertex
        where ``all_active``) and its queue limit, as IterationPlan fields."""
        active = self.n if all_active else int(np.sum(counts))
        fmt = choose_format(self.rule, self.caps, active, self.n)
        return {"frontier_format": fmt, "next_queue": next_queue(fmt, self.n)}

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
    def _modes(self, iteration, units, counts, edges=None, hubs=False, merged=None):
        """Each streamed unit's transfer: copy, compact or zerocopy (engine/transfers.py);
        ``edges``: a push plan's walked edges per shard. Then each unit's load balance as the
        executor runs it with that transfer and direction (balance.as_run; ``hubs``: push units
        take the hub path; ``merged``: shard -> why a push walks it edge-balanced,
        balance.merge_pushes)."""
        units = self.transfers.modes(iteration, units, counts, edges, merged=merged)
        out = []
        for u in units:
            run = balance.as_run(u, self.caps, hubs, merged)
            out.append(u if run == u.balance else replace(u, balance=run))
        return out

    def _plan(self, iteration, units, shards, counts, phases, seed, all_active, frontier=None,
              per_unit=True, workers_cap=None, **given):
        """The plan over ``units``; ``given``: IterationPlan fields a kind of plan sets
        otherwise (push, activation), given over the ones worked out here; ``workers_cap``: at
        most that many workers."""
        spec, mem = self.spec, self.memory
        units = self._early(units)
        self.remember_slots(units)
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
        workers = min(workers, workers_cap or workers)
        copy = sum(u.nbytes for u in units)
        store = self._store_bytes
        tiers = tier_counts(units, self._from_store, mem.regions)
        hoist = self.hoist and ran and not seed and self._hoist_pays(shards, counts)
        local = 0 if seed or not ran else self.local_rounds
        if publish == "copy" and per_unit and self._unit_publish and len(units) > 1 and not hoist:
            # Gauss-Seidel: a later unit's gather reads what an earlier unit applied (plan.py)
            publish = "unit"
        dense = self.dense and not seed
        # an executor whose per-unit state holds one interval runs a multi-shard unit shard by
        # shard (push plans, which combine per receiver, set "unit" again)
        scope = ("shard" if self.caps.batching.shard_phases and not dense
                 and any(len(u.shards) > 1 for u in units) else "unit")
        # a dense pull's next plan starts with a copy that can start after this plan's units
        ahead = self._ahead(shards) if dense and ran and "gather" in phases and not seed else None
        return IterationPlan(**{**dict(
            iteration=iteration, units=tuple(units), skipped=skipped, phases=phases,
            phase_scope=scope,
            apply_scope="all" if (dense and ran) else "unit",
            all_active=bool(all_active), dense=dense,
            hoist=hoist,
            frontier=(spec.activate == "frontier") if frontier is None else (frontier and spec.activate == "frontier"),
            publish=publish, publish_fields=fields,
            publish_edges=bool(spec.has_scatter and ran and not seed),
            reduce=tuple(spec.aggregates), workers=workers,
            bytes_device=mem.device_bytes, bytes_pinned=mem.pinned_bytes,
            bytes_scratch=mem.scratch_bytes, bytes_copy=int(copy), bytes_store=int(store), seed=seed,
            tiers=tiers, from_store=frozenset(i for i in shards if i in self._from_store),
            local_rounds=local, local_fraction=local_fraction(local), ahead=ahead), **given})

    def _hoist_pays(self, shards, counts):
        """Hoisting computes one message per vertex of the graph: an executor that may skip it
        (``Feature.ADAPTIVE_HOIST``) does when the frontier's edges are fewer than the vertices."""
        if not self.caps.has(Feature.ADAPTIVE_HOIST):
            return True
        work = sum(self._edges[i] * int(counts[i]) / max(int(self.sizes[i]), 1) for i in shards)
        return work >= self.n
