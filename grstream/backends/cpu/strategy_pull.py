"""Pull plans on the CPU: the active vertices gather over their own edges, apply, then the
changed vertices' edges give the next frontier (and scatter writes edge state).

An activation plan (``activation == "changed"``, after a push) and the seed plan run only the
activation, from the changed set and the seed. Asynchronous local rounds (plan.local_rounds)
rerun a unit's gather and apply inside it (grstream/backends/cpu/local.py).
"""
import time

import numpy as np

from . import local
from .pieces import unit_spans
from .strategy import Strategy
from ...program.views import VertexView, as_length


class Pull(Strategy):
    """Pull plans of single runs; each unit's accumulator, changed ids and written values are
    kept per unit (``ctx``) from gather to activate and scatter."""

    def begin(self, plan):
        super().begin(plan)
        self.ctx = {}
        # each unit's changed ids: the changed set a push sends from, the sources a
        # gather_from "changed" program reads
        self.changed_parts = []

    def done(self, unit):
        self.ctx.pop(unit, None)

    def gather(self, plan, unit, piece):
        t0 = time.perf_counter()
        ex = self.ex
        ctx = self.ctx.setdefault(unit, {})
        lo, hi, rows = ex.frontier.rows(unit)
        acc, edges = ex.kern.gather(piece, lo, hi, rows, unit.balance[0])
        if plan.dense:
            ex.acc_all[lo:hi] = acc
        ctx["acc"] = acc
        ex.tally.add(edges=edges)
        ex.tally.timed("gather", t0)

    def apply(self, plan, unit, piece):
        t0 = time.perf_counter()
        ex = self.ex
        if unit is None:   # every vertex (dense plans), in runs of at most a shard's vertices
            for lo, hi in ex.apply_chunks():
                self._apply(plan, None, None, slice(lo, hi), hi - lo, ex.acc_all[lo:hi], {})
        else:
            ctx = self.ctx.setdefault(unit, {})
            lo, hi, rows = ex.frontier.rows(unit)
            index = slice(lo, hi) if rows is None else rows
            count = (hi - lo) if rows is None else len(rows)
            acc = ctx.get("acc")
            if acc is None:
                dtype = ex.spec.gather_dtype
                acc = np.full(count if ex.L is None else (count, ex.L), dtype.type(0), dtype=dtype)
            self._apply(plan, unit, piece, index, count, acc, ctx)
        ex.tally.timed("apply", t0)

    def _apply(self, plan, unit, piece, index, count, acc, ctx):
        ex = self.ex
        v = VertexView(ex.cur, ex.builtins, index, count, writable=True, lanes=ex.L)
        changed = as_length(ex.program.apply(v, acc), count, np.bool_, ex.L)
        changed, written = self._keep(index, changed, v.assigned())
        for f, val in written.items():
            ex.nxt[f][index] = val
        nchanged = self._changed(plan, unit, piece, ctx, index, changed, written)
        self.applied.append((index, tuple(written)))
        ctx["written"] = written
        ex.tally.add(changed=nchanged)

    def _keep(self, index, changed, written):
        """(changed, written) of the vertices an apply may change (lanes mask theirs)."""
        return changed, written

    def _changed(self, plan, unit, piece, ctx, index, changed, written):
        """Record the apply's changed vertices in ``ctx``; returns how many changed."""
        ch = np.flatnonzero(changed)
        ctx["changed"] = ch + index.start if isinstance(index, slice) else index[ch]
        if plan.local_rounds and unit is not None:   # asynchronous rounds (local.py)
            ctx["changed"] = local.rounds(self.ex, plan, unit, piece, ctx["changed"], written)
        if self.ex.push is not None or self.ex.sources.mask is not None:
            with self.ex.tally.lock:
                self.changed_parts.append(ctx["changed"])
        return len(ctx["changed"])

    def activate(self, plan, unit, piece):
        t0 = time.perf_counter()
        ex, frontier = self.ex, self.ex.frontier
        if plan.seed:
            changed = frontier.slice(frontier.seed, unit)
        elif plan.activation == "changed":   # after a push: the pull frontier of its changed set
            changed = frontier.slice(frontier.changed, unit)
        else:
            changed = self.ctx[unit]["changed"]
        if len(changed):
            for targets in ex.kern.activate_chunks(piece, changed, unit_spans(ex.intervals, unit.shards)):
                frontier.add(targets, plan.next_queue)
        ex.tally.timed("activate", t0)

    def scatter(self, plan, unit, piece):
        t0 = time.perf_counter()
        ctx = self.ctx[unit]
        if len(ctx["changed"]):
            out = self.ex.kern.scatter(piece, ctx["changed"], ctx["written"])
            if out is not None:
                self.edge_writes.append(out)
        self.ex.tally.timed("scatter", t0)

    def publish(self, plan):
        ex, frontier = self.ex, self.ex.frontier
        # the changed set, where a next plan reads it (an activation plan keeps the push's)
        if (not plan.seed and not plan.activation
                and (ex.push is not None or ex.sources.mask is not None)):
            parts = self.changed_parts
            self.changed_ids = np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
            ex.sources.record(self.changed_ids)
        if not plan.frontier:
            frontier.ids = None
            return
        frontier.ids = frontier.merge(plan.next_queue)
        if ex.push is not None and self.changed_ids is not None:
            frontier.changed = self.changed_ids
