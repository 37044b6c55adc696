"""Which shard arrays a program needs (phase elimination) and their dtypes and bytes.

``needed_arrays`` and friends feed the memory model (engine/memory.py).
"""
from typing import List

import numpy as np


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


def push_directions(spec):
    """The edges a push plan walks from a changed vertex: ``"out"`` (its CSR out-edges) for
    programs gathering over in-edges, ``"in"`` (its CSC in-edges) for programs gathering over
    out-edges, both for ``"all"``; () for programs no push plan can run: topology-driven, without
    gather, or with mutable edge state or scatter (they stay pull)."""
    if not spec.has_gather or spec.activate == "all" or spec.edge_state or spec.has_scatter:
        return ()
    return {"in": ("out",), "out": ("in",), "all": ("out", "in")}[spec.gather_edges or "in"]


def push_arrays(spec):
    """Shard datasets a push plan reads: the walked edges and the edge properties gather_map
    reads, in the walked order (CSR ``out/<prop>`` for out-edges)."""
    names = []
    for d in push_directions(spec):
        ids = "out/dst" if d == "out" else "in/src"
        names += [f"{d}/indptr", ids] + [f"{d}/{p}" for p in sorted(spec.edge_reads)]
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
    activation; topology-driven programs skip activation). Programs a push plan can run also
    hold :func:`push_arrays` (the out-edges' properties of SSSP's weights, say), so the memory
    model's regions and budgets cover both directions."""
    out = []
    for name in gather_arrays(spec) + activation_arrays(spec) + scatter_arrays(spec) + push_arrays(spec):
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
