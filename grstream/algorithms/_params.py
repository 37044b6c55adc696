"""Checks of the algorithm functions' parameters, each failing with a UsageError that names the
parameter, so the API and the CLI (which calls the same functions) refuse bad input alike."""
import math
import numbers

import numpy as np

from ..errors import UsageError


def check_fraction(name, value):
    """A real number in [0, 1] (PageRank's damping)."""
    x = _real(name, value)
    if not 0.0 <= x <= 1.0:
        raise UsageError(f"{name} must be between 0 and 1, not {value!r}")
    return x


def check_positive(name, value):
    """A finite real number > 0 (tolerances)."""
    x = _real(name, value)
    if not (x > 0.0 and math.isfinite(x)):
        raise UsageError(f"{name} must be a positive finite number, not {value!r}")
    return x


def check_count(name, value, minimum=0, maximum=None):
    """An integer in [minimum, maximum] (max_iter, k)."""
    integral = isinstance(value, numbers.Integral) or (
        isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer())
    if isinstance(value, (bool, np.bool_)) or not integral:
        raise UsageError(f"{name} must be an integer, not {value!r}")
    x = int(value)
    if x < minimum or (maximum is not None and x > maximum):
        upper = f" and at most {maximum}" if maximum is not None else ""
        raise UsageError(f"{name} must be at least {minimum}{upper}, not {value!r}")
    return x


def check_choice(name, value, choices):
    if value not in choices:
        raise UsageError(f"{name} must be one of {', '.join(map(repr, choices))}, not {value!r}")
    return value


def _real(name, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise UsageError(f"{name} must be a number, not {value!r}")
    x = float(value)
    if math.isnan(x):
        raise UsageError(f"{name} must be a number, not NaN")
    return x


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
            vec[v] = _real(f"{name}[{key!r}]", x)
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
