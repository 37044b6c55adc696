"""gather_from = "changed" on the CPU: who changed in the previous iteration (the seed before the
first), kept as a bitmap the gathers index plus the ids that set it, so that clearing it costs
O(changed); ``prev_ids`` None means every vertex counts as changed (an unseeded start)."""
import numpy as np

from ...program.views import VertexView, as_length


def allocate(ex, memory, ledger):
    ex.prev_mask = ex.prev_ids = None
    if ex.spec.gather_from == "changed":
        ledger.take("device", "changed", memory.static["changed"])
        ex.prev_mask = np.zeros(ex.n, dtype=bool)


def record(ex, ids):
    """``ids`` (None: every vertex) changed in the iteration that ended."""
    if ex.prev_mask is None:
        return
    if ex.prev_ids is not None:
        ex.prev_mask[ex.prev_ids] = False
    if ids is not None:
        ex.prev_mask[ids] = True
    ex.prev_ids = ids


def publish(ex, plan, parts):
    """After the units: the changed ids the units' applies found (a push plan: its apply's
    changed set) become the previous set. An activation plan after a push keeps the push's."""
    if ex.prev_mask is None or plan.seed or plan.activation:
        return
    if plan.direction == "push":
        record(ex, ex.changed_ids)
    else:
        record(ex, np.concatenate(parts) if len(parts) > 1 else
               parts[0] if parts else np.zeros(0, dtype=np.int64))


def hoist(ex):
    """(hoisted messages, whether they are the changed sources' only): gather_map once per
    vertex, or over in-edges of a gather_from "changed" program once per changed vertex."""
    if ex.prev_ids is not None and ex.kern.dirs == ("in",):
        return messages(ex, ex.prev_ids), True
    everyone = VertexView(ex.cur, ex.builtins, slice(0, ex.n), ex.n, lanes=ex.L)
    return as_length(ex.program.gather_map(everyone, None, None), ex.n, ex.spec.gather_dtype,
                     ex.L), False


def messages(ex, ids):
    """Hoisted messages over in-edges: a source that did not change sends the identity, so only
    the changed sources' messages are computed (O(changed) and a fill) and every gather reads
    them as usual."""
    spec = ex.spec
    out = np.full(ex.n, spec.gather_reduce.identity(spec.gather_dtype), dtype=spec.gather_dtype)
    if len(ids):
        view = VertexView(ex.cur, ex.builtins, ids, len(ids))
        out[ids] = as_length(ex.program.gather_map(view, None, None), len(ids), spec.gather_dtype)
    return out
