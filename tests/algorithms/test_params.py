"""Bad parameters of the algorithm functions: a UsageError naming the parameter, before any work."""
import math

import numpy as np
import pytest

from grstream.algorithms.bc import betweenness
from grstream.algorithms.bfs import bfs
from grstream.algorithms.cc import connected_components
from grstream.algorithms.pagerank import pagerank
from grstream.algorithms.predecessors import bfs_predecessors, sssp_predecessors
from grstream.algorithms.sssp import sssp
from grstream.cli import main
from grstream.errors import UsageError

from .conftest import build


@pytest.fixture
def store(tmp_path):
    return build(tmp_path, 4, np.array([0, 1, 2, 3]), np.array([1, 2, 3, 0]),
                 np.array([1.0, 2.0, 1.0, 3.0]), num_shards=2)


@pytest.mark.parametrize("options, match", [
    ({"damping": 7}, "damping must be between 0 and 1, not 7"),
    ({"damping": -1}, "damping must be between 0 and 1"),
    ({"damping": math.nan}, "damping must be a number, not NaN"),
    ({"damping": "0.8"}, "damping must be a number"),
    ({"tol": -5}, "tol must be a positive finite number, not -5"),
    ({"tol": 0}, "tol must be a positive"),
    ({"tol": math.nan}, "tol must be a number, not NaN"),
    ({"tol": math.inf}, "tol must be a positive finite"),
    ({"max_iter": -1}, "max_iter must be >= 0"),
    ({"max_iter": 2.5}, "max_iter must be an integer"),
    ({"max_iter": "10"}, "max_iter must be an integer"),
    ({"stop": "l2"}, "stop must be one of 'l1', 'networkx'"),
    ({"weight": "capacity"}, "weight must be 'weight' or None"),
    ({"personalization": [1, 0, 0]}, "personalization must have one entry per vertex \\(4\\)"),
    ({"personalization": [1, -1, 0, 1]}, "personalization must be finite and non-negative"),
    ({"personalization": [0, 0, 0, 0]}, "personalization must have a positive sum"),
    ({"nstart": [np.nan, 1, 1, 1]}, "nstart must be finite"),
    ({"dangling": {9: 1.0}}, "dangling: key 9: .*out of range"),
    ({"dangling": {1: "x"}}, "dangling\\[1\\] must be a number"),
])
def test_pagerank_rejects(store, options, match):
    with pytest.raises(UsageError, match=match):
        pagerank(store, **options)


def test_pagerank_edge_values_accepted(store):
    for damping in (0, 1, 0.0, np.float32(0.5)):
        rank, _ = pagerank(store, damping=damping, max_iter=200)
        assert abs(rank.sum() - 1) < 1e-9
    _, res = pagerank(store, max_iter=0)
    assert res.iterations == 0 and not res.converged


@pytest.mark.parametrize("call", [
    lambda st: bfs(st, 4), lambda st: sssp(st, -1), lambda st: bfs_predecessors(st, 4),
    lambda st: sssp_predecessors(st, 99), lambda st: betweenness(st, sources=[0, 4])])
def test_sources_out_of_range(store, call):
    with pytest.raises(UsageError, match="out of range"):
        call(store)


@pytest.mark.parametrize("k, match", [(5, "k must be at least 1 and at most 4, not 5"),
                                      (0, "at least 1"), (-2, "at least 1"), (2.5, "integer")])
def test_bc_k_out_of_range(store, k, match):
    with pytest.raises(UsageError, match=match):
        betweenness(store, k=k)


@pytest.mark.parametrize("call", [lambda st: bfs(st, 0, max_iter=1.5),
                                  lambda st: connected_components(st, max_iter=-3),
                                  lambda st: betweenness(st, max_iter="2")])
def test_max_iter_checked_for_every_algorithm(store, call):
    with pytest.raises(UsageError, match="max_iter"):
        call(store)


def test_cli_inherits_the_checks(store, capsys):
    # the CLI's own argument types let --tol 0 through; pagerank() refuses it
    assert main(["run", "pagerank", str(store.path), "--tol", "0"]) != 0
    err = capsys.readouterr().err
    assert "tol must be a positive finite number" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("call, match", [
    # one rule for every entry point: integers (integral floats and numpy integers too), never
    # strings, bools or fractions; max_iter="3" was a TypeError where 2.5 was accepted
    (lambda st: bfs(st, 0, max_iter="3"), "max_iter must be an integer >= 0 or None, not '3'"),
    (lambda st: sssp(st, 0, max_iter=2.5), "max_iter must be an integer >= 0 or None, not 2.5"),
    (lambda st: connected_components(st, max_iter=True), "max_iter must be an integer >= 0 or None, not True"),
    (lambda st: pagerank(st, max_iter="3"), "max_iter must be an integer >= 0, not '3'"),
    # values that were taken for truthy or hashed into a seed
    (lambda st: betweenness(st, normalized="no"), "normalized must be True or False, not 'no'"),
    (lambda st: betweenness(st, endpoints=1), "endpoints must be True or False, not 1"),
    (lambda st: betweenness(st, k=2, seed="x"), "seed must be an integer, a random.Random or None"),
    (lambda st: betweenness(st, k=2, seed=1.5), "seed must be an integer"),
    (lambda st: betweenness(st, k="some"), "k must be 'all' or an integer at least 1, not 'some'"),
    (lambda st: betweenness(st, seed=3), "seed picks the sample that k asks for; an exact run has no sample"),
    (lambda st: pagerank(st, method=None), "method must be one of 'power', 'delta', not None"),
    (lambda st: pagerank(st, damping=np.float64(2)), "damping must be between 0 and 1, not 2.0"),
])
def test_declared_parameters_are_checked_alike(store, call, match):
    with pytest.raises(UsageError, match=match):
        call(store)


def test_the_engine_and_the_algorithms_check_counts_alike(store):
    import grstream as gr
    from grstream.algorithms.bfs import BFS
    for value in ("3", 2.5, True, -1):
        with pytest.raises(UsageError) as engine:
            gr.run(BFS(source=0), store, max_iter=value)
        with pytest.raises(UsageError) as algorithm:
            bfs(store, 0, max_iter=value)
        assert str(engine.value) == str(algorithm.value)


def test_integral_values_of_any_type_are_counts(store):
    for max_iter in (2, 2.0, np.int64(2), np.float32(2)):
        _, res = connected_components(store, max_iter=max_iter)
        assert res.iterations <= 2
    values, _ = betweenness(store, k=np.int64(2), seed=np.int32(1))
    assert values.shape == (4,)


def test_signatures_come_from_the_declarations():
    import inspect
    assert str(inspect.signature(bfs)).startswith(
        "(store: 'ShardStore', source: Any = None, max_iter: Optional[int] = None, "
        "**run_options: Any) -> ")
    assert inspect.signature(pagerank).parameters["damping"].default == 0.85
    assert "damping : float" in pagerank.__doc__ and "(default: 0.85)" in pagerank.__doc__
    with pytest.raises(TypeError):
        bfs(None, 0, 5, 6)   # more positional arguments than parameters, as Python says
