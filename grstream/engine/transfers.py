"""The planner's transfer policy: which streamed units are copied, compacted or zero-copied.

:class:`TransferPolicy` is what :class:`~grstream.engine.planner.Planner` asks for every plan
(``Planner._modes``) and tells after every iteration (``Planner.observe``). Which units may take
another mode than "copy" (the rules; every one of them is a fact, not a preference):

- the executor implements the mode (``Capabilities.transfers``);
- the unit is one streamed shard (grouped copies move one pinned range and stay copies);
- the program has no mutable edge state (its edges carry positions a compacted shard loses, and
  its gathers permute state through ``in/eid``);
- "zerocopy": the shard lies in the pinned host cache (kernels read it there); push units are
  estimated on the arrays they walk with the changed set's edges (the planner then gives a
  zero-copied pull unit the executor's zero-copy load balance, :func:`.balance.as_run`);
- "compact": a pull unit (the active vertices are the ones whose rows are packed; a push unit walks
  the changed set, known only on the device) whose shard lies in the pinned cache and is packed
  into a staging buffer (the model has one), or whose executor has no pinned memory (the CPU packs
  out of its slot); a compressed store's id blocks, where the executor reads them, are packed by
  decoding the active rows' blocks and encoding them again (:mod:`.compaction`).

Among the allowed modes a forced one (``Capabilities.forced.transfer``) is taken. Else a push unit
whose shard the executor walks edge-balanced because its walk is dense (:func:`.balance.merge_pushes`
``DENSE_PUSH``: a grid over the shard's edges, each id read once, coalesced, which a copied shard
takes and a zero-copied one does not) is copied: read in place, the same changed rows are walked
row by row over the link, and their compressed rows fetch whole id blocks, more bytes than the
changed rows' edges the estimate counts. Else the cost model (:mod:`.costs`) chooses. Push units
are estimated on the figures the executor measured at the start (the executor class's
``Policies.calibration``), never on refined ones: one level's walk (by rows, edge-balanced, hubs)
says little of the next level's, and figures learnt on earlier levels and runs of the session made
the same level's choice change from run to run. Pull units are estimated on those figures refined
by each iteration's timings, and the degree skew of the
frontier (gathered edges per active vertex over the graph's mean degree): the one measured at
the same iteration of the previous run of the session (runs of one program repeat the shape of
their frontiers: BFS's first frontier holds a hub's neighbours, hubs themselves), else the last
iteration's, else 1.
After an iteration the zero-copy prediction is made again with that iteration's own skew before
it is compared with the measurement, so that the efficiency learnt is the link's, not the error
of the edge estimate.
"""
from dataclasses import replace

from . import costs as cm
from .balance import DENSE_PUSH
from .capabilities import BatchResident
from .schedule import push_arrays, select


class TransferPolicy:
    """``calibration``: the executor class's (``Policies.calibration``), or None."""

    def __init__(self, spec, memory, caps, facts=(), calibration=None):
        self.caps, self.memory, self.calibration = caps, memory, calibration
        offered = caps.transfers & {"compact", "zerocopy"}
        self.offered = () if spec.edge_state else tuple(m for m in cm.MODES if m in offered)
        self.forced = caps.forced.transfer
        self.pinned = frozenset(memory.pinned)
        self.shapes = cm.shard_shapes(memory) if self.offered else ()
        # a push unit moves (copy) or reads (zerocopy) only its walk directions' arrays
        pushed = select(memory.names, push_arrays(spec))
        self.push_shapes = (cm.shard_shapes(memory, names=pushed) if self.offered and pushed
                            else self.shapes)
        self.base = self.costs = None
        self.predicted = {}     # iteration -> [(mode, shape, active)] of its plan's streamed units
        # mean gathered edges per vertex (facts: the planner's ShardFacts), for the skew
        vertices = sum(f.vertices for f in facts)
        self.mean_degree = sum(e for f in facts for _, e in f.edges) / vertices if vertices else 0.0
        self.skew = 1.0
        self.history, self.current = {}, {}   # iteration -> measured skew: last run, this run

    def start(self):
        """A run starts: its first plan takes the skew of the last run's first iteration."""
        if self.current:
            self.history, self.current = self.current, {}
        self.skew = self.history.get(1, 1.0)

    def _costs(self):
        if self.costs is None:
            cal = self.calibration
            self.base = self.costs = (cal() if cal is not None else None) or cm.LinkCosts()
        return self.costs

    def allowed(self, unit):
        """The modes ``unit`` may take (always "copy" first)."""
        if unit.transfer != "copy" or len(unit.shards) != 1 or not self.offered:
            return ("copy",)
        i = unit.shards[0]
        cached = i in self.pinned
        out = ["copy"]
        if "compact" in self.offered and unit.direction == "pull" and (
                (cached and self.memory.staging) or not self.memory.pinned_bytes):
            out.append("compact")
        if "zerocopy" in self.offered and cached:
            out.append("zerocopy")
        return tuple(out)

    def modes(self, iteration, units, counts, edges=None, seed=False, merged=None):
        """``units`` with each streamed unit's transfer (and the bytes it moves) chosen;
        ``edges``: per shard, the edges a push unit walks from its ``counts`` changed vertices
        (push units are estimated on their walk directions' arrays with that edge fraction,
        not on the pull frontier's skew, with the calibrated figures); ``merged``: shard -> why
        a push walks it edge-balanced (:func:`.balance.merge_pushes`; a dense walk's shard is
        copied). ``seed``: the seeding plan's units, which are not compacted (the packer takes
        its rows from the frontier of the previous iteration)."""
        if not self.offered:
            return units
        merged = merged or {}
        out, chosen = [], []
        # the executor runs a push plan's zero-copied units as one launch (grouping.py)
        tabled = self.caps.batching.resident is BatchResident.DENSE_PUSH
        for u in units:
            if u.transfer != "copy" or len(u.shards) != 1:   # (allowed: "copy" alone)
                out.append(u)
                continue
            allowed = tuple(m for m in self.allowed(u) if not (seed and m == "compact"))
            if len(allowed) == 1:
                out.append(u)
                continue
            i = u.shards[0]
            fe = None
            costs = self._costs()
            if u.direction == "push":
                shape, costs = self.push_shapes[i], self.base
                if edges is not None:
                    fe = min(float(edges[i]) / shape.edges, 1.0) if shape.edges else 1.0
            else:
                shape = self.shapes[i]
            est = cm.estimate(shape, int(counts[i]), costs, self.skew, fe)
            if self.forced != "auto":
                mode = self.forced if self.forced in allowed else "copy"
            elif u.direction == "push" and merged.get(i) == DENSE_PUSH:
                mode = "copy"   # (its edge-balanced walk; module docstring)
            else:
                mode = cm.cheapest(est, allowed)
            b = est[mode][0]
            chosen.append((mode, shape, int(counts[i]), fe, tabled and u.direction == "push"))
            if mode != "copy":   # a zero-copy unit holds no slot
                u = replace(u, transfer=mode, nbytes=int(b), slot=u.slot if mode == "compact" else None)
            out.append(u)
        self.predicted = {iteration: chosen}
        return out

    def _predict(self, chosen, skew):
        """Per mode (bytes, seconds) of the chosen units, and the zero-copy seconds by bounding
        term (costs.zerocopy_bounds, and the launches: one for a push plan's zero-copied units
        where the executor batches them, else one per unit)."""
        out, bounds = {}, {}
        launches = 0
        for mode, shape, active, fe, batched in chosen:
            if mode == "zerocopy":
                terms = cm.zerocopy_terms(shape, active, self.costs, cm.edge_share(shape, active, skew, fe))
                b, s = int(terms["bytes"]), cm.zerocopy_seconds(terms)
                for k, v in cm.zerocopy_bounds(terms).items():
                    bounds[k] = bounds.get(k, 0.0) + v
                launches = 1 if batched else launches + 1
            else:
                b, s = cm.estimate(shape, active, self.costs, skew, fe)[mode]
            pb, ps = out.get(mode, (0, 0.0))
            out[mode] = (pb + b, ps + s)
        if launches:
            bounds["launch"] = launches * self.costs.zc_launch
            pb, ps = out["zerocopy"]
            out["zerocopy"] = (pb, ps + bounds["launch"])
        return out, bounds

    def observe(self, iteration, stats, direction="pull"):
        """Refine the cost figures from iteration ``iteration``'s measured statistics (the skew
        only from pull iterations: a push walks the changed set's edges, not the frontier's)."""
        chosen = self.predicted.pop(iteration, None)
        skew = self.skew
        if (direction == "pull" and self.mean_degree > 0 and stats.active_vertices > 0
                and stats.active_edges > 0):
            skew = self.current[iteration] = stats.active_edges / stats.active_vertices / self.mean_degree
        if chosen is not None and self.costs is not None:
            self._refine(chosen, skew, stats)
        # the next iteration's estimate: the same iteration of the last run, else this one's
        self.skew = self.history.get(iteration + 1, skew)

    def _refine(self, chosen, skew, stats):
        predicted, bounds = self._predict(chosen, skew)
        tb, ts = stats.transfer_bytes or {}, stats.transfer_seconds or {}
        measured = {m: (int(tb.get(m, 0)), float(ts.get(m, 0.0))) for m in cm.MODES}
        compact = measured["compact"][0]
        kernel = (stats.active_edges, stats.time_kernel) if not measured["zerocopy"][0] else (0, 0.0)
        self.costs = cm.refine(self.costs, predicted, measured, self.base,
                               pack=(compact, stats.time_pack), kernel=kernel, zc_bounds=bounds)
