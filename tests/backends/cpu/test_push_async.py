"""Asynchronous push plans (IterationPlan.push_async, Gauss-Seidel) on the CPU executor: BFS,
SSSP and CC give csgraph's results and the pull's with every push plan asynchronous (the rule's
ASYNC_AFTER at 0), over 1, 3 and 7 shards, unbounded and streamed, on one and two threads, on
random graphs (empty, isolated vertices, self-loops, duplicate edges); and on an R-MAT graph
the default rule makes CC asynchronous and walk fewer edges than the synchronous run."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy.sparse import csgraph

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.backends.cpu.strategy_push import Push
from grstream.engine import direction as direction_mod
from grstream.io.generate import rmat

from ...algorithms.conftest import build, random_edges
from .test_push import check_empty, check_graph, csgraph_matrix, programs, run


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(n=st.integers(0, 60), m=st.integers(0, 200), seed=st.integers(0, 2**31),
       shards=st.sampled_from([1, 3, 7]), budget=st.sampled_from(["all", "tight"]),
       threads=st.sampled_from([1, 2]))
def test_every_push_asynchronous_equals_csgraph(tmp_path_factory, monkeypatch, n, m, seed, shards,
                                                budget, threads):
    # every push plan asynchronous, BFS's and SSSP's too (their wavefronts would stay synchronous)
    monkeypatch.setattr(direction_mod, "ASYNC_AFTER", 0.0)
    monkeypatch.setattr(direction_mod, "ASYNC_SHARD_EDGES", 0)
    rng = np.random.default_rng(seed)
    src, dst, w = random_edges(rng, n, m if n else 0, weighted=True)
    shards = max(1, min(shards, n))
    store = build(tmp_path_factory.mktemp("async"), n, src, dst, w, num_shards=shards)
    source = int(rng.integers(0, n)) if n else 0
    opts = {"backend_options": {"threads": threads}}
    if n == 0:
        return check_empty(store, **opts)
    check_graph(store, n, src, dst, w, source, budget, **opts)
    r = run(BFS(source=source), store, budget, "push", 1.0, **opts)
    if r.stats:
        assert all(s.plan["push_async"] and s.plan["workers"] == 1 for s in r.stats)


@pytest.mark.parametrize("shards", [1, 3, 7])
def test_rmat_cc_asynchronous_walks_fewer_edges(tmp_path, shards):
    # (the default rule: 262K edge ends a CC push walks, at least ASYNC_SHARD_EDGES a shard)
    src, dst = rmat(14, edge_factor=8, seed=3)
    n = 1 << 14
    store = build(tmp_path, n, src, dst, num_shards=shards)
    _, labels = csgraph.connected_components(csgraph_matrix(n, src, dst), connection="weak")
    smallest = np.full(labels.max() + 1, n, dtype=np.int64)
    np.minimum.at(smallest, labels, np.arange(n))
    with gr.Session(store, threads=2) as s:
        fast = s.run(ConnectedComponents())
    with gr.Session(store, threads=2, push_async=False) as s:
        sync = s.run(ConnectedComponents())
    np.testing.assert_array_equal(fast.value, smallest[labels])
    np.testing.assert_array_equal(sync.value, fast.value)
    # the first (every vertex sends) is asynchronous; the last ones walk too few edges
    assert fast.stats[0].plan["push_async"] and not fast.stats[-1].plan["push_async"]
    assert not any(s.plan["push_async"] for s in sync.stats)
    walked = [sum(s.active_edges for s in r.stats) for r in (fast, sync)]
    if shards > 1:   # (one unit: nothing to see early, the same walk)
        assert walked[0] < walked[1] and fast.iterations < sync.iterations
    else:
        assert walked[0] <= walked[1] and fast.iterations <= sync.iterations


def test_bfs_from_a_hub_folds_its_uniform_level(tmp_path, monkeypatch):
    # a star: the hub's out-edges reach every vertex, one message value for all of them (folded
    # through the receiver flags, not ufunc.at); then a path hangs off a leaf
    n = 400
    src = np.concatenate([np.zeros(n - 101, np.int64), np.arange(n - 101, n - 1)])
    dst = np.concatenate([np.arange(1, n - 100), np.arange(n - 100, n)])
    store = build(tmp_path, n, src, dst, num_shards=3)
    want = csgraph.shortest_path(csgraph_matrix(n, src, dst), unweighted=True, indices=0)
    folded = []
    fold = Push._fold

    def counted(self):
        receivers = fold(self)
        folded.append(len(receivers))
        return receivers
    monkeypatch.setattr(Push, "_fold", counted)
    for direction in ("push", "pull"):   # (the numpy passes: compiled kernels fold nothing)
        r = gr.run(BFS(source=0), store, direction=direction, backend_options={"kernels": "numpy"})
        np.testing.assert_array_equal(r.value, want.astype(np.int64))
    assert folded and max(folded) >= n - 101   # the hub's unit (its targets span every shard)
