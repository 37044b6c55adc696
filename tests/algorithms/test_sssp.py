import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import grstream as gr
from grstream.algorithms.sssp import SSSP, sssp
from grstream.errors import UsageError

from .conftest import BUDGETS, budget_for, build, random_edges

nx = pytest.importorskip("networkx")


def reference(n, src, dst, w, source):
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    for u, v, x in zip(src.tolist(), dst.tolist(), w.tolist()):
        if not g.has_edge(u, v) or g[u][v]["weight"] > x:
            g.add_edge(u, v, weight=x)
    d = nx.single_source_dijkstra_path_length(g, source)
    out = np.full(n, np.inf)
    for k, x in d.items():
        out[k] = x
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 40), m=st.integers(0, 120), seed=st.integers(0, 2**31),
       shards=st.integers(1, 6), budget=st.sampled_from(BUDGETS))
def test_sssp_matches_networkx(tmp_path_factory, n, m, seed, shards, budget):
    rng = np.random.default_rng(seed)
    src, dst, w = random_edges(rng, n, m, weighted=True)
    store = build(tmp_path_factory.mktemp("sssp"), n, src, dst, w, num_shards=shards)
    source = int(rng.integers(0, n))
    dist, _ = sssp(store, source, memory_budget=budget_for(budget, SSSP(source=source), store))
    np.testing.assert_array_equal(dist, reference(n, src, dst, w, source))


def test_sssp_rome99(datasets_dir, tmp_path):
    arcs = [line.split()[1:] for line in open(datasets_dir / "rome99.gr") if line.startswith("a ")]
    a = np.array(arcs, dtype=np.int64)
    n = 3353
    want = reference(n, a[:, 0] - 1, a[:, 1] - 1, a[:, 2].astype(float), 0)
    for shards in (1, 5):
        store = gr.open(gr.build_shards(datasets_dir / "rome99.gr", tmp_path / f"rome{shards}.h5",
                                        num_shards=shards, progress=False))
        dist, _ = sssp(store, 1)  # the file's vertex 1 (DIMACS ids are 1-based)
        np.testing.assert_array_equal(dist, want)


def test_sssp_needs_weights(tmp_path):
    store = build(tmp_path, 3, np.array([0]), np.array([1]))
    with pytest.raises(UsageError, match="weights"):
        sssp(store, 0)


def test_sssp_rejects_negative_weights(tmp_path):
    store = build(tmp_path, 3, np.array([0, 1]), np.array([1, 2]), np.array([1.0, -2.0]))
    with pytest.raises(UsageError, match="non-negative"):
        sssp(store, 0)


def test_sssp_zero_weights(tmp_path):
    store = build(tmp_path, 3, np.array([0, 1]), np.array([1, 2]), np.array([0.0, 0.0]))
    dist, _ = sssp(store, 0)
    np.testing.assert_array_equal(dist, [0.0, 0.0, 0.0])
