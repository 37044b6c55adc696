"""Every algorithm gives the same values on a compressed store as on the uncompressed one
(docs/FORMAT.md, "Compressed ids"), across shard counts and memory budgets. The uncompressed
runs are checked against NetworkX and scipy by the other tests of this folder."""
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms import (bc, bfs, cc, eigenvector, hits, kcore, pagerank,
                                 predecessors, reach, scc, sssp)

from grstream.errors import MemoryBudgetError

from .conftest import build, minimum_budget, random_edges

#: (name, entry point on a store)
CALLS = [
    ("bfs", lambda s, **kw: bfs.bfs(s, 0, **kw)),
    ("sssp", lambda s, **kw: sssp.sssp(s, 0, **kw)),
    ("pagerank", lambda s, **kw: pagerank.pagerank(s, **kw)),
    ("pagerank-delta", lambda s, **kw: pagerank.pagerank(s, method="delta", **kw)),
    ("cc", lambda s, **kw: cc.connected_components(s, **kw)),
    ("bc", lambda s, **kw: bc.betweenness(s, k=5, seed=1, **kw)),
    ("eigenvector", lambda s, **kw: eigenvector.eigenvector_centrality(s, **{"max_iter": 500, **kw})),
    ("katz", lambda s, **kw: eigenvector.katz_centrality(s, alpha=0.05, **kw)),
    ("scc", lambda s, **kw: scc.strongly_connected_components(s, **kw)),
    ("kcore", lambda s, **kw: kcore.core_number(s, **kw)),
    ("bfs-to", lambda s, **kw: reach.bfs_to(s, 0, **kw)),
    ("hits", lambda s, **kw: hits.hits(s, **{"max_iter": 500, **kw})),
    ("bfs-predecessors", lambda s, **kw: predecessors.bfs_predecessors(s, 0, **kw)),
]


def least_budget(call, store):
    """The least memory budget every program of ``call`` accepts on ``store`` (an algorithm of
    several programs may need more for a later one)."""
    budget = 1
    while True:
        try:
            call(store, memory_budget=budget)
            return budget
        except MemoryBudgetError as exc:
            assert exc.minimum > budget
            budget = exc.minimum


def values(out):
    first = out[0]
    return [np.asarray(v) for v in first] if isinstance(first, tuple) else [np.asarray(first)]


@pytest.mark.parametrize("shards", [1, 4])
@pytest.mark.parametrize("seed", [0])
def test_every_algorithm_equal_with_and_without_compression(tmp_path, shards, seed):
    rng = np.random.default_rng(seed)
    # ids beyond 32 apart and hubs: blocks with resets, wide and narrow widths
    n = 300
    src, dst, w = random_edges(rng, n, 1500, weighted=True)
    src[:400] = rng.integers(0, 8, 400)
    plain = build(tmp_path, n, src, dst, w, num_shards=shards, name="plain")
    packed = build(tmp_path, n, src, dst, w, num_shards=shards, name="packed", compress=True)
    assert packed.compressed and packed.format_version == 3 and not plain.compressed
    for name, call in CALLS:
        least = least_budget(call, plain)
        assert least == least_budget(call, packed), name      # planned on the decoded sizes
        for budget in (None, least):
            want = values(call(plain, memory_budget=budget))
            got = values(call(packed, memory_budget=budget))
            for a, b in zip(want, got):
                np.testing.assert_array_equal(a, b, err_msg=f"{name} budget {budget}")


def cuda_minimum(cls, store):
    """The memory minimum of ``cls`` on ``store`` by the CUDA executor's declared facts (its
    regions hold a compressed store's id blocks, which its kernels decode), planned as the
    Session plans a pull run; no GPU needed."""
    from grstream.backends.cuda.executor import CudaExecutor
    from grstream.engine.direction import memory_arrays
    from grstream.engine.memory import plan_memory
    from grstream.engine.schedule import is_dense
    spec = cls.spec
    setup = CudaExecutor.make_setup(store, {}, memory_budget=1)
    with pytest.raises(MemoryBudgetError) as exc:
        plan_memory(store, memory_arrays(spec, ""), CudaExecutor.footprint(spec, is_dense(spec), setup),
                    1, pinned=True, **CudaExecutor.memory_options(spec, setup))
    return exc.value.minimum


@pytest.mark.parametrize("weighted", [False, True])
def test_betweenness_runs_within_the_minimum_its_store_reports(tmp_path, monkeypatch, weighted):
    """Betweenness runs over a simple copy of a store with parallel edges: the copy keeps the
    store's compressed ids and weight dtype, so the minimum every program reports on the store
    (the budget a caller derives) holds for the runs over the copy, on the CPU and by the CUDA
    executor's facts (which plan a compressed store's id blocks, not its decoded ids)."""
    rng = np.random.default_rng(5)
    n = 300
    src, dst, w = random_edges(rng, n, 1500, weighted=True)    # duplicates: a simple copy runs
    src[:400] = rng.integers(0, 8, 400)
    store = build(tmp_path, n, src, dst, w, num_shards=2, compress=True, weight_dtype="float32")
    programs = ([sssp.SSSP, bc.DagLevels, bc.WeightedBrandesForward, bc.WeightedBrandesBackward]
                if weighted else [bfs.BFS, bc.BrandesForward, bc.BrandesBackward])
    copies = []
    accumulate = bc.accumulate

    def spy(simple, *args, **kwargs):
        copies.append((simple.path, simple.compressed, dict(simple.edge_props),
                       [cuda_minimum(cls, simple) for cls in programs]))
        return accumulate(simple, *args, **kwargs)
    monkeypatch.setattr(bc, "accumulate", spy)
    least = max(minimum_budget(cls(), store) for cls in programs)
    weight = "weight" if weighted else None
    got = bc.betweenness(store, k=4, seed=1, weight=weight, memory_budget=least)[0]
    ((path, compressed, props, minima),) = copies
    assert all(m <= cuda_minimum(cls, store) for cls, m in zip(programs, minima))
    assert path != store.path and compressed and props == (store.edge_props if weighted else {})
    np.testing.assert_allclose(got, bc.betweenness(store, k=4, seed=1, weight=weight)[0], rtol=1e-12)
