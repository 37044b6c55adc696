"""The CPU executor's load-balance policy (its ``Policies.balance``): how a unit's gather and
activation walk the unit's edges, one numpy pass per unit."""
from typing import Sequence, Tuple

from ...engine.contract import ShardFacts

#: below this fraction of active vertices in a unit, gather and activation select the active
#: vertices' edges instead of sweeping all of the unit's edges
SPARSE_FRACTION = 0.25


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
