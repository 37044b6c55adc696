"""Push plans and both frontier formats on the CPU executor: every push-valid built-in gives the
pure-pull result and scipy.sparse.csgraph's, for every direction mode and frontier format, over
1, 3 and 7 shards, unbounded and under a budget that streams shards, on random graphs (empty,
isolated vertices, self-loops, duplicate edges) and the real test graphs."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy.sparse import csgraph

import grstream as gr
from grstream.algorithms.bc import DagLevels
from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.sssp import SSSP
from grstream.backends.cpu import facts as cpu_facts
from grstream.backends.cpu.strategy_push import push_static
from grstream.engine import direction as direction_mod, planner as planner_mod
from grstream.engine.schedule import needed_arrays, shard_bytes
from grstream.errors import MemoryBudgetError

from ...algorithms.conftest import build, minimum_budget, random_edges

#: (direction, queue_fraction): every mode with the queue always (1.0) and never (0.0) chosen
MODES = [(d, q, True) for d in ("push", "pull", "auto") for q in (1.0, 0.0)]
#: push with asynchronous plans turned off (Session option push_async=False)
SYNC_MODES = [("push", q, False) for q in (1.0, 0.0)]


def push_budget(program, store):
    """A budget just large enough for push under streaming: the pull minimum plus push's
    per-vertex arrays plus what its reverse-edge properties add to the largest shard (once
    streamed, once as scratch for the unit's temporaries)."""
    spec = type(program).spec
    extra = shard_bytes(store, needed_arrays(spec, push=True)).max(initial=0) - \
        shard_bytes(store, needed_arrays(spec)).max(initial=0)
    return minimum_budget(program, store) + sum(push_static(spec, store.num_vertices, store.num_edges).values()) \
        + 2 * int(extra) + 64 * 16


def run(program, store, budget, direction, queue, **kw):
    low = None if budget == "all" else push_budget(program, store)
    return gr.run(program, store, memory_budget=low, direction=direction, queue_fraction=queue,
                  **kw)


def csgraph_matrix(n, src, dst, w=None):
    """CSR with the lightest of duplicate edges (csgraph would add them up)."""
    w = np.ones(len(src)) if w is None else np.asarray(w, dtype=np.float64)
    order = np.lexsort((w, dst, src))
    src, dst, w = src[order], dst[order], w[order]
    first = np.ones(len(src), dtype=bool)
    first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
    return sp.csr_matrix((w[first], (src[first], dst[first])), shape=(n, n))


def expected(name, n, src, dst, w, source):
    mat = csgraph_matrix(n, src, dst, w)
    if name == "bfs":
        d = csgraph.shortest_path(mat, unweighted=True, indices=source) if n else np.zeros(0)
        return np.where(np.isinf(d), -1, d).astype(np.int64)
    if name == "sssp":
        return csgraph.dijkstra(mat, indices=source) if n else np.zeros(0)
    _, labels = csgraph.connected_components(mat, directed=True, connection="weak")
    smallest = np.full(labels.max(initial=-1) + 1, n, dtype=np.int64)
    np.minimum.at(smallest, labels, np.arange(n))
    return smallest[labels]


def programs(source):
    return {"bfs": BFS(source=source), "sssp": SSSP(source=source), "cc": ConnectedComponents()}


def check_empty(store, **kw):
    """A graph without vertices: BFS and SSSP have no source to start from, CC finds nothing."""
    for program in programs(0).values():
        if program.spec.vertex_params:
            with pytest.raises(gr.errors.UsageError, match="no vertices"):
                run(program, store, "all", "push", 1.0, **kw)
        else:
            assert run(program, store, "all", "push", 1.0, **kw).value.shape == (0,)


def check_graph(store, n, src, dst, w, source, budget, **kw):
    for name, program in programs(source).items():
        want = expected(name, n, src, dst, w, source)
        pull = gr.run(type(program)(**program.param_values), store, direction="pull")
        np.testing.assert_array_equal(pull.value, want)
        for direction, queue, asyn in MODES + SYNC_MODES:
            opts = kw if asyn else dict(kw, backend_options=dict(
                kw.get("backend_options", {}), push_async=False))
            got = run(program, store, budget, direction, queue, **opts)
            np.testing.assert_array_equal(got.value, want, err_msg=f"{name} {direction} {queue}")
            assert got.converged
            # asynchronous push plans (BFS, CC, SSSP) see new values within an iteration and
            # may need fewer; synchronous ones take the pull's iterations exactly
            if any(s.plan["push_async"] for s in got.stats):
                assert asyn and got.iterations <= pull.iterations
            else:
                assert got.iterations == pull.iterations
            dirs = {s.plan["plan_direction"] for s in got.stats}
            if direction == "push" and got.stats:
                assert dirs == {"push"}, (name, budget)
            if direction == "pull":
                assert dirs <= {"pull"}
            if got.stats:
                fmts = {s.plan["frontier_format"] for s in got.stats}
                assert fmts == ({"queue"} if queue == 1.0 else {"bitmap"} | ({"queue"} & fmts))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(n=st.integers(0, 60), m=st.integers(0, 200), seed=st.integers(0, 2**31),
       shards=st.sampled_from([1, 3, 7]), budget=st.sampled_from(["all", "tight"]))
def test_push_equals_pull_and_csgraph(tmp_path_factory, n, m, seed, shards, budget):
    rng = np.random.default_rng(seed)
    src, dst, w = random_edges(rng, n, m if n else 0, weighted=True)
    shards = max(1, min(shards, n))
    store = build(tmp_path_factory.mktemp("push"), n, src, dst, w, num_shards=shards)
    source = int(rng.integers(0, n)) if n else 0
    if n == 0:
        return check_empty(store)
    check_graph(store, n, src, dst, w, source, budget)


@pytest.mark.parametrize("shards", [1, 3, 7])
def test_tight_budget_streams_and_still_pushes(tmp_path, shards):
    rng = np.random.default_rng(shards)
    src, dst, w = random_edges(rng, 200, 900, weighted=True)
    store = build(tmp_path, 200, src, dst, w, num_shards=shards)
    r = run(SSSP(source=3), store, "tight", "push", 1.0)
    assert r.info["direction"]["push_ok"], r.info["direction"]
    if shards > 1:
        assert r.info["memory"]["resident_shards"] < shards
    # every plan pushes (the CPU's threshold takes every changed set): the memory model holds
    # the push arrays alone, fewer bytes than with pull's beside them
    only, both = gr.run(SSSP(source=3), store), gr.run(SSSP(source=3), store, push_threshold=0.5)
    assert only.info["memory"]["device_bytes"] < both.info["memory"]["device_bytes"]
    with pytest.raises(MemoryBudgetError) as pulled:
        gr.run(SSSP(source=3), store, memory_budget=1, max_iter=0, direction="pull")
    # a threshold below 1 may plan pull too: at the pull minimum there is no room for push's
    # arrays beside pull's, so the run pulls and says why
    low = gr.run(SSSP(source=3), store, memory_budget=pulled.value.minimum, push_threshold=0.5)
    assert not low.info["direction"]["push_ok"] and "budget" in low.info["direction"]["reason"]
    np.testing.assert_array_equal(low.value, r.value)


def test_worker_threads_push_units_at_once(tmp_path, monkeypatch):
    # every plan with more than one unit runs them on two threads, whatever its size
    monkeypatch.setattr(planner_mod, "PARALLEL_EDGES", 0)
    monkeypatch.setattr(direction_mod, "ASYNC_SHARD_EDGES", 0)   # (CC's plans: asynchronous)
    rng = np.random.default_rng(7)
    src, dst, w = random_edges(rng, 300, 2000, weighted=True)
    store = build(tmp_path, 300, src, dst, w, num_shards=7)
    # by default the CPU's push plans run their units one at a time (cpu facts PUSH_WORKERS)
    r = run(BFS(source=5), store, "all", "push", 1.0, backend_options={"threads": 2})
    assert {s.plan["workers"] for s in r.stats} == {1}
    monkeypatch.setattr(cpu_facts, "PUSH_WORKERS", None)
    for budget in ("all", "tight"):
        check_graph(store, 300, src, dst, w, 5, budget, backend_options={"threads": 2})
    r = run(ConnectedComponents(), store, "all", "push", 1.0,
            backend_options={"threads": 2, "push_async": False})
    assert max(s.plan["workers"] for s in r.stats) == 2
    # asynchronous push plans run their units in order, on one thread
    r = run(ConnectedComponents(), store, "all", "push", 1.0, backend_options={"threads": 2})
    assert all(s.plan["push_async"] and s.plan["workers"] == 1 for s in r.stats)


def test_dag_levels_push_equals_pull(tmp_path):
    rng = np.random.default_rng(3)
    src, dst, w = random_edges(rng, 120, 500, weighted=True)
    store = build(tmp_path, 120, src, dst, w, num_shards=3)
    dist = gr.run(SSSP(source=0), store).value
    want = gr.run(DagLevels(dist=dist, source=0), store, direction="pull")
    for direction in ("push", "auto"):
        got = gr.run(DagLevels(dist=dist, source=0), store, direction=direction)
        np.testing.assert_array_equal(got.value, want.value)
        assert got.iterations == want.iterations


def test_lanes_pull_beside_pushing_runs(tmp_path):
    rng = np.random.default_rng(11)
    src, dst, w = random_edges(rng, 150, 700, weighted=True)
    store = build(tmp_path, 150, src, dst, w, num_shards=3)
    with gr.Session(store, direction="push") as s:
        lanes = s.run_lanes([BFS(source=v) for v in (0, 9, 77)])
        one = [s.run(BFS(source=v)) for v in (0, 9, 77)]
    for a, b in zip(lanes, one):
        np.testing.assert_array_equal(a.value, b.value)
        assert {st.plan["plan_direction"] for st in a.stats} <= {"pull"}
        assert {st.plan["plan_direction"] for st in b.stats} == {"push"}


@pytest.mark.parametrize("name", ["karate.mtx", "dolphins.mtx", "netscience.mtx",
                                  "p2p-Gnutella08.txt", "rome99.gr"])
def test_real_graphs(datasets_dir, tmp_path, name):
    from ...algorithms.test_datasets import edges_of
    n, src, dst, w = edges_of(datasets_dir / name)
    if w is None:
        w = np.ones(len(src))
    w = np.abs(np.asarray(w, dtype=np.float64)) + 1   # positive: csgraph drops explicit zeros
    for shards in (1, 7):
        store = build(tmp_path, n, src, dst, w, num_shards=shards, name=f"real{shards}")
        source = int(np.argmax(np.bincount(src, minlength=n)))
        check_graph(store, n, src, dst, w, source, "tight" if shards == 7 else "all")


class SeededLabels(gr.GASProgram):
    """Min labels seeded from vertex 0 only, while every vertex starts with a label of its own
    (100 - id): pull gathers unseeded neighbours' labels too, pushing from the seed would not."""
    vertex = {"label": "int64"}
    gather_reduce = gr.monoid.min

    def init(self, v):
        v.label = 100 - v.id
        return v.id == 0

    def gather_map(self, src, dst, edge):
        return src.label

    def apply(self, v, acc):
        new = gr.minimum(v.label, acc)
        changed = new < v.label
        v.label = new
        return changed


def test_a_seed_that_leaves_live_values_outside_pulls(tmp_path):
    # 0 -> 1 activates 1, which pulls 98 from 2 (unseeded); a push from 0 sends only 100
    store = build(tmp_path, 6, np.array([0, 2, 1, 4]), np.array([1, 1, 3, 5]), num_shards=2)
    want = gr.run(SeededLabels(), store, direction="pull")
    assert want.value[1] == 98 and want.value[3] == 97
    got = gr.run(SeededLabels(), store, direction="push")
    np.testing.assert_array_equal(got.value, want.value)
    assert not got.info["direction"]["push_ok"]
    assert "outside the seed" in got.info["direction"]["reason"]
    assert {s.plan["plan_direction"] for s in got.stats} == {"pull"}
    # BFS's unreached level changes nobody: it pushes
    assert gr.run(BFS(source=0), store, direction="push").info["direction"]["push_ok"]
