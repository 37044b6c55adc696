"""The streaming loop shared by the text readers: blocks -> parsed rows -> checked edge chunks."""
import os
import stat

import numpy as np

from ..errors import InputFormatError
from .chunking import rechunk
from .textblocks import BLOCK_BYTES, BlockParser, head_lines, iter_blocks, line_of
from .validate import to_edges

#: fewest bytes of text (after the header) parsed on worker processes when there are several
PARALLEL_TEXT_BYTES = 4 * BLOCK_BYTES


def find_first_data(path, is_data):
    """Scan the start of *path* for its first data line.

    Returns ``(header, first)`` where *header* lists ``(line_no, line)`` of the lines before it
    and *first* is ``(line_no, offset, line)`` of the first line ``is_data`` accepts, or None
    when the file has no data line (an empty graph).
    """
    header = []
    for line_no, offset, line in head_lines(path):
        if is_data(line):
            return header, (line_no, offset, line)
        header.append((line_no, line))
    return header, None


def file_size(path):
    """Bytes of a regular file; None for anything else (a pipe has no size) or when unknown."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


class TextTable:
    """How to stream one text file's data lines into edges.

    Parameters
    ----------
    path : str
        The file.
    first : (int, int, bytes)
        ``(line_no, offset, line)`` of the first data line.
    ncol : int
        Numbers per data line.
    use_weight : bool
        Return column 3 as the weight.
    base : int
        1 for 1-based ids.
    limits : (int or None, int or None)
        Declared row / column counts, checked per id column.
    transform : callable, optional
        ``transform(src, dst, weight) -> (src, dst, weight)`` applied to each checked piece
        (symmetric expansion, bipartite offsets).
    expected : (int, str, int), optional
        ``(count, what, line_no)``: the number of data lines the header declares, a word for
        them in the error, and the header's line.
    workers : int
        Processes that parse blocks at once (:mod:`.parallel_text`) when the text is at least
        ``PARALLEL_TEXT_BYTES`` (or compressed, or a pipe); 1 parses here, block after block.
    parser_options : dict
        Passed to :class:`BlockParser` (prefix, comments, delimiter).
    """

    def __init__(self, path, first, ncol, *, use_weight, base=0, limits=(None, None),
                 transform=None, expected=None, block_bytes=None, workers=1,
                 **parser_options):
        self.path = path
        self.first = first
        self.ncol = ncol
        self.use_weight = use_weight
        self.base = base
        self.limits = limits
        self.transform = transform
        self.expected = expected
        self.block_bytes = BLOCK_BYTES if block_bytes is None else block_bytes
        self.workers = max(1, int(workers))
        self.parser_options = parser_options
        self.parser = BlockParser(path, ncol, 3 if use_weight else 2, first[2], **parser_options)

    def pieces(self):
        """Yield checked ``(src, dst, weight)`` pieces, one per block."""
        large = self._large()
        if self.workers > 1 and large:
            from .parallel_text import parallel_pieces
            yield from parallel_pieces(self, self.workers)
            return
        fast = self.fast_parser() if large else None
        line_no, offset, _ = self.first
        count = 0
        for block in iter_blocks(self.path, offset, self.block_bytes):
            answer = check_block(block, self.parser, fast, self.use_weight, self.base,
                                 self.limits)
            line_no = self.account(answer, line_no)
            count += len(answer[0])
            yield self.transform(*answer[:3]) if self.transform else answer[:3]
        self.check_count(count)

    def _large(self):
        """Worker processes and Arrow pay off beyond a few blocks: they take a moment to
        start (import)."""
        size = file_size(self.path)
        return size is None or size - self.first[1] >= PARALLEL_TEXT_BYTES

    def fast_parser(self, make=True):
        """The :class:`.arrowtext.ArrowParser` of this table, or None (not installed, or the
        first data line's separators are not single characters); ``make=False``: True
        instead of the parser, without importing Arrow."""
        from .arrowtext import arrow_parser
        return arrow_parser(self.ncol, 3 if self.use_weight else 2, self.first[2], make=make,
                            **self.parser_options)

    def account(self, answer, line_no):
        """The line after a block answered by :func:`check_block` that began at ``line_no``;
        raises the block's error with its line in the file."""
        if len(answer) == 2:
            message, line = answer
            raise InputFormatError(message, self.path, None if line is None else line_no + line - 1)
        return line_no + answer[3]

    def check_count(self, count):
        """Raise when the header declared another number of data lines than ``count``."""
        if self.expected is not None and count != self.expected[0]:
            declared, what, header_line = self.expected
            raise InputFormatError(f"header declares {declared} {what} but the file has {count}",
                                   self.path, header_line)

    def chunks(self, chunk_edges):
        return rechunk(self.pieces(), chunk_edges)


def check_block(block, parser, fast, use_weight, base, limits):
    """Parse and check one block of whole lines: with ``fast`` (an
    :class:`.arrowtext.ArrowParser`) where it answers, else with ``parser`` (a
    :class:`.textblocks.BlockParser`). Returns ``(src, dst, weight, nlines)`` or ``(message,
    line)`` of the block's first error (``line`` 1-based from the block's start, or None).
    ``block`` is ``bytes``, or a ``bytearray`` read in place (Arrow reads either)."""
    if fast is not None:
        edges = fast.edges(block, base, limits)
        if edges is not None:
            return edges
    block = bytes(block)     # the block parser's passes take bytes
    try:
        values, lines, nlines = parser.parse(block, 1)

        def fail(row, message):
            raise InputFormatError(message, parser.path, line_of(lines, row))

        weight = values[:, 2] if use_weight else None
        src, dst, weight = to_edges(values[:, 0], values[:, 1], weight, fail, base=base,
                                    limits=limits)
    except InputFormatError as exc:
        return exc.message, exc.line
    return src, dst, weight, nlines


def mirror(src, dst, weight):
    """Both directions of each undirected edge; a self-loop stays a single edge."""
    off = src != dst
    weight = None if weight is None else np.concatenate([weight, weight[off]])
    return np.concatenate([src, dst[off]]), np.concatenate([dst, src[off]]), weight


def is_data_line(comments):
    """A predicate for lines that are neither blank nor start with one of *comments*."""
    def is_data(line):
        text = line.strip()
        return bool(text) and not text.startswith(comments)
    return is_data
