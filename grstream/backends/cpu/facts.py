"""The CPU executor's class-level facts: its footprint, capabilities and threads (what the
engine asks before an executor exists)."""
import os

import numpy as np

from ...engine.executor import Capabilities
from ...engine.memory import Footprint
from ...engine.planner import hoistable
from ...errors import UsageError
from .pieces import cpu_transfers
from .segments import CHUNK_EDGES
from .strategy_push import push_static

#: temporaries of a pass over one chunk of a unit's rows (segments.CHUNK_EDGES edges), per
#: edge: edge positions and neighbour ids (8 + 8), messages and the gathered neighbour values
#: (8 + 8), a repeated own value (8) and the program's own intermediate arrays (16)
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


def store_bytes(store):
    """Bytes of the arrays an open store holds (its degrees, and original ids if renumbered)."""
    ids = store.original_ids()
    return int(store.in_degree().nbytes + store.out_degree().nbytes
               + (0 if ids is None else ids.nbytes))


def unit_scratch(store, spec, lanes, options):
    """Temporaries of one unit at a time (one worker): the passes over a chunk of its edges and
    the per-vertex arrays over its vertices (the whole graph when unbounded, else a shard)."""
    edges, vertices = CpuFacts._unit_size(store, options)
    width = max(lanes, 1) * max([8] + [dt.itemsize for dt in spec.vertex_fields.values()])
    per_vertex = SCRATCH_PER_UNIT_VERTEX * width // 8
    return min(edges, CHUNK_EDGES) * SCRATCH_PER_CHUNK_EDGE * max(lanes, 1) + vertices * per_vertex


class CpuFacts:
    """Mixed into CpuExecutor (name, footprint, capabilities)."""

    @classmethod
    def footprint(cls, store, spec, dense, options):
        n, m = int(store.num_vertices), int(store.num_edges)
        L = options.get("lanes") or 1
        static = {}
        for f, dt in spec.vertex_fields.items():
            static[f"cur/{f}"] = static[f"nxt/{f}"] = L * n * dt.itemsize
        # the store's own arrays, held while it is open (degrees; original ids when renumbered)
        static["store"] = store_bytes(store)
        if spec.activate != "all":
            static["frontier"] = n + (2 * L * n if options.get("lanes") else 0)
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
        if options.get("push"):   # the session may plan push (engine/direction.py)
            static.update(push_static(spec, n))
        scratch = {"unit temporaries": cls._threads(options) * unit_scratch(store, spec, L, options)}
        return Footprint(static=static, scratch=scratch, alignment=64)

    @staticmethod
    def _unit_size(store, options):
        """(edges, vertices) of the largest unit: the whole graph when unbounded, else a shard."""
        if options.get("memory_budget") is None:
            return int(store.num_edges) * 2, int(store.num_vertices)
        infos = [store.shard_info(i) for i in range(store.num_shards)]
        edges = max((x.num_in_edges + x.num_out_edges for x in infos), default=0)
        sizes = np.diff(np.asarray(store.intervals, dtype=np.int64))
        return int(edges), int(sizes.max()) if len(sizes) else 0

    @classmethod
    def capabilities(cls, options):
        workers = cls._threads(options)
        limit = None if options.get("memory_budget") is None else max(cls._unit_size(options["store"], options)[0], 1)
        return Capabilities("cpu", workers=workers, batch_resident="always", batch_copies=False,
                            unit_edges=limit, adaptive_hoist=True, push=True,
                            frontier_formats=("bitmap", "queue"), push_threshold=PUSH_THRESHOLD,
                            gather_changed=True, local_rounds=True, push_async=True,
                            push_workers=PUSH_WORKERS, **cpu_transfers(options))

    @staticmethod
    def _threads(options):
        threads = options.get("threads")
        if threads is not None and int(threads) < 1:
            raise UsageError(f"threads must be >= 1, not {threads}")
        # numpy and scipy release the GIL in the heavy loops, so units compute in parallel
        return max(1, int(threads or min(8, os.cpu_count() or 1)))
