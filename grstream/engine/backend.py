"""The bulk-synchronous semantics every executor implements, and the per-iteration statistics.

The engine (engine/session.py, engine/planner.py) owns the schedule and the program's host-side
hooks; executors (engine/executor.py) carry out its plans. Semantics, per iteration ``it``
(program.iteration == it):

1. The *active* set A (vertices) was fixed by the previous iteration (or by ``start``).
   A shard whose interval holds no active vertex is skipped: none of its data is read or moved.
2. For each processed shard, for every active vertex v of its interval:
   ``acc[v]`` = gather_reduce over v's edges (per ``spec.gather_edges``: "in" = in-edges from the
   shard's CSC, "out" = out-edges from its CSR, "all" = both) of ``gather_map(src, dst, edge)``,
   reading the *current* values (``cur``) of every vertex; identity when v has no such edge.
   Programs without gather_map skip this (and never read those edges).
3. ``changed[v] = apply(v, acc[v])``; apply reads ``cur`` and writes ``nxt``.
4. Activation (fused with apply): the next active set is every vertex that gathers from a changed
   vertex: out-neighbours of changed vertices for gather_edges "in", in-neighbours for "out",
   both for "all" (and, for programs without gather, out-neighbours). With ``activate="all"``
   every vertex is active every iteration and activation is not computed.
   Scatter (fused with activation) runs over the out-edges of changed vertices; it reads the
   source's new state, the destination's ``cur`` state and the edge, and writes mutable edge
   state. Its writes become visible after the iteration (gather never sees a half-done scatter).
5. After all shards: ``cur[v] = nxt[v]`` for every vertex applied this iteration, scatter's
   edge writes land; then the program's aggregates are reduced over all vertices' ``cur``.
"""
from dataclasses import asdict, dataclass, field
from typing import Dict


from ..errors import UsageError


@dataclass
class IterationStats:
    """What one iteration did; every backend fills the fields it can (others stay 0)."""

    iteration: int = 0
    active_vertices: int = 0       # |A| at the start of the iteration
    active_edges: int = 0          # edges gathered over for active vertices
    changed_vertices: int = 0
    next_active_vertices: int = 0
    shards_processed: int = 0
    shards_skipped: int = 0
    bytes_read: int = 0            # bytes of shard data read from the store this iteration
    bytes_h2d: int = 0             # GPU: bytes copied host -> device
    bytes_d2h: int = 0             # GPU: bytes copied device -> host
    time_total: float = 0.0        # seconds, wall clock
    time_read: float = 0.0         # store reads (CPU: time the compute waited for read-ahead)
    time_gather: float = 0.0
    time_apply: float = 0.0
    time_activate: float = 0.0
    time_scatter: float = 0.0
    time_copy: float = 0.0         # GPU: copy engine busy time
    time_kernel: float = 0.0       # GPU: kernel busy time
    copy_hidden: float = 0.0       # GPU: copy time overlapped with compute
    # per transfer mode of the streamed units ("copy", "compact", "zerocopy"): bytes over the host
    # link and seconds (copy / compact: copy-engine busy time of those units; zerocopy: kernel busy
    # time of the units reading mapped host memory); time_pack: host seconds packing compacted shards
    transfer_bytes: Dict[str, int] = field(default_factory=dict)
    transfer_seconds: Dict[str, float] = field(default_factory=dict)
    time_pack: float = 0.0
    local_rounds: int = 0          # asynchronous rounds run inside units (IterationPlan.local_rounds)
    # shard bytes and shards by the memory tier they were served from (IterationPlan.tiers):
    # "resident" (executor memory), "pinned" (the pinned host cache), "store" (read from the file)
    tier_bytes: Dict[str, int] = field(default_factory=dict)
    tier_shards: Dict[str, int] = field(default_factory=dict)
    bytes_exchanged: int = 0       # ranks: bytes this rank received from the exchange
    time_exchange: float = 0.0     # ranks: seconds in the exchange's collectives
    aggregates: Dict[str, float] = field(default_factory=dict)
    plan: Dict[str, object] = field(default_factory=dict)   # IterationPlan.summary() of the run

    def to_dict(self):
        return asdict(self)


def count_tiers(stats, plan):
    """Add ``plan.tiers`` (what an executed plan served from each memory tier) to ``stats``."""
    for tier, shards, nbytes in plan.tiers:
        stats.tier_shards[tier] = stats.tier_shards.get(tier, 0) + int(shards)
        stats.tier_bytes[tier] = stats.tier_bytes.get(tier, 0) + int(nbytes)


def check_edge_props(store, spec):
    """UsageError unless ``store`` has every edge property ``spec``'s functions read."""
    missing = spec.edge_reads - set(store.edge_props)
    if missing:
        raise UsageError(f"{spec.name} reads edge propert{'y' if len(missing) == 1 else 'ies'} "
                         f"{', '.join(sorted(missing))} but the store has "
                         f"{', '.join(sorted(store.edge_props)) or 'no edge properties'} "
                         f"(build it with --weighted)")

