"""pagerank(method="delta"): residual PageRank reaches the power method's ranks within the
tolerance (against a tol 1e-12 power run and NetworkX), on random and real graphs."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from grstream.algorithms.pagerank import pagerank
from grstream.algorithms.pagerank_delta import DeltaPageRank, error_bound, final_eps, schedule
from grstream.errors import UsageError

from .conftest import BUDGETS, budget_for, build, random_edges
from .test_pagerank import reference


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 40), m=st.integers(0, 120), seed=st.integers(0, 2**31),
       shards=st.integers(1, 6), budget=st.sampled_from(BUDGETS),
       tol=st.sampled_from([1e-3, 1e-6, 1e-9]), phases=st.sampled_from([1, 3]))
def test_delta_matches_power(tmp_path_factory, n, m, seed, shards, budget, tol, phases):
    rng = np.random.default_rng(seed)
    src, dst, _ = random_edges(rng, n, m)
    store = build(tmp_path_factory.mktemp("prd"), n, src, dst, num_shards=shards)
    want, _ = pagerank(store, tol=1e-12, max_iter=2000)
    b = budget_for(budget, DeltaPageRank(), store)
    from grstream.algorithms import pagerank_delta
    got, result = pagerank_delta.delta_pagerank(
        store, 0.85, None, tol, None, "weight", None, tol,
        {"max_iter": 100000, "memory_budget": b}, phases=phases)
    assert result.converged
    assert np.abs(got - want).sum() <= tol + 1e-11
    if n:
        assert abs(got.sum() - 1.0) < 1e-9
        np.testing.assert_allclose(got, reference(n, src, dst), rtol=0, atol=tol + 1e-11)


def test_delta_refuses_nstart(tmp_path):
    store = build(tmp_path, 3, np.array([0, 1]), np.array([1, 2]))
    with pytest.raises(UsageError, match="nstart"):
        pagerank(store, method="delta", nstart=[1, 1, 1])
    with pytest.raises(UsageError, match="method"):
        pagerank(store, method="gauss")


def test_error_bound_and_schedule():
    assert error_bound(0.0, 0.0, 0.85) == 0.0
    assert error_bound(1e-3, 1.0, 0.85) == pytest.approx(2e-3 / 0.15)
    eps = schedule(1e-6, 0.85, 3)
    assert eps[-1] == final_eps(1e-6, 0.85) and eps[0] > eps[1] > eps[2]
