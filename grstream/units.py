"""Byte sizes as users write them on the command line (``512M``, ``2GiB``, ``1.5G``, ``1e9``).

One convention, binary, in what grstream reads and prints: ``K``, ``KB`` and ``KiB`` all mean
1024 bytes, ``M``/``MB``/``MiB`` 2**20, then ``G``, ``T``, ``P`` (case does not matter, a
trailing ``B`` is optional). A fraction of a unit is rounded to the nearest byte (``1.5M`` is
1572864); a fraction of a byte (``1.5``) is an error, and so is a size beyond 2^63 - 1 bytes
(8 EiB, what an int64 holds).
"""
import math
import numbers
import re
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

from .errors import UsageError, plain

_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(?:([kmgtp])(i?b)?|(b))?\s*",
                   re.IGNORECASE)
_EXAMPLES = "examples: 1048576, 512M, 1.5GiB, 64KB"
#: the largest size: what an int64 holds
MAX_BYTES = (1 << 63) - 1


def parse_bytes(text):
    """Parse a byte count: a number with an optional binary unit.

    Parameters
    ----------
    text : str or int

    Returns
    -------
    int

    Raises
    ------
    UsageError
        Not a size, negative, a fraction of a byte, or beyond ``MAX_BYTES`` (2^63 - 1).
    """
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise UsageError(f"byte size must not be negative: {text}")
        return _at_most_int64(text, text)
    m = _SIZE.fullmatch(str(text))
    if not m:
        raise UsageError(f"cannot read {text!r} as a byte size ({_EXAMPLES}; units are binary: "
                         "K = KB = KiB = 1024)")
    try:
        number = Decimal(m.group(1))
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimal numbers
        raise UsageError(f"cannot read {text!r} as a byte size ({_EXAMPLES})") from None
    unit = (m.group(2) or "").lower()
    value = number * (1 << (10 * _POWERS[unit]))
    if unit:
        return _at_most_int64(int(value.to_integral_value(rounding=ROUND_HALF_EVEN)), text)
    if value != value.to_integral_value():
        raise UsageError(f"byte size {text!r} is not a whole number of bytes "
                         "(give a unit for fractions: 1.5M = 1572864 bytes)")
    return _at_most_int64(int(value), text)


def _at_most_int64(n, text):
    # every size ends up in an int64 (numpy, HDF5, the CUDA allocator): a larger one would wrap
    if n > MAX_BYTES:
        raise UsageError(f"byte size {text!r} is beyond the largest, 2^63 - 1 bytes (8 EiB)")
    return n


def format_bytes(n):
    """A short human form of a byte count (binary units, as :func:`parse_bytes` reads them)."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def byte_size(name, value):
    """``value`` as a byte count (int), or None for None: what the command line takes (a str for
    :func:`parse_bytes`) or a whole number of bytes as an int (or a float holding one: ``64e6``).
    A bool, a fraction of a byte, NaN, a negative size or one beyond int64 is a UsageError naming
    ``name``, rather than rounded or read as 1 byte."""
    if value is None:
        return None
    what = f"{name} must be a byte count (an int, or a size such as '512M'), not {plain(value)}"
    if isinstance(value, bool):   # numpy's bool is no numbers.Integral: refused below
        raise UsageError(what)
    if isinstance(value, str):
        try:
            size = parse_bytes(value)
        except UsageError as exc:
            raise UsageError(f"{name}: {exc}") from None
    elif isinstance(value, numbers.Integral):
        size = int(value)
    elif isinstance(value, numbers.Real):
        if not math.isfinite(value) or not float(value).is_integer():
            raise UsageError(f"{name} must be a whole number of bytes, not {plain(value)} "
                             f"(a size string takes fractions of a unit: '1.5M')")
        size = int(value)
    else:
        raise UsageError(what)
    if size < 0:
        raise UsageError(f"{name} must be >= 0 bytes, got {plain(value)}")
    if size > MAX_BYTES:
        raise UsageError(f"{name} {plain(value)} is beyond the largest size, 2^63 - 1 bytes (8 EiB)")
    return size
