"""Typed argument lists of the generated kernels (the pattern of PyCUDA's ``VectorArg`` /
``ScalarArg`` in ``pycuda.tools``).

Each kernel carries one :class:`KernelArgs`: the C parameter list in the generated source, the
prepared-call signature (Python ``struct`` characters) and the conversion of a launch's arguments
all come from it, so they cannot drift apart. A launch with the wrong number or kind of
arguments raises :class:`KernelArgumentError` in Python instead of faulting on the GPU.

Importable without PyCUDA (CI tests the descriptors and the checking).
"""
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from ...errors import DeviceError

CTYPES = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "signed char", np.dtype(np.uint8): "unsigned char",
    np.dtype(np.int16): "short", np.dtype(np.uint16): "unsigned short",
    np.dtype(np.int32): "int", np.dtype(np.uint32): "unsigned int",
    np.dtype(np.int64): "long long", np.dtype(np.uint64): "unsigned long long",
    np.dtype(np.float32): "float", np.dtype(np.float64): "double",
}
#: struct characters of scalar parameters (explicit sizes: numpy's ``dtype.char`` of int64 is the
#: platform's ``l``)
STRUCT_CHARS = {
    np.dtype(np.int32): "i", np.dtype(np.uint32): "I", np.dtype(np.int64): "q",
    np.dtype(np.uint64): "Q", np.dtype(np.float32): "f", np.dtype(np.float64): "d",
}


class KernelArgumentError(DeviceError, TypeError):
    """A kernel launch got arguments that do not match the kernel's parameter list."""


def ctype(dtype):
    """The C spelling of a numpy dtype."""
    dt = np.dtype(dtype)
    try:
        return CTYPES[dt]
    except KeyError:
        raise TypeError(f"no CUDA type for dtype {dt}") from None


def _is_integer(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


#: classes whose instances converted to a device address through ``__int__`` (not ints, floats,
#: arrays or strings): a launch's later ones skip the checks of their kind
_ADDRESS_TYPES = set()


@dataclass(frozen=True)
class VectorArg:
    """A device pointer parameter: ``[const] ctype* __restrict__ name``.

    A launch passes a device address (``int``, or an allocation PyCUDA converts with ``int()``);
    0 or None is the null pointer (kernels read it as "absent": every vertex active, no counts).
    """

    ctype: str
    name: str
    const: bool = True
    struct_char = "P"

    def declarator(self):
        return f"{'const ' if self.const else ''}{self.ctype}* __restrict__ {self.name}"

    def convert(self, value):
        kind = type(value)
        if kind is int and value >= 0:   # the common cases, checked first (host time per launch)
            return value
        if kind in _ADDRESS_TYPES:   # pycuda's DeviceAllocation, once one converted
            addr = int(value)
            if addr >= 0:
                return addr
        if value is None:
            return 0
        if isinstance(value, (bool, np.bool_, float, np.floating, np.ndarray, str, bytes)):
            raise TypeError(f"a device address, not {type(value).__name__}")
        if _is_integer(value):
            addr = int(value)
        elif hasattr(value, "__int__"):  # pycuda.driver.DeviceAllocation
            addr = int(value)
            _ADDRESS_TYPES.add(kind)
        else:
            raise TypeError(f"a device address, not {type(value).__name__}")
        if addr < 0:
            raise TypeError(f"a device address, not {addr}")
        return addr


@dataclass(frozen=True)
class ScalarArg:
    """A by-value parameter of numpy dtype ``dtype``: ``ctype name``."""

    dtype: np.dtype
    name: str

    def __post_init__(self):
        object.__setattr__(self, "dtype", np.dtype(self.dtype))
        if self.dtype not in STRUCT_CHARS:
            raise TypeError(f"no kernel scalar of dtype {self.dtype}")
        # an integer's range, found once (np.iinfo per launch is most of a launch's host time)
        info = np.iinfo(self.dtype) if self.dtype.kind in "iu" else None
        object.__setattr__(self, "_range", None if info is None else (int(info.min), int(info.max)))

    @property
    def ctype(self):
        return ctype(self.dtype)

    @property
    def struct_char(self):
        return STRUCT_CHARS[self.dtype]

    def declarator(self):
        return f"{self.ctype} {self.name}"

    def convert(self, value):
        dt, bounds = self.dtype, self._range
        if bounds is not None:
            if not _is_integer(value):
                raise TypeError(f"an integer, not {type(value).__name__}")
            if not bounds[0] <= int(value) <= bounds[1]:
                raise TypeError(f"{int(value)} outside {dt}")
            return dt.type(int(value))
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            raise TypeError(f"a number, not {type(value).__name__}")
        return dt.type(value)


@dataclass(frozen=True)
class KernelArgs:
    """The typed parameter list of one kernel."""

    kernel: str
    args: Tuple

    def c_params(self, sep=",\n    "):
        """The C parameter list (without parentheses)."""
        return sep.join(a.declarator() for a in self.args)

    @property
    def signature(self):
        """The prepared-call signature (``Function.prepare``'s struct string)."""
        return "".join(a.struct_char for a in self.args)

    @property
    def names(self):
        return [a.name for a in self.args]

    def convert(self, values):
        """The launch's argument values checked and converted, in parameter order.

        Raises
        ------
        KernelArgumentError
            Wrong number of arguments, or one of the wrong kind (named in the message).
        """
        if len(values) != len(self.args):
            raise KernelArgumentError(f"kernel {self.kernel} takes {len(self.args)} arguments "
                                      f"({', '.join(self.names)}), got {len(values)}")
        out = []
        for a, v in zip(self.args, values):
            try:
                c = a.convert(v)
                out.extend(c) if type(c) is tuple else out.append(c)   # a struct of pointers
            except TypeError as exc:
                raise KernelArgumentError(f"kernel {self.kernel}, argument {a.name!r} "
                                          f"({a.declarator()}): expected {exc}") from None
        return out


class PreparedKernel:
    """A compiled kernel bound to its :class:`KernelArgs`: prepared from them, launched through them.

    ``function`` is a ``pycuda.driver.Function`` (or anything with ``prepare`` and
    ``prepared_async_call``).
    """

    def __init__(self, function, args: KernelArgs):
        self.function = function
        self.args = args
        function.prepare(args.signature)

    def launch(self, grid, block, stream, *values):
        self.function.prepared_async_call(grid, block, stream, *self.args.convert(values))
