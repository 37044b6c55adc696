"""The CPU executor's class-level facts: its typed options, footprint, capabilities, policies
and threads (what the engine asks before an executor exists)."""
import os
from dataclasses import dataclass
from typing import ClassVar, Optional

import numpy as np

from ...engine.contract import (BASIC_TRANSFERS, BatchResident, Batching, Capabilities,
                                ExecutorOptions, Feature, Footprint, Forced, Policies, PushFacts,
                                hoistable)
from ...errors import UsageError
from .balance import cpu_policy
from .pieces import maps_shards
from .segments import CHUNK_EDGES
from .strategy_compiled import check_choice
from .strategy_push import push_static

#: temporaries of a pass over one chunk of a unit's rows (segments.CHUNK_EDGES edges), per
#: edge: edge positions and neighbour ids (8 + 8), messages and the gathered neighbour values
#: (8 + 8), a repeated own value (8) and the program's own intermediate arrays (8)
SCRATCH_PER_CHUNK_EDGE = 48
#: temporaries per vertex of a unit: its accumulator, active and changed ids, the values apply
#: writes and the program's intermediate arrays over them (in bytes, per field byte and 8)
SCRATCH_PER_UNIT_VERTEX = 48
#: the CPU's push threshold (engine/direction.py): its pull walks the changed set's out-edges to
#: activate, then every in-edge of the frontier, so pushing is never slower
#: (docs/BENCHMARKS.md, "Measured constants")
PUSH_THRESHOLD = 1.0
#: push plans run their units in order: the combining is under one lock, and a second thread only
#: overlapped the sends and competed for the cores (docs/BENCHMARKS.md, "Measured constants")
PUSH_WORKERS = 1
#: the CPU executor's ``transfer`` option: "copy" (default) or "compact", which packs each
#: streamed shard's active rows after reading it (the reference of the CUDA executor's
#: compaction; on the CPU it never pays, the store read is the cost, so "auto" means "copy")
CPU_TRANSFERS = ("auto", "copy", "compact")


@dataclass(frozen=True)
class CpuOptions(ExecutorOptions):
    """Options of the CPU executor (``gr.run(..., backend_options=...)``, Session keywords).

    threads : int, optional
        Worker threads units run on (default: the cores, at most 8); numpy and scipy release the
        GIL in the heavy loops, so units compute in parallel.
    transfer : {"auto", "copy", "compact"}
        How streamed shards move: "compact" packs each streamed shard's active rows after
        reading it (the reference of the GPU's compaction); "auto" and "copy" copy.
    kernels : {"auto", "numba", "numpy"}
        Push plans of programs that qualify run compiled kernels generated from the program
        ("auto": where numba is installed and loading the kernels pays; "numba": wherever the
        program qualifies, a UsageError saying why not otherwise; "numpy": never;
        docs/ARCHITECTURE.md "Compiled CPU kernels").
    """

    BACKEND: ClassVar[str] = "cpu"

    threads: Optional[int] = None
    transfer: str = "auto"
    kernels: str = "auto"

    def __post_init__(self):
        t = self.threads
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 1):
            raise UsageError(f"threads must be an integer >= 1, not {t!r}")
        if self.transfer not in CPU_TRANSFERS:
            raise UsageError(f"transfer must be one of {', '.join(CPU_TRANSFERS)} on the CPU, "
                             f"not {self.transfer!r}")
        check_choice(self.kernels)


def store_bytes(store):
    """Bytes of the arrays an open store holds (its degrees, and original ids if renumbered)."""
    ids = store.original_ids()
    return int(store.in_degree().nbytes + store.out_degree().nbytes
               + (0 if ids is None else ids.nbytes))


def unit_scratch(store, spec, lanes, setup):
    """Temporaries of one unit at a time (one worker): the passes over a chunk of its edges and
    the per-vertex arrays over its vertices (the whole graph when unbounded, else a shard)."""
    edges, vertices = CpuFacts._unit_size(store, setup)
    width = max(lanes, 1) * max([8] + [dt.itemsize for dt in spec.vertex_fields.values()])
    per_vertex = SCRATCH_PER_UNIT_VERTEX * width // 8
    return min(edges, CHUNK_EDGES) * SCRATCH_PER_CHUNK_EDGE * max(lanes, 1) + vertices * per_vertex


class CpuFacts:
    """Mixed into CpuExecutor (options, footprint, capabilities, policies)."""

    Options = CpuOptions

    @classmethod
    def footprint(cls, spec, dense, setup):
        store = setup.store
        n, m = int(store.num_vertices), int(store.num_edges)
        L = setup.lanes or 1
        static = {}
        for f, dt in spec.vertex_fields.items():
            static[f"cur/{f}"] = static[f"nxt/{f}"] = L * n * dt.itemsize
        # the store's own arrays, held while it is open (degrees; original ids when renumbered)
        static["store"] = store_bytes(store)
        if spec.activate != "all":   # the frontier's mask; lanes: two per lane (a schedule: those)
            static["frontier"] = (n if spec.activate == "frontier" else 0) + (2 * L * n if setup.lanes else 0)
        if spec.gather_from == "changed":
            static["changed"] = n   # the previous iteration's changed vertices, a bitmap
        if hoistable(spec):
            static["hoisted"] = L * n * spec.gather_dtype.itemsize
        if dense:
            static["acc"] = L * n * spec.gather_dtype.itemsize
        if spec.aggregates:
            static["terms"] = n * max(dt.itemsize for dt in spec.aggregate_dtype.values())
        for name, dt in spec.edge_state.items():
            static[f"edges/{name}"] = m * dt.itemsize
        if setup.push:   # the session may plan push (engine/direction.py)
            static.update(push_static(spec, n, store.num_edges))
        scratch = {"unit temporaries": cls._threads(setup.options) * unit_scratch(store, spec, L, setup)}
        return Footprint(static=static, scratch=scratch, alignment=64)

    @staticmethod
    def _unit_size(store, setup):
        """(edges, vertices) of the largest unit: the whole graph when unbounded, else a shard."""
        if setup.memory_budget is None:
            return int(store.num_edges) * 2, int(store.num_vertices)
        infos = [store.shard_info(i) for i in range(store.num_shards)]
        edges = max((x.num_in_edges + x.num_out_edges for x in infos), default=0)
        sizes = np.diff(np.asarray(store.intervals, dtype=np.int64))
        return int(edges), int(sizes.max()) if len(sizes) else 0

    @classmethod
    def capabilities(cls, setup):
        limit = None if setup.memory_budget is None else max(cls._unit_size(setup.store, setup)[0], 1)
        transfers, forced = BASIC_TRANSFERS, Forced()
        if setup.options.transfer == "compact" and not setup.lanes:
            transfers, forced = BASIC_TRANSFERS | {"compact"}, Forced(transfer="compact")
        return Capabilities(
            "cpu", workers=cls._threads(setup.options),
            # (mapped resident shards: each one's own arrays, a unit each)
            batching=Batching(BatchResident.NEVER if maps_shards(setup.store) else BatchResident.ALWAYS,
                              copies=False, unit_edges=limit),
            features={Feature.ADAPTIVE_HOIST, Feature.GATHER_CHANGED, Feature.LOCAL_ROUNDS},
            push=PushFacts(threshold=PUSH_THRESHOLD, workers=PUSH_WORKERS, asynchronous=True,
                           memory=True),
            transfers=transfers, frontier_formats=("bitmap", "queue"), forced=forced)

    @classmethod
    def policies(cls, setup):
        """The CPU's load balance (full / sweep / select per unit); no link to calibrate."""
        return Policies(balance=cpu_policy)

    @staticmethod
    def _threads(options):
        # numpy and scipy release the GIL in the heavy loops, so units compute in parallel
        return max(1, int(options.threads or min(8, os.cpu_count() or 1)))
