"""Scatter and mutable edge state on the GPU: vertex values and edge state equal the CPU path's."""
import numpy as np
import pytest
import scipy.sparse as sp

import grstream as gr
from grstream.errors import MemoryBudgetError, UsageError

from ...engine.test_scatter import CountedBFS, EdgeRank, WeightDecay

pytestmark = pytest.mark.cuda


def store_of(tmp_path, rng, n, m, shards, edge_ids=True):
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.integers(1, 9, m).astype(np.float64)
    path = tmp_path / f"s{shards}.h5"
    gr.build_shards(sp.coo_matrix((w, (src, dst)), shape=(n, n)), path, num_shards=shards,
                    weighted=True, edge_ids=edge_ids, progress=False)
    return gr.open(path), int(src[0])


def gpu_budget(kind, program, store):
    if kind == "all":
        return None
    try:
        gr.run(program, store, device="cuda", memory_budget=1)
    except MemoryBudgetError as exc:
        low = exc.minimum
    return low if kind == "minimum" else low + store.nbytes() // 3


class HitSum(gr.GASProgram):
    """Integer edge state gathered over in-edges (through in/eid): exact whatever the sum order."""

    vertex = {"total": "int64"}
    edge_state = {"hits": "int64"}
    gather_reduce = gr.monoid.sum
    activate = "all"

    def init(self, v):
        v.total = 0

    def gather_map(self, src, dst, edge):
        return edge.hits

    def apply(self, v, acc):
        v.total = acc + v.total % 7
        return True

    def scatter(self, src, dst, edge):
        edge.hits = edge.hits + src.total % 5 + dst.total % 3 + 1


PROGRAMS = {
    "hit_sum": (lambda src: HitSum(), 5),
    "counted_bfs": (lambda src: CountedBFS(source=src), None),
    "edge_rank": (lambda src: EdgeRank(), 12),
    "weight_decay": (lambda src: WeightDecay(), 6),
}


@pytest.mark.parametrize("budget_kind", ["all", "partial", "minimum"])
@pytest.mark.parametrize("shards", [1, 4])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_scatter_programs_match_cpu(gpu, tmp_path, rng, name, shards, budget_kind):
    store, source = store_of(tmp_path, rng, 300, 2500, shards)
    make, max_iter = PROGRAMS[name]
    cpu = gr.run(make(source), store, device="cpu", max_iter=max_iter)
    got = gr.run(make(source), store, device="cuda", max_iter=max_iter,
                 memory_budget=gpu_budget(budget_kind, make(source), store))
    assert got.iterations == cpu.iterations
    for f in cpu.values:
        if name == "edge_rank":  # float sums in a different order
            np.testing.assert_allclose(got.values[f], cpu.values[f], rtol=1e-12, atol=1e-15)
        else:
            np.testing.assert_array_equal(got.values[f], cpu.values[f])
    assert set(got.edge_values) == set(cpu.edge_values) and cpu.edge_values
    for k in cpu.edge_values:
        assert got.edge_values[k].dtype == cpu.edge_values[k].dtype
        if name == "edge_rank":
            np.testing.assert_allclose(got.edge_values[k], cpu.edge_values[k], rtol=1e-12, atol=1e-15)
        else:
            np.testing.assert_array_equal(got.edge_values[k], cpu.edge_values[k], err_msg=k)
    assert [s.changed_vertices for s in got.stats] == [s.changed_vertices for s in cpu.stats]
    if budget_kind == "minimum" and shards > 1:
        assert got.info["residency"] in ("streaming", "partial")


def test_auto_device_runs_scatter_on_the_gpu(gpu, tmp_path, rng):
    store, source = store_of(tmp_path, rng, 200, 1500, 2)
    got = gr.run(CountedBFS(source=source), store, device="auto")
    cpu = gr.run(CountedBFS(source=source), store, device="cpu")
    assert got.info["backend"] == "cuda"
    np.testing.assert_array_equal(got.edge_values["hits"], cpu.edge_values["hits"])


def test_in_gather_of_edge_state_needs_edge_ids_on_the_gpu(gpu, tmp_path, rng):
    store, _ = store_of(tmp_path, rng, 50, 200, 2, edge_ids=False)
    with pytest.raises(UsageError, match="edge-ids"):
        gr.run(EdgeRank(), store, device="cuda", max_iter=2)
