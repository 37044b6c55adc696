"""A rank's executor: the backend's executor running only the rank's own shards, with the
exchange (grstream/distributed/exchange.py) as the last step of each plan's ``publish``.

The rank's planner plans its own shards only (Ranks.local zeroes the others' counts), so every
unit is the rank's; a dense plan's apply over "every vertex" runs over the rank's vertices. After
the backend's publish the owned slices of the fields apply wrote are exchanged, the next
frontier becomes the union of every rank's, and the read back reports the global counts (so
every rank takes the same decisions: convergence, frontier size) while its per-shard counts
stay the rank's own. Aggregates are reduced by the backend over the whole replicated state,
so they equal one process's, bit for bit.
"""
import numpy as np


class RankExecutor:
    """Mixin placed before the backend's executor class (Ranks.executor_class)."""

    ranks = None   # the Ranks this class serves (set on the generated subclass)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        lo, hi = self.ranks.span
        own = [(max(a, lo), min(b, hi)) for a, b in super().vertex_chunks() if min(b, hi) > max(a, lo)]
        self._owned_chunks, self._apply_all = own, False

    def vertex_chunks(self):
        return self._owned_chunks if self._apply_all else super().vertex_chunks()

    def begin(self, plan):
        super().begin(plan)
        self._moved, self._exchange_s = self.ranks.exchange.bytes, self.ranks.exchange.seconds

    def apply(self, plan, unit, piece):
        if unit is not None:
            return super().apply(plan, unit, piece)
        self._apply_all = True   # a dense plan's apply: the rank's own vertices
        try:
            super().apply(plan, unit, piece)
        finally:
            self._apply_all = False

    def _applied_ids(self):
        parts = [np.arange(i.start, i.stop, dtype=np.int64) if isinstance(i, slice)
                 else np.asarray(i, dtype=np.int64) for i, _ in self.mode.applied]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)

    def publish(self, plan):
        applied = self._applied_ids()
        super().publish(plan)
        ex, frontier = self.ranks.exchange, self.frontier
        ids = frontier.ids if plan.frontier else None
        counts = ex.counts([self.tally.changed, self.tally.edges, len(applied),
                            -1 if ids is None else len(ids)]).sum(axis=0)
        self._global = int(counts[0]), int(counts[1])
        # what every rank decides alike: the fields apply writes (a rank without units plans
        # none), dense after a swap (it leaves other ranks' slices of cur stale)
        written = () if plan.seed or plan.activation else sorted(self.spec.analysis.apply_writes)
        if written:
            dense = self.spec.activate == "all"
            ex.state({f: self.cur[f] for f in written}, applied, self.n if dense else int(counts[2]))
        if ids is not None:
            frontier.ids = ex.union(ids, self.n, int(counts[3]))

    def read_back(self, plan, stats):
        rb = super().read_back(plan, stats)
        rb.changed_vertices, rb.active_edges = self._global
        rb.total_active = int(rb.shard_active.sum())
        rb.shard_active = self.ranks.local(rb.shard_active)
        ex = self.ranks.exchange
        stats.bytes_exchanged += ex.bytes - self._moved
        stats.time_exchange += ex.seconds - self._exchange_s
        return rb
