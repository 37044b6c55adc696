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

    options = Cls.Options.of(user_options)          # typed; unknown keys are a UsageError
    setup = Setup(store, options, memory_budget, lanes, push)
    caps, policies = Cls.capabilities(setup), Cls.policies(setup)
    footprint, Cls.memory_options(spec, setup)    # -> the engine's MemoryModel
    ex = Cls(store, spec, memory, ledger, shared, setup)   # allocate, compile; once per session
    for each run of a program of this spec:
        ex.bind(program)                  # the instance whose parameters kernels read
        ex.load_state(state, edge_state)  # initial vertex fields and edge state (or
                                          # ex.fill_state(initial, edge_state): declared ones)
        ex.set_frontier(None or mask, ids)  # (or ids alone) then, if seeded: the seed plan
        for each iteration: [ex.set_active(ids) if scheduled]; run the plan (below)
        (checkpoint due: rs = ex.save_run(); resumed: ex.restore_run(rs) instead of
         load_state, set_frontier and the seed plan)
        ex.state(); ex.edge_state()
    ex.close()

One iteration, for plan ``p``::

    ex.begin(p)
    for unit, data in ex.load(p):
        parts = ex.shard_data(unit, data) if p.phase_scope == "shard" else [data]
        for part in parts:
            for phase in p.phases: getattr(ex, phase)(p, unit, part)
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

What an executor class hands the engine, and nothing else (no registration at import):
``Options`` (its typed options, a frozen :class:`~grstream.engine.capabilities.ExecutorOptions`),
``capabilities(setup)`` (facts, :class:`~grstream.engine.capabilities.Capabilities`),
``policies(setup)`` (the load-balance policy and the link calibration the planner consults,
:class:`~grstream.engine.capabilities.Policies`), ``footprint`` / ``memory_options`` /
``default_budget`` (its memory), ``pinned`` (it has a pinned host tier: ``pinned_budget`` is
refused elsewhere) and ``lanes``. grstream/devices.py maps device names to classes. Backends
import the engine through grstream/engine/contract.py only.

A GPU executor, concretely: ``pinned = True``; ``footprint`` lists its static device arrays
(fields twice, degrees, frontier bitmaps, accumulator -- per vertex when ``dense`` --, changed
flags, hoisted messages, edge state, intervals, readback block, aggregate partials) and as
scratch the seed buffer and the multi-shard tables; ``memory_options`` gives ``slots``,
``slot_bytes`` and ``staging``; its capabilities say ``workers=1``, resident shards batched in
dense and push plans, and per-shard phases (its accumulator holds one interval); its policies
choose twc / merge per shard and measure the link once per process.
"""
from typing import Dict, Iterator, List, Optional, Tuple, Type

import numpy as np

from .capabilities import Capabilities, ExecutorOptions, Policies, Setup
from .memory import Footprint, Ledger, MemoryModel
from .plan import IterationPlan, Readback, RunState, Touched, Unit


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

    #: the backend's typed options (a frozen dataclass; the session builds it with ``Options.of``)
    Options: Type[ExecutorOptions] = ExecutorOptions

    # ------------------------------------------------------------------ class-level facts
    @classmethod
    def make_setup(cls, store=None, options=None, **facts) -> Setup:
        """A :class:`Setup` of this class: ``options`` (a mapping of option keywords, checked by
        ``Options.of``, or an ``Options`` instance) and the session's ``facts``
        (``memory_budget``, ``lanes``, ``push``)."""
        return Setup(store=store, options=cls.Options.of(options), **facts)

    @classmethod
    def footprint(cls, spec, dense: bool, setup: Setup) -> Footprint:
        """Static and scratch bytes this executor needs for ``spec`` on ``setup.store`` besides
        shard data, and its array alignment. ``dense`` is the engine's choice (planner.is_dense):
        one accumulator slot per vertex instead of per interval."""
        raise NotImplementedError

    @classmethod
    def default_budget(cls, setup: Setup) -> Optional[int]:
        """Executor bytes when the user gives no budget (None: unbounded, everything resident)."""
        return None

    @classmethod
    def memory_options(cls, spec, setup: Setup) -> dict:
        """Keyword arguments for memory.plan_memory beyond the budgets (``slots``,
        ``slot_bytes``, ``staging``): facts of how this executor streams."""
        return {}

    @classmethod
    def capabilities(cls, setup: Setup) -> Capabilities:
        """The facts the planner takes into account for an executor of this setup."""
        raise NotImplementedError

    @classmethod
    def policies(cls, setup: Setup) -> Policies:
        """The load-balance policy and the link calibration the planner consults."""
        raise NotImplementedError

    @classmethod
    def release_shared(cls, shared: dict):
        """Free what executors of this class put in a session's ``shared`` dict."""
        shared.clear()

    def __init__(self, store, spec, memory: MemoryModel, ledger: Ledger, shared: dict, setup: Setup):
        """Allocate static state (``memory.static`` names and bytes), the streaming slots
        (``memory.slots`` of ``memory.slot_bytes``), the pinned cache block (``memory.pinned`` at
        ``memory.pinned_offsets``, laid out per ``memory.offsets``) and staging buffers
        (``memory.staging`` of ``memory.staging_bytes``), all through ``ledger``; compile kernels.
        Resident shards' places may be allocated here or at their "load" unit. ``setup``: the
        typed options (``setup.options``) and the session's facts (lanes, push arrays held)."""
        self.store, self.spec, self.memory, self.ledger, self.shared = store, spec, memory, ledger, shared
        self.setup = setup

    # ------------------------------------------------------------------ per run
    def bind(self, program) -> None:
        """Use ``program`` (an instance of the spec's class) for the next run: its parameters,
        ``iteration`` and aggregates as set by the engine before each ``begin``."""
        self.program = program

    def host_state(self, name: str, shape, dtype) -> np.ndarray:
        """A host array for vertex field ``name`` of the initial state, which the engine's init
        writes whole (engine/state.py: the values init assigns, zeros elsewhere; its contents
        before need not be zeros) and ``load_state`` then takes. An executor may return memory it
        owns and reuses across runs (a GPU executor page-locked memory within
        ``memory.state_pinned``, so that the upload runs at link speed); the engine never hands
        these arrays to the user."""
        return np.zeros(shape, dtype=dtype)

    def load_state(self, state: Dict[str, np.ndarray], edge_state: Dict[str, np.ndarray]) -> None:
        """Take the initial vertex fields (every ``spec.vertex_fields`` name, length n, right
        dtype): ``cur`` and ``nxt`` both become ``state``. ``edge_state``: each of
        ``spec.edge_state`` in global CSR order (length m); current and next both take it."""
        raise NotImplementedError

    def fill_state(self, initial, edge_state: Dict[str, np.ndarray]) -> None:
        """As ``load_state``, of a declared initial state (engine/state.py ``ConstantState``):
        every vertex's fields at ``initial.values``, the seed's entries at its seed values. This
        default writes ``host_state``'s arrays and loads them; an executor whose state lives
        elsewhere makes it there (the GPU's: fill kernels, no host array, no upload)."""
        state = {}
        for f, x in initial.values.items():
            arr = state[f] = self.host_state(f, (initial.n,), x.dtype)
            arr.fill(x)
            if initial.seed is not None:
                arr[initial.seed] = initial.seed_values[f]
        self.load_state(state, edge_state)

    def set_frontier(self, mask: Optional[np.ndarray], ids: Optional[np.ndarray] = None) -> None:
        """Both None: every vertex is active. Else the *seed* (vertices treated as changed before
        iteration 1), consumed by the seed plan's ``activate``: ``ids``, its sorted vertex ids
        (the engine finds them once, so an executor need not scan an n-sized mask), or where
        ``ids`` is None a bool mask of length n, whose ids the executor finds itself. A declared
        start gives the ids alone (no mask of n is made); lanes give an (n, lanes) mask."""
        raise NotImplementedError

    def set_active(self, ids: np.ndarray) -> None:
        """A scheduled program (``activate = "schedule"``, grstream/engine/turns.py): the next
        plan's active vertices are exactly the sorted ``ids``, in place of any frontier. Its
        plans have no activate phase and ``plan.frontier`` False, so the set stays until the
        engine calls this again before the next iteration."""
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

    def shard_data(self, unit: Unit, data) -> List[object]:
        """``data`` of a unit of several shards as one ``data`` per shard, in the unit's order:
        what the phases of a plan with ``phase_scope == "shard"`` receive in turn. Executors
        whose capabilities say ``Batching.shard_phases`` implement it."""
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

    # ------------------------------------------------------------------ ranks
    # A rank's executor (grstream/distributed/rank_executor.py, docs/DISTRIBUTED.md) is this
    # class with the exchange mixed in; it runs the plan primitives above over the rank's own
    # shards and, after ``publish``, moves what the plan left between ranks through these.
    # ``setup.span`` is then the rank's vertices: an apply over every vertex (``unit`` None)
    # runs over them only.

    def touched(self, plan: IterationPlan) -> Touched:
        """After ``publish``: what ``plan`` wrote and found (:class:`Touched`)."""
        raise NotImplementedError

    def adopt(self, frontier: Optional[np.ndarray] = None, changed: Optional[np.ndarray] = None,
              lanes: Optional[np.ndarray] = None) -> None:
        """The world's next frontier and changed set (sorted ids; None: keep this executor's)
        replace the ones this executor's units found, before ``reduce`` and ``read_back``;
        ``lanes``: every lane's next frontier (flat ids as in :class:`Touched`), which gives the
        frontier too."""
        raise NotImplementedError

    def vertex_arrays(self) -> Dict[str, np.ndarray]:
        """The current vertex fields (``cur``) in place, which the exchange writes."""
        raise NotImplementedError

    def edge_arrays(self) -> Dict[str, np.ndarray]:
        """The current mutable edge state in place (global CSR order), which the exchange writes."""
        return {}

    def push_messages(self) -> Tuple[np.ndarray, np.ndarray]:
        """A push plan's messages after its units sent them: (receivers sorted, their values
        combined), of any vertex; the executor's accumulator is left at the identity."""
        raise NotImplementedError

    def apply_messages(self, plan: IterationPlan, receivers: np.ndarray, values: np.ndarray) -> None:
        """A push plan's apply over ``receivers`` (sorted, owned) with their combined messages
        ``values`` (what its ``apply(plan, None, None)`` runs in one process), before publish."""
        raise NotImplementedError

    # ------------------------------------------------------------------ checkpoints
    def save_run(self) -> RunState:
        """Between two iterations (after ``read_back``): host copies of the run as this executor
        holds it, the vertex fields and edge state and the vertex sets (:class:`RunState`), so
        that :meth:`restore_run` continues it as if never stopped. A GPU executor downloads them
        here, only when a checkpoint is written. The run goes on unchanged after it."""
        raise NotImplementedError

    def restore_run(self, saved: RunState) -> None:
        """Start a run from ``saved`` (another process's :meth:`save_run`): what ``load_state``
        does with its fields and edge state, and the frontier and changed sets as they were; the
        engine then plans the next iteration without a seed plan."""
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

    def outdated(self) -> bool:
        """Whether an executor made now would run this program otherwise (a session's next run
        then makes a new one): the CPU's ``kernels`` "auto" compiles once a process's runs reach
        its threshold (backends/cpu/strategy_compiled.py). Asked once per run of a kept one."""
        return False

    def close(self) -> None:
        """Free everything taken from the ledger except ``shared`` entries."""


def phase_parts(ex: Executor, plan: IterationPlan, unit: Unit, data) -> List[object]:
    """What each round of a unit's phases runs on (the engine's loop, module docstring): the
    whole unit's data, or one shard's at a time where the plan says so (``phase_scope``)."""
    if plan.phase_scope == "shard" and len(unit.shards) > 1:
        return ex.shard_data(unit, data)
    return [data]


def in_parallel(pool, workers, work, items):
    """``work(unit, data)`` for the ``(unit, data)`` of ``items`` on the threads of ``pool``, at
    most ``workers`` at once, finished in plan order (a plan's units, ``plan.workers > 1``)."""
    pending = []
    try:
        for unit, data in items:
            pending.append(pool.submit(_quiet, work, unit, data))
            while len(pending) >= workers:
                pending.pop(0).result()
        while pending:
            pending.pop(0).result()
    finally:
        for f in pending:  # an error stopped the loop: let running work end
            f.cancel()
        for f in pending:
            if not f.cancelled():
                f.exception()


def _quiet(work, unit, data):
    """``work`` on a worker thread under the floating-point error state the run sets on the
    caller's thread (numpy's error state is per thread; the caller's covers the serial path)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        work(unit, data)


def execute(ex, plan, st, parallel):
    """Run one plan on ``ex`` in the order of this module's docstring: ``parallel(workers, work,
    items)`` runs the units on worker threads where the plan has several. Returns the read back."""
    ex.begin(plan)
    phases = [getattr(ex, p) for p in plan.phases]

    def work(unit, data):   # a unit's phases, over its data or shard by shard
        for part in phase_parts(ex, plan, unit, data):
            for phase in phases:
                phase(plan, unit, part)
        ex.done(plan, unit)
    items = ex.load(plan)
    try:
        if plan.workers <= 1:
            for unit, data in items:
                work(unit, data)
        else:
            parallel(plan.workers, work, items)
    finally:
        items.close()
    if plan.apply_scope == "all":
        ex.apply(plan, None, None)
    ex.publish(plan)
    ex.reduce(plan)
    return ex.read_back(plan, st)
