"""The CPU executor's class-level facts: its footprint, capabilities and threads (what the
engine asks before an executor exists)."""
import os

import numpy as np

from ...engine.executor import Capabilities
from ...engine.memory import Footprint
from ...engine.planner import hoistable
from ...engine.schedule import needed_arrays, shard_bytes
from ...errors import UsageError
from .pieces import cpu_transfers
from .strategy_push import push_static

#: scratch the executor's temporaries take, per byte of the shard data of the largest unit (index
#: arrays and gathered messages are about as large as the arrays they index; an estimate, the
#: program's own intermediate arrays are not counted)
SCRATCH_PER_DATA_BYTE = 1
#: the CPU's push threshold (engine/direction.py): its pull walks the changed set's out-edges to
#: activate, then every in-edge of the frontier, so pushing is never slower
#: (docs/BENCHMARKS.md, "Measured constants")
PUSH_THRESHOLD = 1.0
#: push plans run their units in order: the combining is under one lock, and a second thread only
#: overlapped the sends and competed for the cores (docs/BENCHMARKS.md, "Measured constants")
PUSH_WORKERS = 1


class CpuFacts:
    """Mixed into CpuExecutor (name, footprint, capabilities)."""

    @classmethod
    def footprint(cls, store, spec, dense, options):
        n, m = int(store.num_vertices), int(store.num_edges)
        L = options.get("lanes") or 1
        static = {}
        for f, dt in spec.vertex_fields.items():
            static[f"cur/{f}"] = static[f"nxt/{f}"] = L * n * dt.itemsize
        for d in ("in_degree", "out_degree"):
            if d in spec.vertex_reads:
                static[d] = 8 * n
        if spec.activate != "all":
            static["frontier"] = n + (2 * L * n if options.get("lanes") else 0)
        if spec.gather_from == "changed":
            static["changed"] = n   # the previous iteration's changed vertices, a bitmap
        if hoistable(spec):
            static["hoisted"] = L * n * spec.gather_dtype.itemsize
        if dense:
            static["acc"] = L * n * spec.gather_dtype.itemsize
        for name, dt in spec.edge_state.items():
            static[f"edges/{name}"] = m * dt.itemsize
        if options.get("push"):   # the session may plan push (engine/direction.py)
            static.update(push_static(spec, n))
        sizes = shard_bytes(store, needed_arrays(spec, push=bool(options.get("push"))))
        largest = int(sizes.sum() if options.get("memory_budget") is None else sizes.max(initial=0))
        scratch = {"unit temporaries": SCRATCH_PER_DATA_BYTE * largest}
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
