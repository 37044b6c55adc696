"""Core numbers by peeling (Batagelj-Zaversnik's definition, removed in parallel): with ``K``
the largest core assigned so far, every iteration removes all remaining vertices with at most
``K`` remaining neighbours and gives them core ``K``; when an iteration removes none, ``K``
rises to the smallest remaining degree. Degrees count both edge directions of a directed
store (in- plus out-degree, as NetworkX's ``core_number``) and parallel edges each; self-loops
are not counted (NetworkX refuses graphs with them).

The smallest remaining degree is a sum over all vertices (an aggregate) known only after the
iteration that counted the degrees, and it is exact only if that iteration removed nothing, so
``K`` rises only after an iteration without removals: one extra iteration per rise.
"""
from typing import TYPE_CHECKING, Any, Tuple

if TYPE_CHECKING:  # names for the annotations only
    from ..engine import Result
    from ..store import ShardStore

import numpy as np

import grstream as gr

from ._common import execute
from .params import declare


class CoreNumber(gr.GASProgram):
    """Peeling (module docstring). ``core`` is -1 while a vertex remains; ``fresh`` marks the
    vertices removed by the last iteration (the first counts degrees and removes none)."""

    vertex = {"core": "int64", "deg": "int64", "fresh": "bool"}
    gather_reduce = gr.monoid.sum
    activate = "all"
    aggregates = {"kmin": gr.monoid.min, "kmax": gr.monoid.max, "removed": gr.monoid.sum,
                  "left": gr.monoid.sum}

    def init(self, v):
        v.core = -1
        v.deg = 0
        v.fresh = True   # the first iteration only counts degrees

    def gather_map(self, src, dst, edge):
        return gr.where((src.core < 0) & (dst.core < 0) & (src.id != dst.id), 1, 0)

    def apply(self, v, acc):
        alive = v.core < 0
        k = gr.where(self.removed > 0, self.kmax, gr.maximum(self.kmax, self.kmin))
        gone = alive & (acc <= k)
        v.deg = gr.where(alive, acc, v.deg)
        v.core = gr.where(gone, k, v.core)
        v.fresh = gone
        return gone

    def aggregate_kmin(self, v):
        # remaining vertices' degrees (removed ones count as no constraint)
        return gr.where(v.core < 0, v.deg, self.num_edges * 2 + 1)

    def aggregate_kmax(self, v):
        return v.core

    def aggregate_removed(self, v):
        return gr.where(v.fresh, 1, 0)

    def aggregate_left(self, v):
        return gr.where(v.core < 0, 1, 0)

    def converged(self):
        return self.iteration >= 1 and self.left == 0


class UndirectedCoreNumber(CoreNumber):
    """On an undirected store (``store.directed`` False) every edge is stored both ways:
    in-edges hold each neighbour once."""


class DirectedCoreNumber(CoreNumber):
    """On a directed store a vertex's neighbours are its in- and out-neighbours."""

    gather_edges = "all"


@declare("kcore", summary=lambda store, values, results:
         f"largest core {int(values.max()) if len(values) else 0}")
def core_number(store: "ShardStore", **run_options: Any) -> Tuple[np.ndarray, "Result"]:
    """Core number of every vertex (int64) and the engine Result."""
    # the store's own flag: built --undirected or from a symmetric input (bc reads it too)
    cls = DirectedCoreNumber if store.directed else UndirectedCoreNumber
    n = int(store.num_vertices)
    result = execute(cls(), store, dict(run_options, max_iter=2 * n + 2))
    return result.values["core"], result
