"""The CUDA executor's class-level facts: footprint, memory options, capabilities and policies
(what the engine asks before an executor exists; no CUDA call but ``default_budget``'s and
``release_shared``'s)."""

import numpy as np

from ...engine.contract import (BatchResident, Batching, Capabilities, Feature, Footprint, Forced,
                                Policies, PushFacts, gather_directions, is_dense, needed_arrays,
                                stored_names)
from . import loadbalance, transfer
from .buffers import ALIGN, DEFAULT_MARGIN, align, static_buffers
from .compile import module_source
from .device import ensure_context, release_context
from .movement import release_shared
from .options import CudaOptions
from .pushes import PUSH_TABLES
from .skeletons import tab_width

#: default slot target of dense programs (or two of the largest shards, when larger): consecutive
#: streamed shards travel as one copy (each copy step costs a fixed gap of event hops and host
#: work; grouping brings a dense PageRank closer to the link's speed:
#: docs/BENCHMARKS.md, "Measured constants");
#: frontier programs keep one shard per slot (0)
DENSE_SLOT_BYTES = 64 << 20
#: the direction switch of the GPU (PushFacts.threshold, the default of the engine's rule on this
#: executor): push while the edges a push from the changed set walks are at most this
#: fraction of all edges, i.e. whenever the program may push. Ligra's 1/20 is a CPU figure. On
#: the GPU a BFS push loses little per iteration to the pull it replaces in GPU memory, a switch
#: back to pull costs an activation pass, and a streamed push moves half of pull's bytes (the CSR
#: only), so pushing throughout is fastest for BFS and SSSP. CC, which walks both directions and
#: so moves everything either way, is slower pushed: under "auto" it pulls with per-unit
#: publishing (Gauss-Seidel, engine/direction.py) in fewer iterations
#: (docs/BENCHMARKS.md, "Measured constants").
PUSH_THRESHOLD = 1.0
#: Capabilities.queue_fraction: the compacted queue costs two launches and gained nothing over
#: the bitmap kernel (a thread per vertex of an interval that mostly exits), nor for the sparse
#: levels alone (docs/BENCHMARKS.md, "Measured constants"):
#: bitmap unless the user asks for queue_fraction
QUEUE_FRACTION = 0.0
#: Capabilities.zerocopy_balance: the zero-copy kernels' warps read mapped host rows merged and
#: aligned in the TWC walks (zerocopy.py); the merge split's threads read edge ranges across rows.
#: PushFacts.balance: the push kernels walk the TWC way (push_kernels.PUSH_TWC) only
ZEROCOPY_BALANCE = PUSH_BALANCE = "twc"
#: PushFacts.merge_share on compressed stores: a push shard whose changed rows hold at least this
#: share of its edges, and which is not read in place, takes the edge-balanced walk
#: (push_kernels.PUSH_MERGE; engine/balance.py merge_pushes), whose warps decode
#: every id block once with coalesced reads where the walk by rows decodes a cursor per thread
#: (a warp per row in zero-copy units); plain stores keep the walk by rows for dense levels
PUSH_MERGE_SHARE = 0.25
#: PushFacts.merge_degree: a push shard whose rows average this many push edges or more takes
#: the edge-balanced walk (a degree-ordered store's first shards: a few blocks of long rows under
#: the walk by rows while the rest of the GPU idles; RMAT's random labels average 16)
PUSH_MERGE_DEGREE = 64
_SOURCES = {}   # (spec, id dtype, edge dtypes) -> KernelSource: footprint and setup translate once


def id_bits(store):
    """Bits of a whole id in ``store``'s compressed id blocks (:mod:`.blockids`), 0 when its ids
    are plain arrays."""
    if not getattr(store, "compressed", False):
        return 0
    from ...store.codec import id_bits as bits   # (the store package: not at the CLI's start-up)
    return bits(store.num_vertices)


def kernel_source(store, spec):
    bits = id_bits(store)
    key = (id(spec), str(store.id_dtype), tuple(sorted((k, str(v)) for k, v in store.edge_props.items())), bits)
    hit = _SOURCES.get(key)
    if hit is None or hit[0] is not spec:
        hit = _SOURCES[key] = (spec, module_source(spec, store.id_dtype, store.edge_props, id_bits=bits))
    return hit[1]


def _largest_region(store, spec):
    """Bytes of the largest shard's arrays ``spec`` reads (0 without a store)."""
    if store is None or not store.num_shards:
        return 0
    names = stored_names(store, needed_arrays(spec))   # the kernels decode compressed ids
    return max(sum(align(max(store.shard_info(i).dataset_nbytes[n], 1)) for n in names)
               for i in range(store.num_shards))


class CudaFacts:
    """Mixed into CudaExecutor (options, footprint, memory options, capabilities, policies)."""

    Options = CudaOptions

    @classmethod
    def _buffers(cls, store, spec, dense, push=False, lanes=None):
        """(kernel source, static and scratch bytes); ``push``: the session may plan push
        iterations, so the push buffers are held too (when the kernels can push the program);
        ``lanes``: instances run at once (Session.run_lanes, lane_runs.LaneRuns)."""
        ks = kernel_source(store, spec)
        n, S = int(store.num_vertices), int(store.num_shards)
        sizes = np.diff(np.asarray(store.intervals, dtype=np.int64))
        dirs = gather_directions(spec)
        estate = dict(spec.edge_state)
        permuted = [p for p in ks.gather_props if p in estate] if "in" in dirs else []
        max_in = max((store.shard_info(i).num_in_edges for i in range(S)), default=0)
        # multi-shard gather tables: a row per resident shard and direction (dense plans only);
        # push plans' tables (a unit of resident shards, one of shards read in place) room for
        # PUSH_TABLES of every shard per walk direction (Gathers.table starts over when full)
        width = tab_width(len(ks.gather_props), ks.id_bits > 0)
        tables = 8 * width * S * len(dirs) if dense else 0
        if push and ks.push_dirs:
            tables += 8 * width * S * len(ks.push_dirs) * PUSH_TABLES
        degrees = [d for d in ("in_degree", "out_degree") if d in spec.vertex_reads]
        static = static_buffers(n, dict(spec.vertex_fields), degrees, ks.msg_dtype.itemsize,
                                int(sizes.max()) if S else 0, S, ks.hoisted,
                                [dt.itemsize for dt in ks.aggregates.values()],
                                acc_vertices=n if dense else None, edge_state=estate,
                                num_edges=int(store.num_edges), permuted=permuted, max_in=max_in,
                                push_id_itemsize=np.dtype(store.id_dtype).itemsize if push and ks.push_dirs else 0,
                                changed_sets=spec.gather_from == "changed", lanes=lanes,
                                args_itemsize=ks.translated.args_dtype.itemsize)
        static = {k: align(max(v, 1)) for k, v in static.items()}
        scratch = {"shard tables": align(tables)} if tables else {}
        return ks, static, scratch

    @classmethod
    def footprint(cls, spec, dense, setup):
        store = setup.store
        _, static, scratch = cls._buffers(store, spec, dense, setup.push, setup.lanes)
        host_state = int(store.num_vertices) * sum(dt.itemsize for dt in spec.vertex_fields.values())
        # the kernels decode a compressed store's id blocks: its regions hold the parts
        return Footprint(static=static, scratch=scratch, alignment=ALIGN, host_state=host_state,
                         codec_parts=True)

    @classmethod
    def default_budget(cls, setup):
        cuda = ensure_context()
        try:
            free, _ = cuda.mem_get_info()
        finally:
            release_context()
        return max(free - DEFAULT_MARGIN, 0)

    @classmethod
    def memory_options(cls, spec, setup):
        options = setup.options
        slot_bytes = options.slot_bytes
        if slot_bytes is None:
            slot_bytes = 0
            if is_dense(spec):
                # at least two of the largest shards per copy, whatever the shard count
                slot_bytes = max(DENSE_SLOT_BYTES, 2 * _largest_region(setup.store, spec) + ALIGN)
        slots = options.slots
        if slots is None:
            # grouped copies keep two slots busy; one-shard units take a third so that a copy can
            # start while two shards' kernels are still queued
            slots = 2 if slot_bytes else 3
        return {"slots": int(slots), "slot_bytes": int(slot_bytes), "staging": 3}

    @classmethod
    def capabilities(cls, setup):
        options = setup.options
        # kernels are generated hoisted or not: every plan with a gather hoists (no
        # ADAPTIVE_HOIST). Push plans run for programs the kernels can push (codegen.push_walks:
        # a frontier program whose monoid has an atomic, no edge state); the switch threshold
        # of the GPU is its own (PUSH_THRESHOLD). Resident shards share a unit in dense plans
        # (one multi-shard gather) and in push plans (one push launch over a table of them), as
        # do push units read in place; the accumulator and changed flags hold one interval, so
        # a pull unit of several shards runs its phases shard by shard.
        # gather_from "changed": the gathers read the previous iteration's changed bitmap
        # (codegen.from_changed), which the applies write as they do for push plans
        # dense plans copy the next plan's first unit ahead (movement.Mover.copy_ahead)
        features = ({Feature.GATHER_CHANGED} | ({Feature.PUBLISH_UNIT} if options.publish_unit else set())
                    | ({Feature.COPY_AHEAD} if not setup.lanes else set()))
        packed = setup.store is not None and id_bits(setup.store) > 0
        return Capabilities(
            "cuda", workers=1,
            batching=Batching(BatchResident.DENSE_PUSH, copies=True, shard_phases=True),
            features=features,
            push=PushFacts(threshold=PUSH_THRESHOLD, balance=PUSH_BALANCE,
                           hub_edges=int(options.push_hub_edges), memory=options.push_memory,
                           merge_share=PUSH_MERGE_SHARE if options.push_merge and packed else 0.0,
                           merge_degree=PUSH_MERGE_DEGREE if options.push_merge else 0.0),
            # (lanes: no compacted units, whose rows follow one frontier)
            transfers=transfer.transfers(options) - ({"compact"} if setup.lanes else set()),
            frontier_formats=("bitmap", "queue"),
            queue_fraction=QUEUE_FRACTION, zerocopy_balance=ZEROCOPY_BALANCE,
            forced=Forced(balance=options.balance, transfer=options.transfer))

    @classmethod
    def policies(cls, setup):
        """Twc / merge per shard (:func:`.loadbalance.cuda_policy`, with the merge split where the
        generated kernels have it; a compressed store's dense shards take it), and the link
        measured once per process when the cost model chooses transfers."""
        store = setup.store
        packed = store is not None and id_bits(store) > 0
        merges = {}   # id(spec) -> (spec, merge_ok): the planner asks per unit and iteration

        def balance(facts, actives, spec, caps):
            hit = merges.get(id(spec))
            if hit is None or hit[0] is not spec:
                ok = loadbalance.merge_available(spec) if store is None else kernel_source(store, spec).merge_ok
                hit = merges[id(spec)] = (spec, ok)
            return loadbalance.cuda_policy(facts, actives, spec, caps, merge_ok=hit[1], compressed=packed)
        return Policies(balance=balance, calibration=transfer.calibration(setup.options, compressed=packed))

    @classmethod
    def release_shared(cls, shared):
        if not shared:
            return
        ensure_context()
        try:
            release_shared(shared, lambda mem: mem.free())
        finally:
            release_context()
