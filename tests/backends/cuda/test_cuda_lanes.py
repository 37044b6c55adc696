"""Lanes (Session.run_lanes) on the CUDA executor against the CPU's, on a GPU; skipped without
one. (Delta PageRank, gather_from = "changed", is in test_cuda_backend.py's ALGOS.)"""

import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.sssp import SSSP
from grstream.errors import MemoryBudgetError

from .test_cuda_backend import build, skewed_graph

pytestmark = pytest.mark.cuda


class DenseLanes(gr.GASProgram):
    """Dense, a parameter that differs between lanes in apply and a per-lane stopping
    iteration: a lane that stops keeps its values while the others go on swapping."""

    vertex = {"x": "float64"}
    gather_reduce = gr.monoid.sum
    activate = "all"
    params = {"scale": 1.0, "stop": 3}

    def init(self, v):
        v.x = v.id % 5 * self.scale
        return None

    def gather_map(self, src, dst, edge):
        return src.x * 0.5

    def apply(self, v, acc):
        v.x = acc + self.scale
        return False

    def converged(self):
        return self.iteration >= self.stop


def lanes_minimum(store, programs):
    try:
        with gr.Session(store, device="cuda", memory_budget=1) as s:
            s.run_lanes(programs, max_iter=1)
    except MemoryBudgetError as e:
        return e.minimum
    raise AssertionError("a 1-byte budget was accepted")


def cases(store):
    n = store.num_vertices
    # 3 lanes on an executor of 4, which stop at different iterations
    sources = [7, 0, n - 1]
    return {"bfs": [BFS(source=s) for s in sources], "sssp": [SSSP(source=s) for s in sources],
            "dense": [DenseLanes(scale=s, stop=t) for s, t in ((1.0, 2), (2.0, 4), (0.5, 3))]}


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("budget_kind", ["all", "minimum"])
@pytest.mark.parametrize("num_shards", [1, 4])
@pytest.mark.parametrize("name", ["bfs", "sssp", "dense"])
def test_lanes_match_cpu(gpu, tmp_path, rng, name, num_shards, budget_kind, compress):
    n, src, dst, w = skewed_graph(rng, n=1200, m=9000, hub_edges=1500)
    src = np.append(src, n)   # vertex n (the last) has an out-edge and no in-edge
    dst = np.append(dst, 3)
    w = np.append(w, 2.0)
    store = build(tmp_path, n + 1, src, dst, w, num_shards=num_shards, compress=compress)
    make = lambda: cases(store)[name]   # noqa: E731
    budget = None if budget_kind == "all" else lanes_minimum(store, make())
    with gr.Session(store, device="cpu") as s:
        want = s.run_lanes(make(), max_iter=12)
    # (the GPU's pulls publish after all units, as the CPU's do, so the iterations compare:
    # with per-unit publishing a lane may converge sooner, test_cuda_backend.py)
    with gr.Session(store, device="cuda", memory_budget=budget, publish_unit=False) as s:
        assert s.can_run_lanes(type(make()[0]))
        got = s.run_lanes(make(), max_iter=12)
    for k, (g, c) in enumerate(zip(got, want)):
        assert g.info["backend"] == "cuda" and g.info["lanes"] == 3
        for f in c.values:
            np.testing.assert_allclose(g.values[f], c.values[f], rtol=1e-12, err_msg=f"{name} lane {k} {f}")
        assert g.iterations == c.iterations and g.converged == c.converged
    # each lane equals its own run on the GPU, with the GPU's default per-unit publishing too
    one = gr.run(make()[2], store, device="cuda", max_iter=12)
    with gr.Session(store, device="cuda", memory_budget=budget) as s:
        seidel = s.run_lanes(make(), max_iter=12)
    np.testing.assert_allclose(seidel[2].value, one.value, rtol=1e-12)


def test_betweenness_runs_its_sources_in_lanes(gpu, tmp_path, rng):
    n, src, dst, w = skewed_graph(rng, n=800, m=5000, hub_edges=800)
    store = build(tmp_path, n, src, dst, w, num_shards=3)
    want, _ = gr.algorithms.bc.betweenness(store, k=5, seed=3, weight="weight")
    got, runs = gr.algorithms.bc.betweenness(store, k=5, seed=3, weight="weight", device="cuda")
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert all(r.info["backend"] == "cuda" and r.info.get("lanes") == 5 for r in runs)
