"""gather_from = "changed": a vertex gathers only over edges whose other end changed in the
previous iteration (the seed before the first), checked against a numpy reference of those
semantics and, for idempotent programs, against the pure-pull run."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.errors import ProgramError, UsageError

from ..algorithms.conftest import BUDGETS, budget_for, build, random_edges

#: a vertex stops passing its share on below this
FLOOR = 1e-3


class Spread(gr.GASProgram):
    """Mass from a source: a vertex adds what its changed in-neighbours send, keeps the total and
    sends half of what it got, shared among its out-edges; a vertex that did not change still
    holds its old ``send``, so a gather that read it would count it twice (the filter is what
    makes the result right)."""

    vertex = {"send": "float64", "total": "float64"}
    reads = {"out_degree", "in_degree"}
    gather_reduce = gr.monoid.sum
    gather_from = "changed"
    params = {"source": 0, "seeded": True, "floor": 1e-3}

    def init(self, v):
        v.send = np.where((v.id == self.source) | (not self.seeded), 1.0, 0.0)
        v.total = 0.0
        return (v.id == self.source) if self.seeded else None

    def gather_map(self, src, dst, edge):
        return src.send / src.out_degree

    def apply(self, v, acc):
        v.total = v.total + acc
        v.send = acc * 0.5
        return acc * 0.5 > self.floor


class SpreadPerEdge(Spread):
    """The same messages computed per edge (gather_map reads dst: not hoisted)."""

    def gather_map(self, src, dst, edge):
        return gr.where(dst.total < 0.0, 0.0, src.send / src.out_degree)


class SpreadOut(Spread):
    """Along reversed edges: a vertex gathers from its changed out-neighbours (the other end is
    ``dst``), each sharing its mass among its in-edges."""

    gather_edges = "out"

    def gather_map(self, src, dst, edge):
        return dst.send / dst.in_degree


class ChangedBFS(BFS):
    gather_from = "changed"


class ChangedCC(ConnectedComponents):
    gather_from = "changed"


def spread_reference(n, src, dst, source, seeded, gather_edges):
    """The semantics in numpy: iteration by iteration over the edge list."""
    # (other end, gathering vertex, the other end's degree its mass is shared by)
    outdeg, indeg = np.bincount(src, minlength=n), np.bincount(dst, minlength=n)
    pairs = {"in": [(src, dst, outdeg)], "out": [(dst, src, indeg)]}[gather_edges]
    send = np.zeros(n)
    total = np.zeros(n)
    changed = np.zeros(n, dtype=bool)
    if seeded:
        send[source], changed[source] = 1.0, True
    else:
        send[:], changed[:] = 1.0, True

    def readers(ch):   # vertices that gather from a changed vertex
        act = np.zeros(n, dtype=bool)
        for a, b, _ in pairs:
            act[b[ch[a]]] = True
        return act
    active = readers(changed) if seeded else np.ones(n, dtype=bool)
    iterations = 0
    while active.any():
        iterations += 1
        acc = np.zeros(n)
        for a, b, deg in pairs:   # message from a (the other end) to b (the gathering vertex)
            sel = active[b] & changed[a]
            acc += np.bincount(b[sel], weights=send[a[sel]] / deg[a[sel]], minlength=n)
        total[active] += acc[active]
        send = np.where(active, acc * 0.5, send)
        changed = active & (acc * 0.5 > FLOOR)
        active = readers(changed)
    return total, iterations


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 40), m=st.integers(0, 160), seed=st.integers(0, 2**31),
       shards=st.integers(1, 5), budget=st.sampled_from(BUDGETS), seeded=st.booleans(),
       cls=st.sampled_from([Spread, SpreadPerEdge, SpreadOut]),
       direction=st.sampled_from(["auto", "pull", "push"]))
def test_gather_changed_matches_reference(tmp_path_factory, n, m, seed, shards, budget, seeded, cls,
                                          direction):
    # pull filters the gathered edges by the previous changed set; push sends from it
    rng = np.random.default_rng(seed)
    src, dst, _ = random_edges(rng, n, m)
    store = build(tmp_path_factory.mktemp("gc"), n, src, dst, num_shards=shards)
    source = int(rng.integers(0, n)) if n else 0
    if seeded and n == 0:
        return   # nothing to seed
    program = cls(source=source, seeded=seeded)
    r = gr.run(program, store, memory_budget=budget_for(budget, cls(source=source), store),
               direction=direction)
    want, iterations = spread_reference(n, src, dst, source, seeded, cls.spec.gather_edges)
    np.testing.assert_allclose(r.values["total"], want, rtol=1e-12, atol=1e-15)
    assert r.iterations == iterations and r.converged


@pytest.mark.parametrize("shards", [1, 3, 7])
@pytest.mark.parametrize("threads", [1, 4])
def test_gather_changed_threads_and_hoisting(tmp_path, rng, shards, threads):
    # a large graph: several workers, hoisted (spmv) and per-edge gathers on the same run
    n = 3000
    src, dst, _ = random_edges(rng, n, 20000)
    store = build(tmp_path, n, src, dst, num_shards=shards)
    want, _ = spread_reference(n, src, dst, 0, False, "in")
    for cls in (Spread, SpreadPerEdge):
        r = gr.run(cls(seeded=False), store, backend_options={"threads": threads})
        np.testing.assert_allclose(r.values["total"], want, rtol=1e-12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 40), m=st.integers(0, 160), seed=st.integers(0, 2**31),
       shards=st.integers(1, 5), budget=st.sampled_from(BUDGETS))
def test_idempotent_programs_equal_pure_pull(tmp_path_factory, n, m, seed, shards, budget):
    # min over changed sources only: an unchanged source's value was taken when it changed
    rng = np.random.default_rng(seed)
    src, dst, _ = random_edges(rng, n, m)
    store = build(tmp_path_factory.mktemp("gcp"), n, src, dst, num_shards=shards)
    source = int(rng.integers(0, n))
    b = budget_for(budget, ChangedBFS(source=source), store)
    for plain, changed in ((BFS(source=source), ChangedBFS(source=source)),
                           (ConnectedComponents(), ChangedCC())):
        # (gather_from "changed" programs never push asynchronously: compare with synchronous)
        want = gr.run(plain, store, memory_budget=b, backend_options={"push_async": False})
        got = gr.run(changed, store, memory_budget=b)
        np.testing.assert_array_equal(got.value, want.value)
        assert got.iterations == want.iterations


@pytest.mark.parametrize("cls", [Spread, SpreadPerEdge])
def test_gather_changed_skips_unchanged_sources(tmp_path, cls):
    # 0 -> 1 -> 2 plus 0 -> 2: in iteration 2 vertex 2 gathers from 1 only; 0 still holds
    # send = 1 from iteration 0, which a plain gather would add again (total 1.25)
    store = build(tmp_path, 3, np.array([0, 1, 0]), np.array([1, 2, 2]))
    r = gr.run(cls(source=0), store)
    np.testing.assert_allclose(r.values["total"], [0.0, 0.5, 0.75])
    assert r.iterations == 2


def test_gather_changed_needs_frontier():
    with pytest.raises(ProgramError, match="activate"):
        class Bad(Spread):
            activate = "all"


def test_gather_changed_not_in_lanes(tmp_path):
    store = build(tmp_path, 3, np.array([0, 1]), np.array([1, 2]))
    with gr.Session(store) as s:
        assert not s.can_run_lanes(Spread)
        with pytest.raises(UsageError, match="lanes"):
            s.run_lanes([Spread(source=0), Spread(source=1)])
