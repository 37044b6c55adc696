"""Binary ``.npy`` edge tables, streamed chunk by chunk with plain reads into reused buffers.

With ``threads`` above one, that many chunks are read and checked at once, each on a thread
of its own with its own buffer (file reads and numpy's passes release the GIL), and handed
over in file order, so the edges and any error are the same as one thread's.

A memory map would be simpler, but every page it touches counts toward the process's RSS until
the kernel reclaims it, so a bounded-memory build over a large file would look unbounded.
"""
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import InputFormatError
from .arrays import columns_of_table
from .base import EdgeSource
from .chunking import check_chunk_edges
from .sidefile import declared_vertices
from .texttable import file_size
from .validate import refuse_empty, resolve_weighted, to_edges


def read_npy(path, *, weighted=None, chunk_edges=None, threads=1):
    """Open an ``.npy`` file holding an ``(m, 2)`` integer or ``(m, 3)`` edge table.

    A side file ``NAME.json`` (:mod:`.sidefile`, written by ``grstream generate``) declares
    the vertex count, isolated vertices included.

    Parameters
    ----------
    path : str or os.PathLike
        The file; only its header is read at open, rows are read per chunk.
    weighted : bool or None
        None: use the third column when present; True: require it; False: drop it.
    chunk_edges : int, optional
        Maximum edges per chunk (also the size of each reused read buffer).
    threads : int
        Chunks read and checked at once (each holds a buffer of ``chunk_edges`` rows).

    Raises
    ------
    InputFormatError
        A missing, unreadable or truncated file or a wrong shape or dtype (at open); bad ids
        or weights while streaming, naming the 0-based row.
    """
    path = str(path)
    shape, fortran, dtype, offset = _header(path)
    # a zero-byte view with the file's shape and dtype, so the array reader's checks apply as is
    table = np.broadcast_to(np.zeros((), dtype=dtype), shape)
    _, _, weight = columns_of_table(table, path)
    if weight is None and dtype.kind == "f":
        raise InputFormatError(f"an (m, 2) edge table must hold integers, not {dtype}", path)
    m, cols = shape
    if m == 0:
        refuse_empty(path, f"the array has shape {shape}")
    if file_size(path) < offset + m * cols * dtype.itemsize:
        raise InputFormatError(f"truncated: the header declares {m} rows of {cols} {dtype} "
                               f"but the file is shorter", path)
    chunk_edges = check_chunk_edges(chunk_edges)
    use_weight = resolve_weighted(weight is not None, weighted, path)
    declared = declared_vertices(path)

    def chunks():
        return _stream(path, m, cols, fortran, dtype, offset, chunk_edges, use_weight, declared,
                       max(1, int(threads)))

    def rows(start, stop):
        with open(path, "rb") as handle:
            return _read_rows(handle, path, (m, cols, fortran, dtype, offset), start,
                              stop - start, np.empty((stop - start) * cols, dtype=dtype),
                              use_weight, declared)

    return EdgeSource(path, chunks, use_weight, declared, file_size(path), "npy", {"edges": m},
                      rows=rows)


def _header(path):
    try:
        with open(path, "rb") as handle:
            version = np.lib.format.read_magic(handle)
            read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                    else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read(handle)
            offset = handle.tell()
    except FileNotFoundError as exc:
        raise InputFormatError("no such file", path) from exc
    except (ValueError, OSError, EOFError) as exc:
        raise InputFormatError(f"not a readable .npy array ({exc})", path) from exc
    if dtype.hasobject:
        raise InputFormatError(f"edge array must be integer or real, not {dtype}", path)
    return shape, fortran, dtype, offset


def _read_rows(handle, path, table, start, k, buffer, use_weight, declared):
    """Rows ``start..start+k-1`` of the file's ``table`` (``(m, cols, fortran, dtype, offset)``)
    as a checked chunk, read into ``buffer`` (refilled afterwards: the chunk's arrays are new)."""
    m, cols, fortran, dtype, offset = table
    block = buffer[:k * cols]
    if fortran:
        # column-major: each column's rows are one contiguous run
        for c in range(cols):
            _read_exactly(handle, offset + (c * m + start) * dtype.itemsize,
                          block[c * k:(c + 1) * k], path)
        rows = block.reshape(cols, k).T
    else:
        _read_exactly(handle, offset + start * cols * dtype.itemsize, block, path)
        rows = block.reshape(k, cols)

    def fail(row, message):
        raise InputFormatError(f"row {start + row}: {message}", path)

    return to_edges(rows[:, 0], rows[:, 1], rows[:, 2] if use_weight else None,
                    fail, limits=(declared, declared))


def _stream(path, m, cols, fortran, dtype, offset, chunk_edges, use_weight, declared, threads=1):
    with open(path, "rb") as handle:
        def chunk(start, buffer):
            return _read_rows(handle, path, (m, cols, fortran, dtype, offset), start,
                              min(chunk_edges, m - start), buffer, use_weight, declared)

        size = min(chunk_edges, m) * cols
        starts = range(0, m, chunk_edges)
        if threads == 1 or len(starts) == 1:
            buffer = np.empty(size, dtype=dtype)
            for start in starts:
                yield chunk(start, buffer)
            return
        with ThreadPoolExecutor(threads, thread_name_prefix="grstream-npy") as pool:
            buffers = [np.empty(size, dtype=dtype) for _ in range(threads)]
            pending = deque()
            try:
                for k, start in enumerate(starts):
                    if len(pending) == threads:
                        yield pending.popleft().result()
                    pending.append(pool.submit(chunk, start, buffers[k % threads]))
                while pending:
                    yield pending.popleft().result()
            finally:
                for future in pending:
                    future.cancel()


def _read_exactly(handle, position, out, path):
    # positioned reads: several threads share the file's one descriptor
    view = memoryview(out).cast("B")
    done = 0
    while done < len(view):
        got = os.preadv(handle.fileno(), [view[done:]], position + done)
        if not got:
            raise InputFormatError(f"truncated at byte {position + done}", path)
        done += got
