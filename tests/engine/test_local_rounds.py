"""Asynchronous local rounds (IterationPlan.local_rounds): BFS, SSSP and CC iterate a loaded
unit until its vertices settle and reach exactly the synchronous results, in fewer iterations."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.pagerank import PageRank
from grstream.algorithms.sssp import SSSP
from grstream.errors import UsageError

from ..algorithms.conftest import BUDGETS, budget_for, build, random_edges


def both(program_for, store, budget, rounds, threads=1, direction="auto"):
    # local rounds run in pull units (a push iteration has none): "pull" makes every one pull
    # (push plans are asynchronous by default: the reference is the synchronous run)
    sync = gr.run(program_for(), store, memory_budget=budget,
                  backend_options={"threads": threads, "push_async": False})
    local = gr.run(program_for(), store, memory_budget=budget, direction=direction,
                   backend_options={"threads": threads, "local_rounds": rounds})
    return sync, local


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 50), m=st.integers(0, 200), seed=st.integers(0, 2**31),
       shards=st.integers(1, 5), budget=st.sampled_from(BUDGETS), rounds=st.sampled_from([1, 3, 100]),
       direction=st.sampled_from(["auto", "pull"]))
def test_local_rounds_equal_synchronous(tmp_path_factory, n, m, seed, shards, budget, rounds,
                                        direction):
    rng = np.random.default_rng(seed)
    src, dst, w = random_edges(rng, n, m, weighted=True)
    store = build(tmp_path_factory.mktemp("lr"), n, src, dst, w, num_shards=shards)
    source = int(rng.integers(0, n))
    for make in (lambda: BFS(source=source), lambda: SSSP(source=source), ConnectedComponents):
        b = budget_for(budget, make(), store)
        sync, local = both(make, store, b, rounds, direction=direction)
        np.testing.assert_array_equal(local.value, sync.value)
        assert local.converged and local.iterations <= sync.iterations


@pytest.mark.parametrize("threads", [1, 3])
def test_local_rounds_settle_a_path_inside_a_shard(tmp_path, threads):
    # a path of 400 vertices in 4 shards: synchronous BFS takes one iteration per hop, with local
    # rounds each shard's stretch settles while it is loaded
    n = 400
    src = np.arange(n - 1)
    store = build(tmp_path, n, src, src + 1, num_shards=4)
    sync, local = both(lambda: BFS(source=0), store, None, 1000, threads, "pull")
    np.testing.assert_array_equal(local.value, np.arange(n))
    np.testing.assert_array_equal(sync.value, np.arange(n))
    assert sync.iterations == n - 1
    assert local.iterations <= 8
    assert sum(s.local_rounds for s in local.stats) > 0
    assert all(s.plan["local_rounds"] == 1000 for s in local.stats)


def test_local_rounds_only_for_asynchronous_programs(tmp_path, rng):
    src, dst, _ = random_edges(rng, 30, 100)
    store = build(tmp_path, 30, src, dst)
    r = gr.run(PageRank(), store, backend_options={"local_rounds": 5})
    assert all(s.plan["local_rounds"] == 0 and s.local_rounds == 0 for s in r.stats)
    assert all(s.plan["local_fraction"] == 0 for s in r.stats)   # no rounds, no limit to set
    with pytest.raises(UsageError, match="local_rounds"):
        gr.Session(store, local_rounds=-1)


@pytest.mark.parametrize("rounds", [0, 8])
def test_units_that_skip_an_unloaded_shard(tmp_path, rounds):
    # shards 0 and 2 change densely in iteration 1 and form one unit of their resident run; the
    # run's shard 1 between them is never active, so its data is never loaded: activation and
    # local rounds must not walk its rows
    a, b, c = np.arange(1, 10), np.arange(10, 20), np.arange(20, 30)
    src = np.concatenate([np.zeros(19, np.int64), np.repeat(a, len(c)), np.repeat(b, len(b))])
    dst = np.concatenate([a, c, np.tile(c, len(a)), np.tile(b, len(b))])   # b: unreachable
    store = build(tmp_path, 30, src, dst, num_shards=3, renumber=False)
    lo, hi = store.intervals[1], store.intervals[2]
    assert 10 <= lo < hi <= 20     # shard 1 holds only unreachable vertices
    want = np.full(30, -1)
    want[0], want[a], want[c] = 0, 1, 1
    with gr.Session(store, direction="pull", threads=1, local_rounds=rounds) as s:
        for _ in range(2):   # the second run finds shards 0 and 2 loaded: one unit
            r = s.run(BFS(source=0))
            np.testing.assert_array_equal(np.where(r.value > 30, -1, r.value), want)
    assert r.stats[0].plan["units"] == 1 and r.stats[0].plan["shards"] == 2


def test_the_plan_limits_rounds_to_sparse_in_unit_frontiers(tmp_path, monkeypatch):
    # vertex 0 reaches 40 vertices, each of them one more: every in-unit frontier is 40 of the
    # unit's 100 vertices, above the default fraction (1/8), so no round runs; a plan without the
    # limit (local_fraction 0) runs rounds and settles in fewer iterations, with the same result
    from grstream.engine import rounds
    a = np.arange(1, 41)
    src = np.concatenate([np.zeros(40, np.int64), a, a[:19] + 40])
    dst = np.concatenate([a, a + 40, a[:19] + 80])
    store = build(tmp_path, 100, src, dst, num_shards=1, renumber=False)
    sync, limited = both(lambda: BFS(source=0), store, None, 100, direction="pull")
    assert all(s.plan["local_fraction"] == rounds.LOCAL_FRACTION == 1 / 8 for s in limited.stats)
    assert sum(s.local_rounds for s in limited.stats) == 0
    assert limited.iterations == sync.iterations
    monkeypatch.setattr(rounds, "LOCAL_FRACTION", 0)
    _, unlimited = both(lambda: BFS(source=0), store, None, 100, direction="pull")
    assert all(s.plan["local_fraction"] == 0 for s in unlimited.stats)
    assert sum(s.local_rounds for s in unlimited.stats) > 0
    assert unlimited.iterations < sync.iterations
    for r in (limited, unlimited):
        np.testing.assert_array_equal(r.value, sync.value)
