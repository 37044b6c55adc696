"""Strongly connected components by coloring (Orzan; Slota et al.'s multistep without the
trimming): every round colours each unassigned vertex with the smallest id that reaches it
through unassigned vertices (min-label propagation along out-edges), then walks back from every
vertex whose colour is its own id (a root) over in-edges, within its colour: what it reaches is
the root's component, labelled with the root, its smallest id. Rounds alternate the direction
(the next colours with the smallest id each vertex reaches, walking forward from the roots), so
that a long path is settled in one round whichever way it points. Each round assigns at least
every root's component; the rounds stop when every vertex has a component.
"""
from typing import TYPE_CHECKING, Any, Tuple

if TYPE_CHECKING:  # names for the annotations only
    from ..engine import Result
    from ..store import ShardStore

import numpy as np

import grstream as gr

from ._common import execute, journal
from .params import declare

#: colour / mark of a vertex outside the round (assigned, or not reached)
NONE = 1 << 62


class _Colour(gr.GASProgram):
    """Min-label propagation among the vertices not yet assigned (``done`` False)."""

    abstract = True
    vertex = {"color": "int64", "done": "bool"}
    params = {"none": NONE}   # the kernels see no module globals
    gather_reduce = gr.monoid.min
    asynchronous = True   # min of monotone values: any order of updates reaches the same result

    def __init__(self, done=None, **params):
        super().__init__(**params)
        self._done = done

    def init(self, v):
        done = getattr(self, "_done", None)
        v.done = False if done is None else done
        v.color = np.where(v.done, NONE, v.id)
        return None

    def apply(self, v, acc):
        new = gr.minimum(v.color, acc)
        changed = new < v.color
        v.color = new
        return changed


class ColourForward(_Colour):
    """Colour: the smallest unassigned id that reaches the vertex (gathers over in-edges)."""

    def gather_map(self, src, dst, edge):
        return gr.where(dst.done, self.none, src.color)


class ColourBackward(_Colour):
    """Colour: the smallest unassigned id the vertex reaches (gathers over out-edges)."""

    gather_edges = "out"

    def gather_map(self, src, dst, edge):
        return gr.where(src.done, self.none, dst.color)


class _Reach(gr.GASProgram):
    """From every root (colour == id), the vertices of its colour reachable the other way:
    ``mark`` becomes the root's id (NONE elsewhere)."""

    abstract = True
    vertex = {"mark": "int64", "color": "int64"}
    params = {"none": NONE}
    gather_reduce = gr.monoid.min
    asynchronous = True

    def __init__(self, color=None, **params):
        super().__init__(**params)
        self._color = color

    def init(self, v):
        v.color = self._color
        root = v.color == v.id
        v.mark = np.where(root, v.id, NONE)
        return root

    def apply(self, v, acc):
        new = gr.minimum(v.mark, acc)
        changed = new < v.mark
        v.mark = new
        return changed


class ReachBackward(_Reach):
    """Walks in-edges back to the vertices that reach the root (gathers over out-edges)."""

    gather_edges = "out"

    def gather_map(self, src, dst, edge):
        return gr.where(src.color == dst.color, dst.mark, self.none)


class ReachForward(_Reach):
    """Walks out-edges to the vertices the root reaches (gathers over in-edges)."""

    def gather_map(self, src, dst, edge):
        return gr.where(src.color == dst.color, src.mark, self.none)


class CondensationLevels(gr.GASProgram):
    """Longest-path level of every vertex's component in the condensation (the DAG of the
    strongly connected components): the largest level of an in-neighbour, plus one when it lies
    in another component. Levels only rise and every cycle stays inside a component, so the
    maximum settles at the longest path whatever order the updates take."""

    vertex = {"level": "int64", "comp": "int64"}
    gather_reduce = gr.monoid.max
    asynchronous = True

    def __init__(self, comp=None, **params):
        super().__init__(**params)
        self._comp = comp

    def init(self, v):
        v.comp = self._comp
        v.level = 0
        return None

    def gather_map(self, src, dst, edge):
        return src.level + gr.where(src.comp == dst.comp, 0, 1)

    def apply(self, v, acc):
        new = gr.maximum(v.level, acc)
        changed = new > v.level
        v.level = new
        return changed


def is_semiconnected(store, label, run_options):
    """Whether for every two vertices one reaches the other, given the component ``label``
    of every vertex: the condensation then has a path through all its components, which holds
    exactly when their longest-path levels are all different."""
    result = execute(CondensationLevels(comp=label), store, run_options)
    roots = label == np.arange(len(label))
    return len(np.unique(result.values["level"][roots])) == int(roots.sum())


def scc_labels(store, run_options):
    """``(labels, results)``: each vertex's component as its smallest id, and the engine
    Results of every run (two per round)."""
    run_options = dict(run_options)
    runs = journal(store, run_options)   # (checkpoints: grstream/engine/journal.py)
    n = int(store.num_vertices)
    label = np.full(n, -1, dtype=np.int64)
    results, forward = [], True
    while (label < 0).any():
        done = label >= 0
        colour, reach = (ColourForward, ReachBackward) if forward else (ColourBackward,
                                                                         ReachForward)
        first = execute(colour(done=done), store, run_options, runs)
        color = first.values["color"]
        second = execute(reach(color=color), store, run_options, runs)
        mark = second.values["mark"]
        found = ~done & (mark < NONE)
        label[found] = mark[found]
        results += [first, second]
        forward = not forward
    return label, results


@declare("scc", vertex_valued=True,
         summary=lambda store, values, results: f"{len(np.unique(values))} components")
def strongly_connected_components(store: "ShardStore",
                                  **run_options: Any) -> Tuple[np.ndarray, "Result"]:
    """Strongly connected component labels (int64, the smallest vertex id of the component)
    and the engine Result of the last run (``result.info["runs"]``: how many runs it took)."""
    label, results = scc_labels(store, run_options)
    if not results:   # no vertices
        return label, execute(ColourForward(), store, run_options)
    last = results[-1]
    last.info["runs"] = len(results)
    return label, last
