"""activate = "schedule": an int vertex field says in which iteration each vertex is active;
checked against a numpy reference of those semantics, with the work each iteration did."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import grstream as gr
from grstream.backends.cpu import kernels
from grstream.engine.planner import phases_of
from grstream.engine.turns import Turns
from grstream.errors import ProgramError

from ..algorithms.conftest import BUDGETS, budget_for, build, random_edges


class Layered(gr.GASProgram):
    """In its turn a vertex takes 1 + the sum of its in-neighbours' (or out-neighbours') values
    as they were before the iteration: the result depends on exactly who ran when."""

    vertex = {"x": "float64", "turn": "int32"}
    gather_reduce = gr.monoid.sum
    activate = "schedule"
    schedule = "turn"

    def __init__(self, turns=None, **params):
        super().__init__(**params)
        self._turns = turns

    def init(self, v):
        v.x = 0.0
        v.turn = self._turns

    def gather_map(self, src, dst, edge):
        return src.x

    def apply(self, v, acc):
        v.x = 1.0 + acc
        return acc > 0.0


class LayeredOut(Layered):
    gather_edges = "out"

    def gather_map(self, src, dst, edge):
        return dst.x


def reference(n, src, dst, turns, direction):
    """(x, per iteration (active vertices, gathered edges)) by the definition."""
    x = np.zeros(n)
    own, other = (dst, src) if direction == "in" else (src, dst)
    work = []
    for t in range(1, int(turns.max(initial=0)) + 1):
        mine = turns == t
        acc = np.zeros(n)
        np.add.at(acc, own, x[other])
        x = np.where(mine, 1.0 + acc, x)
        work.append((int(mine.sum()), int(mine[own].sum())))
    return x, work


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 30), m=st.integers(0, 90), seed=st.integers(0, 2**31),
       shards=st.sampled_from([1, 3, 5]), budget=st.sampled_from(BUDGETS),
       direction=st.sampled_from(["in", "out"]), spmv=st.booleans())
def test_schedule_runs_exactly_the_scheduled_vertices(tmp_path_factory, monkeypatch, n, m, seed,
                                                      shards, budget, direction, spmv):
    # the message is a field of the sending end: with spmv, its array goes through scipy's
    # product at any size (else through a gather of the field per edge)
    monkeypatch.setattr(kernels, "SPMV_EDGES", 1 if spmv else 1 << 30)
    rng = np.random.default_rng(seed)
    src, dst, _ = random_edges(rng, n, m)   # self-loops and parallel edges included
    store = build(tmp_path_factory.mktemp("turns"), n, src, dst, num_shards=shards)
    turns = rng.integers(-2, 6, n).astype(np.int32)   # gaps, never-active vertices
    cls = Layered if direction == "in" else LayeredOut
    program = cls(turns=turns)
    r = gr.run(program, store, memory_budget=budget_for(budget, cls(), store))
    want, work = reference(n, src, dst, turns, direction)
    np.testing.assert_allclose(r.values["x"], want, rtol=1e-12)
    np.testing.assert_array_equal(r.values["turn"], turns)
    assert r.converged and r.iterations == len(work)
    assert [(s.active_vertices, s.active_edges) for s in r.stats] == work
    bounds = np.asarray(store.intervals)
    for s, t in zip(r.stats, range(1, len(work) + 1)):
        held = np.diff(np.searchsorted(np.flatnonzero(turns == t), bounds))
        assert s.shards_processed == int(np.count_nonzero(held))   # the others are skipped


def test_schedule_in_a_session_and_its_plans(tmp_path):
    src, dst = np.array([0, 1, 2, 3]), np.array([1, 2, 3, 0])
    store = build(tmp_path, 4, src, dst, num_shards=2)
    spec = Layered.spec
    assert phases_of(spec, False) == ("gather", "apply")   # no activation: the schedule is it
    assert not spec.push_ok and "schedule" in spec.push_reason
    with gr.Session(store) as s:
        for turns, x in (([1, 2, 3, 4], [1, 2, 3, 4]), ([0, 0, 0, 0], [0, 0, 0, 0]),
                         ([3, 0, 0, 1], [2, 0, 0, 1])):
            r = s.run(Layered(turns=np.array(turns, np.int32)))
            np.testing.assert_array_equal(r.values["x"], x)
            assert r.iterations == max(turns)
            assert all(st.plan["phases"] == ["gather", "apply"] and not st.plan["all_active"]
                       for st in r.stats)
        # max_iter still stops a scheduled run
        r = s.run(Layered(turns=np.array([1, 2, 3, 4], np.int32)), max_iter=2)
        np.testing.assert_array_equal(r.values["x"], [1, 2, 0, 0])
        assert r.iterations == 2 and not r.converged


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 30), m=st.integers(0, 90), seed=st.integers(0, 2**31),
       lanes=st.integers(2, 5), direction=st.sampled_from(["in", "out"]))
def test_schedules_in_lanes_equal_separate_runs(tmp_path_factory, n, m, seed, lanes, direction):
    # each lane its own schedule: a lane stops after its own last turn
    rng = np.random.default_rng(seed)
    src, dst, _ = random_edges(rng, n, m)
    store = build(tmp_path_factory.mktemp("lturns"), n, src, dst, num_shards=3)
    cls = Layered if direction == "in" else LayeredOut
    programs = [cls(turns=rng.integers(-1, 1 + k, n).astype(np.int32)) for k in range(lanes)]
    with gr.Session(store) as s:
        assert s.can_run_lanes(cls)
        got = s.run_lanes(programs)
        want = [s.run(p) for p in programs]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.values["x"], b.values["x"], rtol=1e-12)
        assert a.iterations == b.iterations and a.converged and b.converged


def test_turns_buckets():
    t = Turns(np.array([2, 0, -1, 2, 1, 5, 1]), [0, 3, 7])
    assert [t.bucket(k).tolist() for k in range(7)] == [[], [4, 6], [0, 3], [], [], [5], []]
    assert [t.left(k) for k in (1, 2, 3, 5, 6)] == [5, 3, 1, 1, 0]
    assert t.counts(t.bucket(2)).tolist() == [1, 1]
    empty = Turns(np.zeros(3, np.int64), [0, 3])
    assert empty.last == 0 and empty.left(1) == 0 and empty.bucket(1).size == 0


@pytest.mark.parametrize("attrs, apply, match", [
    ('vertex = {"x": "float64"}\n    activate = "schedule"', "", "go together"),
    ('vertex = {"x": "float64", "t": "int32"}\n    schedule = "t"', "", "go together"),
    ('vertex = {"x": "float64"}\n    activate = "schedule"\n    schedule = "x"', "",
     "not an int vertex field"),
    ('vertex = {"x": "float64", "t": "int32"}\n    activate = "schedule"\n    schedule = "t"',
     "v.t = v.t + 1", "apply writes v.t, the schedule"),
    ('vertex = {"x": "float64", "t": "int32"}\n    activate = "schedule"\n    schedule = "t"\n'
     '    gather_from = "changed"', "", "needs activate")])
def test_schedule_declarations_are_checked(attrs, apply, match):
    text = f"""
class Declared(gr.GASProgram):
    {attrs}
    gather_reduce = gr.monoid.sum

    def gather_map(self, src, dst, edge):
        return src.x

    def apply(self, v, acc):
        {apply or "v.x = acc"}
        return v.x > 0
"""
    with pytest.raises(ProgramError, match=match):
        gr.program_from_source(text)


@pytest.mark.parametrize("cls", [Layered, LayeredOut])
def test_a_scheduled_run_resumes_from_a_checkpoint(tmp_path, cls):
    # the schedule is vertex state: a resumed run takes its turns from the checkpoint
    from ..engine.test_checkpoint import interrupted, same
    rng = np.random.default_rng(4)
    n = 80
    src, dst, _ = random_edges(rng, n, 320)
    store = build(tmp_path, n, src, dst, num_shards=4)
    turns = rng.integers(-1, 6, n).astype(np.int32)
    whole = gr.run(cls(turns=turns), store)
    assert whole.iterations == turns.max()
    for k in range(1, whole.iterations):
        folder = tmp_path / f"ck{k}"
        interrupted(cls(turns=turns), store, folder, k)
        same(whole, gr.run(cls(turns=turns), store, resume=folder))
