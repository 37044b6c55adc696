"""Breadth-first search: hop level of every vertex from a source (-1 when unreachable)."""
from typing import TYPE_CHECKING, Any, Tuple

if TYPE_CHECKING:  # names for the annotations only
    from ..engine import Result
    from ..store import ShardStore

import numpy as np

import grstream as gr

from ._common import execute, internal_source

NAME = "bfs"
#: level of an unreached vertex inside the program; far from int64 overflow when 1 is added
UNREACHED = 1 << 62


class BFS(gr.GASProgram):
    """Pull-style BFS: a vertex takes the smallest level of its in-neighbours plus one."""

    vertex = {"level": "int64"}
    gather_reduce = gr.monoid.min
    asynchronous = True   # min of monotone values: any order of updates reaches the same result
    params = {"source": 0}

    def init(self, v):
        v.level = np.where(v.id == self.source, 0, UNREACHED)
        return v.id == self.source

    def gather_map(self, src, dst, edge):
        return src.level + 1

    def apply(self, v, acc):
        new = gr.minimum(v.level, acc)
        changed = new < v.level
        v.level = new
        return changed


def bfs(store: "ShardStore", source: Any, **run_options: Any) -> Tuple[np.ndarray, "Result"]:
    """Levels from ``source`` (int64, -1 unreachable) and the engine Result.

    ``run_options`` go to :func:`grstream.run` (device, memory_budget, max_iter, progress).
    """
    result = execute(BFS(source=internal_source(store, source)), store, run_options)
    level = result.values["level"]
    result.values["level"] = np.where(level >= UNREACHED, -1, level)
    return result.values["level"], result


def from_args(store, args, run_options):
    return bfs(store, args.source, **run_options)
