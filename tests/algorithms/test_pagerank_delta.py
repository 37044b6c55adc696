"""pagerank(method="delta"): residual PageRank reaches the power method's ranks within the
tolerance (against a tol 1e-12 power run and NetworkX), on random and real graphs."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from grstream.algorithms.pagerank import pagerank
from grstream.algorithms.pagerank_delta import (DeltaPageRank, WeightedDeltaPageRank, error_bound,
                                                final_eps, schedule)
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


DATASETS = ["karate.mtx", "dolphins.mtx", "netscience.mtx", "rome99.gr", "p2p-Gnutella08.txt"]


@pytest.mark.parametrize("name", DATASETS)
def test_delta_on_real_graphs(tmp_path, datasets_dir, name):
    import grstream as gr
    from .conftest import minimum_budget
    from .test_datasets import edges_of
    n, src, dst, w = edges_of(datasets_dir / name)
    want = reference(n, src, dst, w)   # NetworkX, weights as the store holds them
    for shards in (1, 5):
        store = gr.open(gr.build_shards(datasets_dir / name, tmp_path / f"g{shards}.h5",
                                        num_shards=shards, progress=False))
        power, _ = pagerank(store, tol=1e-12, max_iter=2000)
        cls = WeightedDeltaPageRank if "weight" in store.edge_props else DeltaPageRank
        for budget in (None, minimum_budget(cls(), store)):
            for tol in (1e-4, 1e-8):
                got, result = pagerank(store, tol=tol, method="delta", max_iter=100000,
                                       memory_budget=budget)
                assert result.converged and result.info["program"].endswith("DeltaPageRank")
                assert np.abs(got - power).sum() <= tol
                assert np.abs(got - want).sum() <= tol + 1e-10


def test_delta_weighted_and_personalized(tmp_path, rng):
    # weighted edges (zero weights dangle) and a personalization that dangling mass follows
    n = 60
    src, dst, w = random_edges(rng, n, 300, weighted=True)
    w[rng.random(len(w)) < 0.2] = 0.0
    store = build(tmp_path, n, src, dst, w, num_shards=3)
    tele = rng.random(n)
    for options in ({}, {"personalization": tele}, {"personalization": tele, "dangling": tele},
                    {"weight": None, "personalization": tele}):
        want, _ = pagerank(store, tol=1e-13, max_iter=5000, **options)
        got, result = pagerank(store, tol=1e-7, method="delta", max_iter=100000, **options)
        assert result.converged
        assert np.abs(got - want).sum() <= 1e-7


def test_delta_refuses_other_dangling(tmp_path):
    store = build(tmp_path, 3, np.array([0, 1]), np.array([1, 2]))
    with pytest.raises(UsageError, match="dangling"):
        pagerank(store, method="delta", dangling=[1, 0, 0])


def test_delta_max_iter_stops_unconverged(tmp_path, rng):
    src, dst, _ = random_edges(rng, 200, 1000)
    store = build(tmp_path, 200, src, dst)
    got, result = pagerank(store, tol=1e-10, method="delta", max_iter=3)
    assert result.iterations == 3 and not result.converged
    assert abs(got.sum() - 1.0) < 1e-12


def test_cli_method_delta(tmp_path, rng):
    from grstream.cli import main
    src, dst, _ = random_edges(rng, 50, 200)
    store = build(tmp_path, 50, src, dst, num_shards=2)
    want, _ = pagerank(store, tol=1e-12)
    out = tmp_path / "pr.npy"
    assert main(["run", "pagerank", str(store.path), "--method", "delta", "--tol", "1e-9", "--max-iter", "1000",
                 "-o", str(out), "--quiet"]) == 0
    assert np.abs(np.load(out) - want).sum() <= 1e-9
    assert main(["run", "bfs", str(store.path), "--method", "delta", "--quiet"]) == 2
