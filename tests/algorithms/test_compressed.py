"""Every algorithm gives the same values on a compressed store as on the uncompressed one
(docs/FORMAT.md, "Compressed ids"), across shard counts and memory budgets. The uncompressed
runs are checked against NetworkX and scipy by the other tests of this folder."""
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms import (bc, bfs, cc, eigenvector, hits, kcore, pagerank,
                                 predecessors, reach, scc, sssp)

from grstream.errors import MemoryBudgetError

from .conftest import build, random_edges

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
