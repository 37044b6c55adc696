"""A declared start (``initial``, ``seeds``): checked when the class is defined, made by the
executor where the state lives (no host init, no pass over n values), and every run equal to the
same program started by a host ``init``."""
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bfs import BFS, UNREACHED
from grstream.algorithms.predecessors import BFSTree
from grstream.algorithms.sssp import SSSP
from grstream.engine import state as state_mod
from grstream.engine.executor import Executor
from grstream.errors import ProgramError

from ..algorithms.conftest import build, random_edges


@pytest.fixture(params=[1, 5])
def store(tmp_path, request):
    src, dst, w = random_edges(np.random.default_rng(11), 160, 700, weighted=True)
    return build(tmp_path, 160, src, dst, w, num_shards=request.param)


def _twin(cls):
    """``cls`` with an init of its own (the base's, which writes the declaration on the host)."""
    class Host(cls):
        def init(self, v):
            return super().init(v)
    Host.__name__ = Host.__qualname__ = "Host" + cls.__name__
    return Host


class Pair(gr.GASProgram):
    """Fields of 1, 4 and 8 bytes, two seed params (a later one's values win where both name
    one vertex) and a field a seed leaves at its initial value."""

    vertex = {"hops": "int32", "seen": "bool", "mass": "float32", "tag": "int64"}
    gather_reduce = gr.monoid.min
    gather_dtype = "int32"
    params = {"a": 0, "b": 0}
    vertex_params = ("a", "b")
    initial = {"hops": 1 << 20, "mass": 0.5, "tag": -3}
    seeds = {"a": {"hops": 0, "seen": True}, "b": {"hops": 0, "tag": 7}}

    def gather_map(self, src, dst, edge):
        return src.hops + 1

    def apply(self, v, acc):
        new = gr.minimum(v.hops, acc)
        changed = new < v.hops
        v.hops = new
        v.seen = v.seen | changed
        return changed


class Loud(BFS):
    """Vertices outside the seed hold values their messages lower neighbours with: the run
    must pull (the push check reads the declared rows as it reads a whole state)."""

    initial = {"level": 3}
    seeds = {"source": {"level": 10}}


class ById(BFS):
    """A message reading the sender's id: the push check needs every vertex's, so the host
    makes the start."""

    def gather_map(self, src, dst, edge):
        return src.level + 1 + src.id % 2


def _run(cls, store, **params):
    return gr.run(cls(**params), store)


@pytest.mark.parametrize("cls, params", [(BFS, {"source": 4}), (SSSP, {"source": 9}),
                                         (BFSTree, {"source": 0}), (Pair, {"a": 3, "b": 3}),
                                         (Pair, {"a": 3, "b": 70}), (Loud, {"source": 2}),
                                         (ById, {"source": 5})])
def test_declared_start_equals_host_init(store, cls, params):
    """Values, iterations, changed sets and the push decision equal the host init's."""
    got, want = _run(cls, store, **params), _run(_twin(cls), store, **params)
    assert got.values.keys() == want.values.keys()
    for f in got.values:
        np.testing.assert_array_equal(got.values[f], want.values[f])
    assert got.iterations == want.iterations
    assert [s.changed_vertices for s in got.stats] == [s.changed_vertices for s in want.stats]
    assert got.info["direction"] == want.info["direction"]


def test_pair_seed_values():
    """Where two seed params name one vertex the later one's values win, over the initial ones."""
    made = state_mod.constant_state(Pair(a=3, b=3), 10)
    assert made.seed.tolist() == [3]
    assert {f: v.tolist() for f, v in made.seed_values.items()} == \
        {"hops": [0], "seen": [True], "mass": [0.5], "tag": [7]}
    made = state_mod.constant_state(Pair(a=6, b=2), 10)
    assert made.seed.tolist() == [2, 6] and made.seed_values["tag"].tolist() == [7, -3]
    rows, seed = made.rows()
    assert rows["tag"].tolist() == [-3, 7, -3] and seed.tolist() == [False, True, True]
    assert rows["hops"].dtype == np.int32 and rows["seen"].dtype == np.bool_


def test_a_declared_seed_reaches_the_executor_as_ids_alone(store, monkeypatch):
    """No seed mask of n is made for a declared start: the executor's set_frontier gets the
    seed's ids and no mask, and the run equals the host-started twin's."""
    from grstream.backends.cpu.executor import CpuExecutor
    calls = []
    real = CpuExecutor.set_frontier

    def spy(self, mask, ids=None):
        calls.append((mask, None if ids is None else np.asarray(ids).tolist()))
        return real(self, mask, ids)

    monkeypatch.setattr(CpuExecutor, "set_frontier", spy)
    got = gr.run(BFS(source=5), store)
    assert calls == [(None, [5])]
    want = gr.run(_twin(BFS)(source=5), store)
    assert isinstance(calls[1][0], np.ndarray) and calls[1][1] == [5]   # the host path's mask
    np.testing.assert_array_equal(got.value, want.value)


def test_loud_start_pulls(store):
    """The declared rows give the push check's answer: Loud's vertices outside the seed would
    lower their neighbours, so its run pulls, as its host twin's does."""
    r = _run(Loud, store, source=2)
    assert "this run pulls" in str(r.info["direction"])
    assert all(s.plan.get("plan_direction") != "push" for s in r.stats)


def test_declared_start_runs_no_host_init(store, monkeypatch):
    """BFS's start is made by the executor (Executor.fill_state): no init, no push check over
    n values; a program reading the sender's id in its message keeps the host path."""
    made, silent = [], []
    real_fill = Executor.fill_state
    monkeypatch.setattr(state_mod, "initial_state", lambda *a, **k: pytest.fail("host init ran"))
    monkeypatch.setattr(Executor, "fill_state", lambda self, *a: made.append(1) or real_fill(self, *a))
    from grstream.engine import planner
    real_silent = planner.seed_is_silent
    monkeypatch.setattr(planner, "seed_is_silent",
                        lambda spec, prog, state, seed, *w: silent.append(len(seed)) or
                        real_silent(spec, prog, state, seed, *w))
    with gr.Session(store) as s:
        s.run(BFS(source=1))
        s.run(SSSP(source=2))
    assert made == [1, 1] and silent == [2, 2]   # (the rows: the unreached vertices', the source's)
    assert state_mod.constant_state(ById(source=1), 160) is None


def test_one_vertex_graph_of_seeds(tmp_path):
    """Every vertex a seed: the rows hold the seed's alone."""
    st = build(tmp_path, 1, np.zeros(0, np.int64), np.zeros(0, np.int64), None, num_shards=1)
    assert gr.run(BFS(source=0), st).values["level"].tolist() == [0]
    state, seed = state_mod.constant_state(BFS(source=0), 1).rows()
    assert state["level"].tolist() == [0] and seed.tolist() == [True]


def test_lanes_of_a_declared_program(store):
    """Lanes start through the host (the base's init, one seed per lane): equal to single runs."""
    with gr.Session(store) as s:
        lanes = s.run_lanes([BFS(source=k) for k in (0, 7, 33)])
        for k, r in zip((0, 7, 33), lanes):
            np.testing.assert_array_equal(r.values["level"], s.run(BFS(source=k)).values["level"])


class _Checked(gr.GASProgram):
    abstract = True
    vertex = {"x": "int64", "flag": "bool", "w": "float32"}
    gather_reduce = gr.monoid.min
    params = {"source": 0}
    vertex_params = ("source",)

    def gather_map(self, src, dst, edge):
        return src.x

    def apply(self, v, acc):
        v.x = acc
        return v.x > 0


@pytest.mark.parametrize("body, fragment", [
    ({"initial": {"nope": 1}}, "'nope' is not a vertex field"),
    ({"initial": {"x": 1.5}}, "is not a value of v.x"),
    ({"initial": {"x": 1 << 70}}, "is not a value of v.x"),
    ({"initial": {"w": 1e300}}, r"is not a value of v.w \(float32\)"),
    ({"initial": {"w": 1 << 200}}, r"is not a value of v.w \(float32\)"),
    ({"initial": {"x": "a"}}, "must be a number"),
    ({"initial": [1]}, "initial is a dict"),
    ({"seeds": {"other": {"x": 0}}}, "not one of vertex_params"),
    ({"seeds": {"source": 0}}, "initial is a dict"),
    ({"seeds": {"source": {"flag": 2}}}, "is not a value of v.flag"),
    ({"initial": {"x": 0}, "init": lambda self, v: None}, "not both"),
])
def test_declarations_are_checked(body, fragment):
    with pytest.raises(ProgramError, match=fragment):
        type("Bad", (_Checked,), body)


def test_a_declaration_below_an_inherited_init_is_refused():
    """A subclass declaring ``initial`` or ``seeds`` where a base defines ``init``: that init
    would run and the declarations would be ignored, so the class is refused; a subclass's own
    init above a declaring base (the base's init writes the declarations) stays allowed."""
    base = type("WithInit", (_Checked,), {"init": lambda self, v: None})
    for body in ({"initial": {"x": 1}}, {"seeds": {"source": {"x": 0}}}):
        with pytest.raises(ProgramError, match="not both"):
            type("Below", (base,), body)
    assert not _twin(BFS).spec.constant_init


def test_constant_init_and_local_init():
    """A class without an init of its own starts from its declaration (or zeros) and is local
    to MPI ranks; a subclass defining init starts from it on the host."""
    assert BFS.spec.constant_init and state_mod.local_init(BFS)
    assert not _twin(BFS).spec.constant_init
    assert BFS.spec.initial == {"level": UNREACHED} and BFS.spec.seeds == {"source": {"level": 0}}
    assert SSSP.spec.initial["dist"] == np.inf
    fine = type("Fine", (_Checked,), {"initial": {"w": -np.inf, "x": True}, "seeds": {"source": {"w": 0.1}}})
    assert fine.spec.initial["w"] == -np.inf and fine.spec.initial["x"] == 1
    assert fine.spec.seeds["source"]["w"] == np.float32(0.1)
