"""Breadth-first search: hop level of every vertex from a source (-1 when unreachable)."""
from typing import TYPE_CHECKING, Any, Tuple

if TYPE_CHECKING:  # names for the annotations only
    from ..engine import Result
    from ..store import ShardStore

import numpy as np

import grstream as gr

from ._common import execute, internal_source
from .params import declare, max_iter_param, source_param

#: level of an unreached vertex inside the program; far from int64 overflow when 1 is added
UNREACHED = 1 << 62
#: vertices whose levels finish maps at once (temporaries of this many stay in cache)
FINISH_BLOCK = 1 << 16


class BFS(gr.GASProgram):
    """Pull-style BFS: a vertex takes the smallest level of its in-neighbours plus one; the
    Result's levels are -1 where unreached (``finish``)."""

    vertex = {"level": "int64"}
    gather_reduce = gr.monoid.min
    asynchronous = True   # min of monotone values: any order of updates reaches the same result
    params = {"source": 0}
    vertex_params = ("source",)   # an internal vertex id: checked against 0..n-1
    # every vertex unreached, the source at level 0 and the seed: made where the state lives
    initial = {"level": UNREACHED}
    seeds = {"source": {"level": 0}}

    def gather_map(self, src, dst, edge):
        return src.level + 1

    def apply(self, v, acc):
        new = gr.minimum(v.level, acc)
        changed = new < v.level
        v.level = new
        return changed

    def finish(self, values):
        # the iterations need unreached far above any level (a minimum); the result shows -1.
        # The arrays are the Result's own (executors hand out copies): mapped in place, with
        # no second array of n levels, without a branch per vertex (reached and unreached
        # vertices interleave: a masked write mispredicts about every other vertex). A level
        # is UNREACHED = 2**62 or below 2**62, so ``level >> 62`` is 1 exactly where unreached
        level = values["level"]
        for lo in range(0, len(level), FINISH_BLOCK):
            part = level[lo:lo + FINISH_BLOCK]
            part -= (part >> 62) * (UNREACHED + 1)
        return values


@declare("bfs", source_param(), max_iter_param(),
         summary=lambda store, values, results: f"reached {int((values >= 0).sum())}")
def bfs(store: "ShardStore", source: Any, max_iter: Any,
        **run_options: Any) -> Tuple[np.ndarray, "Result"]:
    """Levels from ``source`` (int64, -1 unreachable) and the engine Result."""
    result = execute(BFS(source=internal_source(store, source)), store,
                     dict(run_options, max_iter=max_iter))
    return result.values["level"], result
