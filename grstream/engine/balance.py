"""Load-balance policies: which gather strategy each shard of a unit uses, per executor kind.

The planner calls ``POLICIES[kind](facts, actives, spec, caps)`` for every unit: ``facts`` are
the unit's shards' :class:`ShardFacts`, ``actives`` their active vertex counts, ``spec`` the
program's ProgramSpec, ``caps`` the executor's Capabilities (``caps.balance``: the strategy the
user forced, or "auto"); it returns one strategy name per shard. A new executor kind registers its policy with :func:`register`; kinds without one get
``"auto"`` (the executor's own default, a transitional state). A unit the transfer policy makes
zero-copy, and a push unit, take :func:`as_run`'s strategies (the executor's own for those).
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



def as_run(unit, caps=None):
    """The strategies ``unit`` runs with once its transfer and direction are chosen (what the
    plan shows): a push unit walks its edges with the executor's push strategy
    (``caps.push_balance``: its push kernels have one walk, whatever the user forced); a
    zero-copy pull unit's gathers read mapped host memory with the executor's zero-copy strategy
    (``caps.zerocopy_balance``) unless the user forced one (``caps.balance``); others, and
    executors declaring neither (None), keep the policy's choice."""
    n = len(unit.balance)
    pushed = getattr(caps, "push_balance", None)
    if unit.direction == "push":
        return (pushed,) * n if pushed is not None else tuple(unit.balance)
    fixed = getattr(caps, "zerocopy_balance", None)
    forced = getattr(caps, "balance", "auto") or "auto"
    if unit.transfer != "zerocopy" or fixed is None or forced != "auto":
        return tuple(unit.balance)
    return (fixed,) * n
