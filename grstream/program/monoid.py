"""Named monoids for ``gather_reduce`` and aggregates.

A monoid carries what both backends need: the numpy ufunc that reduces on the CPU, its identity
for a given dtype, whether it is idempotent (``min``, ``max``, ``or``, ``and``: reducing a value
twice changes nothing, which permits push over changed sources and asynchronous updates), and the
CUDA spelling of the combine step and of its atomic.
"""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Monoid:
    name: str
    ufunc: np.ufunc
    idempotent: bool
    cuda_combine: str  # C expression template with {a} and {b}
    cuda_atomic: str   # name of the atomic helper in the kernel prelude

    def identity(self, dtype):
        """The identity element of this monoid for ``dtype`` as a numpy scalar."""
        dt = np.dtype(dtype)
        if self.name == "sum":
            return dt.type(0)
        if self.name == "prod":
            return dt.type(1)
        if self.name == "or":
            return dt.type(0) if dt != np.bool_ else np.bool_(False)
        if self.name == "and":
            return np.bool_(True) if dt == np.bool_ else dt.type(1)
        if self.name in ("min", "max"):
            big = self.name == "min"
            if dt.kind == "f":
                return dt.type(np.inf if big else -np.inf)
            if dt.kind in "iu":
                info = np.iinfo(dt)
                return dt.type(info.max if big else info.min)
            if dt == np.bool_:
                return np.bool_(big)
        raise TypeError(f"monoid {self.name} has no identity for dtype {dt}")

    def reduce(self, values, dtype=None):
        """Reduce a 1-D array to one value (the identity when empty)."""
        dtype = values.dtype if dtype is None else np.dtype(dtype)
        if values.size == 0:
            return self.identity(dtype)
        return dtype.type(self.ufunc.reduce(values.astype(dtype, copy=False)))

    def __repr__(self):
        return f"monoid.{self.name}"


sum = Monoid("sum", np.add, False, "({a} + {b})", "grstream_atomic_add")  # noqa: A001
prod = Monoid("prod", np.multiply, False, "({a} * {b})", "grstream_atomic_mul")
# min/max propagate NaN as np.minimum / np.maximum do: once either operand is NaN the result is
# NaN (the first one); for integers the NaN tests fold away
min = Monoid("min", np.minimum, True,  # noqa: A001
             "(((({b}) < ({a})) || (({b}) != ({b}))) && (({a}) == ({a})) ? ({b}) : ({a}))",
             "grstream_atomic_min")
max = Monoid("max", np.maximum, True,  # noqa: A001
             "(((({b}) > ({a})) || (({b}) != ({b}))) && (({a}) == ({a})) ? ({b}) : ({a}))",
             "grstream_atomic_max")
logical_or = Monoid("or", np.logical_or, True, "(({a}) || ({b}))", "grstream_atomic_or")
logical_and = Monoid("and", np.logical_and, True, "(({a}) && ({b}))", "grstream_atomic_and")
any = logical_or  # noqa: A001
all = logical_and  # noqa: A001

BY_NAME = {m.name: m for m in (sum, prod, min, max, logical_or, logical_and)}
