"""The executor interface: the primitives a backend implements to run the engine's plans.

An executor makes no scheduling decision: which shards run, in which groups and order, whether a
shard moves and where to, which load-balance strategy its gather uses, how ``nxt`` is published
and how many bytes everything takes are all in the :class:`~grstream.engine.plan.IterationPlan`
and the :class:`~grstream.engine.memory.MemoryModel` it receives. It executes them and reports
what happened (:class:`~grstream.engine.plan.Readback` and the measured fields of
IterationStats). The semantics every executor implements are those of
grstream/engine/backend.py's module docstring (bulk-synchronous GAS); the CPU executor
(grstream/backends/cpu/executor.py) is the reference.

Lifecycle (driven by :class:`grstream.engine.session.Session`)::

    ex = Cls(store, spec, memory, ledger, shared, **options)   # allocate, compile; once per session
    for each run of a program of this spec:
        ex.bind(program)                  # the instance whose parameters kernels read
        ex.load_state(state, edge_state)  # initial vertex fields and edge state
        ex.set_frontier(None or mask, ids)  # then, if seeded: the seed plan (below)
        for each iteration: run the plan (below)
        ex.state(); ex.edge_state()
    ex.close()

One iteration, for plan ``p``::

    ex.begin(p)
    for unit, data in ex.load(p):
        for phase in p.phases: getattr(ex, phase)(p, unit, data)
        ex.done(p, unit)
    if p.apply_scope == "all": ex.apply(p, None, None)
    ex.publish(p); ex.reduce(p); rb = ex.read_back(p, stats)

The seeding pass of a frontier program is a plan with ``seed=True`` and phases ``("activate",)``:
``set_frontier(mask)`` received the seed mask, ``activate`` marks every vertex that gathers from a
seed vertex of the unit, ``publish`` makes that the current frontier (no vertex fields move) and
``read_back`` returns its counts per shard. When ``p.workers > 1`` the engine may call the
per-unit phases of different units from different threads at the same time (units cover disjoint
vertex intervals); with ``workers == 1`` every call comes from the calling thread in order.

Memory: every allocation an executor makes (device or host arrays, pinned buffers, tables,
temporaries it keeps) is taken from the ``ledger`` (:class:`~grstream.engine.memory.Ledger`)
under the kinds "device", "pinned" and "scratch" and given back when freed. Resident shard data
may be shared by several executors of one session through ``shared`` (a dict owned by the
session, keyed as the executor class chooses, e.g. ``(shard, dataset)``); it is freed by
``Executor.release_shared(shared)`` when the session closes.

A GPU executor, concretely: ``pinned = True``; ``footprint`` lists its static device arrays
(fields twice, degrees, frontier bitmaps, accumulator -- per vertex when ``dense`` --, changed
flags, hoisted messages, edge state, intervals, readback block, aggregate partials) and as
scratch the seed buffer and the multi-shard tables; ``memory_options`` gives ``slots``,
``slot_bytes`` and ``staging``; ``capabilities`` is ``Capabilities("cuda", workers=1,
batch_resident="dense_push", balance=<load_balance option>)``; ``default_budget`` is free device
memory less a margin; a "cuda" policy registered in grstream/engine/balance.py chooses twc /
merge per shard; ``grstream.backends.cuda.executor_class()`` returns the class
(grstream/devices.py looks for it).

``options`` given to the class methods are the session's executor options (``threads``,
``load_balance``, ...) plus ``memory_budget`` (the user's, possibly None) and ``store``.

Additions to the first contract have defaults that keep its behaviour, so an executor written
against it still runs: ``done(plan, unit)``; ``memory_options``; ``lanes`` / ``set_lanes`` /
``Readback.lane_active``; Capabilities ``unit_edges``, ``balance``, ``adaptive_hoist``; the
direction and transfer fields ``push``, ``transfers``, ``frontier_formats``,
``push_threshold`` and ``queue_fraction`` (the executor's defaults of the direction rule's
fractions; None keeps the rule's: Ligra's 1/20 and 1/64), ``transfer`` and ``calibration`` (the
transfer cost model's inputs; IterationStats ``transfer_bytes`` / ``transfer_seconds`` /
``time_pack``); Capabilities ``gather_changed`` and ``local_rounds``
(default False); ``publish_unit`` and ``push_memory`` (default False),
``zerocopy_balance`` and ``push_balance`` (default None), ``push_async`` (default False:
IterationPlan.push_async), ``push_workers`` (default None) and ``push_hub_edges`` (default 0).
"""
from typing import Dict, Iterator, Optional, Tuple

import numpy as np

from .memory import Footprint, Ledger, MemoryModel
from .plan import IterationPlan, Readback, Unit


class Capabilities:
    """Facts about an executor the planner takes into account (not decisions).

    workers
        Units the executor can run at once (CPU: worker threads; GPU: 1).
    batch_resident
        ``"always"``: several resident shards can be one unit (one pass / launch);
        ``"dense"``: only in dense plans (the GPU's multi-shard gather); ``"dense_push"``: dense
        plans and push plans, where the executor runs a unit of several shards whose arrays stay
        put as one launch over a table of them: every loaded resident shard of a push plan in
        one unit (after the first copies), and the push units read in place (zerocopy) in one;
        ``"never"``.
    batch_copies
        Consecutive streamed shards adjacent in the pinned cache may share one copy (one unit)
        when they fit one slot.
    kind
        The executor kind (``"cpu"``, ``"cuda"``), naming its load-balance policy in
        :mod:`grstream.engine.balance`.
    unit_edges
        The most edges one batched unit may hold (its temporaries are what the executor's
        footprint declares as scratch); None: no limit.
    balance
        The load-balance strategy the user forced (executor option), or "auto": handed to the
        balance policy.

    adaptive_hoist
        The executor computes gather messages per edge when a plan does not hoist them, so
        the planner hoists only when the frontier is large (GPU kernels are generated hoisted
        or not: False).

    push
        The executor runs push plans (IterationPlan.direction == "push").
    transfers
        The Unit.transfer values it implements.
    frontier_formats
        The IterationPlan.frontier_format values it implements.
    push_threshold
        The executor's own default of the direction rule's push threshold (a fraction of |E|,
        grstream/engine/direction.py), used when the user gives none; None: the rule's default
        (Ligra's 1/20, a CPU figure).
    queue_fraction
        Likewise for the rule's queue fraction (a fraction of n below which a plan's frontier is
        a compacted queue); None: the rule's default.
    transfer
        ``"auto"``: the planner's cost model (grstream/engine/costs.py) chooses each streamed
        shard's transfer among ``transfers``; a mode name: every streamed shard that can take it
        does (the executor's ``transfer`` option, for tests and benchmarks).
    calibration
        None, or a callable returning the executor's measured
        :class:`~grstream.engine.costs.LinkCosts` (called once, when a plan first has a choice;
        executors cache the measurement per process).
    local_rounds
        The executor runs plans with ``IterationPlan.local_rounds`` > 0.
    publish_unit
        The executor runs plans with ``IterationPlan.publish == "unit"`` (each unit's vertices
        published right after its apply, so later units gather from the freshest values).
    push_memory
        The executor runs on memory models that hold only the push and activation arrays when
        every plan of a run pushes (grstream/engine/direction.py ``push_only``).
    push_workers
        Units a push plan may run at once (None: ``workers``): the CPU's push combines every
        unit's messages under one lock, so a second worker only overlaps the sends.
    push_async
        The executor runs push plans with ``IterationPlan.push_async`` (per-unit apply, in
        order, later units sending the values earlier ones wrote).
    gather_changed
        The executor runs programs with ``gather_from = "changed"`` (a gather reads only the
        sources that changed in the previous iteration, the seed before the first); the session
        refuses those programs on executors without it.
    zerocopy_balance
        The load-balance strategy the executor's zero-copy kernels read mapped host rows with
        (the GPU's: ``"twc"``, whose warps walk rows merged and aligned); the planner gives it to
        every shard of a zero-copy pull unit unless the user forced a strategy (``balance``).
        None: zero-copy units keep the policy's choice.
    push_balance
        The strategy the executor's push kernels walk a push unit's edges with, whatever the
        user forced (the GPU's: ``"twc"``); the planner gives it to every push unit. None: push
        units keep the policy's choice.
    push_hub_edges
        Rows of at least this many edges are walked by the whole device when a push unit's
        strategy is ``"hubs"`` (the GPU's option ``push_hub_edges``); the planner gives push units
        that strategy in iterations whose senders carry hub rows (balance.hub_walk). 0: never.
    """

    def __init__(self, kind, workers=1, batch_resident="always", batch_copies=True,
                 unit_edges=None, balance="auto", adaptive_hoist=False, push=False,
                 transfers=("resident", "load", "copy"), frontier_formats=("bitmap",),
                 push_threshold=None, queue_fraction=None, transfer="auto", calibration=None,
                 gather_changed=False, local_rounds=False, publish_unit=False, push_memory=False,
                 zerocopy_balance=None, push_balance=None, push_async=False, push_workers=None,
                 push_hub_edges=0):
        self.transfer, self.calibration = transfer, calibration
        self.push = bool(push)
        self.push_threshold, self.queue_fraction = push_threshold, queue_fraction
        self.local_rounds = bool(local_rounds)
        self.publish_unit, self.push_memory = bool(publish_unit), bool(push_memory)
        self.push_async, self.push_workers = bool(push_async), push_workers
        self.push_hub_edges = int(push_hub_edges)
        self.gather_changed = bool(gather_changed)
        self.transfers = tuple(transfers)
        self.frontier_formats = tuple(frontier_formats)
        self.balance, self.zerocopy_balance, self.push_balance = balance, zerocopy_balance, push_balance
        self.adaptive_hoist = bool(adaptive_hoist)
        self.kind, self.workers, self.batch_resident = kind, int(workers), batch_resident
        self.batch_copies = bool(batch_copies)
        self.unit_edges = unit_edges


class Executor:
    """Base class of executors; every method below is a primitive of the plan's execution."""

    #: executor kind, as in Capabilities.kind and IterationStats / Result.info["backend"]
    name = "abstract"
    #: pinned host memory used for streaming (GPU executors); False: the executor's memory is host memory
    pinned = False
    #: runs several instances of one program at once (Session.run_lanes): with option
    #: ``lanes=L`` every vertex field is (n, L), ``set_frontier`` takes an (n, L) seed, the
    #: engine calls ``set_lanes(alive)`` before each iteration and ``read_back`` fills
    #: ``Readback.lane_active``. Executors without lanes leave this False.
    lanes = False

    # ------------------------------------------------------------------ class-level facts
    @classmethod
    def footprint(cls, store, spec, dense: bool, options: dict) -> Footprint:
        """Static and scratch bytes this executor needs for ``spec`` on ``store`` besides shard
        data, and its array alignment. ``dense`` is the engine's choice (planner.is_dense):
        one accumulator slot per vertex instead of per interval."""
        raise NotImplementedError

    @classmethod
    def default_budget(cls, options: dict) -> Optional[int]:
        """Executor bytes when the user gives no budget (None: unbounded, everything resident)."""
        return None

    @classmethod
    def memory_options(cls, spec, options: dict) -> dict:
        """Keyword arguments for memory.plan_memory beyond the budgets (``slots``,
        ``slot_bytes``, ``staging``): facts of how this executor streams."""
        return {}

    @classmethod
    def capabilities(cls, options: dict) -> Capabilities:
        return Capabilities(cls.name)

    @classmethod
    def release_shared(cls, shared: dict):
        """Free what executors of this class put in a session's ``shared`` dict."""
        shared.clear()

    def __init__(self, store, spec, memory: MemoryModel, ledger: Ledger, shared: dict, **options):
        # ``options``: the session's executor options (e.g. threads, load_balance)
        """Allocate static state (``memory.static`` names and bytes), the streaming slots
        (``memory.slots`` of ``memory.slot_bytes``), the pinned cache block (``memory.pinned`` at
        ``memory.pinned_offsets``, laid out per ``memory.offsets``) and staging buffers
        (``memory.staging`` of ``memory.staging_bytes``), all through ``ledger``; compile kernels.
        Resident shards' places may be allocated here or at their "load" unit."""
        self.store, self.spec, self.memory, self.ledger, self.shared = store, spec, memory, ledger, shared

    # ------------------------------------------------------------------ per run
    def bind(self, program) -> None:
        """Use ``program`` (an instance of the spec's class) for the next run: its parameters,
        ``iteration`` and aggregates as set by the engine before each ``begin``."""
        self.program = program

    def host_state(self, name: str, shape, dtype) -> np.ndarray:
        """A zeroed host array for vertex field ``name`` of the initial state, which the engine's
        init writes and ``load_state`` then takes. A GPU executor may return page-locked memory it
        owns and reuses across runs (within ``memory.state_pinned``), so that the upload runs at
        link speed; the engine never hands these arrays to the user."""
        return np.zeros(shape, dtype=dtype)

    def load_state(self, state: Dict[str, np.ndarray], edge_state: Dict[str, np.ndarray]) -> None:
        """Take the initial vertex fields (every ``spec.vertex_fields`` name, length n, right
        dtype): ``cur`` and ``nxt`` both become ``state``. ``edge_state``: each of
        ``spec.edge_state`` in global CSR order (length m); current and next both take it."""
        raise NotImplementedError

    def set_frontier(self, mask: Optional[np.ndarray], ids: Optional[np.ndarray] = None) -> None:
        """None: every vertex is active. Else a bool mask of length n: the *seed* (vertices
        treated as changed before iteration 1), consumed by the seed plan's ``activate``.
        ``ids``: the mask's True positions, sorted (the engine finds them once, so an executor
        need not scan the n-sized mask again); None: the executor finds them itself."""
        raise NotImplementedError

    # ------------------------------------------------------------------ per iteration
    def begin(self, plan: IterationPlan) -> None:
        """Start the iteration: clear the changed / gathered-edge counters and, when
        ``plan.frontier``, the next frontier; when ``plan.hoist``, compute every vertex's gather
        message once (``gather_map`` reads only ``src``); when ``plan.dense``, fill the per-vertex
        accumulator with the gather monoid's identity."""
        raise NotImplementedError

    def load(self, plan: IterationPlan) -> Iterator[Tuple[Unit, object]]:
        """Yield ``(unit, data)`` for ``plan.units`` in order, each unit's data in place per its
        transfer: "resident": already there; "load": read once into its resident place (it
        stays); "copy": read from the pinned cache (``unit.source == "pinned"``; the first time
        from the store into the cache) or from the store through a staging buffer, then copied
        into slot ``unit.slot``. Reading ahead is allowed (grstream/readahead.py); a slot or
        staging buffer is reused only after ``done`` of the unit that held it (the generator may
        wait for that). ``data`` is executor-specific (host arrays, device addresses) and valid
        until ``done(plan, unit)``. Closing the generator early (an error) stops any read-ahead
        before returning."""
        raise NotImplementedError

    def done(self, plan: IterationPlan, unit: Unit) -> None:
        """Every phase of ``unit`` was issued (GPU: enqueued; CPU: finished): its slot may be
        refilled once that work has completed (GPU: record the slot's "free" event)."""

    def gather(self, plan: IterationPlan, unit: Unit, data) -> None:
        """For every active vertex v of the unit's shards: ``acc[v]`` = gather_reduce over v's
        edges (``spec.gather_edges``) of gather_map(src, dst, edge), reading ``cur``; identity
        for v without edges. Strategy per shard: ``unit.balance``. Dense plans accumulate into
        the per-vertex accumulator (all vertices active)."""
        raise NotImplementedError

    def apply(self, plan: IterationPlan, unit: Optional[Unit], data) -> None:
        """``changed[v] = apply(v, acc[v])`` for the unit's active vertices (``unit`` None: every
        vertex, dense plans). apply reads ``cur`` and writes the fields it assigns to ``nxt``;
        count changed vertices."""
        raise NotImplementedError

    def activate(self, plan: IterationPlan, unit: Unit, data) -> None:
        """Mark in the next frontier every vertex that gathers from a changed vertex of the unit
        (out-neighbours for gather_edges "in" and for programs without gather, in-neighbours for
        "out", both for "all"). In a seed plan "changed" means "in the seed mask"."""
        raise NotImplementedError

    def scatter(self, plan: IterationPlan, unit: Unit, data) -> None:
        """Run scatter over the out-edges of the unit's changed vertices, reading the source's
        new state, the destination's ``cur`` and the edge; write next edge state only."""
        raise NotImplementedError

    def publish(self, plan: IterationPlan) -> None:
        """After every unit: ``cur`` takes ``nxt`` for ``plan.publish_fields`` per
        ``plan.publish`` ("swap": exchange the arrays; "copy": copy the applied vertices -- or all,
        since nxt equals cur elsewhere; "unit": already done by each unit's apply, which
        copied its interval of ``nxt`` into ``cur``; "none": nothing); when ``plan.publish_edges``, current
        edge state takes next; when ``plan.frontier``, the next frontier becomes the current one
        (a seed plan publishes only the frontier). Topology-driven plans leave every vertex
        active."""
        raise NotImplementedError

    def reduce(self, plan: IterationPlan) -> None:
        """Reduce the aggregates ``plan.reduce`` over every vertex's ``cur`` (program's
        ``aggregate_<name>`` terms, the declared monoid and dtype)."""
        raise NotImplementedError

    def read_back(self, plan: IterationPlan, stats) -> Readback:
        """Finish the iteration (synchronise) and report: next frontier counts per shard,
        changed vertices, gathered edges, aggregates. Fill the measured fields of ``stats``
        (bytes_read, bytes_h2d, bytes_d2h, time_read, time_copy, time_kernel, copy_hidden; the
        CPU fills time_gather / time_apply / time_activate / time_scatter)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ results
    def state(self) -> Dict[str, np.ndarray]:
        """The current vertex fields as host numpy arrays (copies)."""
        raise NotImplementedError

    def edge_state(self) -> Dict[str, np.ndarray]:
        """The current mutable edge state in global CSR order (copies; {} without edge state)."""
        return {}

    def info(self) -> dict:
        """Executor facts for Result.info (device name, threads, ...); "backend" = name."""
        return {"backend": self.name}

    def close(self) -> None:
        """Free everything taken from the ledger except ``shared`` entries."""
