"""The compiled row sum (compiled.SUM_ROWS): the pull gather of a summed message that is a field
of the other end, over one level's rows (betweenness's scheduled passes), gives the numpy
passes' results; "auto" loads it as the compiled push is loaded, "numpy" never runs it."""
import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from grstream.algorithms import bc
from grstream.backends.cpu import compiled, strategy_compiled

from ...algorithms.conftest import build, random_edges

numba = pytest.importorskip("numba")


def spy(monkeypatch):
    """The rows of each call of the compiled row sum ("auto" loads it at once)."""
    monkeypatch.setattr(strategy_compiled, "COMPILED_EDGES", 0)
    calls = []
    run = compiled.Generated._run

    def counted(self, kernel, args):
        if kernel == "sum_rows":
            calls.append(len(args[2]))
        return run(self, kernel, args)
    monkeypatch.setattr(compiled.Generated, "_run", counted)
    return calls


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(n=st.integers(2, 60), m=st.integers(0, 300), seed=st.integers(0, 2**31),
       shards=st.sampled_from([1, 3]))
def test_row_sums_equal_numpy(tmp_path_factory, monkeypatch, n, m, seed, shards):
    rng = np.random.default_rng(seed)
    src, dst, _ = random_edges(rng, n, m, duplicates=False)
    store = build(tmp_path_factory.mktemp("rows"), n, src, dst, num_shards=min(shards, n))
    source = int(rng.integers(0, n))
    calls = spy(monkeypatch)
    got = {}
    for kernels in ("numba", "numpy"):
        calls.clear()
        delta, reached, results = bc.source_dependencies(
            store, source, backend_options={"kernels": "auto" if kernels == "numba" else kernels})
        sigma = [r for r in results if r.info.get("program") == "BrandesForward"][0]
        got[kernels] = (delta, reached, sigma.values["sigma"])
        if kernels == "numpy":
            assert not calls
    (d1, r1, s1), (d0, r0, s0) = got["numba"], got["numpy"]
    np.testing.assert_array_equal(s1, s0)   # path counts: sums of integers, exact
    np.testing.assert_array_equal(r1, r0)
    np.testing.assert_allclose(d1, d0, rtol=1e-12, atol=0)


def test_row_sums_run_and_match_networkx(tmp_path, monkeypatch):
    n = 200
    rng = np.random.default_rng(5)
    src, dst, _ = random_edges(rng, n, 1200, duplicates=False, self_loops=False)
    store = build(tmp_path, n, src, dst, num_shards=3)
    calls = spy(monkeypatch)
    monkeypatch.setattr(bc, "LANE_ELEMENTS", 1)   # one source after the other, as on large graphs
    got, _ = bc.betweenness(store, sources=[0, 7, 42], backend_options={"kernels": "auto"})
    assert sum(calls) > 0
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(src.tolist(), dst.tolist()))
    want = nx.betweenness_centrality_subset(g, [0, 7, 42], list(range(n)), normalized=False)
    np.testing.assert_allclose(got, [want[v] for v in range(n)], rtol=1e-9, atol=1e-9)


def test_auto_loads_row_sums_where_they_pay(tmp_path, monkeypatch):
    monkeypatch.setenv("GRSTREAM_KERNEL_CACHE", str(tmp_path / "kernels"))   # none built
    monkeypatch.setattr(compiled, "_ROW_SUMS", None)
    monkeypatch.setattr(compiled, "_ROW_EDGES", 0)
    assert compiled.row_sums("numpy", 10, 100) is None
    assert compiled.row_sums("auto", 60, 100) is None      # loading would cost more
    kernels = compiled.row_sums("auto", 60, 100)            # the process's runs reach 100
    assert kernels is not None and compiled.row_sums("numba", 1, 1 << 40) is kernels
    monkeypatch.setattr(compiled, "numba_missing", lambda: "No module named 'numba'")
    assert compiled.row_sums("numba", 1, 1) is None
