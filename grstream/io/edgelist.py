"""Plain and SNAP edge lists: ``src dst [weight]`` per line, 0-based ids as written.

A list whose first data line names a vertex with a token that is not a number (``Napoleon Valjean``)
is read as a list of names (:mod:`grstream.io.labelled`).

A side file ``NAME.json`` (:mod:`.sidefile`, written by ``grstream generate``) declares the
vertex count of a numeric list, isolated vertices included.

Lines starting with ``#`` or ``%`` and blank lines are skipped anywhere. Columns are separated by
spaces or tabs (commas for CSV). Every data line must have the column count of the first one:
2, or 3 with a weight. gzip-compressed files are read transparently.
"""
from ..errors import InputFormatError
from .base import EdgeSource
from .labelled import LabelTable, check_not_header, is_named
from .chunking import check_chunk_edges
from .sidefile import declared_vertices
from .pipes import is_stream
from .texttable import TextTable, file_size, find_first_data, is_data_line
from .validate import refuse_empty, resolve_weighted

COMMENTS = (b"#", b"%")


def read_edgelist(path, *, weighted=None, chunk_edges=None, threads=1, delimiter=None):
    """Open a text edge list as an :class:`EdgeSource`.

    Parameters
    ----------
    path : str or os.PathLike
        The file, optionally gzip-compressed.
    weighted : bool or None
        None: use the third column when present; True: require it; False: ignore it.
    chunk_edges : int, optional
        Maximum edges per chunk.
    threads : int
        Processes that parse blocks of the text at once (:mod:`.parallel_text`; 1: this one).
    delimiter : {None, ","}
        None for spaces/tabs, ``","`` for CSV.

    Returns
    -------
    EdgeSource

    Raises
    ------
    InputFormatError
        If the file is missing or its first data line does not have 2 or 3 columns
        (later lines are checked while streaming).

    Examples
    --------
    >>> src = read_edgelist("graph.txt")                        # doctest: +SKIP
    >>> for s, d, w in src.chunks(): ...                        # doctest: +SKIP
    """
    path = str(path)
    chunk_edges = check_chunk_edges(chunk_edges)
    delim = None if delimiter is None else delimiter.encode() if isinstance(delimiter, str) \
        else delimiter
    _, first = find_first_data(path, is_data_line(COMMENTS))
    fmt = "csv" if delim == b"," else "edgelist"
    if first is None:
        refuse_empty(path)
    line_no, _, line = first
    tokens = [t.strip() for t in line.split(delim)] if delim else line.split()
    ncol = len(tokens)
    if ncol not in (2, 3):
        raise InputFormatError(f"expected 2 or 3 columns (src dst [weight]), found {ncol}",
                               path, line_no)
    use_weight = resolve_weighted(ncol == 3, weighted, path)
    if is_named(tokens):
        check_not_header(path, first, tokens, is_data_line(COMMENTS),
                         (lambda t: t.split(delim)) if delim else bytes.split)
        named = LabelTable(path, first, ncol, use_weight=use_weight, comments=COMMENTS,
                           delimiter=delim)
        return EdgeSource(path, lambda: named.chunks(chunk_edges), use_weight,
                          size_bytes=file_size(path), format=fmt,
                          meta={"columns": ncol, "names": True}, labels=named.labels)
    declared = None if is_stream(path) else declared_vertices(path)
    table = TextTable(path, first, ncol, use_weight=use_weight, comments=COMMENTS,
                      delimiter=delim, limits=(declared, declared), workers=threads)
    return EdgeSource(path, lambda: table.chunks(chunk_edges), use_weight, declared,
                      size_bytes=file_size(path), format=fmt, meta={"columns": ncol},
                      make_pieces=table.pieces)
