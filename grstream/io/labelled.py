"""Edge lists whose vertices are names: ``Napoleon Valjean [weight]`` per line.

An edge list is read this way when a vertex token of its first data line is not a number.
Every token is then a label (``"42"`` too): the vertex ids are given in order of first
appearance (source before destination, line by line), the order ``networkx.read_edgelist``
gives its nodes, and the store keeps the names (README "Vertex ids"). Names cannot hold the
delimiter (whitespace, or a comma in CSV); there is no quoting.
"""
import math

import numpy as np

from ..errors import InputFormatError
from .chunking import rechunk
from .textblocks import head_lines, iter_blocks


def is_named(tokens):
    """True when one of a line's two vertex tokens is not a (finite) number.

    Numbers that are not integers (``1.5``) stay with the numeric reader, which rejects them.
    """
    for token in tokens[:2]:
        try:
            if not math.isfinite(float(token)):
                return True
        except ValueError:
            return True
    return False


def check_not_header(path, first, tokens, is_data, split):
    """Refuse a named first line followed by integer ids: a header row, not an edge."""
    lines = head_lines(path)
    try:
        for line_no, _, line in lines:
            if line_no > first[0] and is_data(line):
                if not is_named(split(line)):
                    names = " ".join(t.decode(errors="replace") for t in tokens[:2])
                    raise InputFormatError(
                        f"the first data line names vertices ({names}) but line {line_no} has "
                        "integer ids: a header line? Start it with '#'", path, first[0])
                return
    finally:
        lines.close()


class LabelTable:
    """Stream a named edge list: vertex ids from a label index built while reading.

    Every pass over the file meets the names in the same order, so ids stay the same across
    passes and the index, complete after the first pass, is shared by all of them.
    """

    def __init__(self, path, first, ncol, *, use_weight, comments, delimiter=None):
        self.path = path
        self.first = first
        self.ncol = ncol
        self.use_weight = use_weight
        self.comments = comments
        self.delimiter = delimiter
        self.index = {}
        self._decoded = []

    def _split(self, line):
        if self.delimiter is None:
            return line.split()
        return [t.strip() for t in line.strip().split(self.delimiter)]

    def pieces(self):
        """Yield ``(src, dst, weight)`` per block of the file."""
        line_no, offset, _ = self.first
        index = self.index
        for block in iter_blocks(self.path, offset):
            src, dst, weight = [], [], []
            for line in bytes(block).split(b"\n")[:-1]:    # (names as bytes: hashable)
                text = line.strip()
                if text and not text.startswith(self.comments):
                    tokens = self._split(text)
                    if len(tokens) != self.ncol:
                        raise InputFormatError(f"expected {self.ncol} columns, found "
                                               f"{len(tokens)}", self.path, line_no)
                    src.append(index.setdefault(tokens[0], len(index)))
                    dst.append(index.setdefault(tokens[1], len(index)))
                    if self.use_weight:
                        weight.append(self._weight(tokens[2], line_no))
                line_no += 1
            yield (np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64),
                   np.array(weight, dtype=np.float64) if self.use_weight else None)

    def _weight(self, token, line_no):
        try:
            return float(token)
        except ValueError:
            raise InputFormatError(f"weight {token.decode(errors='replace')!r} is not a number",
                                   self.path, line_no) from None

    def chunks(self, chunk_edges):
        return rechunk(self.pieces(), chunk_edges)

    def labels(self):
        """The name of every id met so far (ids ``0..k-1``), as str."""
        if len(self._decoded) != len(self.index):
            try:
                self._decoded = [token.decode("utf-8") for token in self.index]
            except UnicodeDecodeError as exc:
                raise InputFormatError(f"a vertex name is not UTF-8 ({exc.reason})",
                                       self.path) from None
        return self._decoded
