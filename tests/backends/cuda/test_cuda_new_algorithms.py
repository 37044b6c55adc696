"""Eigenvector and Katz centrality, HITS, strongly connected components, core numbers and BFS
to a target on the GPU against the CPU (the reference); skipped without a GPU."""
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms import eigenvector, hits, kcore, neighbors, reach, scc

from ...engine.test_turns import Layered, LayeredOut
from .test_cuda_backend import assert_same, budget, build, cuda_run, skewed_graph  # noqa: F401

pytestmark = pytest.mark.cuda

def condensation_levels(store, **kw):
    label, _ = scc.scc_labels(store, {})
    result = gr.run(scc.CondensationLevels(comp=label), store, **kw)
    return result.values["level"], result


ALGOS = {
    "eigenvector": (lambda st, **kw: eigenvector.eigenvector_centrality(st, max_iter=60, **kw),
                    1e-9, lambda st: [eigenvector.EigenvectorCentrality()]),
    "eigenvector_weighted": (lambda st, **kw: eigenvector.eigenvector_centrality(
        st, max_iter=60, weight="weight", **kw), 1e-9,
        lambda st: [eigenvector.WeightedEigenvectorCentrality()]),
    "katz": (lambda st, **kw: eigenvector.katz_centrality(st, alpha=0.01, **kw), 1e-9,
             lambda st: [eigenvector.KatzCentrality()]),
    "scc": (lambda st, **kw: scc.strongly_connected_components(st, **kw), 0,
            lambda st: [scc.ColourForward(), scc.ReachBackward(
                color=np.zeros(st.num_vertices, np.int64))]),
    "condensation_levels": (lambda st, **kw: condensation_levels(st, **kw), 0,
                            lambda st: [scc.CondensationLevels(
                                comp=np.zeros(st.num_vertices, np.int64))]),
    "kcore": (lambda st, **kw: kcore.core_number(st, **kw), 0,
              lambda st: [kcore.DirectedCoreNumber()]),
    "neighbour_sums": (lambda st, **kw: neighbors.neighbour_sums(
        st, np.arange(st.num_vertices) % 7, "in+out", **kw), 0,
        lambda st: [neighbors.NeighbourSum(values=np.zeros(st.num_vertices, np.int64))]),
    # the stopping iteration may differ by one where the change is near tol
    "hits": (lambda st, **kw: hits.hits(st, max_iter=200, tol=1e-6, **kw), 1e-5,
             lambda st: [hits.AuthorityStep(values=np.zeros(st.num_vertices)),
                         hits.WeightedHubStep(values=np.zeros(st.num_vertices))]),
    "hits_weighted": (lambda st, **kw: hits.hits(st, scores="hubs", max_iter=200, tol=1e-6,
                                                 weight="weight", **kw), 1e-5,
                      lambda st: [hits.WeightedAuthorityStep(values=np.zeros(st.num_vertices)),
                                  hits.WeightedHubStep(values=np.zeros(st.num_vertices))]),
    "bfs_to": (lambda st, **kw: reach.bfs_to(st, 7, **kw), 0,
               lambda st: [reach.ReverseBFS(source=7)]),
    # scheduled activation (activate = "schedule"): the executor's set_active bitmap each
    # iteration, over in-edges and over out-edges
    "schedule_in": (lambda st, **kw: scheduled(Layered, st, **kw), 1e-12,
                    lambda st: [Layered()]),
    "schedule_out": (lambda st, **kw: scheduled(LayeredOut, st, **kw), 1e-12,
                     lambda st: [LayeredOut()]),
}


def scheduled(cls, store, **kw):
    turns = np.random.default_rng(5).integers(-1, 7, store.num_vertices).astype(np.int32)
    result = gr.run(cls(turns=turns), store, **kw)
    assert result.iterations == turns.max()
    return result.values["x"], result


@pytest.mark.parametrize("lb", ["auto", "twc", "merge"])
@pytest.mark.parametrize("budget_kind", ["all", "minimum", "partial"])
@pytest.mark.parametrize("num_shards", [1, 4])
@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_new_algorithms_match_cpu(cuda_run, tmp_path, rng, algo, num_shards, budget_kind, lb):
    n, src, dst, w = skewed_graph(rng)
    store = build(tmp_path, n, src, dst, w, num_shards=num_shards)
    fn, rtol, programs = ALGOS[algo]
    cpu, cpu_res = fn(store)
    needs = [budget(budget_kind, p, store) for p in programs(store)]
    mb = None if None in needs else max(needs)
    got, res = cuda_run(fn, store, load_balance=lb, memory_budget=mb)
    assert_same(algo, cpu, got, rtol)
    if isinstance(res, list):   # hits: one run per half step
        res, cpu_res = res[-1], cpu_res[-1]
    assert res.info["backend"] == "cuda"
    assert res.converged == cpu_res.converged


def test_scc_on_gpu_matches_csgraph(gpu, tmp_path, rng):
    from scipy.sparse import csgraph, csr_matrix
    n, src, dst, _ = skewed_graph(rng, n=800, m=4000, hub_edges=500)
    store = build(tmp_path, n, src, dst, num_shards=3)
    labels, _ = scc.strongly_connected_components(store, device="cuda")
    _, comp = csgraph.connected_components(csr_matrix((np.ones(len(src)), (src, dst)),
                                                      shape=(n, n)), connection="strong")
    smallest = np.full(comp.max() + 1, n)
    np.minimum.at(smallest, comp, np.arange(n))
    np.testing.assert_array_equal(labels, smallest[comp])
