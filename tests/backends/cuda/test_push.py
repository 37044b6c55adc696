"""Push plans on the GPU (issue 8): every direction sequence equals the pure-pull run and scipy.

Push plans come from the stand-in of :mod:`.push_plans` (the contract of grstream/engine/plan.py)
until the engine chooses directions itself; skipped without a GPU.
"""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.sssp import SSSP

from .push_plans import as_push, ligra, run_directions
from .test_cuda_backend import build

pytestmark = pytest.mark.cuda

SOURCE = 3
SEQUENCES = {"push": ["push"], "pull-push": ["pull", "push"], "push-pull": ["push", "pull"],
             "push-push-pull": ["push", "push", "pull"],
             # the switch rule the planner starts from (a third of the edges here, so that the
             # hub's first iteration pushes), formats by density
             "auto": ligra(1 / 3, queue_below=1 / 8)}


def graph(rng, n=700, m=5000, hub_edges=1500):
    """Random edges over the first 600 vertices (the rest isolated), self-loops, duplicate edges
    and a hub whose out- and in-degree pass a block's worth (the push kernels' block phase)."""
    src = rng.integers(0, 600, m)
    dst = rng.integers(0, 600, m)
    hub = SOURCE
    src = np.concatenate([src, np.full(hub_edges, hub), rng.integers(0, 600, hub_edges), np.arange(0, 600, 7),
                          src[:300]])
    dst = np.concatenate([dst, rng.integers(0, 600, hub_edges), np.full(hub_edges, 11), np.arange(0, 600, 7),
                          dst[:300]])
    w = rng.integers(1, 9, len(src)).astype(np.float64)
    return n, src, dst, w


def reference(name, n, src, dst, w):
    """scipy's answer: BFS levels, SSSP distances (duplicate edges: the lightest), CC min labels."""
    if name == "cc":
        mat = sp.coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n)).tocsr()
        _, lab = csgraph.connected_components(mat, directed=True, connection="weak")
        first = np.full(lab.max() + 1, n, dtype=np.int64)
        np.minimum.at(first, lab, np.arange(n))
        return first[lab]
    if name == "bfs":
        mat = sp.coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n)).tocsr()
        d = csgraph.shortest_path(mat, indices=SOURCE, unweighted=True)
        return np.where(np.isinf(d), -1, d).astype(np.int64)
    keep = {}
    for s, t, x in zip(src.tolist(), dst.tolist(), w.tolist()):
        if s != t:
            keep[(s, t)] = min(x, keep.get((s, t), np.inf))
    ks = np.array(list(keep), dtype=np.int64).reshape(-1, 2)
    mat = sp.coo_matrix((list(keep.values()), (ks[:, 0], ks[:, 1])), shape=(n, n)).tocsr()
    return csgraph.dijkstra(mat, indices=SOURCE)


PROGRAMS = {"bfs": (lambda: BFS(source=SOURCE), "level"), "sssp": (lambda: SSSP(source=SOURCE), "dist"),
            "cc": (lambda: ConnectedComponents(), "label")}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    rng = np.random.default_rng(88)
    n, src, dst, w = graph(rng)
    tmp = tmp_path_factory.mktemp("push")
    out = {(S, c): build(tmp, n, src, dst, w, num_shards=S, compress=c) for S in (1, 4, 9) for c in (False, True)}
    return (n, src, dst, w), out


def push_model(program, store):
    """The unbounded memory model of ``program`` when the session plans push (push buffers in the
    footprint, push arrays in the regions): its minimum budget is static + the largest region."""
    from grstream.backends.cuda.executor import CudaExecutor
    from grstream.engine.memory import plan_memory
    from grstream.engine.schedule import needed_arrays
    spec = type(program).spec
    fp = CudaExecutor.footprint(spec, False, CudaExecutor.make_setup(store, push=True))
    return plan_memory(store, needed_arrays(spec, push=True), fp, pinned=False)


def _budget(kind, program, store):
    """"all": unbounded; "minimum": the push minimum (every shard streamed through one slot,
    the pinned cache holding the graph); "staging": the same with one staging buffer and no
    cache (every streamed shard read from the store each time)."""
    if kind == "all":
        return {}
    model = push_model(program, store)
    largest = max(model.regions)
    return {"memory_budget": model.static_bytes + model.scratch_bytes + largest,
            "pinned_budget": None if kind == "minimum" else largest}


#: (shards, budget): resident in one shard, all resident, the minimum budget with the pinned
#: cache, the minimum with staging only (every streamed shard read from the store each time)
LAYOUTS = [(1, "all"), (4, "all"), (4, "minimum"), (9, "staging")]
_PULLED = {}


def pulled_values(name, num_shards, store, expect):
    """The pure-pull GPU result (checked against scipy once per program and shard count)."""
    key = (name, num_shards, store.compressed)
    if key not in _PULLED:
        make, field = PROGRAMS[name]
        _PULLED[key] = gr.run(make(), store, device="cuda").values[field]
        np.testing.assert_array_equal(_PULLED[key], expect)   # integer weights: exact sums
    return _PULLED[key]


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("num_shards,kind", LAYOUTS)
@pytest.mark.parametrize("fmt", ["bitmap", "queue"])
@pytest.mark.parametrize("seq", list(SEQUENCES))
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_push_equals_pull_and_scipy(gpu, stores, name, seq, fmt, num_shards, kind, compress):
    (n, src, dst, w), by_shards = stores
    store = by_shards[num_shards, compress]
    make, field = PROGRAMS[name]
    pulled = pulled_values(name, num_shards, store, reference(name, n, src, dst, w))
    # direction "push": the session plans the push buffers (under "auto" CC pulls, holding none)
    with gr.Session(store, device="cuda", direction="push", **_budget(kind, make(), store)) as session:
        state, log, _ = run_directions(session, make(), SEQUENCES[seq], fmt)
        model = next(p.model for p in session._prepared.values())
        assert "push accumulator" in model.static   # the budgets have room for push
        assert (model.mode == "in-memory") == (kind == "all")
        info = next(p.executor for p in session._prepared.values()).info()
        ledger = next(p.ledger for p in session._prepared.values())
        assert all(ledger.peak[k] <= ledger.limits[k] for k in ledger.limits)
    # the executor's raw state: the program's finish gives the values a run reports
    finished = make().finish(state)
    np.testing.assert_array_equal(finished[field], pulled, err_msg=f"{name} {seq} {fmt} S={num_shards} {kind}")
    assert any(d == "push" for d, _, _ in log)
    sizes = np.diff(np.asarray(store.intervals))
    degree = np.asarray(store.out_degree(), np.int64) + (np.asarray(store.in_degree(), np.int64)
                                                         if name == "cc" else 0)
    for d, rb, _ in log:
        assert rb.shard_changed is not None and (rb.shard_changed <= sizes).all()
        assert int(rb.shard_changed.sum()) == rb.changed_vertices
        if d == "push":   # the next frontier is the changed set
            np.testing.assert_array_equal(rb.shard_active, rb.shard_changed)
        assert rb.changed_edges >= 0
    # changed_edges is the degree sum of the last iteration's changed set: the whole run's sums
    # add up to the degree sum of every vertex that ever changed at most (here: exactly per step)
    assert log[-1][1].changed_vertices == 0 or log[-1][1].changed_edges > 0
    assert info["backend"] == "cuda" and degree.sum() > 0


def test_changed_edges_count_the_changed_vertices_degrees(gpu, stores):
    """After iteration 1 of BFS the changed set is the source's out-neighbours: the readback's
    changed_edges is their out-degree sum, in both directions and formats."""
    (n, src, dst, w), by_shards = stores
    store = by_shards[4, False]
    out_deg = np.asarray(store.out_degree(), np.int64)
    level1 = np.unique(dst[(src == SOURCE) & (dst != SOURCE)])
    for seq in (["push"], ["pull"]):
        for fmt in ("bitmap", "queue"):
            with gr.Session(store, device="cuda") as session:
                _, log, _ = run_directions(session, BFS(source=SOURCE), seq, fmt, max_iter=1)
            (_, rb, _), = log
            assert rb.changed_vertices == len(level1)
            assert rb.changed_edges == int(out_deg[level1].sum())
            bounds = np.asarray(store.intervals)
            np.testing.assert_array_equal(rb.shard_changed, np.diff(np.searchsorted(level1, bounds)))


def test_streamed_push_copies_only_the_walked_edges(gpu, stores):
    """A streamed push unit of BFS moves the CSR (out/indptr, out/dst), not the in-edges."""
    (n, src, dst, w), by_shards = stores
    store = by_shards[9, False]
    program = BFS(source=SOURCE)
    kw = _budget("staging", program, store)
    from grstream.engine.backend import IterationStats
    with gr.Session(store, device="cuda", **kw) as session:
        prep = session._prepare(BFS, pull=True)   # a model holding the in-edges too
        model = prep.model
        assert {"out/indptr", "out/dst", "in/indptr", "in/src"} <= set(model.names)
        run_directions(session, program, ["push"], "queue", max_iter=1)
        plan = as_push(prep.planner.plan(2, np.diff(np.asarray(store.intervals)), False), "queue")
        st = IterationStats()
        session._execute(prep.executor, plan, st)
        copied = [i for u in plan.units if u.transfer == "copy" for i in u.shards]
        loaded = [i for u in plan.units if u.transfer == "load" for i in u.shards]
        assert copied
        info = store.shard_info
        walked = sum(info(i).dataset_nbytes[k] for i in copied for k in ("out/indptr", "out/dst"))
        walked += sum(info(i).dataset_nbytes[k] for i in loaded for k in model.names)
        # besides the CSR (and the whole of shards loaded to stay): the kernel parameters only
        assert 0 <= st.bytes_h2d - walked < 4096


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("num_shards,kind", LAYOUTS)
@pytest.mark.parametrize("queue", [0.0, 1.0])
@pytest.mark.parametrize("direction", ["push", "auto", "pull"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_engine_directions_equal_pull(gpu, stores, name, direction, queue, num_shards, kind, compress):
    """End to end: the engine's planner (grstream/engine/direction.py) chooses push / pull and the
    format per iteration (``queue_fraction`` 0: always bitmap, 1: always queue; auto at a third of
    the edges so the hub's first iteration pushes); the CUDA executor runs them."""
    (n, src, dst, w), by_shards = stores
    store = by_shards[num_shards, compress]
    make, field = PROGRAMS[name]
    pulled = pulled_values(name, num_shards, store, reference(name, n, src, dst, w))
    res = gr.run(make(), store, device="cuda", direction=direction, queue_fraction=queue,
                 push_threshold=1 / 3, **_budget(kind, make(), store))
    np.testing.assert_array_equal(res.values[field], pulled)
    plans = [st.plan for st in res.stats]
    pushed = [p["plan_direction"] == "push" for p in plans]
    # CC's push moves what its pull moves: "auto" pulls with per-unit publishing (direction.py)
    pulls = direction == "pull" or (direction == "auto" and name == "cc")
    assert res.info["direction"]["push_ok"] == (not pulls)   # pull asked: not allowed
    assert all(pushed) if direction == "push" else (not any(pushed) if pulls else any(pushed))
    formats = {p["frontier_format"] for p in plans}
    assert formats == {"queue" if queue else "bitmap"}


def test_gpu_threshold_is_the_default(gpu, stores):
    from grstream.backends.cuda.facts import PUSH_THRESHOLD, QUEUE_FRACTION
    (_, _, _, _), by_shards = stores
    res = gr.run(BFS(source=SOURCE), by_shards[4, False], device="cuda")
    rule = res.info["direction"]
    assert (rule["push_threshold"], rule["queue_fraction"]) == (PUSH_THRESHOLD, QUEUE_FRACTION)
    assert {st.plan["plan_direction"] for st in res.stats} == {"push"}   # BFS pushes throughout
