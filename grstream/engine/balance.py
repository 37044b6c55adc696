"""Load-balance policies: which gather strategy each shard of a unit uses, per executor kind.

The planner calls ``POLICIES[kind](facts, actives, spec, caps)`` for every unit: ``facts`` are
the unit's shards' :class:`ShardFacts`, ``actives`` their active vertex counts, ``spec`` the
program's ProgramSpec, ``caps`` the executor's Capabilities (``caps.balance``: the strategy the
user forced, or "auto"); it returns one strategy name per shard. A new executor kind registers its policy with :func:`register`; kinds without one get
``"auto"`` (the executor's own default, a transitional state). A unit the transfer policy makes
zero-copy, and a push unit, take :func:`as_run`'s strategies (the executor's own for those;
``"hubs"`` for a push unit whose iteration's senders carry hub rows, :func:`hub_walk`).
"""
from dataclasses import dataclass
from typing import Callable, Dict, Sequence, Tuple

#: CPU: below this fraction of active vertices in a unit, gather and activation select the active
#: vertices' edges instead of sweeping all of the unit's edges
SPARSE_FRACTION = 0.25


@dataclass(frozen=True)
class ShardFacts:
    """What a policy may know about a shard: its interval and its edges per gather direction."""

    shard: int
    vertices: int
    edges: Tuple[Tuple[str, int], ...] = ()        # (direction, edges) for the gather directions
    max_degree: Tuple[Tuple[str, int], ...] = ()   # (direction, largest degree)

    def edges_of(self, direction):
        return dict(self.edges).get(direction, 0)

    def max_degree_of(self, direction):
        return dict(self.max_degree).get(direction, 0)


def cpu_policy(facts: Sequence[ShardFacts], actives: Sequence[int], spec=None,
               caps=None) -> Tuple[str, ...]:
    """One strategy for the whole unit (the CPU runs a unit as one numpy pass): ``"full"`` when
    every vertex of consecutive shards is active, ``"sweep"`` above SPARSE_FRACTION of the span's
    vertices (sweeping all edges and dropping inactive results beats selecting edges), else
    ``"select"``."""
    vertices = sum(f.vertices for f in facts)
    active = sum(int(a) for a in actives)
    consecutive = all(b.shard == a.shard + 1 for a, b in zip(facts, facts[1:]))
    span = (facts[-1].shard - facts[0].shard + 1) if facts else 0
    if consecutive and active == vertices:
        kind = "full"
    elif consecutive and span and active > SPARSE_FRACTION * vertices:
        kind = "sweep"
    else:
        kind = "select"
    return (kind,) * len(facts)


POLICIES: Dict[str, Callable] = {"cpu": cpu_policy}


def register(kind: str, policy: Callable):
    """Make ``policy`` the load-balance policy of executor kind ``kind``."""
    POLICIES[kind] = policy


def choose(kind, facts, actives, spec=None, caps=None):
    policy = POLICIES.get(kind)
    if policy is None:
        return ("auto",) * len(facts)
    return tuple(policy(facts, actives, spec, caps))


#: a push iteration's units walk with the hub path (strategy ``"hubs"``: rows of
#: ``caps.push_hub_edges`` edges or more walked by the whole grid) only when the changed set's
#: mean push degree is at least push_hub_edges / HUB_MEAN_DIV: below that hub rows carry little of
#: the walk and the hub launches per shard cost more than they save
#: (docs/BENCHMARKS.md, "Measured constants")
HUB_MEAN_DIV = 64


def hub_walk(caps, edges, changed):
    """Whether a push from ``changed`` vertices walking ``edges`` edges (-1: unknown) takes the
    executor's hub path (``caps.push_hub_edges`` > 0, HUB_MEAN_DIV)."""
    huge = int(getattr(caps, "push_hub_edges", 0) or 0)
    if huge <= 0:
        return False
    return edges < 0 or edges * HUB_MEAN_DIV >= huge * max(int(changed), 1)


def as_run(unit, caps=None, hubs=False):
    """The strategies ``unit`` runs with once its transfer and direction are chosen (what the
    plan shows): a push unit walks its edges with the executor's push strategy
    (``caps.push_balance``: its push kernels have one walk, whatever the user forced), or
    ``"hubs"`` (that walk with the hub path) where ``hubs`` (:func:`hub_walk`); a zero-copy pull unit's gathers read mapped host memory with the executor's zero-copy strategy
    (``caps.zerocopy_balance``) unless the user forced one (``caps.balance``); others, and
    executors declaring neither (None), keep the policy's choice."""
    n = len(unit.balance)
    pushed = getattr(caps, "push_balance", None)
    if unit.direction == "push":
        if pushed is None:
            return tuple(unit.balance)
        return ("hubs" if hubs else pushed,) * n
    fixed = getattr(caps, "zerocopy_balance", None)
    forced = getattr(caps, "balance", "auto") or "auto"
    if unit.transfer != "zerocopy" or fixed is None or forced != "auto":
        return tuple(unit.balance)
    return (fixed,) * n
