"""The typed half of the executor contract: what an executor class tells the engine.

- :class:`Capabilities`: facts about an executor the planner takes into account (not
  decisions), a small frozen object whose related facts are grouped (:class:`Batching`,
  :class:`PushFacts`, :class:`Forced`, the :class:`Feature` set);
- :class:`ExecutorOptions`: the base of each backend's typed options (a frozen dataclass per
  backend; unknown keys are refused with the list of valid ones);
- :class:`Setup`: what the session tells an executor class about the executor it is about to
  make (the store, the typed options, the budget, lanes, whether push arrays are held);
- :class:`Policies`: the policies the engine consults, handed over by the executor class
  (``Executor.policies``): the load-balance policy and the link calibration.

Nothing here is registered at import: the session reads every one of them from the executor
class it resolved (grstream/devices.py).
"""
import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, ClassVar, Dict, FrozenSet, Mapping, Optional, Tuple

from ..errors import UsageError

#: the transfers every executor implements (grstream/engine/plan.py TRANSFERS has them all)
BASIC_TRANSFERS = frozenset({"resident", "load", "copy"})


class BatchResident(Enum):
    """Which plans may hold several loaded resident shards in one unit (one pass / launch)."""

    ALWAYS = "always"            #: every plan
    DENSE = "dense"              #: dense plans only (the GPU's multi-shard gather)
    #: dense plans and push plans: a push unit of several shards whose arrays stay put runs as
    #: one launch over a table of them (every loaded resident shard of a push plan in one unit,
    #: cut into chunks before the copies; the push units read in place (zerocopy) in one)
    DENSE_PUSH = "dense_push"
    NEVER = "never"              #: one shard per unit


class Feature(Enum):
    """Plan shapes an executor runs beyond the basic pull plan (``Capabilities.features``)."""

    #: gather messages computed per edge when a plan does not hoist them, so the planner hoists
    #: only when the frontier is large (GPU kernels are generated hoisted or not: absent)
    ADAPTIVE_HOIST = "adaptive_hoist"
    #: programs with ``gather_from = "changed"`` (the session refuses them elsewhere)
    GATHER_CHANGED = "gather_changed"
    #: plans with ``IterationPlan.local_rounds`` > 0
    LOCAL_ROUNDS = "local_rounds"
    #: pull plans with ``IterationPlan.publish == "unit"`` (Gauss-Seidel)
    PUBLISH_UNIT = "publish_unit"
    #: dense plans with ``IterationPlan.ahead``: the next plan's first copy started after the
    #: plan's units, while its last kernels and the host's read back and planning run
    COPY_AHEAD = "copy_ahead"


@dataclass(frozen=True)
class Batching:
    """How an executor can group shards into units.

    resident
        :class:`BatchResident`.
    copies
        Consecutive streamed shards adjacent in the pinned cache may share one copy (one unit)
        when they fit one slot.
    unit_edges
        The most edges one batched unit may hold (its temporaries are what the executor's
        footprint declares as scratch); None: no limit.
    shard_phases
        The executor's per-unit state (accumulator, changed flags) holds one shard's interval: the
        planner makes pull plans whose units hold several shards run their phases shard by shard
        (``IterationPlan.phase_scope == "shard"``), and the session hands the executor one
        shard's data at a time (``Executor.shard_data``).
    """

    resident: BatchResident = BatchResident.ALWAYS
    copies: bool = True
    unit_edges: Optional[int] = None
    shard_phases: bool = False


@dataclass(frozen=True)
class PushFacts:
    """How an executor runs push plans (``Capabilities.push``; None: pull plans only).

    threshold
        The executor's own default of the direction rule's push threshold (a fraction of |E|,
        grstream/engine/direction.py), used when the user gives none; None: the rule's default.
    workers
        Units a push plan may run at once (None: ``Capabilities.workers``).
    balance
        The strategy the executor's push kernels walk a push unit's edges with, whatever the user
        forced (the planner gives it to every push unit); None: push units keep the policy's.
    hub_edges
        Rows of at least this many edges are walked by the whole device when a push unit's
        strategy is ``"hubs"`` (grstream/engine/balance.py ``hub_walk``); 0: never.
    memory
        The executor runs on memory models that hold only the push and activation arrays when
        every plan of a run pushes (grstream/engine/direction.py ``push_only``).
    asynchronous
        The executor runs push plans with ``IterationPlan.push_async`` (per-unit apply, in
        order, later units sending the values earlier ones wrote).
    merge_share, merge_degree
        The executor has an edge-balanced push walk (strategy ``"merge"``: work spread by edges,
        not rows), which a push unit's shard takes where the edges its changed vertices send
        along are at least ``merge_share`` of the shard's push edges, or where the shard's mean
        push degree is at least ``merge_degree`` and the push walks at least
        grstream/engine/balance.py ``MERGE_PUSH_MIN`` edges of it (:func:`.balance.merge_pushes`;
        the share rule not on zero-copied shards); 0: never by that rule.
    """

    threshold: Optional[float] = None
    workers: Optional[int] = None
    balance: Optional[str] = None
    hub_edges: int = 0
    memory: bool = False
    asynchronous: bool = False
    merge_share: float = 0.0
    merge_degree: float = 0.0


@dataclass(frozen=True)
class Forced:
    """What the user forced through executor options, which the planner obeys instead of
    choosing: ``balance`` (a load-balance strategy, handed to the policy) and ``transfer`` (a
    transfer mode every streamed shard that can take it takes). "auto": the engine chooses."""

    balance: str = "auto"
    transfer: str = "auto"


@dataclass(frozen=True)
class Capabilities:
    """Facts about an executor the planner takes into account (not decisions).

    kind
        The executor kind (``"cpu"``, ``"cuda"``), for messages and statistics.
    workers
        Units the executor can run at once (CPU: worker threads; GPU: 1).
    batching
        :class:`Batching`: how shards may share a unit.
    features
        The :class:`Feature` plan shapes it runs.
    push
        :class:`PushFacts`, or None: the executor runs pull plans only.
    transfers
        The ``Unit.transfer`` values it implements.
    frontier_formats
        The ``IterationPlan.frontier_format`` values it implements.
    queue_fraction
        The executor's default of the direction rule's queue fraction (a fraction of n below
        which a plan's frontier is a compacted queue); None: the rule's default.
    zerocopy_balance
        The load-balance strategy the executor's zero-copy kernels read mapped host rows with;
        the planner gives it to every shard of a zero-copy pull unit unless the user forced a
        strategy. None: zero-copy units keep the policy's choice.
    forced
        :class:`Forced`: what the user's options force.
    """

    kind: str
    workers: int = 1
    batching: Batching = Batching()
    features: FrozenSet[Feature] = frozenset()
    push: Optional[PushFacts] = None
    transfers: FrozenSet[str] = BASIC_TRANSFERS
    frontier_formats: Tuple[str, ...] = ("bitmap",)
    queue_fraction: Optional[float] = None
    zerocopy_balance: Optional[str] = None
    forced: Forced = Forced()

    def __post_init__(self):
        object.__setattr__(self, "workers", int(self.workers))
        object.__setattr__(self, "features", frozenset(Feature(f) for f in self.features))
        object.__setattr__(self, "transfers", frozenset(self.transfers))
        object.__setattr__(self, "frontier_formats", tuple(self.frontier_formats))

    def has(self, feature: Feature) -> bool:
        """Whether the executor runs plans with ``feature``."""
        return feature in self.features

    @property
    def push_threshold(self) -> Optional[float]:
        """The executor's push threshold (None: the rule's, or no push at all)."""
        return None if self.push is None else self.push.threshold


@dataclass(frozen=True)
class Policies:
    """The policies the engine consults for one executor class (``Executor.policies``).

    balance
        ``balance(facts, actives, spec, caps) -> strategies``: one load-balance strategy per shard
        of a unit, from the shards' :class:`~grstream.engine.balance.ShardFacts`, their active
        vertex counts, the program's ProgramSpec and the executor's Capabilities
        (``caps.forced.balance``: the strategy the user forced, or "auto").
    calibration
        None, or a callable returning the executor's measured
        :class:`~grstream.engine.costs.LinkCosts` (called once, when a plan first has a choice of
        transfer; executors cache the measurement per process). None: the cost model's defaults.
    """

    balance: Callable[..., Tuple[str, ...]]
    calibration: Optional[Callable[[], Any]] = None


@dataclass(frozen=True)
class ExecutorOptions:
    """Base of a backend's typed options: subclasses are frozen dataclasses whose fields are the
    options, with their defaults; ``__post_init__`` checks the values (UsageError).

    ``RETIRED`` maps option names that no longer exist to the message that says what replaced
    them.
    """

    RETIRED: ClassVar[Dict[str, str]] = {}
    #: the backend's name in messages
    BACKEND: ClassVar[str] = "executor"

    @classmethod
    def names(cls) -> Tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def of(cls, given: Optional[Mapping[str, Any]] = None) -> "ExecutorOptions":
        """Options from a mapping (``backend_options``, Session keywords): a key that is not an
        option of this backend is a UsageError naming it and listing the valid ones; an
        instance of this class is returned as it is."""
        if isinstance(given, cls):
            return given
        given = dict(given or {})
        for key in sorted(given):
            if key in cls.RETIRED:
                raise UsageError(cls.RETIRED[key])
        unknown = sorted(set(given) - set(cls.names()))
        if unknown:
            valid = ", ".join(cls.names()) or "none"
            raise UsageError(f"unknown {cls.BACKEND} executor option(s) {', '.join(map(repr, unknown))}; "
                             f"valid options: {valid}")
        return cls(**given)


@dataclass(frozen=True)
class Setup:
    """What the session tells an executor class about one executor of a program class.

    store
        The shard store (None for facts that need none).
    options
        The backend's typed options (``Executor.Options``).
    memory_budget
        The user's memory budget (None: none given).
    lanes
        Instances run at once (``Session.run_lanes``; None: one run, fields of length n).
    push
        The memory model holds the push arrays too (the session may plan push iterations).
    span
        (lo, hi): the vertices an apply over every vertex runs over (ranks: the rank's own,
        docs/DISTRIBUTED.md); None: every vertex.
    """

    store: Any = None
    options: ExecutorOptions = field(default_factory=ExecutorOptions)
    memory_budget: Optional[int] = None
    lanes: Optional[int] = None
    push: bool = False
    span: Optional[Tuple[int, int]] = None

    def with_push(self, push: bool = True) -> "Setup":
        return dataclasses.replace(self, push=bool(push))
