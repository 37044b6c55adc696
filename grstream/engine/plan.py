"""The plan of one iteration, as plain data: what every executor runs, decided by the engine.

A plan is built by :class:`grstream.engine.planner.Planner` from the frontier (active vertices per
shard), the memory model and the executor's capabilities; it is printable (``str(plan)``),
comparable (``==``), built and tested without a GPU, and summarised into every iteration's
statistics (``IterationStats.plan``, shown by ``--stats-json``).

An executor runs a plan in this order (docs/ARCHITECTURE.md, grstream/engine/executor.py)::

    begin(plan)                                     # clear counters and the next frontier; hoist
    for unit, data in load(plan):                   # plan.units, in order, data moved per transfer
        for part in (shard_data(unit, data) if plan.phase_scope == "shard" else [data]):
            for phase in plan.phases:               # per-unit phases, after phase elimination
                gather / apply / activate / scatter (plan, unit, part)
        done(plan, unit)
    if plan.apply_scope == "all": apply(plan, None, None)   # dense: one apply over every vertex
    publish(plan); reduce(plan); read_back(plan, stats)

Vocabulary (every field is a str / int / tuple so that plans compare and print exactly; the one
float, ``local_fraction``, holds the engine's dyadic default or 0, exact too):

direction
    ``"pull"``: every active vertex gathers over its own edges (``spec.gather_edges``) and writes
    only itself. ``"push"``: the changed vertices' edges are walked from the source side,
    messages combined per receiver, one apply over the receivers (phases ("gather",), apply_scope "all"); the plan
    records the changed set, not the pull frontier.
transfer (per unit)
    ``"resident"``: the shards' data is already held by the executor (loaded by an earlier
    iteration or run of the same session); nothing moves. ``"load"``: the shards are resident but
    not loaded yet: read them once (store -> executor memory) into their resident place, where they
    stay. ``"copy"``: streamed: read (from the pinned host cache when ``source == "pinned"``, else
    from the store through a staging buffer) and copied into streaming slot ``slot``; the slot is
    reused by a later unit. ``"compact"``: streamed like "copy" (slot ``slot``), but only the
    active vertices' rows move: full-length ``indptr`` arrays with empty rows for inactive vertices
    and the active rows' edges (grstream/engine/compaction.py). ``"zerocopy"``: nothing is copied;
    the kernels read the shard where it lies in the pinned host cache (mapped memory; ``slot``
    None). ``"held"``: the shard is still in streaming slot ``slot``, where a "copy" unit of an
    earlier plan of the run put it and no unit has written since (with the arrays this plan
    reads: a push copy holds only the push arrays); nothing moves, later units may reuse the slot
    (not under a forced transfer mode, ``Capabilities.forced``). The planner chooses among
    them per streamed shard (grstream/engine/transfers.py, grstream/engine/costs.py); ``nbytes``
    is then its estimate of the bytes over the link. Skipped shards (no active vertex) are not
    in any unit; they are listed in ``plan.skipped``. A "copy" unit with ``early`` set was copied
    by the previous plan (its ``ahead``), which the executor ran after that plan's units: it
    finds its data in its slot, in stream order, and moves nothing more.
ahead
    A copy the executor starts once the plan's units are queued (``Feature.COPY_AHEAD``), into a
    slot none of them reads afterwards: the next dense plan's first copy, which then runs while
    this plan's last kernels, apply, read back and the next planning do (its copy's kernels wait
    for it; nothing else does). The planner counts the slot as holding those shards from then
    on; the next plan marks the unit that finds them there ``early`` (a plan of another shape
    reads them as "held", or overwrites the slot). None: nothing.
balance (per shard of a unit)
    The load-balance strategy of the shard's gather. CPU: ``"full"`` (every vertex of the shard is
    active: sweep all its edges), ``"sweep"`` (many active: sweep all edges, drop inactive
    results), ``"select"`` (few active: select the active vertices' edges). CUDA: ``"twc"``,
    ``"merge"``. See :mod:`grstream.engine.balance`.
phases
    The per-unit phases in order, a subset of ``("gather", "apply", "activate", "scatter")``:
    programs without gather_map have no "gather", topology-driven programs (``activate="all"``) no
    "activate", programs without scatter no "scatter"; dense plans (``apply_scope == "all"``) have
    no per-unit "apply".
publish
    How ``cur`` takes ``nxt`` for ``publish_fields`` after every unit ran: ``"swap"`` (every vertex
    was applied, so the arrays trade places), ``"copy"`` (``cur[v] = nxt[v]`` for the applied
    vertices; ``nxt`` equals ``cur`` elsewhere), ``"unit"`` (each unit's apply ends by copying
    its intervals of ``nxt`` into ``cur``, so later units gather from the values just written:
    Gauss-Seidel, for asynchronous programs on executors with ``Feature.PUBLISH_UNIT``; nothing
    is left at the end), ``"none"`` (no unit ran).

phase_scope
    ``"unit"``: each phase runs over the whole unit; ``"shard"``: a unit of several shards runs
    every phase on its first shard, then on the next (the engine hands the executor one shard's
    data at a time, ``Executor.shard_data``). The planner makes pull plans with multi-shard units
    "shard" for executors whose per-unit state holds one interval (``Batching.shard_phases``).
next_queue
    The next frontier a plan with ``frontier_format == "queue"`` builds stays a list of ids while
    a unit's newly activated vertices are at most this many, and goes into the bitmap beyond
    (0: the bitmap always); the planner sets it (direction.py ``next_queue``).
local_rounds, local_fraction
    After a unit's first apply the executor may run up to ``local_rounds`` further gather+apply
    rounds over the unit's own vertices that a changed vertex of the unit activates, reading
    the values just written (asynchronous local rounds, Subway-async / Seraph), each only while
    the vertices it would gather are at most ``local_fraction`` of the unit's vertex span (0:
    no limit); every vertex changed in any round counts as changed for activation. Set only for
    programs that declare ``asynchronous = True`` and have no scatter, edge state, aggregates or
    ``gather_from = "changed"`` (grstream/engine/rounds.py).
push_async
    Push plans only, for the programs local rounds are for, on executors with
    ``PushFacts.asynchronous``: phases ("gather", "apply") per unit, apply_scope "unit", workers
    1. Each unit sends from the vertices of its shards whose newest value has not been sent yet
    (the changed set at the start, plus those an earlier unit of the plan changed), applies its
    receivers at once and writes ``cur`` (later units read the new values: Gauss-Seidel); the
    changed set the plan records is the vertices whose new value no unit sent. Results equal the
    synchronous plans'.
activation
    ``""``: a computing plan; ``"seed"``: the seeding pass over the seed; ``"changed"``: an
    activation-only plan over the previous (push) iteration's changed set, the pull frontier of
    the pull plan that follows.
"""
from dataclasses import dataclass, field
from typing import FrozenSet, Optional, Tuple

DIRECTIONS = ("pull", "push")
FRONTIER_FORMATS = ("bitmap", "queue")
ACTIVATIONS = ("", "seed", "changed")
TRANSFERS = ("resident", "load", "copy", "compact", "zerocopy", "held")
PHASES = ("gather", "apply", "activate", "scatter")
PUBLISH = ("swap", "copy", "unit", "none")
PHASE_SCOPES = ("unit", "shard")


@dataclass(frozen=True)
class Unit:
    """Shards one executor handles as one piece: one copy (streamed units) or one pass / launch
    over several resident shards. Shards are in ascending order and are all active."""

    shards: Tuple[int, ...]
    transfer: str                         # see TRANSFERS
    balance: Tuple[str, ...]              # one load-balance strategy per shard
    direction: str = "pull"               # see DIRECTIONS
    executor: int = 0                     # which executor (room for several GPUs)
    slot: Optional[int] = None            # streaming slot of a "copy", "compact" or "held" unit
    source: str = ""                      # "copy": "pinned" (host cache) or "store"; else ""
    active: int = 0                       # active vertices of the unit's shards
    nbytes: int = 0                       # bytes this unit moves (0 when resident)
    early: bool = False                   # "copy": the previous plan's ahead copy moved it

    def __str__(self):
        span = (f"{self.shards[0]}" if len(self.shards) == 1
                else f"{self.shards[0]}..{self.shards[-1]}" if _consecutive(self.shards)
                else ",".join(map(str, self.shards)))
        where = f"@{self.slot}" if self.slot is not None else ""
        src = f"<{self.source}" if self.source else ""
        kinds = sorted(set(self.balance))
        return (f"[{span}] {self.direction} {self.transfer}{where}{src} {'/'.join(kinds)} "
                f"active={self.active}" + (f" {self.nbytes}B" if self.nbytes else "")
                + (f" ex{self.executor}" if self.executor else "") + (" early" if self.early else ""))


@dataclass(frozen=True)
class IterationPlan:
    """Everything an executor needs to run one iteration; see the module docstring."""

    iteration: int
    units: Tuple[Unit, ...]
    skipped: Tuple[int, ...]
    phases: Tuple[str, ...]
    apply_scope: str = "unit"             # "unit": apply per unit; "all": one apply after all units
    all_active: bool = False              # every vertex is active (gather needs no frontier test)
    dense: bool = False                   # one message per vertex (apply_scope "all")
    hoist: bool = False                   # compute gather_map once per vertex before the units
    frontier: bool = True                 # compute the next frontier (activate="all": False)
    publish: str = "copy"                 # see PUBLISH
    publish_fields: Tuple[str, ...] = ()  # vertex fields apply writes
    publish_edges: bool = False           # scatter's edge writes land after the units
    reduce: Tuple[str, ...] = ()          # aggregates to reduce over cur after publish
    workers: int = 1                      # units the executor may run at once (1: in order)
    executors: int = 1                    # executors the units are spread over
    bytes_device: int = 0                 # executor memory held: static + resident + slots + scratch
    bytes_pinned: int = 0                 # pinned host memory held: cache + staging
    bytes_scratch: int = 0                # part of bytes_device that is scratch (temporaries)
    bytes_copy: int = 0                   # bytes the units move this iteration
    bytes_store: int = 0                  # of which read from the store
    seed: bool = False                    # the seeding pass of start (phases == ("activate",))
    direction: str = "pull"               # see DIRECTIONS: every unit's direction
    frontier_format: str = "bitmap"       # see FRONTIER_FORMATS
    activation: str = ""                  # see ACTIVATIONS: an activation-only plan's sources
    local_rounds: int = 0                 # further in-unit rounds after a unit's apply (async)
    local_fraction: float = 0.0           # a local round's in-unit frontier limit (0: none)
    push_async: bool = False              # push units apply at once, in order (Gauss-Seidel)
    phase_scope: str = "unit"             # see PHASE_SCOPES: a unit's phases over it, or per shard
    next_queue: int = 0                   # a unit's next-frontier ids stay a queue up to this many
    #: (tier, shards, bytes) per memory tier the shards are served from ("resident": executor
    #: memory, "pinned": the pinned host cache, "store": read from the file; engine/memory.py)
    tiers: Tuple[Tuple[str, int, int], ...] = ()
    #: the shards this plan reads from the store (tier "store"; see :func:`unit_tier`)
    from_store: FrozenSet[int] = frozenset()
    #: a copy for the next plan, started after this plan's units (see ``ahead`` above)
    ahead: Optional[Unit] = None

    @property
    def shards(self):
        """Every shard the plan touches, in execution order."""
        return tuple(i for u in self.units for i in u.shards)

    def summary(self) -> dict:
        """A small JSON-able digest for the iteration statistics."""
        transfer, balance, direction = {}, {}, {}
        for u in self.units:
            transfer[u.transfer] = transfer.get(u.transfer, 0) + len(u.shards)
            direction[u.direction] = direction.get(u.direction, 0) + len(u.shards)
            for b in u.balance:
                balance[b] = balance.get(b, 0) + 1
        return {"units": len(self.units), "shards": len(self.shards), "skipped": len(self.skipped),
                "transfer": transfer, "balance": balance, "direction": direction,
                "phases": list(self.phases), "apply_scope": self.apply_scope, "dense": self.dense,
                "all_active": self.all_active, "hoist": self.hoist, "publish": self.publish,
                "workers": self.workers, "bytes_device": self.bytes_device,
                "bytes_pinned": self.bytes_pinned, "bytes_scratch": self.bytes_scratch,
                "bytes_copy": self.bytes_copy, "bytes_store": self.bytes_store,
                "plan_direction": self.direction, "frontier_format": self.frontier_format,
                "activation": self.activation, "local_rounds": self.local_rounds,
                "local_fraction": self.local_fraction, "push_async": self.push_async,
                "phase_scope": self.phase_scope, "next_queue": self.next_queue,
                "ahead": len(self.ahead.shards) if self.ahead is not None else 0,
                "tiers": {t: {"shards": k, "bytes": b} for t, k, b in self.tiers},
                "shard_modes": {str(i): u.transfer for u in self.units for i in u.shards
                                if u.transfer in ("copy", "compact", "zerocopy", "held")},
                "shard_tiers": {str(i): unit_tier(u, i, self.from_store)
                                for u in self.units for i in u.shards}}

    def __str__(self):
        head = (f"iteration {self.iteration}{' (seed)' if self.seed else ''}: "
                f"{len(self.shards)} shards in {len(self.units)} units, {len(self.skipped)} skipped; "
                f"phases {'+'.join(self.phases) or '-'}"
                + (" then apply(all)" if self.apply_scope == "all" else "")
                + f"; publish {self.publish}"
                + (f" {','.join(self.publish_fields)}" if self.publish_fields else "")
                + ("; dense" if self.dense else "") + ("; all active" if self.all_active else "")
                + ("; hoist" if self.hoist else "") + ("; push async" if self.push_async else "")
                + ("; phases per shard" if self.phase_scope == "shard" else "")
                + (f"; {self.workers} workers" if self.workers > 1 else "")
                + f"; device {self.bytes_device}B (scratch {self.bytes_scratch}B), "
                  f"pinned {self.bytes_pinned}B, moves {self.bytes_copy}B"
                + ("; tiers " + ", ".join(f"{t} {k} ({b}B)" for t, k, b in self.tiers if k)
                   if any(k for _, k, _ in self.tiers) else ""))
        tail = [f"  ahead {self.ahead}"] if self.ahead is not None else []
        return "\n".join([head] + [f"  {u}" for u in self.units] + tail)


def unit_tier(unit, shard, from_store):
    """The memory tier ``shard`` of ``unit`` is served from: "store" when read from the file for
    the plan, "resident" where it stays in executor memory (transfers "resident", "held"), else
    "pinned" (the pinned host cache)."""
    if shard in from_store:
        return "store"
    return "resident" if unit.transfer in ("resident", "held") else "pinned"


def _consecutive(shards):
    return all(b == a + 1 for a, b in zip(shards, shards[1:]))


@dataclass
class Readback:
    """What an executor reports after an iteration (the counterpart of the plan).

    ``shard_active`` holds the next frontier's active vertices per shard (all intervals' sizes
    when the program is topology-driven): the engine's next plan is built from it.
    """

    shard_active: "object"                # int64 array, one count per shard
    changed_vertices: int = 0
    active_edges: int = 0
    aggregates: dict = field(default_factory=dict)
    lane_active: "object" = None          # lanes: active vertices per lane (Executor.set_lanes)
    shard_changed: "object" = None        # int64 per shard: vertices apply changed (None: unknown)
    changed_edges: int = -1               # edges a push from the changed set walks (-1: unknown)
    total_active: int = -1                # ranks: the world's next frontier (-1: shard_active's sum)


@dataclass
class Touched:
    """What a plan left on one executor after its publish (``Executor.touched``): what ranks
    exchange (grstream/distributed/rank_executor.py).

    ``applied``: sorted ids whose fields the plan's applies wrote; ``frontier``: the next
    frontier's sorted ids (None: every vertex, or a plan without a frontier); ``changed``: the
    sorted ids the plan changed where the executor keeps the changed set for the next plan (push
    senders, ``gather_from = "changed"`` sources; None: it keeps none); ``edges``: sorted
    positions of the edge state it wrote; ``changed_count`` and ``edges_walked``: its counters;
    ``lanes``: in lanes (Session.run_lanes), the next frontier of every lane as sorted flat ids
    ``vertex * lanes + lane`` of ``lane_space`` (n * lanes) positions (None: not lanes, or
    topology-driven lanes)."""

    applied: "object"
    frontier: "object" = None
    changed: "object" = None
    edges: "object" = None
    changed_count: int = 0
    edges_walked: int = 0
    lanes: "object" = None
    lane_space: int = 0


@dataclass
class RunState:
    """A run as an executor holds it between two iterations, on the host: what a checkpoint
    keeps of the executor (:meth:`Executor.save_run`, :meth:`Executor.restore_run`).

    ``fields``: every vertex field's current values (length n); ``edges``: the mutable edge
    state (global CSR order); the vertex sets as sorted int64 ids, None meaning every vertex:
    ``active`` the current frontier, ``changed`` the set a push sends from next (the changed
    set of the last computing iteration, the seed before the first), ``sources`` the previous
    iteration's changed vertices a ``gather_from = "changed"`` program gathers from.
    """

    fields: dict
    edges: dict = field(default_factory=dict)
    active: "object" = None
    changed: "object" = None
    sources: "object" = None
