"""Checks of the algorithm parameters that need the store (the others are declared kinds in
params.py), each failing with a UsageError that names the parameter."""
import numpy as np

from ..errors import UsageError
from .params import Real


def vertex_vector(store, values, name, to_internal):
    """A per-vertex float64 vector from an array (internal order, length n) or a dict keyed by
    the vertex ids the algorithm functions take (``to_internal(store, key)`` maps one); vertices
    a dict leaves out get 0. Entries must be finite and >= 0 with a positive sum; the vector is
    returned normalised to sum 1, as NetworkX normalises personalization, nstart and dangling."""
    n = int(store.num_vertices)
    if isinstance(values, dict):
        vec = np.zeros(n, dtype=np.float64)
        for key, x in values.items():
            try:
                v = to_internal(store, key)
            except UsageError as exc:
                raise UsageError(f"{name}: key {key!r}: {exc}") from None
            vec[v] = Real().check(f"{name}[{key!r}]", x)
    else:
        try:
            vec = np.array(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise UsageError(f"{name} must be a dict or an array of numbers") from None
        if vec.shape != (n,):
            raise UsageError(f"{name} must have one entry per vertex ({n}), not shape {vec.shape}")
    if not np.all(np.isfinite(vec)) or (vec < 0).any():
        raise UsageError(f"{name} must be finite and non-negative")
    total = vec.sum()
    if not total > 0:
        raise UsageError(f"{name} must have a positive sum (some vertex with a value > 0)")
    return vec / total
