"""DIMACS shortest-path graphs (``.gr``): ``c`` comments, ``p sp n m``, then ``a u v w`` arcs.

Ids are 1-based; an id beyond ``n`` or an arc count other than ``m`` is an error.
"""
import contextlib

from ..errors import InputFormatError
from .base import EdgeSource
from .chunking import check_chunk_edges
from .textblocks import head_lines
from .texttable import TextTable, file_size
from .validate import refuse_empty, resolve_weighted


def read_dimacs(path, *, weighted=None, chunk_edges=None, threads=1):
    """Open a DIMACS ``.gr`` file as an :class:`EdgeSource`.

    Parameters
    ----------
    path : str or os.PathLike
        The file, optionally gzip-compressed.
    weighted : bool or None
        None or True: arc lengths are the weights; False: drop them.
    chunk_edges : int, optional
        Maximum edges per chunk.
    threads : int
        Processes that parse blocks of the text at once (:mod:`.parallel_text`; 1: this one).

    Returns
    -------
    EdgeSource
        ``num_vertices`` is the problem line's ``n``.

    Raises
    ------
    InputFormatError
        A missing or malformed problem line, an unknown line before the first arc (at open);
        bad arcs, ids beyond ``n`` or an arc count other than ``m`` (while streaming).
    """
    path = str(path)
    chunk_edges = check_chunk_edges(chunk_edges)
    problem = first = None
    with contextlib.closing(head_lines(path)) as lines:
        for line_no, offset, line in lines:
            tokens = line.split()
            if not tokens or tokens[0] == b"c":
                continue
            if tokens[0] == b"p":
                if problem is not None:
                    raise InputFormatError("a second problem line", path, line_no)
                if len(tokens) != 4 or tokens[1] != b"sp" or not all(
                        t.isdigit() for t in tokens[2:]):
                    raise InputFormatError("the problem line must be 'p sp <nodes> <arcs>'",
                                           path, line_no)
                problem = (int(tokens[2]), int(tokens[3]), line_no)
            elif tokens[0] == b"a":
                if problem is None:
                    raise InputFormatError("an arc before the problem line 'p sp n m'",
                                           path, line_no)
                first = (line_no, offset, line)
                break
            else:
                raise InputFormatError(
                    f"unknown line type {tokens[0][:20].decode(errors='replace')!r} "
                    "(expected c, p or a)", path, line_no)
    if problem is None:
        raise InputFormatError("missing the problem line 'p sp <nodes> <arcs>'", path)
    n, m, p_line = problem
    use_weight = resolve_weighted(True, weighted, path)
    meta = {"arcs": m}
    if first is None:
        if m:
            raise InputFormatError(f"header declares {m} arcs but the file has 0", path, p_line)
        if not n:
            refuse_empty(path, "the problem line declares no nodes")
        return EdgeSource(path, lambda: iter(()), use_weight, n, file_size(path), "dimacs", meta,
                          id_base=1)
    line = first[2].lstrip()
    prefix = line[:2] if line[1:2] in (b" ", b"\t") else b"a "
    table = TextTable(path, first, 3, use_weight=use_weight, base=1, limits=(n, n),
                      comments=(b"c",), prefix=prefix, expected=(m, "arcs", p_line),
                      workers=threads)
    return EdgeSource(path, lambda: table.chunks(chunk_edges), use_weight, n, file_size(path),
                      "dimacs", meta, id_base=1,
                      make_pieces=table.pieces)
