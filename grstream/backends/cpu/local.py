"""Asynchronous local rounds on the CPU (IterationPlan.local_rounds, Subway-async / Seraph): while
a unit's data is loaded, the unit's new values become visible at once and the unit's vertices
that a changed vertex of the unit activates gather and apply again, reading them, until none
changes or the rounds run out. Only for programs whose result does not depend on when updates
are seen (grstream/engine/planner.py allows_local_rounds); other units may read the new values
early too, which such programs allow."""
import numpy as np

from ...program.views import VertexView, as_length


def rounds(ex, plan, unit, piece, changed, written):
    """Every vertex changed in any round (sorted ids) and the rounds run."""
    lo, hi, _ = ex._rows(unit)
    for f in written:       # publish the unit's first apply now
        ex.cur[f][changed] = ex.nxt[f][changed]
    every, rows, count = [changed], changed, 0
    while count < plan.local_rounds and len(rows):
        targets = ex.kern.activate(piece, rows)
        rows = np.unique(targets[(targets >= lo) & (targets < hi)])
        if not len(rows):
            break
        count += 1
        # messages from the values just written, not the ones hoisted before the units
        acc, edges = ex.kern.gather(piece, lo, hi, rows, "select", fresh=True)
        v = VertexView(ex.cur, ex.builtins, rows, len(rows), writable=True)
        ch = as_length(ex.program.apply(v, acc), len(rows), np.bool_)
        for f, val in v.assigned().items():
            ex.nxt[f][rows] = val
            ex.cur[f][rows] = val
        with ex._lock:
            ex._edges += edges
        rows = rows[ch]
        every.append(rows)
    if count == 0:
        return changed, 0
    return np.unique(np.concatenate(every)), count
