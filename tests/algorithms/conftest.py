"""Graph fixtures for algorithm tests: random edge lists with the awkward cases built in
(isolated vertices, self-loops, duplicate edges), stored under several shard counts and budgets."""
import numpy as np
import scipy.sparse as sp

import grstream as gr
from grstream.errors import MemoryBudgetError


def random_edges(rng, n, m, weighted=False, self_loops=True, duplicates=True):
    src = rng.integers(0, n, m) if n else np.zeros(0, np.int64)
    dst = rng.integers(0, n, m) if n else np.zeros(0, np.int64)
    if not self_loops:
        keep = src != dst
        src, dst = src[keep], dst[keep]
    if duplicates and len(src) > 2:
        k = len(src) // 5
        src = np.concatenate([src, src[:k]])
        dst = np.concatenate([dst, dst[:k]])
    w = rng.integers(1, 20, len(src)).astype(np.float64) if weighted else None
    return src.astype(np.int64), dst.astype(np.int64), w


def build(tmp_path, n, src, dst, w=None, num_shards=1, name="g", **options):
    """A store of exactly n vertices (trailing isolated vertices kept) from an edge list."""
    data = np.ones(len(src)) if w is None else w
    mat = sp.coo_matrix((data, (src, dst)), shape=(n, n))
    path = tmp_path / f"{name}-{num_shards}.h5"
    gr.build_shards(mat, path, num_shards=num_shards, weighted=w is not None, progress=False,
                    **options)
    return gr.open(path)


def minimum_budget(program, store):
    """The least memory budget the CPU engine accepts for ``program`` on ``store``."""
    try:
        gr.run(program, store, memory_budget=1, max_iter=0)
    except MemoryBudgetError as exc:
        return exc.minimum
    return 1


BUDGETS = ("all", "minimum", "double")


def budget_for(kind, program, store):
    if kind == "all":
        return None
    low = minimum_budget(program, store)
    return low if kind == "minimum" else low + (low - 0) // 2 + 1
