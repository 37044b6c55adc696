"""Byte sizes as users write them on the command line (``512M``, ``2GiB``, ``1e9``)."""
import re

from .errors import UsageError

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_bytes(text):
    """Parse a byte count: a number with an optional unit (K/M/G/T decimal, KiB/MiB/GiB binary)."""
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise UsageError(f"cannot read {text!r} as a byte size (examples: 1048576, 512M, 2GiB)")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if value < 0:
        raise UsageError(f"byte size must not be negative: {text!r}")
    return int(value)


def format_bytes(n):
    """A short human form of a byte count (binary units)."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
