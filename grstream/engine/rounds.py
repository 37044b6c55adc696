"""Asynchronous local rounds (IterationPlan ``local_rounds`` and ``local_fraction``): which plans
get them and how sparse a unit's in-unit frontier must be for a round to run. The planner decides
both; an executor runs the rounds within the plan's limits (grstream/backends/cpu/local.py)."""
from .capabilities import Feature
from .direction import asynchronous

#: IterationPlan.local_fraction of plans with local rounds: a round runs only while the unit's
#: vertices it would gather are at most this fraction of the unit's span. A dense round costs what
#: the next iteration would, plus the in-unit selection: without this rule dense rounds made
#: RMAT-20 BFS 2.5x slower on the CPU (docs/BENCHMARKS.md "Asynchronous local rounds"), so local
#: rounds are for sparse, local frontiers. 0 would mean no limit.
LOCAL_FRACTION = 1 / 8


def allows_local_rounds(spec, caps):
    """Asynchronous local rounds (IterationPlan.local_rounds) keep the result only for programs
    that promise it (``asynchronous``) and whose state is the vertex fields alone."""
    return bool(caps.has(Feature.LOCAL_ROUNDS) and asynchronous(spec))


def local_fraction(rounds):
    """The plan's ``local_fraction`` for ``rounds`` local rounds (0.0 for plans without any)."""
    return float(LOCAL_FRACTION) if rounds else 0.0
