"""Which shard arrays a program needs (phase elimination), and the legacy budget split.

``needed_arrays`` and friends feed the memory model (engine/memory.py). ``MemoryPlan`` /
``plan_memory`` here are the older budget split the CUDA backend still uses until it executes the
engine's plans; every other path uses engine/memory.py.
"""
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

import numpy as np

from ..errors import MemoryBudgetError


def dataset_dtype(store, name):
    """The dtype of shard dataset ``name`` (e.g. ``"in/src"``) in ``store`` (docs/FORMAT.md)."""
    what = name.split("/", 1)[1]
    if what in ("indptr", "eid"):
        return np.dtype(np.int64)
    if what in ("src", "dst"):
        return np.dtype(store.id_dtype)
    return np.dtype(store.edge_props[what])


def gather_arrays(spec):
    """Shard datasets the gather phase reads (empty when the program has no gather)."""
    if not spec.has_gather:
        return []
    names = []
    if spec.gather_edges in ("in", "all"):
        names += ["in/indptr", "in/src"] + [f"in/{p}" for p in sorted(spec.edge_reads)]
        if gather_reads_edge_state(spec):
            names.append("in/eid")  # edge state lives in CSR order: in-edges find it by id
    if spec.gather_edges in ("out", "all"):
        names += ["out/indptr", "out/dst"] + [f"out/{p}" for p in sorted(spec.edge_reads)]
    return names


def activation_arrays(spec):
    """Shard datasets frontier activation reads: the edges along which a change propagates."""
    if spec.activate == "all":
        return []
    direction = spec.gather_edges or "in"
    names = []
    if direction in ("in", "all"):   # readers of v are its out-neighbours
        names += ["out/indptr", "out/dst"]
    if direction in ("out", "all"):  # readers of v are its in-neighbours
        names += ["in/indptr", "in/src"]
    return names


def gather_reads_edge_state(spec):
    info = spec.analysis.methods.get("gather_map") if spec.has_gather else None
    return bool(info is not None and set(info.edge_reads) & set(spec.edge_state))


def scatter_arrays(spec):
    """Shard datasets scatter reads: the out-edges of changed vertices and their properties."""
    if not spec.has_scatter:
        return []
    return ["out/indptr", "out/dst"] + [f"out/{p}" for p in sorted(spec.edge_reads)]


def needed_arrays(spec) -> List[str]:
    """Every shard dataset one iteration of ``spec`` touches, in a stable order (phase elimination:
    a program without gather never reads in-edges; without scatter, out-edges are read only for
    activation; topology-driven programs skip activation)."""
    out = []
    for name in gather_arrays(spec) + activation_arrays(spec) + scatter_arrays(spec):
        if name not in out:
            out.append(name)
    return out


def shard_bytes(store, names) -> np.ndarray:
    """Bytes of ``names`` per shard (int64 array of length num_shards)."""
    sizes = np.zeros(store.num_shards, dtype=np.int64)
    for i in range(store.num_shards):
        info = store.shard_info(i)
        sizes[i] = sum(info.dataset_nbytes[n] for n in names)
    return sizes


@dataclass
class MemoryPlan:
    """How a budget is spent: resident vertex state, streaming buffers, cached shards."""

    budget: int
    vertex_bytes: int
    buffer_bytes: int          # size of one streaming buffer (the largest shard's needed bytes)
    num_buffers: int           # 1 = no read-ahead; 2 = double buffering
    cached: List[int] = field(default_factory=list)  # shards kept in memory across iterations
    shard_bytes: Dict[int, int] = field(default_factory=dict)

    @property
    def minimum(self):
        return self.vertex_bytes + self.buffer_bytes

    @property
    def all_cached(self):
        return len(self.cached) == len(self.shard_bytes)

    def to_dict(self):
        return {"budget": self.budget, "vertex_bytes": self.vertex_bytes,
                "buffer_bytes": self.buffer_bytes, "num_buffers": self.num_buffers,
                "cached_shards": len(self.cached), "num_shards": len(self.shard_bytes),
                "cached_bytes": int(sum(self.shard_bytes[i] for i in self.cached))}


def plan_memory(sizes: np.ndarray, vertex_bytes: int, budget, max_buffers: int = 2) -> MemoryPlan:
    """Spend ``budget`` bytes: vertex state first, then streaming buffers, then cached shards.

    When everything fits, every shard is cached and no streaming buffer is needed (in-memory mode).
    Otherwise shards are cached smallest-index-first until the remainder runs out, and the rest
    stream through ``num_buffers`` buffers sized for the largest streamed shard. A budget below
    vertex state plus the largest shard raises MemoryBudgetError stating the minimum.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    total = int(sizes.sum())
    largest = int(sizes.max()) if sizes.size else 0
    by_index = {i: int(s) for i, s in enumerate(sizes)}
    if budget is None or budget >= vertex_bytes + total:
        return MemoryPlan(budget=int(budget if budget is not None else vertex_bytes + total),
                          vertex_bytes=vertex_bytes, buffer_bytes=0, num_buffers=0,
                          cached=list(range(len(sizes))), shard_bytes=by_index)
    minimum = vertex_bytes + largest
    if budget < minimum:
        raise MemoryBudgetError(
            f"memory budget {budget:,} B is below the minimum {minimum:,} B "
            f"(vertex state {vertex_bytes:,} B + largest shard {largest:,} B)", minimum=minimum)
    num_buffers = max_buffers if budget >= vertex_bytes + max_buffers * largest else 1
    free = budget - vertex_bytes - num_buffers * largest
    cached = []
    for i, s in enumerate(sizes):
        if s <= free:
            cached.append(i)
            free -= int(s)
    return MemoryPlan(budget=int(budget), vertex_bytes=vertex_bytes, buffer_bytes=largest,
                      num_buffers=num_buffers, cached=cached, shard_bytes=by_index)


def active_shards(intervals: np.ndarray, active: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(indices of shards holding an active vertex, active count per shard)."""
    csum = np.concatenate(([0], np.cumsum(active, dtype=np.int64)))
    counts = csum[intervals[1:]] - csum[intervals[:-1]]
    return np.flatnonzero(counts), counts
