"""Sums of a per-vertex value over each vertex's neighbours, one streamed pass: over
successors (out-edges), predecessors (in-edges) or both. NetworkX's
``average_neighbor_degree`` divides the sums of the neighbours' degrees by each vertex's own
degree. Integer values sum exactly, in any order."""
import numpy as np

import grstream as gr

from ._common import execute, helper_options


class _NeighbourSum(gr.GASProgram):
    """``s = sum of t over the neighbours`` (one iteration)."""

    abstract = True
    vertex = {"s": "int64", "t": "int64"}
    gather_reduce = gr.monoid.sum

    def __init__(self, values=None, **params):
        super().__init__(**params)
        self._values = values

    def init(self, v):
        v.t = 0 if self._values is None else self._values
        v.s = 0
        return None

    def apply(self, v, acc):
        v.s = acc
        return False


class SuccessorSum(_NeighbourSum):
    """Over out-edges: the vertex's successors."""

    gather_edges = "out"

    def gather_map(self, src, dst, edge):
        return dst.t


class PredecessorSum(_NeighbourSum):
    """Over in-edges: the vertex's predecessors."""

    def gather_map(self, src, dst, edge):
        return src.t


class NeighbourSum(_NeighbourSum):
    """Over in- and out-edges (a neighbour both ways counts twice, a self-loop twice). One
    message serves both directions, so it carries both ends; apply takes off the vertex's own
    share, once per incident edge."""

    gather_edges = "all"
    reads = {"in_degree", "out_degree"}

    def gather_map(self, src, dst, edge):
        return src.t + dst.t

    def apply(self, v, acc):
        v.s = acc - v.t * (v.in_degree + v.out_degree)
        return False


PROGRAMS = {"out": SuccessorSum, "in": PredecessorSum, "in+out": NeighbourSum}


def neighbour_sums(store, values, edges="out", **run_options):
    """``(sums, result)``: per vertex, the sum of the int ``values`` (internal order) over its
    neighbours along ``edges`` ("out", "in" or "in+out")."""
    program = PROGRAMS[edges](values=np.asarray(values, dtype=np.int64))
    result = execute(program, store, dict(helper_options(run_options), max_iter=1))
    return result.values["s"], result
