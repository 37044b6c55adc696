"""numpy's typing rules for the translator: C spellings of dtypes and result types of operations.

The CPU engine evaluates a program's methods with numpy, so the CUDA translation must produce the
dtype numpy would. Rather than re-implementing numpy's promotion tables, the result type of each
operation is obtained by applying the very numpy function to sample operands: a one-element
array for an array-valued operand ("strong": vertex fields, edge properties, built-ins,
aggregates, ``acc`` and anything computed from them) and a Python scalar for a Python-valued one
("weak", NEP 50: literals, params with Python defaults, ``self.num_vertices``/``iteration``/...).
Two weak operands follow Python's own rules (``1 / 2`` is a float, ``3 // 2`` an int).
"""
import ast
import operator
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import ProgramError

CTYPES = {
    "b": "bool", "i1": "signed char", "u1": "unsigned char", "i2": "short",
    "u2": "unsigned short", "i4": "int", "u4": "unsigned int", "i8": "long long",
    "u8": "unsigned long long", "f4": "float", "f8": "double",
}

BINARY_UFUNCS = {
    ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.true_divide,
    ast.FloorDiv: np.floor_divide, ast.Mod: np.remainder, ast.Pow: np.power,
    ast.BitAnd: np.bitwise_and, ast.BitOr: np.bitwise_or, ast.BitXor: np.bitwise_xor,
}
BINARY_PY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
SYMBOLS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.Lt: "<", ast.LtE: "<=",
    ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.USub: "-", ast.UAdd: "+",
    ast.Invert: "~",
}
WEAK_DTYPE = {bool: np.dtype(bool), int: np.dtype(np.int64), float: np.dtype(np.float64)}
CANONICAL = {bool: True, int: 1, float: 1.0}


def ctype(dtype):
    """C spelling of a numpy dtype; ProgramError-free helper (raises KeyError if unsupported)."""
    dt = np.dtype(dtype)
    return CTYPES[dt.kind + (str(dt.itemsize) if dt.kind != "b" else "")]


def check_ctype(dtype, what, program):
    """``ctype(dtype)``, or a ProgramError naming ``what`` when the dtype has no C counterpart."""
    try:
        return ctype(dtype)
    except KeyError:
        raise ProgramError(f"{what}: dtype {np.dtype(dtype)} is not supported on the GPU "
                           f"(use bool, an integer type, float32 or float64)", program) from None


@dataclass(frozen=True)
class Val:
    """A translated expression: its C code, numpy dtype and whether it is a Python scalar."""

    code: str
    dtype: np.dtype
    weak: bool = False
    sample: object = None  # for weak values: the Python value, when known (literals, params)

    @property
    def pytype(self):
        return {"b": bool, "i": int, "u": int, "f": float}[self.dtype.kind]

    def operand(self):
        """A sample operand with the typing behaviour of this value, for asking numpy."""
        if self.weak:
            return CANONICAL[self.pytype] if self.sample is None else self.sample
        return np.ones(1, self.dtype)

    @property
    def ctype(self):
        return ctype(self.dtype)


def weak(code, pytype, sample=None):
    return Val(code, WEAK_DTYPE[pytype], True, sample)


def _ask(fn, *vals):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*[v.operand() for v in vals])


def result(fn, vals, describe):
    """Result of numpy ``fn`` on ``vals`` as ``(dtype, weak)``, or, when numpy refuses the
    operands or gives a dtype the GPU lacks, the error message (a str) naming ``describe``."""
    try:
        out = _ask(fn, *vals)
    except (TypeError, ValueError, OverflowError, ZeroDivisionError) as exc:
        return f"{describe} is not defined for {', '.join(_tyname(v) for v in vals)} ({exc})"
    if type(out) in (bool, int, float):  # not np.float64, which subclasses float but is strong
        return WEAK_DTYPE[type(out)], True
    dt = np.asarray(out).dtype
    if dt.kind not in "biuf" or dt.itemsize == 2 and dt.kind == "f":
        return f"{describe} on {', '.join(_tyname(v) for v in vals)} gives {dt}, which the GPU " \
               f"path does not support"
    return dt, False


def binary(op, a, b):
    """Result ``(dtype, weak)`` of ``a <op> b`` under numpy/Python rules, or an error message."""
    sym = SYMBOLS[type(op)]
    if a.weak and b.weak:
        py = BINARY_PY[type(op)]
        if isinstance(op, ast.Pow) and a.pytype is not float and b.pytype is not float \
                and b.sample is not None and b.sample < 0:
            return WEAK_DTYPE[float], True  # Python: int ** negative int is a float
        try:
            out = py(CANONICAL[a.pytype], CANONICAL[b.pytype])
        except TypeError as exc:
            return f"'{sym}' is not defined for {_tyname(a)}, {_tyname(b)} ({exc})"
        return WEAK_DTYPE[type(out)], True
    return result(BINARY_UFUNCS[type(op)], (a, b), f"'{sym}'")


def common(a, b):
    """The dtype numpy compares ``a`` and ``b`` in (both weak: Python's int/float/bool), or an
    error message (a str)."""
    if a.weak and b.weak:
        kinds = {a.pytype, b.pytype}
        return WEAK_DTYPE[float if float in kinds else (int if int in kinds else bool)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.result_type(a.operand(), b.operand())
    except (TypeError, ValueError, OverflowError) as exc:
        return f"cannot compare {_tyname(a)} with {_tyname(b)} ({exc})"


def _tyname(v):
    return f"Python {v.pytype.__name__}" if v.weak else str(v.dtype)
