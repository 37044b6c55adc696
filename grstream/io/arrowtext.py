"""Blocks of numeric text parsed by Apache Arrow's C++ CSV reader (optional ``pyarrow``).

Arrow parses a block faster than the block parser's numpy path (which first checks every
line's separators in Python's bytes routines), and without the GIL. It is used
only for what it parses exactly as :class:`.textblocks.BlockParser` does; anything else makes
:meth:`ArrowParser.edges` answer None and the block goes to the block parser, which gives the
same edges or raises the same error with its line. So a block is Arrow's when:

- the file's first data line is separated by single tabs, single spaces or commas (CSV), and
  every line of the block has exactly the columns of that line (Arrow checks the count);
- every id is a decimal integer (Arrow would also read ``0x1f`` as 31: a block with an ``x``
  is refused), every weight a decimal number; quotes are not special (quoting off);
- ``\\r`` appears only before ``\\n`` (Arrow would end a line at a lone ``\\r``);
- the checks of :func:`.validate.to_edges` pass, and nothing whose meaning depends on how the
  block parser typed the block occurs: ids of ``2^53`` and more in a file with more than two
  columns (read as float64 there when any number is real), weights of ``2^63`` and more in
  magnitude (an integer there overflows), a weight ``-0`` (``0`` when the block is integral).

A blank line sends the block to the block parser too (so Arrow's rows are the block's lines).
Columns after the weight (KONECT's timestamps) must be numbers too (the block parser's line
by line path takes others: such a block goes to it). A DIMACS prefix (``a``) is read as a
first column that must be the prefix on every line.
"""
import importlib.util

import numpy as np

from .textblocks import _FLOAT_CHARS
from .validate import to_edges

_FLOAT_EXACT = 2 ** 53
_INT64_MAGNITUDE = 2.0 ** 63


pa = pa_csv = None     # imported by the first ArrowParser


class _Refused(Exception):
    """A block Arrow does not answer for: the block parser takes it."""


def installed():
    """Whether ``pyarrow`` can be imported (it is imported only where a parser is made: it
    takes a moment)."""
    return importlib.util.find_spec("pyarrow") is not None


def arrow_parser(ncol, keep, first_line, *, make=True, prefix=None, delimiter=None, **_):
    """An :class:`ArrowParser` for a table whose first data line is ``first_line``, or None
    where Arrow is not installed or that line's separators are not single characters;
    ``make=False`` answers True instead of a parser, without importing Arrow."""
    if not installed():
        return None
    body = first_line
    if prefix is not None:
        body = body.lstrip()
        if not body.startswith(prefix):
            return None
        body = body[len(prefix):]
    separators = body.rstrip(b"\r\n").translate(None, _FLOAT_CHARS)
    sep = separators[:1]
    allowed = (b",",) if delimiter else (b" ", b"\t")
    if ncol < 2 or sep not in allowed or separators != sep * (ncol - 1):
        return None
    if prefix is not None and prefix[1:] != sep:
        return None
    return ArrowParser(ncol, keep, sep, prefix) if make else True


class ArrowParser:
    """Parse and check blocks of ``ncol`` columns separated by ``sep`` (see the module)."""

    def __init__(self, ncol, keep, sep, prefix=None):
        global pa, pa_csv
        import pyarrow as pa
        import pyarrow.csv as pa_csv
        self.ncol = ncol
        self.keep = keep
        lead = 1 if prefix is not None else 0
        self.prefix = None if prefix is None else prefix[:1].decode()
        names = [f"c{k}" for k in range(lead + ncol)]
        # every column converted: a field the block parser would split differently (empty,
        # or spaces inside a tab-separated one) then sends the block to it
        types = {names[lead + k]: pa.int64() if k < 2 else pa.float64() for k in range(ncol)}
        if prefix is not None:
            types[names[0]] = pa.string()
        self._wanted = names[:lead + keep]
        # a blank line is an error here (the block parser skips it): the rows are the lines
        self._parse = pa_csv.ParseOptions(delimiter=sep.decode(), quote_char=False,
                                          double_quote=False, escape_char=False,
                                          ignore_empty_lines=False)
        self._convert = pa_csv.ConvertOptions(column_types=types,
                                              null_values=[], true_values=[], false_values=[],
                                              strings_can_be_null=False,
                                              quoted_strings_can_be_null=False)
        self._names = names

    def _columns(self, block):
        if b"x" in block or b"X" in block:
            return None
        if b"\r" in block and block.count(b"\r") != block.count(b"\r\n"):
            return None
        read = pa_csv.ReadOptions(column_names=self._names, use_threads=False,
                                  block_size=len(block) + 1)
        try:
            table = pa_csv.read_csv(pa.py_buffer(block), read_options=read,
                                    parse_options=self._parse, convert_options=self._convert)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        columns = [table.column(name) for name in self._wanted]
        if self.prefix is not None:
            tokens = columns.pop(0)
            if tokens.null_count or tokens.unique().to_pylist() not in ([self.prefix], []):
                return None
        return [np.concatenate([chunk.to_numpy() for chunk in column.chunks])
                if column.num_chunks != 1 else column.chunk(0).to_numpy()
                for column in columns]

    def edges(self, block, base, limits):
        """The block's checked 0-based ``(src, dst, weight, nlines)``, or None for the block
        parser."""
        columns = self._columns(block)
        if columns is None or not len(columns[0]):
            return None
        src, dst = columns[0], columns[1]
        weight = columns[2] if self.keep > 2 else None
        if self.ncol > 2 and max(src.max(), dst.max()) >= _FLOAT_EXACT:
            return None
        if weight is not None:
            low, high = weight.min(), weight.max()
            if max(-low, high) >= _INT64_MAGNITUDE:
                return None
            if low <= 0 and np.signbit(weight[weight == 0]).any():
                return None

        def refuse(row, message):
            raise _Refused

        try:
            return (*to_edges(src, dst, weight, refuse, base=base, limits=limits), len(src))
        except _Refused:
            return None
