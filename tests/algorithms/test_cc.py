import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy.sparse import csgraph

import grstream as gr
from grstream.algorithms.cc import ConnectedComponents, connected_components

from .conftest import BUDGETS, budget_for, build, random_edges


def reference(n, src, dst):
    mat = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    _, comp = csgraph.connected_components(mat, directed=True, connection="weak")
    smallest = np.full(comp.max() + 1 if n else 0, n, dtype=np.int64)
    np.minimum.at(smallest, comp, np.arange(n))
    return smallest[comp]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 40), m=st.integers(0, 60), seed=st.integers(0, 2**31),
       shards=st.integers(1, 6), budget=st.sampled_from(BUDGETS))
def test_cc_matches_scipy(tmp_path_factory, n, m, seed, shards, budget):
    rng = np.random.default_rng(seed)
    src, dst, _ = random_edges(rng, n, m)
    store = build(tmp_path_factory.mktemp("cc"), n, src, dst, num_shards=shards)
    labels, _ = connected_components(store, memory_budget=budget_for(budget, ConnectedComponents(), store))
    np.testing.assert_array_equal(labels, reference(n, src, dst))


@pytest.mark.parametrize("name", ["karate.mtx", "dolphins.mtx", "netscience.mtx", "p2p-Gnutella08.txt",
                                  "rome99.gr"])
def test_cc_real_graphs(datasets_dir, tmp_path, name):
    store = gr.open(gr.build_shards(datasets_dir / name, tmp_path / "g.h5", num_shards=3, progress=False))
    labels, _ = connected_components(store)
    csr = store.to_scipy("csr")
    coo = csr.tocoo()
    np.testing.assert_array_equal(labels, reference(store.num_vertices, coo.row, coo.col))
