"""What a run returns: final vertex state, per-iteration statistics and run facts."""
import json
from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np

from .backend import IterationStats

TOTALS = ("active_edges", "shards_processed", "shards_skipped", "bytes_read", "bytes_h2d",
          "bytes_d2h", "time_read", "time_gather", "time_apply", "time_activate", "time_scatter",
          "time_copy", "time_kernel", "copy_hidden", "bytes_exchanged", "time_exchange")


@dataclass
class Result:
    """What a run returns: final vertex state, per-iteration statistics and run facts."""

    values: Dict[str, np.ndarray]
    output: str
    iterations: int
    converged: bool
    stats: List[IterationStats] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    seconds: float = 0.0
    #: mutable edge state (programs with edge_state), each array in the global CSR order
    edge_values: Dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def of(cls, program, store, values, edge_values, stats, converged, info, seconds):
        values = program.finish(dict(values))   # the program's own view of its final state
        info = dict(info)
        info.update({"program": type(program).__name__, "params": program.param_values,
                     "num_vertices": int(store.num_vertices), "num_edges": int(store.num_edges),
                     "num_shards": int(store.num_shards), "device": info.get("backend")})
        return cls(values=values, output=type(program).spec.output, iterations=len(stats),
                   converged=bool(converged), stats=stats, info=info, seconds=seconds,
                   edge_values=edge_values)

    @property
    def value(self):
        """The program's output field."""
        return self.values[self.output]

    def totals(self):
        out = {k: sum(getattr(s, k) for s in self.stats) for k in TOTALS}
        tiers = {}   # shard bytes by the memory tier they were served from
        for s in self.stats:
            for tier, nbytes in s.tier_bytes.items():
                tiers[tier] = tiers.get(tier, 0) + nbytes
        out["tier_bytes"] = tiers
        return out

    def to_json_dict(self):
        return {"iterations": self.iterations, "converged": self.converged,
                "seconds": self.seconds, "info": self.info, "totals": self.totals(),
                "per_iteration": [s.to_dict() for s in self.stats]}

    def to_json(self, **kwargs):
        return json.dumps(jsonable(self.to_json_dict()), **kwargs)


def jsonable(obj):
    """``obj`` with numpy scalars as Python numbers, non-finite floats as strings and tuples as
    lists, ready for ``json.dumps``."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if isinstance(obj, float) and not np.isfinite(obj):
        return str(obj)
    return obj
