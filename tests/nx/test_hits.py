"""HITS through the backend equals NetworkX's (ARPACK) where the answer is unique, and is
refused where it is not; the declared ``hits`` (``grstream run hits``) gives the same scores."""
import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grstream.nx.checks import can_run

from .graphs import nx_graphs

GS = "grstream"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nx_graphs(directed=True, min_nodes=2, float_weights=True), st.booleans())
def test_hits_matches_networkx_or_refuses(G, start):
    if not G.number_of_edges():
        assert "without edges" in can_run("hits", (G,), {})
        return
    nstart = {v: i + 1.0 for i, v in enumerate(G)} if start else None
    want = nx.hits(G, nstart=nstart, max_iter=1000)
    try:
        got = nx.hits(G, nstart=nstart, max_iter=1000, backend=GS)
    except NotImplementedError:
        # the refusal: the largest singular value is not simple
        s = np.linalg.svd(nx.to_numpy_array(G), compute_uv=False)
        assert s[0] - s[1] < 1e-3 * s[0]
        return
    except nx.PowerIterationFailedConvergence:
        # max_iter counts power iterations (NetworkX's counts ARPACK's): the error shrinks by
        # (s1/s0)^2 per iteration, so only a graph whose two largest singular values are close
        # may need more than 1000 of them
        s = np.linalg.svd(nx.to_numpy_array(G), compute_uv=False)
        assert (s[1] / s[0]) ** 2 > 0.95
        return
    for ours, theirs in zip(got, want):
        assert ours.keys() == theirs.keys()
        assert np.allclose(list(ours.values()), list(theirs.values()), atol=1e-6)


def test_hits_cases():
    G = nx.DiGraph([(1, 3), (1, 5), (2, 1), (3, 5), (5, 4), (5, 3), (6, 5)])
    h, a = nx.hits(G, backend=GS)
    assert a[5] == pytest.approx(0.5, abs=1e-6) and h[1] == pytest.approx(0.366025, abs=1e-6)
    with pytest.raises(nx.PowerIterationFailedConvergence):
        nx.hits(G, max_iter=1, backend=GS)
    with pytest.raises(NotImplementedError):   # the edge's two ends: no unique answer
        nx.hits(nx.Graph([(0, 1)]), backend=GS)
    assert "sign" in can_run("hits", (G,), {"normalized": False})
    assert nx.hits(nx.DiGraph(), backend=GS) == ({}, {})


def test_declared_hits_on_a_store(tmp_path):
    import grstream as gr
    from grstream.algorithms.hits import hits
    edges = np.array([(1, 3), (1, 5), (2, 1), (3, 5), (5, 4), (5, 3), (6, 5)])
    store = gr.open(gr.build_shards(edges, tmp_path / "g.h5", num_shards=2, progress=False))
    a, _ = hits(store)
    h, _ = hits(store, scores="hubs")
    G = nx.DiGraph(edges.tolist())
    G.add_nodes_from(store.labels().tolist())   # vertex 0 has no edge
    hubs, auth = nx.hits(G)
    labels = store.labels().tolist()
    assert np.allclose(a, [auth[v] for v in labels], atol=1e-6)
    assert np.allclose(h, [hubs[v] for v in labels], atol=1e-6)
