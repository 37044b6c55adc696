"""Inputs that can be read only once: standard input (``-``), FIFOs and other pipes.

A file reader opens its input several times: once or twice for the header, then for the data
lines, and again for every further pass of the build. A pipe gives its bytes once, so each one
is opened once per process and kept here. What the header readers look at (the first lines)
is kept in memory and replayed to every later reader; the data reader goes on from there
straight from the pipe, so the edges stream through without being held. An input that ends
within what the header readers kept (a small one) can then be read any number of times; any
other input can be read through once, and a second pass raises :class:`InputFormatError`.
gzip data in the pipe is decompressed by the reader files use (:mod:`.textblocks`: ISA-L when
installed).
"""
import gzip
import os
import stat
import sys
import threading

from ..errors import InputFormatError

#: how ``-`` (standard input) is named in messages and in the store's ``build`` record
STDIN_NAME = "<stdin>"
#: bytes added to the kept head at a time while a header reader needs more
_STEP = 1 << 16

_streams = {}
_streams_lock = threading.Lock()


def input_name(path):
    """The name an input goes by: ``<stdin>`` for ``-``, else the path as given."""
    return STDIN_NAME if str(path) in ("-", STDIN_NAME) else str(path)


def is_stream(path):
    """True for ``-``/``<stdin>`` and for paths that are FIFOs, sockets or character devices
    (``/dev/stdin`` on a pipe): inputs that cannot be read again or at an offset."""
    if input_name(path) == STDIN_NAME:
        return True
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def stream_for(path):
    """The :class:`OnceStream` of a stream input, opened on first use."""
    name = input_name(path)
    with _streams_lock:
        stream = _streams.get(name)
        if stream is None:
            if name == STDIN_NAME:
                raw = sys.stdin.buffer
            else:
                try:
                    raw = open(name, "rb")
                except OSError as exc:
                    raise InputFormatError(f"cannot open: {exc.strerror or exc}", name) from exc
            stream = _streams[name] = OnceStream(name, raw)
        return stream


def reopen(path):
    """Forget a pipe's earlier stream, so the next reader opens it anew (a new writer's data);
    standard input is one stream for the whole process and is kept."""
    name = input_name(path)
    if name == STDIN_NAME:
        return
    with _streams_lock:
        stream = _streams.pop(name, None)
    if stream is not None:
        stream.close()


class _Prefixed:
    """A raw byte source with bytes already read from it put back in front."""

    def __init__(self, raw, prefix):
        self._raw = raw
        self._prefix = prefix

    def read(self, size=-1):
        if self._prefix:
            if size is None or size < 0:
                data, self._prefix = self._prefix + self._raw.read(), b""
                return data
            data, self._prefix = self._prefix[:size], self._prefix[size:]
            if len(data) < size:
                data += self._raw.read(size - len(data))
            return data
        return self._raw.read(size)

    def readinto(self, buffer):
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[:len(data)] = data
        return len(data)


class OnceStream:
    """One stream input: its (decompressed) bytes, the head kept for replays, and whether a
    reader has gone past the head (after which only the head can be read again)."""

    def __init__(self, name, raw):
        self.name = name
        self._raw = raw
        self._source = None
        self.head = bytearray()
        self.eof = False
        self.consumed = False

    def close(self):
        if isinstance(self._source, gzip.GzipFile):
            self._source.close()
        self._raw.close()

    def _data(self):
        if self._source is None:
            # imported here: textblocks imports this module
            from .textblocks import GZIP_MAGIC, gzip_reader
            first = self._raw.read(2)
            prefixed = _Prefixed(self._raw, first)
            self._source = gzip_reader(prefixed) if first == GZIP_MAGIC else prefixed
        return self._source

    def read_again_error(self):
        what = "standard input" if self.name == STDIN_NAME else "a pipe (FIFO)"
        return InputFormatError(
            f"{what} can be read only once, and this build reads its input again (a build with "
            "--memory-limit or --renumber reads it more than once): save it to a file first",
            self.name)

    def fill(self, size):
        """Keep at least ``size`` bytes of the head (fewer when the input ends first)."""
        while len(self.head) < size and not self.eof:
            if self.consumed:
                raise self.read_again_error()
            data = self._data().read(max(size - len(self.head), _STEP))
            if data:
                self.head += data
            else:
                self.eof = True

    def reader(self, whole):
        """A file-like reader from the start; ``whole``: it reads on past the head (the data
        pass), else it keeps what it reads for later readers (a header reader)."""
        if whole and self.consumed:
            raise self.read_again_error()
        return StreamReader(self, whole)

    def read_on(self, size):
        """Bytes past the head, straight from the input (the data pass)."""
        if self.eof:
            return b""
        data = self._data().read(size)
        if data:
            self.consumed = True  # these bytes are not kept: no reader can have them again
        else:
            self.eof = True       # the head is the whole input: it replays any number of times
        return data


class StreamReader:
    """The binary file interface the text readers use (``read``, ``readline``, ``seek``,
    ``tell``) over a :class:`OnceStream`."""

    def __init__(self, stream, whole):
        self._stream = stream
        self._whole = whole
        self._pos = 0
        self._past_head = False

    def tell(self):
        return self._pos

    def seek(self, pos, whence=0):
        if whence != 0 or pos < 0:
            raise OSError("a stream input seeks only to an offset from its start")
        if pos > len(self._stream.head):
            self._stream.fill(pos)
            if pos > len(self._stream.head):
                raise OSError(f"offset {pos} is beyond the end of {self._stream.name}")
        self._pos = pos
        return pos

    def read(self, size=-1):
        stream = self._stream
        if size is None or size < 0:
            size = 1 << 62
        if not self._whole:
            stream.fill(self._pos + min(size, _STEP))
        elif self._pos >= len(stream.head) and not stream.eof:
            if not self._past_head and stream.consumed:
                raise stream.read_again_error()
            self._past_head = True
            data = stream.read_on(size)
            self._pos += len(data)
            return data
        data = bytes(stream.head[self._pos:self._pos + size])
        self._pos += len(data)
        return data

    def readline(self):
        stream = self._stream
        while True:
            end = stream.head.find(b"\n", self._pos)
            if end >= 0 or stream.eof:
                stop = len(stream.head) if end < 0 else end + 1
                break
            stream.fill(len(stream.head) + _STEP)
        line = bytes(stream.head[self._pos:stop])
        self._pos = stop
        return line

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
