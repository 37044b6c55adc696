"""gather_from = "changed" on the CPU: who changed in the previous iteration (the seed before the
first), kept as a bitmap the gathers index plus the ids that set it, so that clearing it costs
O(changed); ``ids`` None means every vertex counts as changed (an unseeded start)."""
import numpy as np

from ...program.views import VertexView, as_length


class ChangedSources:
    """The previous iteration's changed vertices of a gather_from "changed" program (``mask``
    None for other programs: nothing is kept)."""

    def __init__(self, spec, n, memory, ledger):
        self.mask = self.ids = None
        if spec.gather_from == "changed":
            ledger.take("device", "changed", memory.static["changed"])
            self.mask = np.zeros(n, dtype=bool)

    def record(self, ids):
        """``ids`` (None: every vertex) changed in the iteration that ended."""
        if self.mask is None:
            return
        if self.ids is not None:
            self.mask[self.ids] = False
        if ids is not None:
            self.mask[ids] = True
        self.ids = ids

    def record_parts(self, parts):
        """Like :meth:`record`, of the changed ids the units' applies found, one array each."""
        if self.mask is not None:
            self.record(np.concatenate(parts) if len(parts) > 1 else
                        parts[0] if parts else np.zeros(0, dtype=np.int64))


def hoist(ex):
    """(hoisted messages, whether they are the changed sources' only): gather_map once per
    vertex (in runs of at most a shard's vertices, so the program's temporaries stay small),
    or over in-edges of a gather_from "changed" program once per changed vertex."""
    ids = ex.sources.ids
    if ids is not None and ex.kern.dirs == ("in",):
        return messages(ex, ids), True
    dtype = ex.spec.gather_dtype
    out = np.empty((ex.n,) if ex.L is None else (ex.n, ex.L), dtype=dtype)
    for lo, hi in ex.vertex_chunks():
        view = VertexView(ex.cur, ex.builtins, slice(lo, hi), hi - lo, lanes=ex.L)
        out[lo:hi] = as_length(ex.program.gather_map(view, None, None), hi - lo, dtype, ex.L)
    return out, False


def messages(ex, ids):
    """Hoisted messages over in-edges: a source that did not change sends the identity, so only
    the changed sources' messages are computed (O(changed) and a fill) and every gather reads
    them as usual."""
    spec = ex.spec
    out = np.full(ex.n, spec.gather_reduce.identity(spec.gather_dtype), dtype=spec.gather_dtype)
    step = max(ex.vertex_chunks()[0][1], 1)
    for k in range(0, len(ids), step):
        part = ids[k:k + step]
        view = VertexView(ex.cur, ex.builtins, part, len(part))
        out[part] = as_length(ex.program.gather_map(view, None, None), len(part), spec.gather_dtype)
    return out
