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


def both(program_for, store, budget, rounds, threads=1):
    sync = gr.run(program_for(), store, memory_budget=budget, backend_options={"threads": threads})
    local = gr.run(program_for(), store, memory_budget=budget,
                   backend_options={"threads": threads, "local_rounds": rounds})
    return sync, local


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 50), m=st.integers(0, 200), seed=st.integers(0, 2**31),
       shards=st.integers(1, 5), budget=st.sampled_from(BUDGETS), rounds=st.sampled_from([1, 3, 100]))
def test_local_rounds_equal_synchronous(tmp_path_factory, n, m, seed, shards, budget, rounds):
    rng = np.random.default_rng(seed)
    src, dst, w = random_edges(rng, n, m, weighted=True)
    store = build(tmp_path_factory.mktemp("lr"), n, src, dst, w, num_shards=shards)
    source = int(rng.integers(0, n))
    for make in (lambda: BFS(source=source), lambda: SSSP(source=source), ConnectedComponents):
        b = budget_for(budget, make(), store)
        sync, local = both(make, store, b, rounds)
        np.testing.assert_array_equal(local.value, sync.value)
        assert local.converged and local.iterations <= sync.iterations


@pytest.mark.parametrize("threads", [1, 3])
def test_local_rounds_settle_a_path_inside_a_shard(tmp_path, threads):
    # a path of 400 vertices in 4 shards: synchronous BFS takes one iteration per hop, with local
    # rounds each shard's stretch settles while it is loaded
    n = 400
    src = np.arange(n - 1)
    store = build(tmp_path, n, src, src + 1, num_shards=4)
    sync, local = both(lambda: BFS(source=0), store, None, 1000, threads)
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
    with pytest.raises(UsageError, match="local_rounds"):
        gr.Session(store, local_rounds=-1)
