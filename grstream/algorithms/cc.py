"""Weakly connected components: every vertex labelled with the smallest id in its component."""
from typing import TYPE_CHECKING, Any, Tuple

if TYPE_CHECKING:  # names for the annotations only
    from ..engine import Result
    from ..store import ShardStore

import numpy as np

import grstream as gr

from ._common import execute
from .params import declare, max_iter_param



class ConnectedComponents(gr.GASProgram):
    """Label propagation over both edge directions; min is idempotent, so only changed labels
    propagate (frontier driven)."""

    vertex = {"label": "int64"}
    gather_edges = "all"
    gather_reduce = gr.monoid.min
    asynchronous = True   # min of monotone values: any order of updates reaches the same result
    local_init = True   # (ranks run init over their own vertices)

    def init(self, v):
        v.label = v.id
        return None  # every vertex starts active

    def gather_map(self, src, dst, edge):
        return gr.minimum(src.label, dst.label)

    def apply(self, v, acc):
        new = gr.minimum(v.label, acc)
        changed = new < v.label
        v.label = new
        return changed


@declare("cc", max_iter_param(), vertex_valued=True,
         summary=lambda store, values, results: f"{len(np.unique(values))} components")
def connected_components(store: "ShardStore", max_iter: Any,
                         **run_options: Any) -> Tuple[np.ndarray, "Result"]:
    """Component labels (int64, smallest vertex id of the component) and the engine Result."""
    result = execute(ConnectedComponents(), store, dict(run_options, max_iter=max_iter))
    return result.values["label"], result
