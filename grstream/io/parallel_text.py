"""Text blocks parsed on several threads or worker processes, handed back in file order.

Where Arrow parses the blocks (:mod:`.arrowtext`, which releases the GIL) they are parsed on
threads of this process: a plain file is cut at line ends into byte ranges that each thread
reads itself (``os.preadv`` into a buffer of its own), gzip data and pipes are read (and
decompressed) by one reader thread; neither text nor edges pass between processes, and no
process has to start. Without Arrow, the block parser (:class:`.textblocks.BlockParser`) runs
numpy's text conversion and bytes passes that hold the GIL, so threads would take turns on one
core; worker processes parse blocks side by side instead (a plain file's byte ranges read by
the worker, other blocks sent to it). Each block answers with its checked 0-based edges, or
the first error in it with its line counted from the block's start, which this process turns
into the file's line: the pieces, their order and every message are those of the one-process
reader (:meth:`.texttable.TextTable.pieces`).

The workers are fresh interpreters (``python -c``) talking pickle over their standard input
and output, not :mod:`multiprocessing`'s: those would import the caller's main script again
(every script would need a ``__main__`` guard) or fork a process whose other threads may hold
locks. Blocks go out round robin and come back in that order; a feeder thread per worker
writes its blocks, so a large block waiting to be written never holds up reading results.

Memory: at most ``AHEAD_PER_WORKER`` blocks per thread or worker are in flight (their text and
their parsed edges), beside each worker's interpreter (about 30 MB).
"""
import os
import pickle
import queue
import signal
import stat
import subprocess
import sys
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from ..errors import InputFormatError, InternalError
from .arrowtext import arrow_parser
from .textblocks import GZIP_MAGIC, BlockParser, iter_blocks
from .texttable import check_block

#: blocks handed to each worker ahead of the one the caller is reading
AHEAD_PER_WORKER = 2
#: bytes read back from a cut point at a time to find the line end before it
_CUT_WINDOW = 1 << 16
_WORKER = "from grstream.io.parallel_text import serve; serve()"


def parse_block(job, parser, fast, use_weight, base, limits):
    """:func:`.texttable.check_block` of one block: ``job`` is its bytes, or ``(path, start,
    stop)`` of a plain file to read."""
    if isinstance(job, tuple):
        job = _read_range(*job)
    return check_block(job, parser, fast, use_weight, base, limits)


def serve():
    """A worker's loop: the table's settings, then blocks until its input ends; each answer is
    :func:`parse_block`'s, or ``(exception,)`` when parsing failed otherwise."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # the caller stops it by closing the input
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    path, ncol, first_line, use_weight, base, limits, options, fast = pickle.load(source)
    keep = 3 if use_weight else 2
    fast = arrow_parser(ncol, keep, first_line, **options) if fast else None
    settings = (BlockParser(path, ncol, keep, first_line, **options), fast, use_weight, base,
                limits)
    while True:
        try:
            job = pickle.load(source)
        except EOFError:
            return
        try:
            answer = parse_block(job, *settings)
        except Exception as exc:   # handed back: the caller raises it
            answer = (exc,)
        pickle.dump(answer, sink, protocol=pickle.HIGHEST_PROTOCOL)
        sink.flush()


def _read_range(path, start, stop):
    """The bytes ``start..stop-1`` of ``path`` ending in a line end, in a new ``bytearray``
    (read in place: no copy of the block)."""
    data = bytearray(stop - start)
    view = memoryview(data)
    with open(path, "rb") as f:
        done = 0
        while done < len(data):
            got = os.preadv(f.fileno(), [view[done:]], start + done)
            if not got:
                raise InputFormatError(f"the file shrank while it was read (at byte "
                                       f"{start + done})", path)
            done += got
    view.release()
    if not data.endswith(b"\n"):
        data += b"\n"       # the last line of a file without a final line end
    return data


def is_plain_file(path):
    """A regular file that is not gzip-compressed: workers can read its byte ranges."""
    try:
        with open(path, "rb") as f:
            return stat.S_ISREG(os.fstat(f.fileno()).st_mode) and f.read(2) != GZIP_MAGIC
    except OSError:
        return False


def line_ranges(path, offset, block_bytes):
    """``(path, start, stop)`` byte ranges from ``offset`` to the end of a plain file, cut
    where :func:`.textblocks.iter_blocks` cuts its blocks: after the last line end before
    each multiple of ``block_bytes`` past ``offset`` (none where no line ends since the last
    cut), and before a last line without a line end. Transforms of whole blocks (the mirrored
    edges of a symmetric file) then see the same blocks either way."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        start = grid = offset
        while start < size:
            grid = min(grid + block_bytes, size)
            cut = _last_line_end(f.fileno(), start, grid)
            if cut is not None:
                yield path, start, cut
                start = cut
            if grid == size and start < size:
                yield path, start, size
                return


def _last_line_end(fd, start, stop):
    """The position after the last ``\n`` in bytes ``start..stop-1``, or None."""
    while stop > start:
        low = max(start, stop - _CUT_WINDOW)
        window = os.pread(fd, stop - low, low)
        end = window.rfind(b"\n")
        if end >= 0:
            return low + end + 1
        stop = low
    return None


class _Worker:
    """One worker process and the thread that writes its blocks."""

    def __init__(self, settings):
        env = dict(os.environ)
        # the workers import this package from where the caller found it
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
        self.process = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=env)
        self.jobs = queue.Queue()
        self.feeder = threading.Thread(target=self._feed, args=(settings,), daemon=True,
                                       name="grstream-text-feed")
        self.feeder.start()

    def _feed(self, settings):
        sink = self.process.stdin
        try:
            pickle.dump(settings, sink, protocol=pickle.HIGHEST_PROTOCOL)
            while True:
                job = self.jobs.get()
                if job is None:
                    break
                pickle.dump(job, sink, protocol=pickle.HIGHEST_PROTOCOL)
                sink.flush()
        except (BrokenPipeError, OSError):
            pass                # the worker ended: its reader reports it
        finally:
            try:
                sink.close()
            except OSError:
                pass

    def send(self, job):
        self.jobs.put(job)

    def receive(self):
        try:
            return pickle.load(self.process.stdout)
        except EOFError:
            code = self.process.wait()
            if code == -signal.SIGKILL:
                raise MemoryError("a text parsing process was killed (out of memory?)") from None
            raise InternalError(f"a text parsing process ended with status {code}") from None

    def close(self):
        self.jobs.put(None)
        self.feeder.join()
        self.process.stdout.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class _Processes:
    """Blocks parsed on worker processes, handed out round robin."""

    def __init__(self, table, workers):
        # the parser's arguments, not the parser: plain values pickle whatever imports it
        settings = (table.path, table.ncol, table.first[2], table.use_weight, table.base,
                    table.limits, table.parser_options, bool(table.fast_parser(make=False)))
        self.pool = [_Worker(settings) for _ in range(workers)]
        self.sent = 0

    def submit(self, job):
        """Send ``job``; returns what answers it, in the order the jobs were sent."""
        worker = self.pool[self.sent % len(self.pool)]
        self.sent += 1
        worker.send(job)
        return worker.receive

    def close(self):
        for worker in self.pool:
            worker.close()


class _Threads:
    """Blocks parsed by Arrow on threads of this process (it releases the GIL)."""

    def __init__(self, table, fast, workers):
        self.settings = (table.parser, fast, table.use_weight, table.base, table.limits)
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="grstream-text")

    def submit(self, job):
        return self.pool.submit(parse_block, job, *self.settings).result

    def close(self):
        self.pool.shutdown(cancel_futures=True)


def parallel_pieces(table, workers):
    """:meth:`TextTable.pieces` of ``table`` with its blocks parsed ``workers`` at a time: on
    threads when Arrow parses them, else on worker processes; a plain file's byte ranges read
    by whichever parses them, other blocks (gzip, a pipe) read here."""
    line_no, offset, _ = table.first
    if is_plain_file(table.path):
        jobs = line_ranges(table.path, offset, table.block_bytes)
    else:
        jobs = iter_blocks(table.path, offset, table.block_bytes)
    fast = table.fast_parser()
    pool = _Threads(table, fast, workers) if fast else _Processes(table, workers)
    count = 0
    pending = deque()           # what answers each block in flight, in file order

    def take():
        nonlocal line_no, count
        answer = pending.popleft()()
        if len(answer) == 1:
            raise answer[0]
        line_no = table.account(answer, line_no)
        count += len(answer[0])
        return table.transform(*answer[:3]) if table.transform else answer[:3]

    try:
        for job in jobs:
            if len(pending) >= AHEAD_PER_WORKER * workers:
                yield take()
            pending.append(pool.submit(job))
        while pending:
            yield take()
    finally:
        pool.close()
    table.check_count(count)
