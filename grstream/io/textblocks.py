"""Streaming parse of line-oriented numeric text, shared by every text reader.

A text input is read in large byte blocks cut at line ends. Each block is parsed by numpy in C
(``np.fromstring``); Python only looks at single lines when a block does not fit the fast
paths, first to drop comment and blank lines, and last to say which line is malformed and why.

Why the fast path can trust a block without looking at its lines: deleting every digit and sign
from a line leaves its separators. If every line of a block leaves exactly the separators of the
file's first data line (``ncol - 1`` single characters) then no line holds more than ``ncol``
numbers, so the block holds ``ncol * lines`` numbers only if every line holds exactly ``ncol``.
"""
import gzip
import queue
import threading
import zlib

import numpy as np

from ..errors import InputFormatError
from .pipes import is_stream, stream_for

#: bytes read per block; a block's parsed values take about the same memory again
BLOCK_BYTES = 4 << 20
GZIP_MAGIC = b"\x1f\x8b"
try:
    # ISA-L's gzip reader (optional dependency ``grstream[fast]``): a drop-in for
    # ``gzip.open``, decompressing several times faster
    from isal import igzip as _gzip
    from isal.isal_zlib import error as _IsalError
    _GZIP_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile, _IsalError)
except ImportError:  # pragma: no cover - exercised by the fallback test
    _gzip = gzip
    _GZIP_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile)
#: a UTF-8 byte-order mark, which some editors put at the start of a text file
UTF8_BOM = b"\xef\xbb\xbf"
_INT_CHARS = b"0123456789+-"
_FLOAT_CHARS = _INT_CHARS + b".eE"
# fromstring saturates instead of failing on overflow, so these values mean "did not fit"
_INT64_LIMITS = (np.iinfo(np.int64).min, np.iinfo(np.int64).max)


def open_bytes(path, whole=False):
    """Open *path* for binary reading, decompressing gzip (detected by its magic bytes), and
    positioned after a UTF-8 byte-order mark when the (decompressed) text starts with one.

    Standard input (``-``) and pipes are read through :mod:`.pipes`: ``whole`` says the
    reader goes through the whole input (the data pass) rather than its first lines.

    Raises
    ------
    InputFormatError
        If the file does not exist or cannot be opened, or a pipe is read a second time.
    """
    if is_stream(path):
        return _after_bom(stream_for(path).reader(whole), path)
    try:
        raw = open(path, "rb")
    except FileNotFoundError as exc:
        raise InputFormatError("no such file", path) from exc
    except IsADirectoryError as exc:
        raise InputFormatError("is a directory, not a graph file", path) from exc
    except OSError as exc:
        raise InputFormatError(f"cannot open: {exc.strerror or exc}", path) from exc
    if raw.read(2) == GZIP_MAGIC:
        raw.close()
        return _after_bom(_gzip.open(path, "rb"), path)
    raw.seek(0)
    return _after_bom(raw, path)


def gzip_reader(fileobj):
    """A binary reader of the gzip data in ``fileobj`` (ISA-L's when installed)."""
    return _gzip.GzipFile(fileobj=fileobj, mode="rb")


def _after_bom(f, path):
    """*f* positioned after a leading UTF-8 byte-order mark, or at its start."""
    if read_checked(f, len(UTF8_BOM), path) != UTF8_BOM:
        f.seek(0)
    return f


def read_checked(f, size, path):
    """``f.read(size)`` that reports damaged gzip data as :class:`InputFormatError`."""
    try:
        return f.read(size)
    except _GZIP_ERRORS as exc:
        raise InputFormatError(f"truncated or corrupt gzip data ({exc})", path) from exc


def head_lines(path):
    """Yield ``(line_no, offset, line)`` for the lines of *path* from the start (1-based numbers).

    ``offset`` is where the line starts in the (decompressed) text, a byte-order mark before
    the first line counted; readers use it to resume block reading after their header.
    """
    with open_bytes(path) as f:
        offset = f.tell()
        line_no = 0
        while True:
            try:
                line = f.readline()
            except _GZIP_ERRORS as exc:
                raise InputFormatError(f"truncated or corrupt gzip data ({exc})", path) from exc
            if not line:
                return
            line_no += 1
            yield line_no, offset, line
            offset += len(line)


def _read_into(f, view, path):
    """Fill ``view`` from ``f`` (short only where the input ends); returns the bytes read.
    ``readinto`` decompresses straight into the block (ISA-L's and zlib's gzip readers)."""
    readinto = getattr(f, "readinto", None)
    done = 0
    while done < len(view):
        with view[done:] as rest:
            if readinto is None:
                data = read_checked(f, len(rest), path)
                rest[:len(data)] = data
                got = len(data)
            else:
                try:
                    got = readinto(rest)
                except _GZIP_ERRORS as exc:
                    raise InputFormatError(f"truncated or corrupt gzip data ({exc})",
                                           path) from exc
        if not got:
            break
        done += got
    return done


def _raw_blocks(path, offset, block_bytes):
    """Blocks of whole lines as ``bytearray``: each read in place after the line carried over
    from the one before, and cut after its last line end (no copy of the block)."""
    with open_bytes(path, whole=True) as f:
        if offset > f.tell():  # offset 0 is the start of the text, after any byte-order mark
            f.seek(offset)
        carry = b""
        while True:
            block = bytearray(len(carry) + block_bytes)
            block[:len(carry)] = carry
            with memoryview(block) as view:
                got = _read_into(f, view[len(carry):], path)
            if not got:
                break
            end = len(carry) + got
            cut = block.rfind(b"\n", 0, end) + 1
            if cut == 0:  # one line longer than a block: keep growing it
                carry = bytes(block[:end])
                continue
            carry = bytes(block[cut:end])
            del block[cut:]
            yield block
        if carry:
            yield bytearray(carry + b"\n")


def iter_blocks(path, offset=0, block_bytes=BLOCK_BYTES):
    """Yield blocks of whole lines (each ending in ``\\n``) from byte *offset* on, each a
    ``bytearray`` of its own.

    A background thread reads (and decompresses) the next block while the caller parses the
    current one: file reads and zlib release the GIL, so on two cores the two overlap.
    """
    q = queue.Queue(maxsize=2)
    stop = threading.Event()

    def put(item):
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce():
        try:
            for block in _raw_blocks(path, offset, block_bytes):
                if not put(("block", block)):
                    return
            put(("end", None))
        except BaseException as exc:  # handed to the consumer, which re-raises it
            put(("error", exc))

    worker = threading.Thread(target=produce, name="grstream-read", daemon=True)
    worker.start()
    try:
        while True:
            kind, item = q.get()
            if kind == "block":
                yield item
            elif kind == "end":
                return
            else:
                raise item
    finally:
        stop.set()
        worker.join()


def _fromstring(data, dtype):
    try:
        return np.fromstring(data, dtype=dtype, sep=" ")
    except ValueError:
        return None


class BlockParser:
    """Parse blocks of a numeric text table with a fixed number of columns.

    Parameters
    ----------
    path : str
        File name, for error messages.
    ncol : int
        Numbers on each data line (after *prefix*).
    keep : int
        How many leading columns to return (later ones are parsed and dropped).
    first_line : bytes
        The file's first data line; its separators set the fast path's template.
    prefix : bytes, optional
        A token every data line starts with (DIMACS ``a``), removed before parsing.
    comments : tuple of bytes
        Line starts marking comment lines, skipped anywhere.
    delimiter : bytes, optional
        ``b","`` for CSV; None means runs of spaces or tabs.
    id_columns : int
        Leading columns that are vertex ids (must be integers); the rest may be real.
    """

    def __init__(self, path, ncol, keep, first_line, *, prefix=None, comments=(b"#", b"%"),
                 delimiter=None, id_columns=2):
        self.path = path
        self.ncol = ncol
        self.keep = keep
        self.prefix = prefix
        self.comments = comments
        self.delimiter = delimiter
        self.id_columns = id_columns
        body = self._strip_prefix(first_line)
        end = b"\r\n" if body.endswith(b"\r\n") else b"\n"
        self._templates = []
        for chars, dtype in ((_INT_CHARS, np.int64), (_FLOAT_CHARS, np.float64)):
            template = body.rstrip(b"\r\n").translate(None, chars)
            if len(template) == ncol - 1:
                self._templates.append((chars, template + end, dtype))

    def _strip_prefix(self, line):
        if self.prefix is None:
            return line
        return line.lstrip()[len(self.prefix):]

    # -- fast paths --------------------------------------------------------------------------
    def _fast(self, block, nlines):
        if self.prefix is not None:
            # every line must start with the prefix, else a bare "1 2 3" line would pass
            framed = b"\n" + block
            if framed.count(b"\n" + self.prefix) != nlines:
                return None
            block = framed.replace(b"\n" + self.prefix, b"\n")[1:]
        for chars, template, dtype in self._templates:
            if block.translate(None, chars) == template * nlines:
                numbers = block.replace(b",", b" ") if self.delimiter else block
                values = _fromstring(numbers, dtype)
                if values is not None and values.size == nlines * self.ncol:
                    return values.reshape(nlines, self.ncol)
        if self.delimiter is None:
            return self._fast_sentinel(block, nlines)
        return None

    def _fast_sentinel(self, block, nlines):
        # Irregular whitespace: mark each line end with a -1 and check every row of ncol + 1
        # numbers ends with it; an id or weight equal to -1 sends the block to the slow path.
        marked = block.replace(b"\n", b" -1\n")
        for dtype in (np.int64, np.float64):
            values = _fromstring(marked, dtype)
            if values is None:
                continue
            if values.size != nlines * (self.ncol + 1):
                return None
            rows = values.reshape(nlines, self.ncol + 1)
            if (rows[:, -1] == -1).all() and not (rows[:, :-1] == -1).any():
                return rows[:, :-1]
            return None
        return None

    # -- slow path ---------------------------------------------------------------------------
    def _is_data(self, line):
        text = line.strip()
        return bool(text) and not text.startswith(self.comments)

    def _split(self, line):
        if self.delimiter is None:
            return line.split()
        return [t.strip() for t in line.strip().split(self.delimiter)]

    def _parse_line(self, line, line_no):
        tokens = self._split(line)
        if self.prefix is not None:
            if not tokens or tokens[0] != self.prefix.strip():
                raise InputFormatError(
                    f"expected a line starting with {self.prefix.strip().decode()!r}, found "
                    f"{line.strip()[:40].decode(errors='replace')!r}", self.path, line_no)
            tokens = tokens[1:]
        if len(tokens) != self.ncol:
            raise InputFormatError(f"expected {self.ncol} columns, found {len(tokens)}",
                                   self.path, line_no)
        row = []
        for k, token in enumerate(tokens[:self.keep]):
            text = token.decode(errors="replace")
            if k < self.id_columns:
                try:
                    row.append(int(text))
                except ValueError:
                    raise InputFormatError(f"vertex id {text!r} is not an integer",
                                           self.path, line_no) from None
            else:
                try:
                    row.append(float(text))
                except ValueError:
                    raise InputFormatError(f"weight {text!r} is not a number",
                                           self.path, line_no) from None
        return row

    def parse(self, block, first_line_no):
        """Parse one block of whole lines.

        Returns
        -------
        values : ndarray, shape (k, keep)
            int64 when every number is an integer, else float64.
        lines : int or ndarray
            The 1-based line number of row 0 when rows are consecutive lines, else each row's.
        nlines : int
            Lines in the block, data or not.
        """
        nlines = block.count(b"\n")
        values = self._fast(block, nlines)
        if values is not None:
            return values[:, :self.keep], first_line_no, nlines
        lines = block.split(b"\n")[:-1]
        data = [i for i, line in enumerate(lines) if self._is_data(line)]
        line_nos = first_line_no + np.asarray(data, dtype=np.int64)
        if 0 < len(data) < len(lines):
            values = self._fast(b"\n".join([lines[i] for i in data]) + b"\n", len(data))
            if values is not None:
                return values[:, :self.keep], line_nos, nlines
        rows = [self._parse_line(lines[i], int(n)) for i, n in zip(data, line_nos)]
        dtype = np.float64 if any(isinstance(x, float) for row in rows for x in row) else np.int64
        values = np.array(rows, dtype=dtype).reshape(len(rows), self.keep)
        return values, line_nos, nlines


def line_of(lines, row):
    """The 1-based line number of *row* given :meth:`BlockParser.parse`'s ``lines``."""
    if isinstance(lines, np.ndarray):
        return int(lines[row])
    return int(lines) + int(row)


def saturated(values):
    """Mask of int64 values that fromstring clipped because the text overflowed int64."""
    if values.dtype != np.int64:
        return np.zeros(values.shape, dtype=bool)
    return (values == _INT64_LIMITS[0]) | (values == _INT64_LIMITS[1])
