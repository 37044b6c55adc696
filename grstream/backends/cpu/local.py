"""Asynchronous local rounds on the CPU (IterationPlan.local_rounds, Subway-async / Seraph): while
a unit's data is loaded, the unit's new values become visible at once and the unit's vertices
that a changed vertex of the unit activates gather and apply again, reading them, until none
changes, the rounds run out or those vertices exceed the plan's ``local_fraction`` of the unit's
span. Only for programs whose result does not depend on when updates are seen
(grstream/engine/rounds.py allows_local_rounds, which with the fraction's default is the
planner's decision); other units may read the new values early too, which such programs
allow."""
import numpy as np

from ...program.views import VertexView, as_length
from .pieces import unit_spans


def rounds(ex, plan, unit, piece, changed, written):
    """Every vertex changed in any round (sorted ids); the rounds run are counted in the stats."""
    # the unit's own vertices only: a run's shards between the unit's may not be loaded
    spans = unit_spans(ex.intervals, unit.shards)
    lo, hi = spans[0][0], spans[-1][1]
    inside = None if len(spans) == 1 else np.asarray(spans, dtype=np.int64)
    for f in written:       # publish the unit's first apply now
        ex.cur[f][changed] = ex.nxt[f][changed]
    every, rows, count = [changed], changed, 0
    # the plan's limit on the in-unit frontier (grstream/engine/rounds.py; 0: none)
    limit = (hi - lo) * plan.local_fraction if plan.local_fraction > 0 else float("inf")
    while count < plan.local_rounds and 0 < len(rows) <= limit:
        targets = ex.kern.activate(piece, rows, spans)
        rows = targets[(targets >= lo) & (targets < hi)]
        if inside is not None:
            k = np.searchsorted(inside[:, 0], rows, side="right") - 1
            rows = rows[rows < inside[k, 1]]
        rows = np.unique(rows)
        if not len(rows) or len(rows) > limit:
            break       # the plan's limit, on the vertices the round would gather
        count += 1
        # messages from the values just written, not the ones hoisted before the units
        acc, edges = ex.kern.gather(piece, lo, hi, rows, "select", fresh=True)
        v = VertexView(ex.cur, ex.builtins, rows, len(rows), writable=True)
        ch = as_length(ex.program.apply(v, acc), len(rows), np.bool_)
        for f, val in v.assigned().items():
            ex.nxt[f][rows] = val
            ex.cur[f][rows] = val
        ex.tally.add(edges=edges)
        rows = rows[ch]
        every.append(rows)
    if count == 0:
        return changed
    ex.tally.add(local_rounds=count)
    return np.unique(np.concatenate(every))
