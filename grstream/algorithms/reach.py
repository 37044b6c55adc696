"""Breadth-first search towards a target: the hop distance from every vertex to ``target``
(-1 when it cannot reach it), walking in-edges back from the target. Gives NetworkX's
``ancestors`` and ``single_target_shortest_path_length``."""
from typing import TYPE_CHECKING, Any, Tuple

if TYPE_CHECKING:  # names for the annotations only
    from ..engine import Result
    from ..store import ShardStore

import numpy as np

import grstream as gr

from ._common import execute, internal_source
from .bfs import BFS
from .params import Param, Vertex, declare, max_iter_param


class ReverseBFS(BFS):
    """:class:`~grstream.algorithms.bfs.BFS` over reversed edges: a vertex takes the smallest
    level of its out-neighbours plus one (``source`` is the target)."""

    gather_edges = "out"

    def gather_map(self, src, dst, edge):
        return dst.level + 1


@declare("bfs-to", Param("target", Vertex(), None, "target vertex as the input names it",
                         none="the first vertex with an out-edge"),
         max_iter_param(),
         summary=lambda store, values, results: f"reach it: {int((values >= 0).sum())}")
def bfs_to(store: "ShardStore", target: Any, max_iter: Any,
           **run_options: Any) -> Tuple[np.ndarray, "Result"]:
    """Hops from every vertex to ``target`` (int64, -1 when it cannot reach it) and the engine
    Result."""
    t = internal_source(store, target, "target")
    result = execute(ReverseBFS(source=t), store, dict(run_options, max_iter=max_iter))
    return result.values["level"], result
