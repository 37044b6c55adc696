"""Binary ``.npy`` edge tables, memory-mapped so files larger than memory stream chunk by chunk."""
import numpy as np

from ..errors import InputFormatError
from .arrays import array_source, columns_of_table
from .texttable import file_size


def read_npy(path, *, weighted=None, chunk_edges=None):
    """Open an ``.npy`` file holding an ``(m, 2)`` integer or ``(m, 3)`` edge table.

    Parameters
    ----------
    path : str or os.PathLike
        The file (read with ``mmap_mode='r'``).
    weighted : bool or None
        None: use the third column when present; True: require it; False: drop it.
    chunk_edges : int, optional
        Maximum edges per chunk.

    Raises
    ------
    InputFormatError
        A missing or unreadable file or a wrong shape or dtype (at open); bad ids or weights
        while streaming, naming the 0-based row.
    """
    path = str(path)
    try:
        table = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError as exc:
        raise InputFormatError("no such file", path) from exc
    except (ValueError, OSError, EOFError) as exc:
        raise InputFormatError(f"not a readable .npy array ({exc})", path) from exc
    src, dst, weight = columns_of_table(table, path)
    if weight is None and table.dtype.kind == "f":
        raise InputFormatError(f"an (m, 2) edge table must hold integers, not {table.dtype}", path)
    return array_source(src, dst, weight, name=path, weighted=weighted, chunk_edges=chunk_edges,
                        fmt="npy", check_now=False, size_bytes=file_size(path))
