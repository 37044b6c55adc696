"""When a run stops without max_iter: frontier empty, converged(), or the 10 n + 10 safety limit."""
import warnings

import numpy as np
import pytest

import grstream as gr
from grstream.errors import UsageError

from ..algorithms.conftest import build


class Forever(gr.GASProgram):
    """Topology-driven with no converged(): nothing but max_iter ends it."""

    vertex = {"x": "float64"}
    gather_reduce = gr.monoid.sum
    activate = "all"

    def gather_map(self, src, dst, edge):
        return src.x

    def apply(self, v, acc):
        v.x = acc + 1.0
        return True


class Restless(gr.GASProgram):
    """Frontier-driven, but every vertex always reports a change: its frontier never empties."""

    vertex = {"x": "int64"}
    gather_reduce = gr.monoid.max

    def gather_map(self, src, dst, edge):
        return src.x

    def apply(self, v, acc):
        v.x = v.x + 1
        return True


@pytest.fixture
def cycle(tmp_path):
    return build(tmp_path, 4, np.array([0, 1, 2, 3]), np.array([1, 2, 3, 0]), num_shards=2)


def test_topology_driven_program_without_converged_needs_max_iter(cycle):
    with pytest.raises(UsageError, match="never stops by itself: define converged"):
        gr.run(Forever(), cycle)
    r = gr.run(Forever(), cycle, max_iter=3)
    assert r.iterations == 3 and not r.converged
    np.testing.assert_array_equal(r.value, [3.0] * 4)  # 0 -> 1 -> 2 -> 3 along the cycle


def test_default_limit_stops_a_restless_frontier_with_a_warning(cycle):
    with pytest.warns(RuntimeWarning, match=r"default limit of 10 n \+ 10 = 50 iterations"):
        r = gr.run(Restless(), cycle)
    assert r.iterations == 50 and not r.converged and r.info["max_iter"] == 50
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = gr.run(Restless(), cycle, max_iter=5)  # asked for: no warning
    assert r.iterations == 5 and r.info["max_iter"] == 5


def test_a_frontier_that_empties_stops_quietly(cycle):
    class Once(gr.GASProgram):
        vertex = {"x": "int64"}
        gather_reduce = gr.monoid.max

        def gather_map(self, src, dst, edge):
            return src.x

        def apply(self, v, acc):
            return False

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = gr.run(Once(), cycle)
    assert r.iterations == 1 and r.converged
