"""A rank's executor: the backend's executor running only the rank's own shards, with the
exchange (grstream/distributed/exchange.py) as the last step of each plan's ``publish``.

It uses the backend through the executor contract only (grstream/engine/executor.py, "ranks"):
``setup.span`` makes an apply over every vertex run over the rank's vertices; after the
backend's publish, :meth:`~grstream.engine.executor.Executor.touched` says what the plan wrote
and found, the exchange moves it, and :meth:`~grstream.engine.executor.Executor.adopt` hands the
world's next frontier and changed set back.

The rank's planner plans its own shards only (Ranks.local zeroes the others' counts), so every
unit is the rank's. A push plan's apply waits for the exchange: the messages the rank's units
sent (to any vertex) are combined with the other ranks' at the owners
(:meth:`Exchange.combine`), and each rank applies its own receivers. Then the owned values the
applies wrote (and the edge state scatters wrote) are exchanged, the next frontier becomes the
union of every rank's, and so does the changed set where a next plan reads it (push senders,
``gather_from = "changed"`` sources). The read back reports the global counts (so every rank
takes the same decisions: direction, convergence, frontier size) while its per-shard counts
stay the rank's own. Aggregates are reduced by the backend over the whole replicated state, so
they equal one process's, bit for bit. Push plans run synchronously under ranks (an
asynchronous push applies receivers as units go, which a receiver another rank also sends to
cannot wait for).
"""
from dataclasses import replace

import numpy as np


class RankMixin:
    """What a rank's executor changes of any backend's (CPU ranks' :class:`RankExecutor`, GPU
    ranks' gpu_rank.CudaRankExecutor): its span, synchronous push plans, and a push plan's
    apply deferred to ``publish``."""

    ranks = None   # the Ranks this class serves (set on the generated subclass)

    @classmethod
    def make_setup(cls, store=None, options=None, **facts):
        return super().make_setup(store, options, span=cls.ranks.span, **facts)

    @classmethod
    def capabilities(cls, setup):
        caps = super().capabilities(setup)
        if caps.push is not None and caps.push.asynchronous:
            caps = replace(caps, push=replace(caps.push, asynchronous=False))
        return caps

    def begin(self, plan):
        super().begin(plan)
        self._moved, self._exchange_s = self.ranks.exchange.bytes, self.ranks.exchange.seconds

    def restore_run(self, saved):
        """The backend's: a checkpoint's fields are whole on every rank."""
        self.ranks.state_span = None
        super().restore_run(saved)

    def count_exchange(self, stats):
        """Add the exchange's bytes and seconds since ``begin`` to the iteration's ``stats``."""
        ex = self.ranks.exchange
        stats.bytes_exchanged += ex.bytes - self._moved
        stats.time_exchange += ex.seconds - self._exchange_s

    def apply(self, plan, unit, piece):
        if plan.direction == "push" and unit is None:
            return   # a push plan's apply: after its messages reach their owners (publish)
        super().apply(plan, unit, piece)

    @staticmethod
    def pushed(plan, spec):
        """A push plan as a rank publishes it: a rank without units of its own may have
        received, so its receivers' values publish too."""
        if plan.publish == "none":
            plan = replace(plan, publish="copy", publish_fields=tuple(sorted(spec.analysis.apply_writes)))
        return plan


class RankExecutor(RankMixin):
    """Mixin placed before the backend's executor class (Ranks.executor_class)."""

    def load_state(self, state, edge_state):
        """The backend's; where init ran over this rank's vertices only (``Ranks.state_span``),
        the other ranks' entries first come from their owners (a dense exchange, in place)."""
        if self.ranks.state_span is not None:
            self.ranks.exchange.state(state, None, np.zeros(self.ranks.size, dtype=np.int64), dense=True)
        super().load_state(state, edge_state)

    def publish(self, plan):
        ex, spec, n = self.ranks.exchange, self.spec, int(self.ranks.bounds[-1])
        push = plan.direction == "push"
        if push:   # (every rank, whether its units sent or not: it may receive)
            receivers, values = self.push_messages()
            self.apply_messages(plan, *ex.combine(receivers, values, spec.gather_reduce))
            plan = self.pushed(plan, spec)
        super().publish(plan)
        t = self.touched(plan)
        each = ex.counts([t.changed_count, t.edges_walked, len(t.applied),
                          0 if t.frontier is None else len(t.frontier),
                          0 if t.changed is None else len(t.changed),
                          0 if t.edges is None else len(t.edges),
                          0 if t.lanes is None else len(t.lanes)])   # (ranks, 7)
        self._global = int(each[:, 0].sum()), int(each[:, 1].sum())
        # what every rank decides alike, from the program and the plan's global facts (not from
        # its own units: a rank without units still takes part): the fields apply writes,
        # dense for topology-driven programs (a swap leaves other ranks' slices of cur stale)
        ran = not plan.seed and not plan.activation
        written = sorted(spec.analysis.apply_writes) if ran else ()
        if written:
            arrays = self.vertex_arrays()
            ex.state({f: arrays[f] for f in written}, t.applied, each[:, 2],
                     dense=spec.activate == "all")
        if ran and spec.edge_state:
            ex.state(self.edge_arrays(), t.edges, each[:, 5], bounds=self.ranks.edge_bounds)
        changed = None if t.changed is None else ex.union(t.changed, n, each[:, 4])
        if push:   # a push plan's frontier is its changed set
            self.adopt(frontier=changed, changed=changed)
        elif t.lanes is not None:   # lanes: every lane's frontier, which gives the union's
            self.adopt(changed=changed, lanes=ex.union(t.lanes, t.lane_space, each[:, 6]))
        else:
            frontier = None if t.frontier is None else ex.union(t.frontier, n, each[:, 3])
            self.adopt(frontier=frontier, changed=changed)

    def set_lanes(self, alive):
        return self.ranks.local(super().set_lanes(alive))

    def read_back(self, plan, stats):
        rb = super().read_back(plan, stats)
        rb.changed_vertices, rb.active_edges = self._global
        rb.total_active = int(rb.shard_active.sum())
        rb.shard_active = self.ranks.local(rb.shard_active)
        if rb.shard_changed is not None:
            rb.shard_changed = self.ranks.local(rb.shard_changed)
        self.count_exchange(stats)
        return rb
