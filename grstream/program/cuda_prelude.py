"""C text the translated programs rely on: numpy-exact arithmetic helpers and monoid atomics.

The helpers compile for the device (nvcc) and, outside ``__CUDACC__``, for the host (g++), which
is how CI checks the translation's semantics without a GPU. Atomics exist only on the device.
"""
import numpy as np

from ..errors import ProgramError
from . import monoid as _monoid
from .cuda_types import ctype

HEADER = r"""
#ifndef __CUDACC__
/* Host build (tests): the device qualifiers mean nothing there. */
#include <math.h>
#define __device__
#define __forceinline__ inline
#define __constant__
#endif
#define GRSTREAM_FN __device__ __forceinline__
"""

# numpy's scalar algorithms (npymath npy_divmod / npy_floor_divide / npy_remainder and the
# integer loops of floor_divide and remainder), spelled for float and double.
_FLOAT_DIVMOD = r"""
GRSTREAM_FN {T} grstream_divmod({T} a, {T} b, {T}* modulus) {{
    {T} mod = fmod{S}(a, b);
    if (!b) {{ *modulus = mod; return a / b; }}
    {T} div = (a - mod) / b;
    if (mod) {{
        if ((b < 0) != (mod < 0)) {{ mod += b; div -= ({T})1; }}
    }} else {{
        mod = copysign{S}(({T})0, b);
    }}
    {T} floordiv;
    if (div) {{
        floordiv = floor{S}(div);
        if (div - floordiv > ({T})0.5) floordiv += ({T})1;
    }} else {{
        floordiv = copysign{S}(({T})0, a / b);
    }}
    *modulus = mod;
    return floordiv;
}}
GRSTREAM_FN {T} grstream_floordiv({T} a, {T} b) {{
    if (!b) return a / b;
    {T} mod;
    return grstream_divmod(a, b, &mod);
}}
GRSTREAM_FN {T} grstream_mod({T} a, {T} b) {{
    if (!b) return fmod{S}(a, b);
    {T} mod;
    grstream_divmod(a, b, &mod);
    return mod;
}}
GRSTREAM_FN {T} grstream_fminimum({T} a, {T} b) {{ return (a <= b || a != a) ? a : b; }}
GRSTREAM_FN {T} grstream_fmaximum({T} a, {T} b) {{ return (a >= b || a != a) ? a : b; }}
"""

HELPERS = HEADER + r"""
/* Integer floor division and modulo as numpy computes them: Python's rounding toward -inf,
   x // 0 == x % 0 == 0, and MIN // -1 wrapping to MIN. Arithmetic goes through unsigned long long
   so that overflow wraps (as numpy's does) instead of being undefined behaviour. */
template <typename T> GRSTREAM_FN T grstream_ifloordiv(T a, T b) {
    if (b == 0) return (T)0;
    if ((T)-1 < (T)0) {
        if (b == (T)-1) return (T)(0ULL - (unsigned long long)a);
        T q = (T)(a / b);
        if ((T)(a % b) != 0 && ((a < 0) != (b < 0))) q = (T)(q - 1);
        return q;
    }
    return (T)(a / b);
}
template <typename T> GRSTREAM_FN T grstream_imod(T a, T b) {
    if (b == 0) return (T)0;
    if ((T)-1 < (T)0) {
        if (b == (T)-1) return (T)0;
        T r = (T)(a % b);
        if (r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);
        return r;
    }
    return (T)(a % b);
}
/* numpy refuses negative integer exponents; here they give 0 unless the base is 1 or -1. */
template <typename T> GRSTREAM_FN T grstream_ipow(T base, T exp) {
    if ((T)-1 < (T)0 && exp < 0) {
        if (base == 1) return (T)1;
        if (base == (T)-1) return (T)((exp % 2) ? -1 : 1);
        return (T)0;
    }
    unsigned long long r = 1ULL, b = (unsigned long long)base;
    while (exp) {
        if (exp & 1) r *= b;
        b *= b;
        exp = (T)(exp >> 1);
    }
    return (T)r;
}
template <typename T> GRSTREAM_FN T grstream_iminimum(T a, T b) { return a < b ? a : b; }
template <typename T> GRSTREAM_FN T grstream_imaximum(T a, T b) { return a > b ? a : b; }
template <typename T> GRSTREAM_FN T grstream_iabs(T a) {
    return (T)-1 < (T)0 && a < 0 ? (T)(0ULL - (unsigned long long)a) : a;
}
""" + _FLOAT_DIVMOD.format(T="float", S="f") + _FLOAT_DIVMOD.format(T="double", S="")

# Atomics per (monoid, C type): native where CUDA has one, else a compare-and-swap loop over the
# value's bits. or/and are idempotent and have one possible stored result per call (true or
# false), so a plain store of it is race-free.
_NATIVE = {
    ("sum", "int"), ("sum", "unsigned int"), ("sum", "unsigned long long"), ("sum", "float"),
    ("sum", "double"), ("min", "int"), ("min", "unsigned int"), ("min", "long long"),
    ("min", "unsigned long long"), ("max", "int"), ("max", "unsigned int"),
    ("max", "long long"), ("max", "unsigned long long"),
}
_CUDA_NAME = {"sum": "atomicAdd", "min": "atomicMin", "max": "atomicMax"}
_CAS_TYPES = ("int", "unsigned int", "long long", "unsigned long long", "float", "double")
# the atomics combine exactly as the kernels' reductions do: the monoid's one C expression (min and
# max keep a NaN once it appears, as np.minimum / np.maximum do on the CPU)
_COMBINE = {m.name: m.cuda_combine.format(a="cur", b="val") for m in (_monoid.sum, _monoid.prod,
                                                                      _monoid.min, _monoid.max)}


def _cas(name, op, c):
    word = "unsigned long long" if c in ("long long", "unsigned long long", "double") else "unsigned int"
    return f"""
GRSTREAM_FN void {name}({c}* addr, {c} val) {{
    {word}* p = ({word}*)addr;
    {word} old = *p, assumed;
    do {{
        assumed = old;
        {c} cur;
        memcpy(&cur, &assumed, sizeof(cur));
        {c} next = {_COMBINE[op]};
        {word} bits;
        memcpy(&bits, &next, sizeof(bits));
        if (bits == assumed) return;
        old = atomicCAS(p, assumed, bits);
    }} while (old != assumed);
}}
"""


def atomic(monoid, dtype, program):
    """Device C of ``monoid.cuda_atomic(T* addr, T val)`` for ``dtype``."""
    c = ctype(dtype)
    name = monoid.cuda_atomic
    op = monoid.name
    if op in ("or", "and"):
        hit = "val" if op == "or" else "!val"
        store = "1" if op == "or" else "0"
        return (f"\nGRSTREAM_FN void {name}({c}* addr, {c} val) "
                f"{{ if ({hit}) *(volatile {c}*)addr = ({c}){store}; }}\n")
    if c == "long long" and op == "sum":  # two's complement: the unsigned add is the signed add
        return (f"\nGRSTREAM_FN void {name}(long long* addr, long long val) {{ atomicAdd("
                f"(unsigned long long*)addr, (unsigned long long)val); }}\n")
    if (op, c) in _NATIVE:
        return f"\nGRSTREAM_FN void {name}({c}* addr, {c} val) {{ {_CUDA_NAME[op]}(addr, val); }}\n"
    if c in _CAS_TYPES and op in _COMBINE:
        return _cas(name, op, c)
    raise ProgramError(f"monoid {op} on {np.dtype(dtype)} has no GPU atomic (use a 32- or 64-bit "
                       f"integer, float32 or float64, or bool for or/and)", program)


def atomics(pairs, program):
    """The atomics prelude for the (monoid, dtype) pairs a program reduces with (device only)."""
    seen, parts = set(), []
    for monoid, dtype in pairs:
        key = (monoid.name, ctype(dtype))
        if key not in seen:
            seen.add(key)
            parts.append(atomic(monoid, dtype, program))
    if not parts:
        return ""
    return "#ifdef __CUDACC__\n#include <string.h>\n" + "".join(parts) + "#endif\n"
