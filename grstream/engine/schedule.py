"""Facts of a program the engine derives once: which shard arrays it needs (phase
elimination), their dtypes and bytes, its gather directions, dense and hoisted shapes.

``needed_arrays`` and friends feed the memory model (engine/memory.py); executors size their
buffers by the same facts (grstream/engine/contract.py).
"""
from typing import List

import numpy as np


#: the neighbour-id datasets of a shard, by direction
ID_NAMES = {"in": "in/src", "out": "out/dst"}


def is_dense(spec):
    """One message per vertex and a single apply after every unit: every vertex is active every
    iteration, gather exists and no edge state is written between a unit's gather and the next."""
    return spec.activate == "all" and spec.has_gather and not spec.edge_state


def gather_directions(spec):
    """The edge directions gather walks: ("in",), ("out",), both, or () without gather."""
    if not spec.has_gather:
        return ()
    return ("in", "out") if spec.gather_edges == "all" else (spec.gather_edges,)


def hoistable(spec):
    """gather_map reads only ``src``: compute it once per vertex instead of once per edge."""
    return bool(spec.has_gather and spec.analysis.gather_uses <= {"src"})


def _codec():
    """The store's codec module (imported when a name is resolved: the store package brings
    h5py, which the command line's start-up does not load)."""
    from ..store import codec
    return codec


def id_parts(name):
    """The datasets a compressed store keeps id dataset ``name`` as (``"in/src"`` ->
    ``"in/src.offsets"``, ..., docs/FORMAT.md "Compressed ids")."""
    from ..store.format import codec_parts
    return codec_parts(name)


def logical_name(name):
    """The dataset a stored one belongs to: a compressed id part's id dataset, else itself."""
    base, dot, part = name.rpartition(".")
    return base if dot and base in ID_NAMES.values() and part in _codec().PARTS else name


def stored_names(store, names):
    """``names`` as ``store`` keeps them: in a compressed store each id dataset as its parts
    (for executors that decode the ids themselves), else unchanged."""
    if not getattr(store, "compressed", False):
        return list(names)
    return [part for n in names for part in (id_parts(n) if n in ID_NAMES.values() else [n])]


def select(names, wanted):
    """The stored ``names`` whose dataset (:func:`logical_name`) is among ``wanted``."""
    wanted = set(wanted)
    return [n for n in names if logical_name(n) in wanted]


def dataset_dtype(store, name):
    """The dtype of shard dataset ``name`` (e.g. ``"in/src"``, ``"in/src.words"``) in ``store``
    (docs/FORMAT.md)."""
    if logical_name(name) != name:
        return _codec().PART_DTYPES[name.rpartition(".")[2]]
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
    if spec.activate != "frontier":
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


def push_arrays(spec):
    """Shard datasets a push plan reads: the reverse of the gather edges (out-edges for
    ``gather_edges = "in"``) with the edge properties gather_map reads."""
    if not spec.has_gather:
        return []
    names = []
    if spec.gather_edges in ("in", "all"):
        names += ["out/indptr", "out/dst"] + [f"out/{p}" for p in sorted(spec.edge_reads)]
    if spec.gather_edges in ("out", "all"):
        names += ["in/indptr", "in/src"] + [f"in/{p}" for p in sorted(spec.edge_reads)]
    return names


def needed_arrays(spec, push=False) -> List[str]:
    """Every shard dataset one iteration of ``spec`` touches, in a stable order (phase elimination:
    a program without gather never reads in-edges; without scatter, out-edges are read only for
    activation; topology-driven programs skip activation). ``push``: the engine may plan push
    iterations (grstream/engine/direction.py), which also read :func:`push_arrays`."""
    out = []
    extra = push_arrays(spec) if push else []
    for name in gather_arrays(spec) + activation_arrays(spec) + scatter_arrays(spec) + extra:
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
