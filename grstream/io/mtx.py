"""Matrix Market coordinate files (``.mtx``): entry ``i j [value]`` is the edge i-1 -> j-1.

``symmetric`` files list each undirected edge once; both directions are returned (a diagonal
entry once). The size line fixes ``num_vertices = max(rows, cols)``; ids beyond it and an entry
count different from it are errors. Dense ``array`` files and complex, hermitian and
skew-symmetric matrices are not graphs grstream reads.
"""
import contextlib

from ..errors import InputFormatError
from .base import EdgeSource
from .chunking import check_chunk_edges
from .textblocks import head_lines
from .texttable import TextTable, file_size, is_data_line, mirror
from .validate import refuse_empty, resolve_weighted

_FIELDS = {"pattern": 2, "integer": 3, "real": 3}
_SYMMETRIES = ("general", "symmetric")


def _banner(path, line):
    tokens = line.decode(errors="replace").lower().split()
    if len(tokens) != 5 or tokens[0] != "%%matrixmarket":
        raise InputFormatError("not a Matrix Market file: the first line must be "
                               "'%%MatrixMarket matrix coordinate <field> <symmetry>'", path, 1)
    _, obj, layout, field, symmetry = tokens
    if obj != "matrix" or layout != "coordinate":
        raise InputFormatError(f"Matrix Market '{obj} {layout}' is not supported: "
                               "only 'matrix coordinate' files are graphs", path, 1)
    if field not in _FIELDS:
        raise InputFormatError(f"Matrix Market field '{field}' is not supported "
                               "(use pattern, integer or real)", path, 1)
    if symmetry not in _SYMMETRIES:
        raise InputFormatError(f"Matrix Market symmetry '{symmetry}' is not supported "
                               "(use general or symmetric)", path, 1)
    return field, symmetry


def _size_line(path, line_no, line):
    tokens = line.split()
    try:
        sizes = [int(t) for t in tokens]
    except ValueError:
        sizes = None
    if sizes is None or len(sizes) != 3 or min(sizes) < 0:
        raise InputFormatError("the size line must be 'rows cols entries' (non-negative integers)",
                               path, line_no)
    return sizes


def read_mtx(path, *, weighted=None, chunk_edges=None, threads=1):
    """Open a Matrix Market coordinate file as an :class:`EdgeSource`.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.mtx`` file, optionally gzip-compressed.
    weighted : bool or None
        None: weights for integer/real files, none for pattern files; True: require them;
        False: drop them.
    chunk_edges : int, optional
        Maximum edges per chunk.
    threads : int
        Processes that parse blocks of the text at once (:mod:`.parallel_text`; 1: this one).

    Returns
    -------
    EdgeSource
        ``num_vertices`` is ``max(rows, cols)``; ``meta`` holds field, symmetry and the size line.

    Raises
    ------
    InputFormatError
        Bad banner or size line at open; bad entries, ids beyond the size line and an entry count
        different from the size line's while streaming.
    """
    path = str(path)
    chunk_edges = check_chunk_edges(chunk_edges)
    is_data = is_data_line((b"%",))
    field = symmetry = sizes = first = None
    with contextlib.closing(head_lines(path)) as lines:
        for line_no, offset, line in lines:
            if field is None:
                field, symmetry = _banner(path, line)
            elif not is_data(line):
                continue
            elif sizes is None:
                sizes = _size_line(path, line_no, line)
                size_line_no = line_no
            else:
                first = (line_no, offset, line)
                break
    if field is None:
        raise InputFormatError("empty file: no Matrix Market banner", path)
    if sizes is None:
        raise InputFormatError("missing the size line 'rows cols entries'", path)
    rows, cols, entries = sizes
    use_weight = resolve_weighted(field != "pattern", weighted, path)
    meta = {"field": field, "symmetry": symmetry, "rows": rows, "cols": cols, "entries": entries}
    num_vertices = max(rows, cols)
    if first is None:
        if entries:
            raise InputFormatError(f"header declares {entries} entries but the file has 0",
                                   path, size_line_no)
        if not num_vertices:
            refuse_empty(path, "the size line declares an empty matrix")
        return EdgeSource(path, lambda: iter(()), use_weight, num_vertices, file_size(path),
                          "mtx", meta, symmetry == "symmetric",
                          id_base=1)
    table = TextTable(path, first, _FIELDS[field], use_weight=use_weight, base=1,
                      limits=(rows, cols), comments=(b"%",), workers=threads,
                      transform=mirror if symmetry == "symmetric" else None,
                      expected=(entries, "entries", size_line_no))
    return EdgeSource(path, lambda: table.chunks(chunk_edges), use_weight, num_vertices,
                      file_size(path), "mtx", meta, symmetry == "symmetric", id_base=1,
                      make_pieces=table.pieces)
