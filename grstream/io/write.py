"""Write edge chunks to ``.npy``, text (``.el``, ``.txt``, ...) or gzip text, atomically.

The file appears under its name only once complete (:func:`grstream.io.atomic.atomic_file`), so
an interrupted run never leaves a truncated graph behind.
"""
import contextlib
import gzip

import numpy as np

from ..errors import UsageError
from .atomic import atomic_file, write_array

_TEXT = (".el", ".txt", ".tsv", ".edges", ".snap")
_POW10 = 10 ** np.arange(19, dtype=np.int64)


def output_kind(path):
    """``"npy"``, ``"text"`` or ``"gzip"`` for an output file name."""
    name = str(path).lower()
    if name.endswith(".npy"):
        return "npy"
    if name.endswith(".gz"):
        return "gzip"
    if name.endswith(_TEXT):
        return "text"
    raise UsageError(f"cannot tell the output format of {path}: use .npy, .el, .txt, .tsv, "
                     ".edges or add .gz for compressed text")


def format_text(columns):
    """Tab-separated lines of non-negative integer columns, built with numpy (no per-line Python).

    Each number's digits are written into a fixed-width byte grid, then the leading zeros are
    squeezed out with one boolean selection.
    """
    n = len(columns[0])
    if n == 0:
        return b""
    widths = [max(1, int(np.searchsorted(_POW10, int(c.max()), side="right"))) for c in columns]
    line = sum(widths) + len(columns)
    grid = np.empty((n, line), dtype=np.uint8)
    keep = np.ones((n, line), dtype=bool)
    pos = 0
    for col, width in zip(columns, widths):
        col = col.astype(np.int64, copy=False)
        digits = np.searchsorted(_POW10, col, side="right").clip(1)
        for k in range(width):
            grid[:, pos + k] = (col // _POW10[width - 1 - k]) % 10 + 48
            keep[:, pos + k] = digits >= width - k
        grid[:, pos + width] = 9  # tab
        pos += width + 1
    grid[:, -1] = 10
    return grid[keep].tobytes()


def _text_lines(src, dst, weight):
    if weight is None:
        return format_text([src, dst])
    if np.all(weight == np.round(weight)) and weight.min() >= 0:
        return format_text([src, dst, weight.astype(np.int64)])
    return b"".join(b"%d\t%d\t%r\n" % (s, d, w) for s, d, w in
                    zip(src.tolist(), dst.tolist(), weight.tolist()))


def write_edges(path, chunks, *, weighted, total_edges=None, progress=None):
    """Write ``(src, dst, weight)`` chunks to *path*, format chosen by its extension.

    Parameters
    ----------
    path : str or os.PathLike
        ``.npy`` (int64 ``(m, 2)``, or float64 ``(m, 3)`` when weighted), text (tab separated)
        or ``.gz`` text.
    chunks : iterable of (src, dst, weight)
    weighted : bool
        Whether to write the weight column.
    total_edges : int, optional
        Required for ``.npy``, whose header holds the shape.
    progress : callable, optional
        Called with the edge count of each chunk written.

    Returns
    -------
    int
        Edges written.

    Raises
    ------
    UsageError
        An unknown extension, or ``.npy`` without ``total_edges`` or with a different count.
    OutputError
        The disk is full (nothing is left under ``path`` or its temporary name).
    """
    path = str(path)
    kind = output_kind(path)
    if kind == "npy" and total_edges is None:
        raise UsageError(".npy output needs the edge count up front (total_edges)")
    with atomic_file(path) as f:
        if kind == "npy":
            return _write_npy(f, chunks, weighted, total_edges, progress)
        written = 0
        out = gzip.GzipFile(fileobj=f, mode="wb", compresslevel=1) if kind == "gzip" else f
        with out if kind == "gzip" else contextlib.nullcontext():
            for src, dst, weight in chunks:
                out.write(_text_lines(src, dst, weight if weighted else None))
                written += len(src)
                if progress:
                    progress(len(src))
        return written


def _write_npy(f, chunks, weighted, total_edges, progress):
    # through write() and not a memory map: a full disk is then an OSError, not a SIGBUS
    dtype = np.dtype(np.float64 if weighted else np.int64)
    columns = 3 if weighted else 2
    np.lib.format.write_array_header_1_0(
        f, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
            "shape": (total_edges, columns)})
    written = 0
    for src, dst, weight in chunks:
        n = len(src)
        if written + n > total_edges:
            raise UsageError(f"more edges than total_edges={total_edges}")
        rows = np.empty((n, columns), dtype=dtype)
        rows[:, 0], rows[:, 1] = src, dst
        if weighted:
            rows[:, 2] = weight
        write_array(f, rows)
        written += n
        if progress:
            progress(n)
    if written != total_edges:
        raise UsageError(f"wrote {written} edges but total_edges={total_edges}")
    return written


def save_npy(path, array):
    """``np.save`` atomically, through ``write()`` so that a full disk names ``path``."""
    array = np.ascontiguousarray(array)
    with atomic_file(path) as f:
        np.lib.format.write_array_header_1_0(f, np.lib.format.header_data_from_array_1_0(array))
        write_array(f, array)


def save_text(path, text):
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_file(path, text=True) as f:
        f.write(text)
