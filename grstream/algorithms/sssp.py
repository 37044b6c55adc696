"""Single-source shortest paths (Bellman-Ford style, frontier driven): inf when unreachable."""
from typing import TYPE_CHECKING, Any, Tuple

if TYPE_CHECKING:  # names for the annotations only
    from ..engine import Result
    from ..store import ShardStore

import numpy as np

import grstream as gr
from grstream.errors import UsageError, plain

from ._common import execute, internal_source
from .params import declare, max_iter_param, source_param



class SSSP(gr.GASProgram):
    """A vertex takes the smallest ``dist(u) + w(u, v)`` over its in-edges."""

    vertex = {"dist": "float64"}
    reads = {"weight"}
    gather_reduce = gr.monoid.min
    asynchronous = True   # min of monotone values: any order of updates reaches the same result
    params = {"source": 0}
    vertex_params = ("source",)   # an internal vertex id: checked against 0..n-1
    # every vertex at inf, the source at 0 and the seed: made where the state lives
    initial = {"dist": np.inf}
    seeds = {"source": {"dist": 0.0}}

    def gather_map(self, src, dst, edge):
        return src.dist + edge.weight

    def apply(self, v, acc):
        new = gr.minimum(v.dist, acc)
        changed = new < v.dist
        v.dist = new
        return changed


class FromDistances(gr.GASProgram):
    """Base of the programs that walk the shortest paths of a finished SSSP from ``source``:
    ``dist`` holds its distances, ``hop_field`` starts at 0 at the source and -1 elsewhere, and
    the source is the first frontier."""

    abstract = True
    hop_field = "level"

    def __init__(self, dist=None, **params):
        super().__init__(**params)
        self._dist = dist

    def init(self, v):
        is_source = v.id_mask(self.source)
        v.dist = self._dist
        hops = v.entries(self.hop_field)   # (in place, one pass)
        hops.fill(-1)
        hops[is_source] = 0
        return is_source


def check_weights(store):
    """Reject stores without weights, or with negative or NaN weights (one pass over them)."""
    if "weight" not in store.edge_props:
        raise UsageError("sssp needs edge weights and the store has none: build it with "
                         "--weighted from an input that has a weight per edge (a third column "
                         "of an edge list, a real or integer .mtx, a DIMACS .gr); on an "
                         "unweighted graph, bfs gives hop counts")
    for i in range(store.num_shards):
        # the out-edges' copy of the weights: the one a pushing run reads next (from the page
        # cache then), while the in-edges' copy is read only by pull plans; mapped where it
        # can be (no copy into fresh memory)
        w = store.mapped_or_read(i, "out/weight")
        if w.size and not (np.nanmin(w) >= 0):
            raise UsageError(f"sssp needs non-negative weights: shard {i} has weight {plain(np.nanmin(w))}"
                             + (" (NaN present)" if np.isnan(w).any() else ""))


@declare("sssp", source_param(), max_iter_param(),
         summary=lambda store, values, results: f"reached {int(np.isfinite(values).sum())}")
def sssp(store: "ShardStore", source: Any, max_iter: Any,
         **run_options: Any) -> Tuple[np.ndarray, "Result"]:
    """Distances from ``source`` (float64, inf unreachable) along the store's edge weights
    (finite, non-negative) and the engine Result."""
    check_weights(store)
    result = execute(SSSP(source=internal_source(store, source)), store,
                     dict(run_options, max_iter=max_iter))
    return result.values["dist"], result
