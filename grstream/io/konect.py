"""KONECT ``out.*`` files: ``%`` header lines, then ``u v [weight [timestamp ...]]``, 1-based.

The first header line names the kind (``sym``, ``asym`` or ``bip``) and the optional second
``% edges n1 n2`` gives the sizes. Columns after the weight (KONECT's timestamps) are ignored.
``sym`` graphs list each undirected edge once: both directions are returned. ``bip`` graphs
number both sides from 1; right-side ids are shifted by ``n1`` into one id space, which needs
the size line. The store keeps the 1-based ids (README "Vertex ids"): the right side's vertex
``j`` answers to ``n1 + j``.
"""
import contextlib

from ..errors import InputFormatError
from .base import EdgeSource
from .chunking import check_chunk_edges
from .textblocks import head_lines
from .texttable import TextTable, file_size, is_data_line, mirror
from .validate import refuse_empty, resolve_weighted

KINDS = ("sym", "asym", "bip")


def _header(path, header):
    kind, sizes = "asym", None
    if header:
        tokens = header[0][1].decode(errors="replace").lstrip("%").split()
        if tokens and tokens[0] in KINDS:
            kind = tokens[0]
    if len(header) > 1:
        tokens = header[1][1].decode(errors="replace").lstrip("%").split()
        if len(tokens) >= 3 and all(t.isdigit() for t in tokens[:3]):
            sizes = tuple(int(t) for t in tokens[:3])
    return kind, sizes


def read_konect(path, *, weighted=None, chunk_edges=None, threads=1):
    """Open a KONECT ``out.*`` file as an :class:`EdgeSource`.

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

    Returns
    -------
    EdgeSource
        ``num_vertices`` from the size line when present (``n1 + n2`` for ``bip``).

    Raises
    ------
    InputFormatError
        Fewer than 2 columns, a ``bip`` file without size line (at open); malformed lines and
        ids beyond the size line (while streaming).
    """
    path = str(path)
    chunk_edges = check_chunk_edges(chunk_edges)
    header, first = [], None
    is_data = is_data_line((b"%",))
    with contextlib.closing(head_lines(path)) as lines:
        for line_no, offset, line in lines:
            if is_data(line):
                first = (line_no, offset, line)
                break
            if line.strip():
                header.append((line_no, line))
    kind, sizes = _header(path, header)
    if kind == "bip" and sizes is None:
        raise InputFormatError("a bipartite (bip) KONECT file needs the size line "
                               "'% edges n1 n2' to place the right side's ids", path)
    meta = {"kind": kind}
    limits, num_vertices, transform = (None, None), None, None
    if sizes is not None:
        meta["declared_edges"] = sizes[0]
        limits = sizes[1:]
        num_vertices = sizes[1] + sizes[2] if kind == "bip" else max(sizes[1:])
    if kind == "sym":
        transform = mirror
    elif kind == "bip":
        def transform(src, dst, weight, shift=sizes[1]):
            return src, dst + shift, weight
    if first is None:
        if not num_vertices:
            refuse_empty(path)
        use_weight = resolve_weighted(False, weighted, path)
        return EdgeSource(path, lambda: iter(()), use_weight, num_vertices, file_size(path),
                          "konect", meta, kind == "sym", id_base=1)
    ncol = len(first[2].split())
    if ncol < 2:
        raise InputFormatError(f"expected at least 2 columns, found {ncol}", path, first[0])
    use_weight = resolve_weighted(ncol >= 3, weighted, path)
    table = TextTable(path, first, ncol, use_weight=use_weight, base=1, limits=limits,
                      transform=transform, comments=(b"%",), workers=threads)
    return EdgeSource(path, lambda: table.chunks(chunk_edges), use_weight, num_vertices,
                      file_size(path), "konect", meta, kind == "sym", id_base=1,
                      make_pieces=table.pieces)
